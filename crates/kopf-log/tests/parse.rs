//! Template, format and robustness tests for the kopf log parser.

use kopf_log::{
    EventKind, ExceptionOutcome, Fault, HandlerKind, Level, LogFormat, Parser, ParserOptions,
    PermissionScope, Record, Routine, Timestamp, records,
};
use std::io::BufReader;

fn parse_with(text: &str, options: ParserOptions) -> Vec<Record> {
    let mut p = Parser::new(options);
    let mut out = Vec::new();
    for line in text.split('\n') {
        out.extend(p.push_line(line.as_bytes()));
    }
    while let Some(r) = p.finish() {
        out.push(r);
    }
    out
}

fn parse(text: &str) -> Vec<Record> {
    parse_with(text, ParserOptions::default())
}

fn one(line: &str) -> Record {
    let mut v = parse(line);
    assert_eq!(v.len(), 1, "{line}: {v:#?}");
    v.remove(0)
}

fn data(name: &str) -> String {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn kind_name(k: &EventKind) -> String {
    let s = format!("{k:?}");
    s.split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_string()
}

const FULL: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/name] ";

// ---------------------------------------------------------------------------
// Every template, in each of the three formats.

/// (message, expected kind name) for every recognised template, old and new.
const TEMPLATES: &[(&str, &str)] = &[
    ("Handler 'x' succeeded.", "HandlerSucceeded"),
    ("Timer 'x' succeeded.", "HandlerSucceeded"),
    (
        "Handler 'x' failed temporarily: boom",
        "HandlerFailedTemporarily",
    ),
    (
        "Handler 'x' failed temporarily but will time out after 60 seconds: boom",
        "HandlerFailedTemporarily",
    ),
    (
        "Handler 'x' failed temporarily but will exceed 3 retries: boom",
        "HandlerFailedTemporarily",
    ),
    (
        "Handler 'x' failed with an exception and will try again in 60 seconds: boom",
        "HandlerFailedWithException",
    ),
    (
        "Handler 'x' failed with an exception and will ignore it: boom",
        "HandlerFailedWithException",
    ),
    (
        "Handler 'x' failed with an exception and will stop now: boom",
        "HandlerFailedWithException",
    ),
    (
        "Handler 'x' failed with an exception and will stop now (it would time out in 600 seconds on the next attempt): boom",
        "HandlerFailedWithException",
    ),
    (
        "Handler 'x' failed with an exception. Will retry.",
        "HandlerFailedWithException",
    ),
    (
        "Handler 'x' failed with an exception. Will ignore.",
        "HandlerFailedWithException",
    ),
    (
        "Handler 'x' failed with an exception. Will stop.",
        "HandlerFailedWithException",
    ),
    (
        "Handler 'x' failed permanently: boom",
        "HandlerFailedPermanently",
    ),
    (
        "Handler 'x' has timed out after 0:01:00.512345.",
        "HandlerTimedOut",
    ),
    (
        "Handler 'x' has exceeded 3 retries.",
        "HandlerRetriesExceeded",
    ),
    (
        "Handler 'x' is cancelled. Will escalate.",
        "HandlerCancelled",
    ),
    (
        "Deletion is processed: 1 succeeded; 1 failed.",
        "CauseProcessed",
    ),
    (
        "Failed to post an event. Ignoring and continuing. Code: 500. Message: oops. Details: NoneEvent: type='Normal', reason='Logging', message='x'.",
        "EventPostFailed",
    ),
    (
        "Merge-patching finished with inconsistencies: (('remove', ('status',), 1, None),)",
        "PatchInconsistencies",
    ),
    (
        "Patching failed with inconsistencies: (('remove', ('status',), 1, None),)",
        "PatchInconsistencies",
    ),
    (
        "Request attempt #1/9 failed; will retry: GET https://h/api/v1/pods -> APIServerError('boom', status=500)",
        "RequestRetry",
    ),
    (
        "Request attempt #1/9 failed; will retry: GET https://h/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:ns:sa\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope', status=403)",
        "Forbidden",
    ),
    (
        "Request attempt #3/9 failed; will retry: PATCH https://h/apis/x.dev/v1/namespaces/ns/things/a -> APITooManyRequestsError('Too many requests, please try again later.', {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': 'Too many requests, please try again later.', 'reason': 'TooManyRequests', 'details': {'retryAfterSeconds': 1}, 'code': 429})",
        "RequestRetry",
    ),
    (
        "Receiving `too many requests` error from server, will retry after 1 seconds. Error details: ('Too many requests, please try again later.', {'kind': 'Status', 'code': 429})",
        "WatchTooManyRequests",
    ),
    (
        "Not enough permissions to list namespaces. Falling back to a list of namespaces which are assumed to exist: ['a']",
        "PermissionDegraded",
    ),
    (
        "Not enough permissions to watch for namespaces: changes (deletion/creation) will not be noticed; the namespaces are only refreshed on operator restarts.",
        "PermissionDegraded",
    ),
    (
        "Not enough permissions to watch for resources: changes (creation/deletion/updates) will not be noticed; the resources are only refreshed on operator restarts.",
        "PermissionDegraded",
    ),
    (
        "Unresolved resources cannot be served (try creating their CRDs): Selector(plural='x')",
        "UnresolvedResources",
    ),
    (
        "Pausing operations in favour of [Peer(id='a', priority=100)].",
        "PeeringPaused",
    ),
    (
        "Possibly conflicting operators with the same priority: [Peer(id='a', priority=0)].",
        "PeeringConflict",
    ),
    (
        "Resuming operations after the pause. Conflicting operators with the same priority are gone.",
        "PeeringResumed",
    ),
    (
        "Watcher for kopfexamples.v1.kopf.dev@none has failed: boom",
        "WatcherFailed",
    ),
    (
        "Multidimensional multitasker has failed: boom",
        "MultitaskerFailed",
    ),
    (
        "Throttling for 1.5 seconds due to an unexpected error: RuntimeError('boom')",
        "Throttling",
    ),
    (
        "Daemon 'monitor' did not exit in time. Leaving it orphaned.",
        "OrphanedDaemon",
    ),
    (
        "Re-authentication has failed: no credentials were retrieved from the login handlers.",
        "AuthenticationFailed",
    ),
    (
        "Initial authentication has failed: no credentials were retrieved from the login handlers.",
        "AuthenticationFailed",
    ),
    ("Something else entirely.", "Other"),
];

#[test]
fn every_template_in_full_format() {
    for (msg, want) in TEMPLATES {
        let r = one(&format!("{FULL}{msg}"));
        assert_eq!(kind_name(&r.kind), *want, "{msg}");
        assert_eq!(r.format, Some(LogFormat::Full));
        assert_eq!(r.level, Some(Level::Error));
        assert_eq!(r.logger.as_deref(), Some("kopf.objects"));
        assert_eq!(r.message, *msg);
        let o = r.object.expect("object");
        assert_eq!(
            (o.namespace.as_deref(), o.name.as_str()),
            (Some("ns"), "name")
        );
        assert_eq!(
            r.timestamp,
            Timestamp::parse_rfc3339("2026-11-30T02:41:55.039Z")
        );
    }
}

#[test]
fn every_template_in_plain_format() {
    for (msg, want) in TEMPLATES {
        let r = one(&format!("[ns/name] {msg}"));
        assert_eq!(kind_name(&r.kind), *want, "{msg}");
        assert_eq!(r.format, Some(LogFormat::Plain));
        assert_eq!(r.message, *msg);
        assert_eq!(r.timestamp, None);
        assert_eq!(r.level, r.kind.kopf_level());
        // Without the object prefix (non-object loggers).
        let r = one(msg);
        assert_eq!(kind_name(&r.kind), *want, "{msg}");
        assert_eq!(r.object, None);
        if *want == "Other" {
            assert_eq!(r.format, None);
        } else {
            assert_eq!(r.format, Some(LogFormat::Plain));
        }
    }
}

#[test]
fn every_template_in_json_format() {
    for (msg, want) in TEMPLATES {
        let line = serde_json::json!({
            "message": msg,
            "timestamp": "2026-11-30T02:41:55.039412+00:00",
            "object": {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": "name", "uid": "u-1", "namespace": "ns"},
            "severity": "error",
        })
        .to_string();
        let r = one(&line);
        assert_eq!(kind_name(&r.kind), *want, "{msg}");
        assert_eq!(r.format, Some(LogFormat::Json));
        assert_eq!(r.level, Some(Level::Error));
        assert_eq!(r.message, *msg);
        let o = r.object.expect("object");
        assert_eq!(o.kind.as_deref(), Some("KopfExample"));
        assert_eq!(o.uid.as_deref(), Some("u-1"));
        assert_eq!(o.api_version.as_deref(), Some("kopf.dev/v1"));
        assert_eq!(o.namespace.as_deref(), Some("ns"));
        assert_eq!(
            r.timestamp.map(|t| t.to_string()).as_deref(),
            Some("2026-11-30T02:41:55.039412Z")
        );
    }
}

/// The object's `apiVersion` is read whichever way the line is parsed: the fast path
/// for simple lines, serde for a line with `exc_info`.
#[test]
fn a_json_objects_api_version_is_read_on_both_paths() {
    for exc_info in [
        None,
        Some("Traceback (most recent call last):\nValueError: x"),
    ] {
        let mut line = serde_json::json!({
            "message": "Handler 'x' failed with an exception. Will retry.",
            "timestamp": "2026-11-30T02:41:55.039412+00:00",
            "object": {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u-2", "namespace": "ns"},
            "severity": "error",
        });
        if let Some(e) = exc_info {
            line["exc_info"] = e.into();
        }
        let r = one(&line.to_string());
        let o = r.object.expect("object");
        assert_eq!(o.api_version.as_deref(), Some("v1"), "{exc_info:?}");
        assert_eq!(o.kind.as_deref(), Some("Secret"), "{exc_info:?}");
    }
}

#[test]
fn template_details() {
    let r = one("Handler 'x' failed with an exception and will try again in 1.5 seconds: boom");
    assert_eq!(
        r.kind,
        EventKind::HandlerFailedWithException {
            handler: kopf_log::HandlerRef {
                kind: HandlerKind::Handler,
                id: "x".into()
            },
            outcome: ExceptionOutcome::Retry,
            retry_in_seconds: Some(1.5)
        }
    );
    let r = one(
        "Failed to post an event. Ignoring and continuing. Status: 503. Message: x. Event: type='Normal'.",
    );
    assert_eq!(r.kind, EventKind::EventPostFailed { code: Some(503) });
    let r = one("Failed to post an event. Ignoring and continuing. Code: None. Message: None.");
    assert_eq!(r.kind, EventKind::EventPostFailed { code: None });
    let r = one(
        "Failed to post an event. Ignoring and continuing. Event: type='Normal', reason='x', message='y'.",
    );
    assert_eq!(r.kind, EventKind::EventPostFailed { code: None });
    let r = one("Watcher for kopfexamples.v1.kopf.dev@none has failed: boom");
    assert_eq!(
        r.kind,
        EventKind::WatcherFailed {
            resource: "kopfexamples.v1.kopf.dev".into(),
            namespace: None
        }
    );
    let r = one("Not enough permissions to watch for resources: changes ...");
    assert_eq!(
        r.kind,
        EventKind::PermissionDegraded {
            what: PermissionScope::Watch
        }
    );
    let r = one("Throttling for 1.5 seconds due to an unexpected error: RuntimeError('boom')");
    assert_eq!(r.kind, EventKind::Throttling { seconds: 1.5 });
    let r =
        one("Request attempt #9/9 failed; escalating: GET u -> APIServerError('x', status=500)");
    assert_eq!(
        r.kind,
        EventKind::RequestRetry {
            attempt: 9,
            of: Some(9),
            escalating: true
        }
    );
    let r = one("Handler \"it's\" succeeded.");
    assert_eq!(r.kind.handler().map(|h| h.id.as_str()), Some("it's"));
    let r = one("Webhook 'a.b/c' failed permanently: x");
    assert_eq!(r.kind.handler().map(|h| h.kind), Some(HandlerKind::Webhook));
}

#[test]
fn forbidden_request_details() {
    let r = one(&format!(
        "{FULL}Request attempt #2/9 failed; will retry: PATCH https://h/x -> APIForbiddenError('kopfexamples.kopf.dev is forbidden: User \"system:serviceaccount:op:sa\" cannot patch resource \"kopfexamples/status\" in API group \"kopf.dev\" in the namespace \"team-a\"', status=403)"
    ));
    assert_eq!(
        r.kind,
        EventKind::Forbidden {
            verb: "patch".into(),
            resource: "kopfexamples/status".into(),
            api_group: Some("kopf.dev".into()),
            user: Some("system:serviceaccount:op:sa".into()),
            namespace: Some("team-a".into()),
            cluster_scope: false,
        }
    );
    let req = r.request.expect("attempt");
    assert_eq!((req.attempt, req.of, req.escalating), (2, Some(9), false));
    assert!(r.forbidden.is_some());

    // An event post failure caused by a 403 stays an EventPostFailed, with details.
    let r = one(
        "Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden: User \"system:serviceaccount:op:sa\" cannot create resource \"events\" in API group \"\" in the namespace \"default\". Details: {'group': '', 'kind': 'events'}Event: type='Warning'.",
    );
    assert_eq!(r.kind, EventKind::EventPostFailed { code: Some(403) });
    let f = r.forbidden.expect("forbidden");
    assert_eq!(
        (f.verb.as_str(), f.resource.as_str(), f.api_group.as_deref()),
        ("create", "events", Some(""))
    );

    // Any other line with "is forbidden" (e.g. from the user's own client).
    let r = one(
        "kubernetes.client.exceptions.ApiException: (403) Reason: Forbidden HTTP response body: {\"message\":\"secrets is forbidden: User \\\"system:serviceaccount:a:b\\\" cannot list resource \\\"secrets\\\" in API group \\\"\\\" at the cluster scope\"}",
    );
    assert!(
        matches!(r.kind, EventKind::Forbidden { .. }),
        "{:?}",
        r.kind
    );
}

#[test]
fn too_many_requests_details() {
    // kopf 1.45 `_cogs/clients/api.py`: a 429 is retried with the error's repr after `->`.
    let r = one(&format!(
        "{FULL}Request attempt #9/9 failed; escalating: PATCH https://h/apis/x.dev/v1/namespaces/ns/things/a -> APITooManyRequestsError('Too many requests, please try again later.', {{'code': 429}})"
    ));
    let req = r.request.expect("attempt");
    assert_eq!(
        (req.attempt, req.of, req.escalating, req.too_many_requests),
        (9, Some(9), true, true)
    );
    // Another error is not a 429, even when its message says "too many".
    let r = one(&format!(
        "{FULL}Request attempt #1/9 failed; will retry: GET https://h/x -> APIServerError('too many APITooManyRequestsError mentions', status=500)"
    ));
    let req = r.request.expect("attempt");
    assert!(!req.too_many_requests, "{req:?}");
    // kopf 1.42.1 and older: only a watch-stream's 429 is logged, as a warning.
    let r = one(
        "[2026-11-30 02:41:55,039] kopf._cogs.clients.w [WARNING ] Receiving `too many requests` error from server, will retry after 1 seconds. Error details: ('Too many requests', {'code': 429})",
    );
    assert_eq!(r.kind, EventKind::WatchTooManyRequests);
    assert_eq!(r.level, Some(kopf_log::Level::Warning));
}

// ---------------------------------------------------------------------------
// The full format's header.

#[test]
fn full_header_variants() {
    // A logger name cut to 20 characters.
    let r = one(
        "[2026-11-30 02:41:55,039] kopf._core.reactor.r [WARNING ] Not enough permissions to watch for resources: x",
    );
    assert_eq!(r.logger.as_deref(), Some("kopf._core.reactor.r"));
    assert_eq!(r.level, Some(Level::Warning));
    assert_eq!(r.object, None);
    // CRITICAL fills the 8 characters; DEBUG is padded.
    assert_eq!(
        one("[2026-11-30 02:41:55,039] kopf                 [CRITICAL] x").level,
        Some(Level::Critical)
    );
    assert_eq!(
        one("[2026-11-30 02:41:55,039] kopf                 [DEBUG   ] x").level,
        Some(Level::Debug)
    );
    // A non-ASCII logger name: 20 characters, more bytes.
    let r = one(
        "[2026-11-30 02:41:55,039] opérateur.ünïcode     [INFO    ] [a/b] Handler 'x' succeeded.",
    );
    assert_eq!(r.logger.as_deref(), Some("opérateur.ünïcode"));
    assert_eq!(r.format, Some(LogFormat::Full));
    assert!(matches!(r.kind, EventKind::HandlerSucceeded { .. }));
    // An empty message.
    let r = one("[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] ");
    assert_eq!((r.format, r.message.as_str()), (Some(LogFormat::Full), ""));
    let r = one("[2026-11-30 02:41:55,039] kopf.objects         [INFO    ]");
    assert_eq!((r.format, r.message.as_str()), (Some(LogFormat::Full), ""));
    // A cluster-scoped object.
    let r = one(
        "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [cluster-thing] Handler 'x' succeeded.",
    );
    let o = r.object.expect("object");
    assert_eq!((o.namespace, o.name.as_str()), (None, "cluster-thing"));
    // Broken headers are not `full`: a level next to kopf's logger still reads as a
    // Python logging format of kopf's (as a custom `basicConfig` format would write
    // it), anything else is not kopf's.
    for l in [
        "[2026-13-30 02:41:55,039] kopf.objects         [INFO    ] x",
        "[2026-11-30 02:41:55.039] kopf.objects         [INFO    ] x",
    ] {
        let r = one(l);
        assert_eq!(
            (r.format, r.message.as_str()),
            (Some(LogFormat::Basic), "x"),
            "{l}"
        );
    }
    assert_eq!(one("[2026-11-30 02:41:55,039]kopf").format, None);
}

#[test]
fn kubelet_timestamps() {
    let r = one("2026-11-30T02:41:55.039412345Z [ns/name] Handler 'x' succeeded.");
    assert_eq!(r.format, Some(LogFormat::Plain));
    assert_eq!(
        r.timestamp.map(|t| t.to_string()).as_deref(),
        Some("2026-11-30T02:41:55.039412345Z")
    );
    assert_eq!(r.timestamp, r.kubelet_timestamp);
    assert_eq!(r.message, "Handler 'x' succeeded.");
    // The record's own time wins over the kubelet's.
    let r = one(&format!(
        "2026-11-30T03:00:00.000000001Z {FULL}Handler 'x' succeeded."
    ));
    assert_eq!(
        r.timestamp.map(|t| t.to_string()).as_deref(),
        Some("2026-11-30T02:41:55.039Z")
    );
    assert_eq!(
        r.kubelet_timestamp.map(|t| t.to_string()).as_deref(),
        Some("2026-11-30T03:00:00.000000001Z")
    );
    let r = one(
        r#"2026-11-30T03:00:00Z {"message": "Handler 'x' succeeded.", "timestamp": "2026-11-30T02:41:55+00:00", "severity": "info"}"#,
    );
    assert_eq!(r.format, Some(LogFormat::Json));
    assert_eq!(
        r.timestamp.map(|t| t.to_string()).as_deref(),
        Some("2026-11-30T02:41:55Z")
    );
    // A timestamp alone (an empty line in the container).
    let r = one("2026-11-30T03:00:00Z");
    assert_eq!((r.message.as_str(), r.format), ("", None));
    assert!(r.timestamp.is_some());
}

#[test]
fn ansi_colours_are_stripped() {
    let r = one(
        "\x1b[32m[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] \x1b[1;31m[ns/name] Handler 'x' failed permanently: boom\x1b[0m",
    );
    assert_eq!(r.format, Some(LogFormat::Full));
    assert!(matches!(r.kind, EventKind::HandlerFailedPermanently { .. }));
    assert_eq!(r.message, "Handler 'x' failed permanently: boom");
}

#[test]
fn an_admission_denial_is_not_a_handler_failure() {
    // What kopf 1.45.2 printed when its validating handler raised kopf.AdmissionError.
    let denial = one(
        "[2026-12-01 13:29:14,662] kopf.objects         [ERROR   ] [e2e-webhooks-9010/negative] Webhook 'validate' failed permanently: size must not be negative",
    );
    assert!(matches!(
        denial.kind,
        EventKind::HandlerFailedPermanently { .. }
    ));
    assert!(!denial.kind.is_handler_failure(), "{:?}", denial.kind);
    let handler = one(
        "[2026-12-01 13:29:14,662] kopf.objects         [ERROR   ] [ns/name] Handler 'create_fn' failed permanently: boom",
    );
    assert!(handler.kind.is_handler_failure());
}

// ---------------------------------------------------------------------------
// Tracebacks.

#[test]
fn tracebacks_in_text_formats() {
    for prefix in [FULL, "[ns/name] "] {
        let text = format!(
            "{prefix}Handler 'x' failed with an exception and will try again in 60 seconds: 'spec'\n\
             Traceback (most recent call last):\n\
             \x20 File \"/app/h.py\", line 3, in fn\n\
             \x20   {{}}['spec']\n\
             \x20   ~~^^^^^^\n\
             KeyError: 'spec'\n\
             {prefix}Handler 'x' succeeded."
        );
        let v = parse(&text);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert_eq!(v[0].traceback.len(), 5);
        assert_eq!(v[0].traceback[0], "Traceback (most recent call last):");
        assert_eq!(v[0].traceback[4], "KeyError: 'spec'");
        assert_eq!(v[1].line, 7);
        assert!(matches!(v[1].kind, EventKind::HandlerSucceeded { .. }));
    }
}

#[test]
fn chained_tracebacks_and_forbidden_inside() {
    let text = data("sample-full.log");
    let v = parse(&text);
    let w = v
        .iter()
        .find(|r| matches!(r.kind, EventKind::WatcherFailed { .. }))
        .expect("watcher failure");
    assert!(
        w.traceback
            .iter()
            .any(|l| l.starts_with("The above exception was the direct cause"))
    );
    assert_eq!(
        w.traceback.last().map(String::as_str),
        Some("RuntimeError: watch stream failed")
    );
    let f = w.forbidden.as_ref().expect("forbidden from the traceback");
    assert_eq!(
        (f.verb.as_str(), f.resource.as_str()),
        ("watch", "kopfexamples")
    );
    assert_eq!(f.namespace.as_deref(), Some("default"));
}

#[test]
fn uncaught_traceback_is_its_own_record_and_forbidden() {
    let text = "[2026-11-30 02:41:55,039] kopf._core.reactor.r [INFO    ] Signal SIGTERM is received. Operator is stopping.\n\
                Traceback (most recent call last):\n\
                \x20 File \"/usr/local/bin/kopf\", line 8, in <module>\n\
                \x20   sys.exit(main())\n\
                kopf._cogs.clients.errors.APIForbiddenError: ('pods is forbidden: User \"system:serviceaccount:a:b\" cannot watch resource \"pods\" in API group \"\" at the cluster scope', {})\n\
                \n\
                print after";
    let v = parse(text);
    assert_eq!(v.len(), 3, "{v:#?}");
    assert_eq!(v[0].traceback.len(), 0);
    assert_eq!(v[1].message, "Traceback (most recent call last):");
    assert_eq!(v[1].traceback.len(), 4);
    assert!(
        matches!(&v[1].kind, EventKind::Forbidden { verb, cluster_scope: true, .. } if verb == "watch")
    );
    assert_eq!(v[2].message, "print after");
}

#[test]
fn traceback_is_bounded() {
    let mut text = format!(
        "{FULL}Handler 'x' failed with an exception and will stop now: boom\nTraceback (most recent call last):\n"
    );
    for i in 0..10_000 {
        text.push_str(&format!(
            "  File \"/app/f{i}.py\", line {i}, in f\n    {}\n",
            "x".repeat(2000)
        ));
    }
    text.push_str("ValueError: boom\n[ns/name] Handler 'y' succeeded.");
    let v = parse(&text);
    assert_eq!(v.len(), 2);
    let tb = &v[0].traceback;
    assert!(tb.len() <= 17, "{}", tb.len());
    assert!(tb.iter().all(|l| l.len() <= 512));
    assert_eq!(tb.last().map(String::as_str), Some("ValueError: boom"));
    assert!(
        tb.iter()
            .any(|l| l.starts_with("... ") && l.ends_with(" more lines ..."))
    );
}

#[test]
fn exception_groups() {
    let text = format!(
        "{FULL}Handler 'x' failed with an exception and will stop now: group\n\
         \x20 + Exception Group Traceback (most recent call last):\n\
         \x20 |   File \"/app/h.py\", line 1, in f\n\
         \x20 | ExceptionGroup: group (1 sub-exception)\n\
         \x20 +-+---------------- 1 ----------------\n\
         \x20   | ValueError: inner\n\
         \x20   +------------------------------------\n\
         {FULL}Handler 'x' succeeded."
    );
    let v = parse(&text);
    assert_eq!(v.len(), 2, "{v:#?}");
    assert_eq!(v[0].traceback.len(), 6);
}

#[test]
fn json_exc_info_string_and_array() {
    let r = one(
        r#"{"message": "Handler 'x' failed with an exception and will ignore it: boom", "exc_info": "Traceback (most recent call last):\n  File \"/app/h.py\", line 1, in f\nValueError: boom", "timestamp": "2026-11-30T02:41:55.039412+00:00", "severity": "error"}"#,
    );
    assert_eq!(r.traceback.len(), 3);
    assert_eq!(r.traceback[2], "ValueError: boom");
    let r = one(
        r#"{"message": "Throttling for 1 seconds due to an unexpected error: E()", "exc_info": ["Traceback (most recent call last):", "  File \"x\", line 1", "E: pods is forbidden: User \"u\" cannot get resource \"pods\" in API group \"\" in the namespace \"n\""], "severity": "error"}"#,
    );
    assert_eq!(r.traceback.len(), 3);
    assert!(matches!(r.kind, EventKind::Throttling { .. }));
    assert_eq!(r.forbidden.map(|f| f.verb), Some("get".into()));
}

// ---------------------------------------------------------------------------
// JSON variants.

#[test]
fn json_refkey_prefix_and_non_kopf_json() {
    let line = r#"{"message": "Handler 'x' succeeded.", "k8s": {"name": "n1", "namespace": "ns1", "kind": "K", "uid": "u"}, "severity": "info"}"#;
    assert_eq!(one(line).object, None);
    let r = parse_with(
        line,
        ParserOptions {
            refkey: Some("k8s".into()),
            ..Default::default()
        },
    );
    assert_eq!(r[0].object.as_ref().map(|o| o.name.as_str()), Some("n1"));
    // --log-prefix with JSON: the prefix is stripped and used when no object key.
    let r = one(r#"{"message": "[ns2/n2] Handler 'x' succeeded.", "severity": "info"}"#);
    assert_eq!(r.message, "Handler 'x' succeeded.");
    assert_eq!(
        r.object.map(|o| (o.namespace, o.name)),
        Some((Some("ns2".into()), "n2".into()))
    );
    // Weird but valid values.
    let r = one(
        r#"{"message": 42, "severity": ["x"], "object": "str", "exc_info": null, "timestamp": 1}"#,
    );
    assert_eq!(
        (r.message.as_str(), r.level, r.object, r.format),
        ("42", None, None, Some(LogFormat::Json))
    );
    // Another library's JSON: not kopf's.
    let r = one(r#"{"event": "hello", "level": "info"}"#);
    assert_eq!((r.format, r.kind), (None, EventKind::Other));
    assert_eq!(r.message, r#"{"event": "hello", "level": "info"}"#);
    // Unicode escapes and surrogate pairs.
    let r =
        one(r#"{"message": "Handler 'caf\u00e9' succeeded. \ud83d\ude00", "severity": "warn"}"#);
    assert_eq!(r.level, Some(Level::Warning));
    assert!(r.message.contains("café"));
}

#[test]
fn broken_json_is_text() {
    for l in [
        "{",
        "{\"message\": \"Handler 'x' succeeded.\"",
        "{\"message\": \"x\"} trailing",
        "[1, 2, 3]",
        "{\"message\": \"\\ud800\"}",
        "{\"a\":1,}",
        "{}",
        "{\"message\": \"x\", \"message\": \"y\"}",
    ] {
        let v = parse(l);
        assert_eq!(v.len(), 1, "{l}");
    }
    let deep = format!(
        "{{\"message\": \"x\", \"a\": {}1{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    // serde_json skips ignored values iteratively: deep nesting there is fine.
    let r = one(&deep);
    assert_eq!((r.format, r.message.as_str()), (Some(LogFormat::Json), "x"));
    // Also in the values the parser reads: containers there are skipped the same way.
    let deep_msg = format!(
        "{{\"object\": {}1{}, \"message\": \"x\"}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let r = one(&deep_msg);
    assert_eq!(
        (r.format, r.object, r.message.as_str()),
        (Some(LogFormat::Json), None, "x")
    );
    // Unbalanced: not JSON, kept as (bounded) text.
    let r = one(&"[{".repeat(300_000));
    assert_eq!(r.format, None);
    assert!(r.truncated);
    let deep_obj = format!("{}{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
    assert_eq!(parse(&deep_obj).len(), 1);
}

// ---------------------------------------------------------------------------
// Bounds and hostile input.

#[test]
fn long_lines_are_bounded() {
    let big = format!(
        "{FULL}Handler 'x' failed temporarily: {}",
        "é".repeat(600_000)
    );
    let r = one(&big);
    assert!(r.truncated);
    assert!(r.message.len() <= 4096);
    assert!(matches!(r.kind, EventKind::HandlerFailedTemporarily { .. }));
    // A 1 MB line of garbage with a forbidden far in.
    let mut junk = "z".repeat(1 << 20);
    junk.push_str(" secrets is forbidden: User \"u\" cannot list resource \"secrets\" in API group \"\" at the cluster scope");
    let r = one(&junk);
    assert!(matches!(r.kind, EventKind::Forbidden { .. }));
    assert!(r.message.len() <= 4096);
}

#[test]
fn invalid_utf8_is_lossy() {
    let mut p = Parser::default();
    assert!(
        p.push_line(b"[ns/n\xff] Handler '\xc3\x28' succeeded.\xfe")
            .is_none()
    );
    let r = p.finish().expect("record");
    assert!(r.message.contains('\u{FFFD}'));
    let mut p = Parser::default();
    p.push_line(b"[ns/name] Handler '\xff\xfe' succeeded.");
    let r = p.finish().expect("record");
    assert_eq!(
        r.kind.handler().map(|h| h.id.as_str()),
        Some("\u{FFFD}\u{FFFD}")
    );
}

#[test]
fn empty_and_blank_lines() {
    let v = parse("\n\n  \n\r\n");
    assert_eq!(v.len(), 5);
    assert!(
        v.iter()
            .all(|r| r.kind == EventKind::Other && r.format.is_none())
    );
}

#[test]
fn chunks_match_lines() {
    let text = format!(
        "{}\n{}\n{}",
        data("sample-full.log"),
        data("sample-json.log"),
        data("sample-plain.log")
    );
    let by_line = {
        let mut p = Parser::default();
        let mut out: Vec<Record> = text
            .split_terminator('\n')
            .filter_map(|l| p.push_line(l.as_bytes()))
            .collect();
        out.extend(p.finish());
        out
    };
    for split in [1usize, 7, 64, 4096] {
        let mut p = Parser::default();
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(split) {
            p.push_chunk(chunk, &mut out);
        }
        while let Some(r) = p.finish() {
            out.push(r);
        }
        assert_eq!(out, by_line, "split {split}");
        assert_eq!(p.stats().records as usize, out.len());
        assert_eq!(p.stats().bytes as usize, text.len());
    }
    let it = records(BufReader::new(text.as_bytes()), ParserOptions::default());
    let v: Vec<Record> = it.map(|r| r.expect("io")).collect();
    assert_eq!(v, by_line);
}

#[test]
fn reader_bounds_lines() {
    let text = format!(
        "{}\n[ns/name] Handler 'x' succeeded.\n",
        "a".repeat(3 << 20)
    );
    let opts = ParserOptions {
        max_line_bytes: 1 << 16,
        ..Default::default()
    };
    let mut it = records(BufReader::with_capacity(1024, text.as_bytes()), opts);
    let v: Vec<Record> = it.by_ref().map(|r| r.expect("io")).collect();
    assert_eq!(v.len(), 2);
    assert!(v[0].truncated);
    assert!(matches!(v[1].kind, EventKind::HandlerSucceeded { .. }));
    assert_eq!(it.stats().bytes as usize, text.len());
    assert_eq!(it.stats().lines, 2);
}

// ---------------------------------------------------------------------------
// The samples: the same kopf output in three formats gives the same findings.

#[test]
fn samples_agree_across_formats() {
    let summarise = |name: &str| -> Vec<(String, Option<String>, bool)> {
        parse(&data(name))
            .into_iter()
            .filter(|r| r.kind != EventKind::Other)
            .map(|r| {
                (
                    format!("{:?}", r.kind),
                    r.object.map(|o| format!("{:?}/{}", o.namespace, o.name)),
                    r.forbidden.is_some(),
                )
            })
            .collect()
    };
    let full = summarise("sample-full.log");
    let plain = summarise("sample-plain.log");
    let json = summarise("sample-json.log");
    assert_eq!(full, plain);
    assert_eq!(full, json);
    assert_eq!(full.len(), 41, "{full:#?}");
}

#[test]
fn sample_stats() {
    for (name, kopf) in [
        ("sample-full.log", 47),
        ("sample-plain.log", 46),
        ("sample-json.log", 47),
    ] {
        let mut p = Parser::default();
        let mut n = 0;
        for line in data(name).lines() {
            n += usize::from(p.push_line(line.as_bytes()).is_some());
        }
        while p.finish().is_some() {
            n += 1;
        }
        let s = p.stats();
        assert_eq!(s.records as usize, n);
        assert_eq!(s.kopf_lines, kopf, "{name}: {s:?}");
        assert!(s.kopf_ratio() > 0.9, "{name}: {s:?}");
    }
}

// ---------------------------------------------------------------------------
// Runtime faults, named in any template or traceback.

/// A fault named only in a traceback that no kopf line owns (CPython's own output) is
/// kept as a record of kind `Fault`, in both routine modes; one named in a kopf
/// template keeps the template's kind and is found by `Record::fault`.
#[test]
fn faults_are_found_in_messages_and_tracebacks() {
    let traceback = "Traceback (most recent call last):\n  File \"threading.py\", line 964, in start\n    _start_new_thread(self._bootstrap, ())\nRuntimeError: can't start new thread\n";
    for routine in [Routine::Keep, Routine::Count] {
        let mut p = Parser::new(ParserOptions::default()).with_routine(routine);
        let mut out = Vec::new();
        for line in traceback.lines() {
            out.extend(p.push_line(line.as_bytes()));
        }
        out.extend(p.finish());
        let kept: Vec<&Record> = out.iter().filter(|r| !r.is_routine()).collect();
        assert_eq!(kept.len(), 1, "{routine:?}: {out:#?}");
        assert_eq!(
            kept[0].kind,
            EventKind::Fault {
                fault: Fault::ThreadExhausted
            }
        );
        assert_eq!(kept[0].fault(), Some(Fault::ThreadExhausted));
    }
    let daemon = one(&format!(
        "{FULL}Daemon 'poller' failed with an exception and will try again in 60 seconds: can't start new thread"
    ));
    assert_eq!(kind_name(&daemon.kind), "HandlerFailedWithException");
    assert_eq!(daemon.fault(), Some(Fault::ThreadExhausted));
    let tls = one(&format!(
        "{FULL}Request attempt #1/4 failed; will retry: GET https://h/api -> ClientConnectorCertificateError(ConnectionKey(host='h', port=443, proxy_auth=None), SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)'))"
    ));
    assert_eq!(tls.fault(), Some(Fault::CertificateVerifyFailed));
    assert!(tls.message.contains("proxy_auth=None"), "{}", tls.message);
    assert_eq!(
        one(&format!("{FULL}Something else entirely.")).fault(),
        None
    );
}

/// A login handler's success is kept: it tells how the operator logs in.
#[test]
fn an_activity_success_is_not_routine_but_a_handler_success_is() {
    let login = one(
        "[2026-12-07 04:14:08,441] kopf.activities.auth [INFO    ] Activity 'login_via_client' succeeded.",
    );
    assert!(!login.is_routine());
    let handler = one(&format!("{FULL}Handler 'x' succeeded."));
    assert!(handler.is_routine());
}

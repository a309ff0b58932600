//! The parser on REAL kopf output: 1.45.2 captured from the test fixtures running against
//! a real API server (`hack/capture-kopf-logs.sh`), in kopf's three log formats, as the
//! pods/log API serves it with `timestamps=true`.

use kopf_log::{
    BackgroundTask, EventKind, ExceptionOutcome, KopfVersion, Level, LogFormat, Parser,
    ParserOptions, PermissionScope, Record, Stats,
};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn parse(name: &str) -> (Vec<Record>, Stats) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/captured")
        .join(name);
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut parser = Parser::new(ParserOptions::default());
    let mut records: Vec<Record> = text
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| parser.push_line(line))
        .collect();
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    (records, parser.stats())
}

/// (kind name, handler, object name) of every handler failure, to compare formats.
fn failures(records: &[Record]) -> BTreeSet<(String, String, String)> {
    records
        .iter()
        .filter(|r| r.kind.is_handler_failure())
        .map(|r| {
            (
                r.kind.name().to_string(),
                r.kind.handler().map(|h| h.to_string()).unwrap_or_default(),
                r.object
                    .as_ref()
                    .map(|o| o.name.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn every_capture_parses_as_mostly_kopf() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/captured");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("captured data") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let (records, stats) = parse(&name);
        assert!(!records.is_empty(), "{name}");
        assert!(
            stats.kopf_ratio() > 0.5,
            "{name}: kopf ratio {}",
            stats.kopf_ratio()
        );
        assert!(
            records.iter().all(|r| r.timestamp.is_some()),
            "{name}: every record has a time"
        );
        seen += 1;
    }
    assert!(seen >= 10, "captures present: {seen}");
}

#[test]
fn temporary_errors_read_the_same_in_all_three_formats() {
    let full = failures(&parse("silent-failures.full.log").0);
    assert!(!full.is_empty());
    assert!(
        full.iter().all(|(kind, handler, object)| {
            kind == "HandlerFailedTemporarily"
                && handler == "Handler 'reconcile'"
                && !object.is_empty()
        }),
        "{full:?}"
    );
    assert_eq!(failures(&parse("silent-failures.json.log").0), full);
    assert_eq!(failures(&parse("silent-failures.plain.log").0), full);
}

#[test]
fn forbidden_event_posts_are_recognised_with_their_code() {
    for format in ["full", "json", "plain"] {
        let (records, _) = parse(&format!("no-events-create.{format}.log"));
        assert!(
            records
                .iter()
                .any(|r| matches!(r.kind, EventKind::EventPostFailed { code: Some(403) })),
            "{format}: Failed to post an event ... Code: 403"
        );
        let denial = records
            .iter()
            .find_map(|r| r.forbidden.as_ref())
            .unwrap_or_else(|| panic!("{format}: a forbidden record"));
        assert_eq!(
            (denial.verb.as_str(), denial.resource.as_str()),
            ("create", "events"),
            "{format}"
        );
    }
}

#[test]
fn missing_crd_list_degrades_permissions() {
    for format in ["full", "json"] {
        let (records, _) = parse(&format!("no-crd-list.{format}.log"));
        assert!(
            records.iter().any(|r| matches!(
                r.kind,
                EventKind::PermissionDegraded {
                    what: PermissionScope::Watch
                }
            )),
            "{format}"
        );
        let denial = records
            .iter()
            .find_map(|r| r.forbidden.as_ref())
            .expect("forbidden");
        assert_eq!(denial.resource, "customresourcedefinitions", "{format}");
        assert!(denial.cluster_scope, "{format}");
    }
}

#[test]
fn pruning_schemas_show_patch_inconsistencies() {
    for format in ["full", "plain"] {
        let (records, _) = parse(&format!("pruning-status.{format}.log"));
        assert!(
            records
                .iter()
                .any(|r| matches!(r.kind, EventKind::PatchInconsistencies)),
            "{format}"
        );
    }
}

#[test]
fn a_forbidden_served_resource_names_the_verb_and_resource() {
    for format in ["full", "json"] {
        let (records, _) = parse(&format!("crashloop.{format}.log"));
        let denial = records
            .iter()
            .find_map(|r| r.forbidden.as_ref())
            .expect("forbidden");
        assert_eq!(denial.resource, "beacons", "{format}");
        assert!(
            ["list", "watch"].contains(&denial.verb.as_str()),
            "{format}: {}",
            denial.verb
        );
    }
}

#[test]
fn cluster_scoped_objects_have_no_namespace() {
    let (records, _) = parse("cluster-scoped-posted.full.log");
    let failure = records
        .iter()
        .find(|r| r.kind.is_handler_failure())
        .expect("a failure");
    let object = failure.object.as_ref().expect("object");
    assert!(object.namespace.is_none(), "{object:?}");
    assert!(object.name.ends_with("-gadget"));
}

// ---------------------------------------------------------------------------
// REAL output of kopf 1.38.0, 1.43.0 and 1.45.2, captured without a cluster
// (`hack/capture-kopf-logs.sh local`: tests/capture/capture_operator.py against
// tests/capture/fake_apiserver.py): `kopf-VERSION-RUN.FORMAT.log`.

const VERSIONS: [&str; 3] = ["1.38.0", "1.43.0", "1.45.2"];

fn kopf_version(v: &str) -> KopfVersion {
    KopfVersion::parse(v).expect("a version")
}

/// Each release's wording narrows the log's version range to one that holds
/// that release (and the DEBUG banner makes it exact).
#[test]
fn each_release_reads_as_its_wording_says() {
    for v in VERSIONS {
        let version = kopf_version(v);
        for run in ["handlers.full", "handlers.json", "peering.plain"] {
            let (_, stats) = parse(&format!("kopf-{v}-{run}.log"));
            let range = stats.kopf_version;
            assert!(
                !range.is_empty() && range.contains(version),
                "{v} {run}: {range:?}"
            );
            // Every other captured release is excluded by the wording alone.
            for other in VERSIONS.iter().filter(|o| **o != v) {
                if run != "peering.plain" {
                    assert!(
                        !range.contains(kopf_version(other)),
                        "{v} {run}: {other} in {range:?}"
                    );
                }
            }
        }
        // `--verbose`: the banner names the release.
        let (_, stats) = parse(&format!("kopf-{v}-handlers.full.log"));
        assert_eq!(stats.kopf_version.exact_version(), Some(version), "{v}");
    }
}

#[test]
fn the_clues_of_each_release() {
    let clues = |name: &str| -> BTreeSet<String> {
        parse(name)
            .0
            .iter()
            .filter_map(|r| r.version.map(|s| format!("{:?}", s.clue)))
            .collect()
    };
    let old = clues("kopf-1.38.0-handlers.json.log");
    for want in [
        "ExceptionWillRetry",
        "PatchingFailed",
        "TooManyRequestsWarning",
    ] {
        assert!(old.contains(want), "1.38.0: {old:?}");
    }
    let mid = clues("kopf-1.43.0-handlers.json.log");
    for want in [
        "ExceptionAndWill",
        "PatchingFailed",
        "TooManyRequestsRetried",
    ] {
        assert!(mid.contains(want), "1.43.0: {mid:?}");
    }
    let new = clues("kopf-1.45.2-handlers.json.log");
    for want in [
        "ExceptionAndWill",
        "MergePatchingFinished",
        "TooManyRequestsRetried",
    ] {
        assert!(new.contains(want), "1.45.2: {new:?}");
    }
    // DEBUG-only clues (Routine::Count drops these records, Stats keeps their range).
    let debug = clues("kopf-1.45.2-handlers.full.log");
    for want in ["Banner", "MergePatchingWith", "RetryAfterOverride"] {
        assert!(debug.contains(want), "1.45.2 --verbose: {debug:?}");
    }
    assert!(clues("kopf-1.38.0-handlers.full.log").contains("PatchingWith"));
}

#[test]
fn failed_background_tasks_are_named() {
    for v in VERSIONS {
        let (records, _) = parse(&format!("kopf-{v}-peering.plain.log"));
        assert!(
            records
                .iter()
                .any(|r| r.kind == EventKind::PeeringPaused && r.format == Some(LogFormat::Plain)),
            "{v}: Pausing operations in favour of ..."
        );
        let keepalive = records
            .iter()
            .find(|r| r.kind.background_task() == Some(BackgroundTask::PeeringKeepAlive))
            .unwrap_or_else(|| panic!("{v}: Peering keep-alive for ... has failed"));
        assert_eq!(
            keepalive.kind,
            EventKind::TaskFailed {
                task: BackgroundTask::PeeringKeepAlive,
                target: Some("default".into()),
                namespace: Some("capture".into()),
            },
            "{v}"
        );
        assert_eq!(keepalive.level, Some(Level::Error), "{v}");
        assert!(!keepalive.traceback.is_empty(), "{v}");
        let (records, _) = parse(&format!("kopf-{v}-handlers.json.log"));
        let watcher = records
            .iter()
            .find(|r| matches!(r.kind, EventKind::WatcherFailed { .. }))
            .unwrap_or_else(|| panic!("{v}: Watcher for ... has failed"));
        assert_eq!(
            watcher.kind,
            EventKind::WatcherFailed {
                resource: "beacons.v1.capture.kopf-audit.dev".into(),
                namespace: Some("capture".into()),
            }
        );
        let denial = watcher.forbidden.as_ref().expect("a denial");
        assert_eq!(
            (denial.verb.as_str(), denial.resource.as_str()),
            ("watch", "beacons")
        );
        // 1.45 re-raises: the multitasker fails and kopf exits; older ones run on.
        let multitasker = records
            .iter()
            .any(|r| r.kind == EventKind::MultitaskerFailed);
        assert_eq!(multitasker, v == "1.45.2", "{v}");
    }
}

#[test]
fn handler_outcomes_in_each_release() {
    for v in VERSIONS {
        let (records, _) = parse(&format!("kopf-{v}-handlers.json.log"));
        let kinds: BTreeSet<&str> = records.iter().map(|r| r.kind.name()).collect();
        for want in [
            "HandlerSucceeded",
            "HandlerFailedTemporarily",
            "HandlerFailedPermanently",
            "HandlerFailedWithException",
            "PatchInconsistencies",
            "CauseProcessed",
        ] {
            assert!(kinds.contains(want), "{v}: {want} in {kinds:?}");
        }
        let retry = records
            .iter()
            .find_map(|r| match &r.kind {
                EventKind::HandlerFailedWithException {
                    outcome,
                    retry_in_seconds,
                    ..
                } => Some((*outcome, *retry_in_seconds)),
                _ => None,
            })
            .expect("an exception");
        // `Will retry.` has no delay; `will try again in 1 seconds` has.
        let want = if v == "1.38.0" { None } else { Some(1.0) };
        assert_eq!(retry, (ExceptionOutcome::Retry, want), "{v}");
    }
}

#[test]
fn debug_records_are_counted() {
    for v in VERSIONS {
        let (_, verbose) = parse(&format!("kopf-{v}-handlers.full.log"));
        assert!(
            verbose.debug_records * 2 > verbose.records,
            "{v} --verbose: {} of {} records",
            verbose.debug_records,
            verbose.records
        );
        let (_, quiet) = parse(&format!("kopf-{v}-handlers.json.log"));
        assert_eq!(quiet.debug_records, 0, "{v}");
    }
}

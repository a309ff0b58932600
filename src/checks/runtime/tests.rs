//! Tests of the runtime checks.

use super::*;
use crate::catalog::Severity;
use crate::model::evidence::{Handling, KopfEvidence, Peer, PeeringObject};
use crate::model::kopf_run::{Peering, Scope};
use crate::model::testing::run;
use k8s_openapi::api::core::v1::Pod;
use std::collections::BTreeMap;

/// Parses sample lines as the gatherer would.
pub(crate) fn parse(lines: &[&str]) -> LogEvidence {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records = Vec::new();
    for line in lines {
        records.extend(parser.push_line(line.as_bytes()));
    }
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    let stats = parser.stats();
    LogEvidence {
        records,
        version: stats.kopf_version,
        stats,
        tally: parser.tally().clone(),
        ..Default::default()
    }
}

/// A log kopf really wrote (`crates/kopf-log/tests/data/captured/NAME`), as the
/// pods/log API serves it.
fn captured(name: &str) -> LogEvidence {
    let path = format!(
        "{}/crates/kopf-log/tests/data/captured/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse(&text.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>())
}

fn target_with(logs: LogEvidence) -> (TargetEvidence, KopfEvidence) {
    let mut t = TargetEvidence::default();
    t.deployment.metadata.name = Some("op".into());
    let mut k = KopfEvidence::unread(run(Scope::ClusterWide, Peering::Auto));
    k.logs = Ok(logs);
    (t, k)
}

fn ids(lines: &[&str]) -> Vec<CheckId> {
    let (t, k) = target_with(parse(lines));
    check(&t, &k, &settings())
        .into_iter()
        .map(|r| r.finding.check)
        .collect()
}

fn settings() -> CheckSettings {
    crate::model::settings::AuditSettings::from_spec(&crate::api::KopfAuditSpec::for_deployment(
        "op",
    ))
    .checks(now())
}

fn now() -> jiff::Timestamp {
    "2026-12-01T12:00:00Z".parse().expect("a timestamp")
}

const FULL_FAIL: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed temporarily: backend down";
const FULL_FORBIDDEN: &str = "[2026-11-30 02:41:55,039] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: GET https://x/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:ns:op\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope', {})";

#[test]
fn handler_failures_and_forbidden() {
    let found = ids(&[FULL_FAIL, FULL_FORBIDDEN]);
    assert!(
        found.contains(&CheckId::RuntimeHandlerFailures),
        "{found:?}"
    );
    assert!(
        found.contains(&CheckId::RuntimeStartupForbidden),
        "{found:?}"
    );
    let f: Vec<Finding> = startup_forbidden::decide("op", &parse(&[FULL_FORBIDDEN]))
        .into_iter()
        .map(|r| r.finding)
        .collect();
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("`list` on customresourcedefinitions"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.contains("apiextensions.k8s.io"),
        "{}",
        f[0].message
    );
}

#[test]
fn the_same_failure_twice_is_one_finding_naming_each_object_once() {
    let b = FULL_FAIL.replace("[ns/a]", "[ns/b]");
    let f = handler_failures::decide("op", &parse(&[FULL_FAIL, FULL_FAIL, &b]));
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("ns/a, ns/b"), "{}", f[0].message);
    assert_eq!(f[0].severity, Severity::Warning);
}

#[test]
fn quiet_log_has_no_findings_and_noise_is_reported_as_unparsed() {
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    assert!(!ids(&[ok]).contains(&CheckId::RuntimeUnparsedLogs));
    let noise: Vec<&str> = std::iter::repeat_n("hello from print()", 30).collect();
    assert_eq!(ids(&noise), vec![CheckId::RuntimeUnparsedLogs]);
}

// --- runtime.dead-watcher, on what kopf 1.38.0 and 1.45.2 really print -------------

#[test]
fn a_dead_watcher_of_an_old_kopf_is_blind_until_restarted() {
    let logs = captured("kopf-1.38.0-handlers.json.log");
    let found = dead_watcher::decide("op", &logs);
    assert!(!found.is_empty());
    let watcher = found
        .iter()
        .find(|f| {
            f.message
                .contains("watcher for beacons.v1.capture.kopf-audit.dev@capture")
        })
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert_eq!(watcher.severity, Severity::Error);
    assert!(
        watcher.message.contains("does not respawn it"),
        "{}",
        watcher.message
    );
    // Without the DEBUG banner, the JSON log's wording bounds the release from above.
    assert!(
        watcher.message.contains("or older does not respawn"),
        "{}",
        watcher.message
    );
    let evidence = watcher.evidence.as_deref().unwrap_or_default();
    assert!(evidence.contains("has failed"), "{evidence}");
}

#[test]
fn a_failed_peering_keep_alive_is_a_dead_task_too() {
    let found = dead_watcher::decide("op", &captured("kopf-1.43.0-peering.plain.log"));
    assert!(
        found
            .iter()
            .any(|f| f.message.contains("peering keep-alive for default@capture")),
        "{found:#?}"
    );
}

#[test]
fn kopf_1_45_exits_on_a_dead_watcher_and_the_previous_log_says_why() {
    let crashed = captured("crashloop.full.log");
    let mut logs = captured("crashloop.full.restart1.log");
    logs.records.retain(|r| r.kind.background_task().is_none());
    logs.version = crashed.version;
    logs.version.narrow(VersionRange {
        at_least: Some(KopfVersion::new(1, 45, 0)),
        at_most: None,
    });
    logs.previous.insert("op-0".into(), crashed.records);
    let found = dead_watcher::decide("op", &logs);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains("stops the whole operator"),
        "{}",
        found[0].message
    );

    // Up to 1.44 the restart revived the watcher: the previous log is history.
    logs.version = VersionRange {
        at_least: None,
        at_most: Some(KopfVersion::new(1, 44, 6)),
    };
    assert!(dead_watcher::decide("op", &logs).is_empty());
}

#[test]
fn a_healthy_log_has_no_dead_watcher() {
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    assert!(dead_watcher::decide("op", &parse(&[ok])).is_empty());
}

// --- runtime.kopf-version ------------------------------------------------------------

#[test]
fn the_version_is_read_from_the_wording_and_old_ones_warn() {
    for (file, severity, shown) in [
        (
            "kopf-1.38.0-handlers.full.log",
            Severity::Warning,
            "kopf 1.38.0",
        ),
        (
            "kopf-1.43.0-handlers.full.log",
            Severity::Warning,
            "kopf 1.43.0",
        ),
        (
            "kopf-1.45.2-handlers.full.log",
            Severity::Info,
            "kopf 1.45.2",
        ),
    ] {
        let f = kopf_version::decide("op", &captured(file)).unwrap_or_else(|| panic!("{file}"));
        assert_eq!(f.severity, severity, "{file}: {}", f.message);
        assert!(f.message.contains(shown), "{file}: {}", f.message);
    }
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    let unknown = parse(&[ok]);
    if unknown.version.is_unbounded() {
        assert!(kopf_version::decide("op", &unknown).is_none());
    }
}

// --- runtime.not-handling ------------------------------------------------------------

fn running_pod(container: &str, running: bool) -> Pod {
    let state = if running {
        serde_json::json!({"running": {"startedAt": "2026-12-01T10:00:00Z"}})
    } else {
        serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}})
    };
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "op-0"},
        "status": {"containerStatuses": [{
            "name": container, "image": "x", "imageID": "", "ready": running,
            "restartCount": 0, "state": state,
        }]},
    }))
    .expect("a pod")
}

fn changed(name: &str, minutes_ago: i64, handling: Handling) -> ObjectSample {
    let at = now() - jiff::SignedDuration::from_mins(minutes_ago);
    ObjectSample {
        resource: 0,
        namespace: "ns".into(),
        name: name.into(),
        annotations: BTreeMap::new(),
        finalizers: Vec::new(),
        deletion_timestamp: None,
        status_kopf_keys: Vec::new(),
        handling: Handling {
            changed_by_others: Some(at),
            ..handling
        },
    }
}

fn unhandled() -> Handling {
    Handling {
        diffbase: true,
        differs: true,
        ..Handling::default()
    }
}

#[test]
fn a_change_unhandled_for_longer_than_the_threshold_while_running_is_not_handling() {
    let objects = [
        changed("late", 25, unhandled()),
        changed("recent", 3, unhandled()),
        changed(
            "handled",
            60,
            Handling {
                differs: false,
                ..unhandled()
            },
        ),
        changed(
            "no-diffbase",
            60,
            Handling {
                diffbase: false,
                ..unhandled()
            },
        ),
    ];
    let pods = [running_pod("operator", true)];
    let logs = captured("kopf-1.45.2-handlers.full.log");
    let f = not_handling::decide("op", &objects, &pods, "operator", &logs, &settings())
        .expect("a finding");
    assert_eq!(f.check, CheckId::RuntimeNotHandling);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("ns/late (over 25 min)"), "{}", f.message);
    for quiet in ["ns/recent", "ns/handled", "ns/no-diffbase"] {
        assert!(!f.message.contains(quiet), "{quiet}: {}", f.message);
    }
    assert_eq!(
        f.evidence.as_deref(),
        Some("1 handled object(s) changed and not handled")
    );
}

#[test]
fn a_pod_that_does_not_run_is_another_check_s_business() {
    let objects = [changed("late", 25, unhandled())];
    let crashing = [running_pod("operator", false)];
    let logs = LogEvidence::default();
    assert!(
        not_handling::decide("op", &objects, &crashing, "operator", &logs, &settings()).is_none()
    );
    // The threshold is the spec's.
    let mut spec = crate::api::KopfAuditSpec::for_deployment("op");
    spec.thresholds.unhandled_after = Some("30m".into());
    let patient = crate::model::settings::AuditSettings::from_spec(&spec).checks(now());
    let running = [running_pod("operator", true)];
    assert!(not_handling::decide("op", &objects, &running, "operator", &logs, &patient).is_none());
}

#[test]
fn likely_causes_follow_the_log_and_the_objects() {
    // kopf 1.38 without watch timeouts: a silently frozen stream; a dead watcher.
    let old = not_handling::likely_causes(&captured("kopf-1.38.0-handlers.json.log"), false);
    assert!(old.contains("dead watcher"), "{old}");
    assert!(old.contains("froze silently"), "{old}");
    // A peering paused in favour of another operator, last thing said.
    let paused = not_handling::likely_causes(&captured("kopf-1.45.2-peering.plain.log"), false);
    let last_turn = captured("kopf-1.45.2-peering.plain.log")
        .records
        .iter()
        .rfind(|r| matches!(r.kind, EventKind::PeeringPaused | EventKind::PeeringResumed))
        .map(|r| matches!(r.kind, EventKind::PeeringPaused));
    assert_eq!(
        paused.contains("paused peering"),
        last_turn == Some(true),
        "{paused}"
    );
    // kopf wrote to the object after the change: a handler that does not finish.
    let stuck = not_handling::likely_causes(&LogEvidence::default(), true);
    assert!(stuck.contains("does not finish"), "{stuck}");
    let objects = [changed(
        "retried",
        25,
        Handling {
            changed_by_kopf: Some(now() - jiff::SignedDuration::from_mins(1)),
            ..unhandled()
        },
    )];
    let pods = [running_pod("operator", true)];
    let f = not_handling::decide(
        "op",
        &objects,
        &pods,
        "operator",
        &LogEvidence::default(),
        &settings(),
    )
    .expect("a finding");
    assert!(f.message.contains("does not finish"), "{}", f.message);
}

#[test]
fn without_a_diff_base_managed_fields_are_the_second_signal() {
    let kopf_wrote = |minutes_ago: i64| Handling {
        diffbase: false,
        differs: false,
        changed_by_kopf: Some(now() - jiff::SignedDuration::from_mins(minutes_ago)),
        ..Handling::default()
    };
    let pods = [running_pod("operator", true)];
    let logs = LogEvidence::default();
    // kopf wrote 40 minutes ago, someone else 25 minutes ago, no diff-base.
    let lone = [changed("lost", 25, kopf_wrote(40))];
    // Alone, the resource may have daemons or timers only: nothing to judge.
    assert!(not_handling::decide("op", &lone, &pods, "operator", &logs, &settings()).is_none());
    // Next to an object with a diff-base, kopf diffs the resource.
    let diffed = [
        lone[0].clone(),
        changed(
            "fine",
            60,
            Handling {
                differs: false,
                ..unhandled()
            },
        ),
    ];
    let f = not_handling::decide("op", &diffed, &pods, "operator", &logs, &settings())
        .expect("a finding");
    assert!(f.message.contains("ns/lost (over 25 min)"), "{}", f.message);
    // kopf wrote after the other change: nothing waits.
    let answered = [changed("answered", 25, kopf_wrote(5)), diffed[1].clone()];
    assert!(not_handling::decide("op", &answered, &pods, "operator", &logs, &settings()).is_none());
}

// --- runtime.foreign-peer ------------------------------------------------------------

fn peer(id: &str, priority: i64, seen_secs_ago: i64) -> Peer {
    Peer {
        id: id.into(),
        priority,
        lifetime_seconds: 60,
        lastseen: Some(now() - jiff::SignedDuration::from_secs(seen_secs_ago)),
    }
}

fn peering(peers: Vec<Peer>) -> PeeringObject {
    PeeringObject {
        namespace: Some("ns".into()),
        name: "default".into(),
        peers,
    }
}

/// Deployment `op` with pod `op-7d9f8c6b5-x2k4z`.
fn peered_target() -> TargetEvidence {
    let mut t = TargetEvidence::default();
    t.deployment.metadata.name = Some("op".into());
    t.pods = vec![running_pod("operator", true)];
    t.pods[0].metadata.name = Some("op-7d9f8c6b5-x2k4z".into());
    t
}

#[test]
fn a_dev_run_on_a_laptop_makes_the_operator_pause() {
    let t = peered_target();
    let run = run(Scope::ClusterWide, Peering::Auto);
    let objects = [peering(vec![
        peer("op-7d9f8c6b5-x2k4z", 0, 5),
        peer("root@op-7d9f8c6b5-x2k4z/20261201100000/abc", 0, 5),
        peer("op-5c4b3a291-qw7er", 0, 5),
        peer("jane@laptop.local/20261201113000/xyz", 666, 10),
        peer("gone@laptop/20261201090000/old", 666, 3600),
    ])];
    let paused = parse(&[
        "Pausing operations in favour of [<Peer jane@laptop.local/20261201113000/xyz: priority=666, lifetime=60, lastseen='2026-12-01T11:59:50+00:00'>].",
    ]);
    let found = foreign_peer::decide(&t, &run, &objects, &paused, now());
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f.check, CheckId::RuntimeForeignPeer);
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("KopfPeering ns/default"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("jane@laptop.local/20261201113000/xyz (priority 666, what --dev sets"),
        "{}",
        f.message
    );
    assert!(f.message.contains("log confirms"), "{}", f.message);
    // Its own pods (by POD_ID, by hostname, a rollout's old ReplicaSet) and the dead are not named.
    for own in ["op-7d9f8c6b5-x2k4z", "root@op-", "op-5c4b3a291", "gone@"] {
        assert!(!f.message.contains(own), "{own}: {}", f.message);
    }
    // Times are not quoted in the message: keep-alives do not change it.
    assert!(!f.message.contains("lastseen"), "{}", f.message);
}

#[test]
fn same_priority_peers_conflict_and_lower_ones_matter_only_from_a_laptop() {
    let t = peered_target();
    let run = run(Scope::ClusterWide, Peering::Auto);
    let quiet = LogEvidence::default();
    let same = [peering(vec![
        peer("op-7d9f8c6b5-x2k4z", 10, 5),
        peer("other-5c4b3a291-qw7er", 10, 5),
    ])];
    let f = foreign_peer::decide(&t, &run, &same, &quiet, now());
    assert!(
        f[0].message.contains("the same priority 10: both pause"),
        "{}",
        f[0].message
    );
    let lower_pod = [peering(vec![
        peer("op-7d9f8c6b5-x2k4z", 10, 5),
        peer("other-5c4b3a291-qw7er", 1, 5),
    ])];
    assert!(foreign_peer::decide(&t, &run, &lower_pod, &quiet, now()).is_empty());
    let lower_laptop = [peering(vec![
        peer("op-7d9f8c6b5-x2k4z", 10, 5),
        peer("jane@laptop", 1, 5),
    ])];
    let f = foreign_peer::decide(&t, &run, &lower_laptop, &quiet, now());
    assert!(
        f[0].message.contains("a developer's machine"),
        "{}",
        f[0].message
    );
    // Alone, nothing to say; without its own entry, --priority is the operator's.
    let alone = [peering(vec![peer("op-7d9f8c6b5-x2k4z", 0, 5)])];
    assert!(foreign_peer::decide(&t, &run, &alone, &quiet, now()).is_empty());
    let mut prioritised = run.clone();
    prioritised.priority = Some(200);
    let freeze = [peering(vec![peer("jane@laptop", 100, 5)])];
    assert!(
        foreign_peer::decide(&t, &prioritised, &freeze, &quiet, now())[0]
            .message
            .contains("developer")
    );
    let f = foreign_peer::decide(&t, &run, &freeze, &quiet, now());
    assert!(
        f[0].message.contains("kopf freeze's default"),
        "{}",
        f[0].message
    );
}

// --- runtime.rate-limited, in the wording of kopf 1.45.2 and 1.38.0 -----------------

/// kopf 1.45.2 `_cogs/clients/api.py`: a PATCH refused with 429 by API Priority and
/// Fairness, retried.
const FULL_429: &str = "[2026-12-02 15:10:01,123] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: PATCH https://127.0.0.1:6443/apis/x.dev/v1/namespaces/ns/things/a -> APITooManyRequestsError('Too many requests, please try again later.', {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': 'Too many requests, please try again later.', 'reason': 'TooManyRequests', 'details': {'retryAfterSeconds': 1}, 'code': 429})";

#[test]
fn retried_429s_are_rate_limiting_and_the_count_is_a_stable_bucket() {
    let one_line = rate_limited::decide("op", &parse(&[FULL_429, FULL_429])).expect("a finding");
    assert_eq!(one_line.check, CheckId::RuntimeRateLimited);
    assert_eq!(one_line.severity, Severity::Warning);
    assert!(
        one_line.message.contains("several requests"),
        "{}",
        one_line.message
    );
    assert!(
        one_line.message.contains("FlowSchema"),
        "{}",
        one_line.message
    );
    assert!(!one_line.message.contains("1.42.1"), "{}", one_line.message);
    let many: Vec<&str> = std::iter::repeat_n(FULL_429, 12).collect();
    let f = rate_limited::decide("op", &parse(&many)).expect("a finding");
    assert!(f.message.contains("10 or more requests"), "{}", f.message);
    let more: Vec<&str> = std::iter::repeat_n(FULL_429, 17).collect();
    let g = rate_limited::decide("op", &parse(&more)).expect("a finding");
    assert_eq!(f.message, g.message, "one more 429 changes nothing");
    assert!(ids(&[FULL_429, FULL_429]).contains(&CheckId::RuntimeRateLimited));
}

#[test]
fn one_retried_429_or_a_server_still_starting_is_no_rate_limiting() {
    assert!(
        rate_limited::decide("op", &parse(&[FULL_429])).is_none(),
        "a blip"
    );
    assert!(!ids(&[FULL_429]).contains(&CheckId::RuntimeRateLimited));
    // kube-apiserver's watch cache for a CRD created a moment before the operator.
    let warming = FULL_429.replace(
        "'Too many requests, please try again later.'",
        "'storage is (re)initializing'",
    );
    let warming: Vec<&str> = std::iter::repeat_n(warming.as_str(), 5).collect();
    assert!(
        rate_limited::decide("op", &parse(&warming)).is_none(),
        "not throttling"
    );
}

#[test]
fn a_429_that_escalates_is_an_error_quoting_the_last_attempt() {
    let last = FULL_429
        .replace("#1/9", "#9/9")
        .replace("will retry", "escalating");
    let f = rate_limited::decide("op", &parse(&[FULL_429, &last])).expect("a finding");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.contains("escalating")),
        "{f:?}"
    );
    assert!(f.message.contains("gave up"), "{}", f.message);
}

#[test]
fn old_kopf_s_watch_warning_is_rate_limiting_with_the_upgrade_advice() {
    // kopf 1.38.0 `_cogs/clients/watching.py`, the only place it logs a 429.
    let line = "[2026-12-02 15:10:01,123] kopf._cogs.clients.w [WARNING ] Receiving `too many requests` error from server, will retry after 1 seconds. Error details: ('Too many requests, please try again later.', {'kind': 'Status', 'code': 429})";
    let f = rate_limited::decide("op", &parse(&[line, line])).expect("a finding");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("1.42.1 and older"), "{}", f.message);
}

#[test]
fn other_retried_errors_are_not_rate_limiting() {
    let server = FULL_429.replace(
        "APITooManyRequestsError('Too many requests, please try again later.'",
        "APIServerError('etcdserver: request timed out'",
    );
    assert!(rate_limited::decide("op", &parse(&[&server, FULL_FORBIDDEN, FULL_FAIL])).is_none());
    assert!(!ids(&[&server]).contains(&CheckId::RuntimeRateLimited));
}

/// `n` rounds of kopf 1.45.2's lines for one handled update of `ns/obj`, 0.2 s apart:
/// `who` succeeded, then the cause was processed.
fn rounds(n: usize, who: &str, cause: &str, obj: &str) -> Vec<String> {
    (0..n)
        .flat_map(|i| {
            let at = format!("2026-12-02 10:00:{:02},{:03}", i / 5, (i % 5) * 200);
            [
                format!("[{at}] kopf.objects         [INFO    ] [ns/{obj}] {who} succeeded."),
                format!(
                    "[{at}] kopf.objects         [INFO    ] [ns/{obj}] {cause} is processed: 1 succeeded; 0 failed."
                ),
            ]
        })
        .collect()
}

fn loops(lines: &[String]) -> Vec<Finding> {
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    handler_loop::decide("op", &parse(&lines), &[])
}

#[test]
fn handler_loop_names_the_handler_the_object_and_the_rate() {
    let mut lines = rounds(12, "Handler 'stamp'", "Updating", "w1");
    lines.extend(rounds(3, "Handler 'stamp'", "Updating", "w2"));
    let found = loops(&lines);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f.check, CheckId::RuntimeHandlerLoop);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("Handler 'stamp'"), "{}", f.message);
    assert!(f.message.contains("ns/w1"), "{}", f.message);
    assert!(!f.message.contains("ns/w2"), "{}", f.message);
    assert!(f.message.contains("10 or more times"), "{}", f.message);
    assert!(
        f.message.contains("every few seconds") || f.message.contains("more than once a second"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("only when the value differs"),
        "{}",
        f.message
    );
}

#[test]
fn handler_loop_is_stable_as_the_loop_goes_on() {
    let a = loops(&rounds(12, "Handler 'stamp'", "Updating", "w1"));
    let b = loops(&rounds(40, "Handler 'stamp'", "Updating", "w1"));
    assert_eq!(a, b);
}

#[test]
fn handler_loop_spares_timers_daemons_and_rare_or_other_causes() {
    assert!(loops(&rounds(30, "Timer 'tick'", "Updating", "w1")).is_empty());
    assert!(loops(&rounds(30, "Daemon 'watch'", "Updating", "w1")).is_empty());
    assert!(loops(&rounds(9, "Handler 'stamp'", "Updating", "w1")).is_empty());
    // Successes without updates processed as often: not the loop of a change handler.
    assert!(loops(&rounds(30, "Handler 'stamp'", "Resuming", "w1")).is_empty());
}

#[test]
fn handler_loop_counts_the_fast_scan_as_the_full_parse() {
    let lines = rounds(12, "Handler 'stamp'", "Updating", "w1");
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default())
        .with_routine(kopf_log::Routine::Count);
    for l in &lines {
        assert!(parser.push_line(l.as_bytes()).is_none());
    }
    while parser.finish().is_some() {}
    let logs = LogEvidence {
        tally: parser.tally().clone(),
        ..Default::default()
    };
    assert_eq!(handler_loop::decide("op", &logs, &[]), loops(&lines));
}

// --- runtime.startup-stalled ---------------------------------------------------------

fn pod_started(minutes_ago: i64) -> Pod {
    let at = now() - jiff::SignedDuration::from_mins(minutes_ago);
    let mut pod = running_pod("operator", true);
    if let Some(cs) = pod
        .status
        .as_mut()
        .and_then(|s| s.container_statuses.as_mut())
        .and_then(|c| c.first_mut())
    {
        cs.state =
            serde_json::from_value(serde_json::json!({"running": {"startedAt": at.to_string()}}))
                .expect("a state");
    }
    pod
}

fn never_touched(name: &str) -> ObjectSample {
    ObjectSample {
        handling: Handling::default(),
        ..changed(name, 30, Handling::default())
    }
}

/// What kopf 1.45.2 logged when its second startup handler never returned.
const STARTUP_ONLY: [&str; 4] = [
    "[2026-12-01 11:55:00,001] kopf.activities.star [INFO    ] Activity 'configure' succeeded.",
    "[2026-12-01 11:55:00,010] kopf._core.engines.a [INFO    ] Initial authentication has been initiated.",
    "[2026-12-01 11:55:00,020] kopf.activities.auth [INFO    ] Activity 'login_with_kubeconfig' succeeded.",
    "[2026-12-01 11:55:00,021] kopf._core.engines.a [INFO    ] Initial authentication has finished.",
];

fn stalled(minutes: i64, objects: &[ObjectSample], lines: &[&str]) -> Option<Finding> {
    let pods = [pod_started(minutes)];
    startup_stalled::decide("op", objects, &pods, "operator", &parse(lines), &settings())
}

#[test]
fn a_startup_that_never_ends_is_startup_stalled() {
    let objects = [never_touched("w1"), never_touched("w2")];
    let f = stalled(5, &objects, &STARTUP_ONLY).expect("a finding");
    assert_eq!(f.check, CheckId::RuntimeStartupStalled);
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("ns/w1, ns/w2"), "{}", f.message);
    assert!(
        f.message.contains("@kopf.on.startup") && f.message.contains("worker_limit"),
        "{}",
        f.message
    );
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.contains("Initial authentication has finished")),
        "{f:?}"
    );
    // The same log, minutes later: the same finding.
    assert_eq!(stalled(8, &objects, &STARTUP_ONLY), Some(f));
}

#[test]
fn startup_stalled_waits_and_needs_the_whole_life_and_unmarked_objects() {
    let objects = [never_touched("w1")];
    assert!(stalled(1, &objects, &STARTUP_ONLY).is_none(), "too early");
    assert!(
        stalled(30, &objects, &STARTUP_ONLY).is_none(),
        "started before the window"
    );
    assert!(
        stalled(5, &[], &STARTUP_ONLY).is_none(),
        "nothing to handle"
    );
    let marked = [ObjectSample {
        finalizers: vec!["example.com/finalizer".into()],
        ..never_touched("w1")
    }];
    assert!(
        stalled(5, &marked, &STARTUP_ONLY).is_none(),
        "kopf was there"
    );
    let mut handled = STARTUP_ONLY.to_vec();
    handled.push(
        "[2026-12-01 11:55:01,000] kopf.objects         [INFO    ] [ns/w1] Timer 'tick' succeeded.",
    );
    assert!(stalled(5, &objects, &handled).is_none(), "a handler ran");
    // Indexers succeed while kopf waits for the indexing (verbose mode): still stalled.
    let mut indexing = STARTUP_ONLY.to_vec();
    indexing.push("[2026-12-01 11:55:01,000] kopf.objects         [INFO    ] [ns/w1] Indexer 'by_owner' succeeded.");
    assert!(
        stalled(5, &objects, &indexing).is_some(),
        "indexing is not handling"
    );
    let mut failing = STARTUP_ONLY.to_vec();
    failing.push(FULL_FAIL);
    assert!(
        stalled(5, &objects, &failing).is_none(),
        "handler-failures' business"
    );
}

#[test]
fn handler_loop_leaves_out_objects_others_keep_changing() {
    let lines = rounds(12, "Handler 'stamp'", "Updating", "w1");
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let logs = parse(&lines);
    let at = |s: &str| s.parse::<jiff::Timestamp>().expect("a time");
    // Created before the loop began: still the handler's own loop.
    let created = ObjectSample {
        handling: Handling {
            changed_by_others: Some(at("2026-12-02T09:59:00Z")),
            ..Handling::default()
        },
        ..changed("w1", 0, Handling::default())
    };
    assert_eq!(
        handler_loop::decide("op", &logs, std::slice::from_ref(&created)).len(),
        1
    );
    // Changed by someone else while the handler kept succeeding: maybe their updates.
    let churned = ObjectSample {
        handling: Handling {
            changed_by_others: Some(at("2026-12-02T10:00:01Z")),
            ..Handling::default()
        },
        ..created
    };
    assert!(handler_loop::decide("op", &logs, &[churned]).is_empty());
}

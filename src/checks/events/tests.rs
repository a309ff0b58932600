//! Tests of the events checks.

use super::*;
use crate::catalog::{CheckId, EventType, REPORTING_CONTROLLER};
use kopf_log::Record;

fn event(name: &str, type_: &str, reason: &str, reporter: &str) -> EventRecord {
    EventRecord {
        group: "example.com".into(),
        kind: "Widget".into(),
        object_namespace: "ns".into(),
        filed_in: String::new(),
        name: name.into(),
        uid: format!("uid-{name}"),
        type_: EventType::parse(type_),
        reason: reason.into(),
        message: "m".into(),
        reporter: Reporter::parse(reporter),
        count: 1,
        time: None,
    }
}

fn logs(lines: &[&str]) -> LogEvidence {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records: Vec<Record> = lines
        .iter()
        .filter_map(|l| parser.push_line(l.as_bytes()))
        .collect();
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    LogEvidence {
        records,
        stats: parser.stats(),
        tally: parser.tally().clone(),
        ..Default::default()
    }
}

fn posted(events: &[EventRecord]) -> Vec<&EventRecord> {
    events
        .iter()
        .filter(|e| posted_by_operator(e, "op"))
        .collect()
}

const FAIL_A: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed temporarily: backend down";

#[test]
fn failure_without_warning_event_is_silent() {
    let l = logs(&[FAIL_A]);
    let f = silent_failures::live_on(
        "op",
        &l,
        &[event("a", "Normal", "Provisioned", "kopf")],
        false,
    )
    .expect("finding");
    assert!(f.message.contains("ns/a"), "{}", f.message);
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.contains("backend down"))
    );
    assert!(
        silent_failures::live_on(
            "op",
            &l,
            &[event("a", "Warning", "ProvisioningFailed", "kopf")],
            false
        )
        .is_none()
    );
}

#[test]
fn an_event_on_a_same_named_object_elsewhere_does_not_report_the_failure() {
    let l = logs(&[FAIL_A]);
    let mut elsewhere = event("a", "Warning", "Failed", "kopf");
    elsewhere.object_namespace = "other".into();
    assert!(silent_failures::live_on("op", &l, &[elsewhere], false).is_some());
}

#[test]
fn cluster_scoped_failures_match_events_of_cluster_scoped_objects() {
    let line = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [gadget-1] Handler 'reconcile' failed temporarily: boom";
    let l = logs(&[line]);
    let mut e = event("gadget-1", "Warning", "Failed", "kopf");
    e.object_namespace = String::new();
    assert!(silent_failures::live_on("op", &l, &[e], false).is_none());
    assert!(silent_failures::live_on("op", &l, &[], false).is_some());
    // Their Events may be in `default`, unread: not called silent.
    assert!(silent_failures::live_on("op", &l, &[], true).is_none());
    // A namespaced object's failure is judged all the same.
    assert!(silent_failures::live_on("op", &logs(&[FAIL_A]), &[], true).is_some());
}

#[test]
fn logging_events_spam_duplicates_and_post_failures() {
    let events = vec![
        event("a", "Normal", "Logging", "kopf"),
        event("a", "Warning", "Logging", "kopf"),
        event("a", "Warning", "Failed", "kopf"),
        event("b", "Normal", "Tick", "kopf"),
        event("b", "Normal", "Tick", "kopf"),
        event("b", "Normal", "Tick", "kopf"),
    ];
    let p = posted(&events);
    assert!(logging_flood::live_on("op", &p, false).is_some());
    assert!(duplicates::live_on("op", &p).is_some());
    let spam = steady_state_spam::live_on("op", &p, &LogEvidence::default(), 3).expect("spam");
    assert!(spam.message.contains("Tick"));
    assert!(steady_state_spam::live_on("op", &p, &LogEvidence::default(), 4).is_none());
    let l = logs(&[
        "[2026-11-30 02:41:55,039] kopf.objects         [WARNING ] [ns/a] Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden.",
    ]);
    let f = post_failures::live_on("op", &l).expect("post failure");
    assert!(f.message.contains("403"), "{}", f.message);
}

#[test]
fn events_of_others_never_count_against_the_operator() {
    let events: Vec<EventRecord> = ["kubelet", REPORTING_CONTROLLER, "other-controller"]
        .iter()
        .flat_map(|who| std::iter::repeat_n(event("b", "Warning", "BackOff", who), 5))
        .chain(std::iter::repeat_n(
            event("a", "Normal", "Logging", "kubelet"),
            3,
        ))
        .collect();
    let p = posted(&events);
    assert!(p.is_empty(), "{p:?}");
    assert!(steady_state_spam::live_on("op", &p, &LogEvidence::default(), 3).is_none());
    assert!(logging_flood::live_on("op", &p, false).is_none());
    let own = vec![event("b", "Normal", "Tick", "op"); 3];
    assert!(steady_state_spam::live_on("op", &posted(&own), &LogEvidence::default(), 3).is_some());
}

#[test]
fn quiet_operator_has_no_event_findings() {
    let events = vec![event("a", "Normal", "Provisioned", "kopf")];
    let p = posted(&events);
    assert!(logging_flood::live_on("op", &p, false).is_none());
    assert!(steady_state_spam::live_on("op", &p, &LogEvidence::default(), 3).is_none());
    assert!(duplicates::live_on("op", &p).is_none());
    assert!(truncated::live_on("op", &p).is_none());
}

/// A log in kopf 1.38.0's wording (`_core/actions/execution.py` before 1.40: `failed
/// with an exception. Will retry.`), its version range set as the gatherer sets it.
fn kopf_1_38_logs() -> LogEvidence {
    let mut l = logs(&[
        "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed with an exception. Will retry.",
    ]);
    l.version = l.stats.kopf_version;
    l
}

#[test]
fn before_posting_loggers_the_advice_is_the_level_not_the_loggers() {
    let old = kopf_1_38_logs();
    assert!(mirrors_every_record(&old), "{:?}", old.version);
    assert!(!mirrors_every_record(&logs(&[FAIL_A])), "no version clue");
    let flood = [event("a", "Normal", "Logging", "kopf")];
    let f = logging_flood::live_on("op", &posted(&flood), true).expect("a flood");
    assert!(f.message.contains("1.40 and older"), "{}", f.message);
    assert!(f.message.contains("posting.level"), "{}", f.message);
    let new = logging_flood::live_on("op", &posted(&flood), false).expect("a flood");
    assert!(!new.message.contains("1.40 and older"), "{}", new.message);
}

#[test]
fn before_posting_loggers_a_mirrored_failure_is_not_silent() {
    let old = kopf_1_38_logs();
    // kopf 1.38 posts the failure's ERROR record itself as a `Logging` Error Event.
    let mirrored = [event("a", "Error", "Logging", "kopf")];
    assert!(silent_failures::live_on("op", &old, &mirrored, false).is_none());
    // Without it, posting is off or above ERROR: the advice says so, not posting.loggers.
    let f = silent_failures::live_on("op", &old, &[], false).expect("silent");
    assert!(f.message.contains("posting.enabled"), "{}", f.message);
    assert!(!f.message.contains("posting.loggers"), "{}", f.message);
}

/// Logs whose stats hold `n` handler successes (routine lines the auditor never keeps).
fn logs_with_successes(n: usize) -> LogEvidence {
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    let lines: Vec<&str> = std::iter::repeat_n(ok, n).collect();
    logs(&lines)
}

#[test]
fn mirrored_problems_without_any_info_line_show_a_posting_level_above_info() {
    let events = [event("a", "Error", "Logging", "kopf")];
    let l = logs_with_successes(2);
    assert_eq!(l.stats.successes, 2);
    let f = posting_level::live_on("op", &l, &posted(&events)).expect("a finding");
    assert_eq!(f.check, CheckId::EventsPostingLevel);
    assert!(f.message.contains("kopf.info()"), "{}", f.message);
    assert!(f.message.contains("kopf.event("), "{}", f.message);
    assert!(
        f.evidence.as_deref().is_some_and(|e| e.contains("Logging")),
        "{f:?}"
    );
}

#[test]
fn a_normal_event_or_no_success_or_no_mirroring_is_no_posting_level_finding() {
    let l = logs_with_successes(2);
    // An explicit Normal Event from kopf: INFO-level posting reaches the cluster.
    let with_normal = [
        event("a", "Error", "Logging", "kopf"),
        event("b", "Normal", "Provisioned", "kopf"),
    ];
    assert!(posting_level::live_on("op", &l, &posted(&with_normal)).is_none());
    // No INFO line in the log: nothing was there to be dropped.
    let problems = [event("a", "Warning", "Logging", "kopf")];
    assert!(posting_level::live_on("op", &logs_with_successes(0), &posted(&problems)).is_none());
    // No `Logging` Event at all: the loggers are not mirrored (kopf 1.44+ default).
    let explicit = [event("a", "Warning", "ProvisioningFailed", "kopf")];
    assert!(posting_level::live_on("op", &l, &posted(&explicit)).is_none());
    // A Warning posted by someone else never counts.
    let foreign = [event("a", "Warning", "Logging", "kubelet")];
    assert!(posting_level::live_on("op", &l, &posted(&foreign)).is_none());
}

/// `n` Warning Events `ReconcileFailed` on `ns/a`, 15 s apart from 10:00:00.
fn attempts(n: usize, type_: &str) -> Vec<EventRecord> {
    (0..n)
        .map(|i| EventRecord {
            time: Some(
                format!("2026-12-02T10:{:02}:{:02}Z", i * 15 / 60, i * 15 % 60)
                    .parse()
                    .expect("a time"),
            ),
            message: "Backend down; retrying.".into(),
            ..event("a", type_, "ReconcileFailed", "kopf")
        })
        .collect()
}

/// kopf 1.45.2's retry lines of `who` on `ns/a`, 15 s apart from 10:00:00 (`_core/
/// actions/execution.py`: `failed with an exception and will try again in N seconds`).
fn retried(n: usize, who: &str) -> LogEvidence {
    let lines: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "[2026-12-02 10:{:02}:{:02},100] kopf.objects         [ERROR   ] [ns/a] {who} failed with an exception and will try again in 15 seconds: Backend down",
                i * 15 / 60,
                i * 15 % 60
            )
        })
        .collect();
    logs(&lines.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn a_warning_per_failed_attempt_of_a_retried_handler_is_not_spam() {
    let events = attempts(5, "Warning");
    let p = posted(&events);
    assert!(steady_state_spam::live_on("op", &p, &retried(5, "Handler 'reconcile'"), 3).is_none());
    // The last attempt fails for good: kopf writes no retry line for it.
    assert!(steady_state_spam::live_on("op", &p, &retried(4, "Handler 'reconcile'"), 3).is_none());
}

#[test]
fn the_same_warning_on_every_tick_or_beyond_the_retries_is_spam() {
    let events = attempts(5, "Warning");
    let p = posted(&events);
    // A timer failing and posting on each tick: timers run on purpose.
    assert!(steady_state_spam::live_on("op", &p, &retried(5, "Timer 'check'"), 3).is_some());
    // A timer posting the same Warning every tick, with no failure at all.
    assert!(steady_state_spam::live_on("op", &p, &LogEvidence::default(), 3).is_some());
    // Fewer retries than Events: not one Event per attempt.
    assert!(steady_state_spam::live_on("op", &p, &retried(2, "Handler 'reconcile'"), 3).is_some());
    // A steady state reported as Normal Events beside a retried failure is still spam.
    let normal = attempts(5, "Normal");
    assert!(
        steady_state_spam::live_on(
            "op",
            &posted(&normal),
            &retried(5, "Handler 'reconcile'"),
            3
        )
        .is_some()
    );
    // Events long after the retries stopped are not the retries'.
    let mut late = attempts(5, "Warning");
    for e in &mut late {
        e.time = e.time.map(|t| t + jiff::SignedDuration::from_hours(1));
    }
    assert!(
        steady_state_spam::live_on("op", &posted(&late), &retried(5, "Handler 'reconcile'"), 3)
            .is_some()
    );
}

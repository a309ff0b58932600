//! Tests of runtime.not-handling.

use super::*;
use crate::catalog::Severity;
use crate::checks::runtime::tests::{captured, changed, now, running_pod, settings};
use crate::model::evidence::Handling;

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
    let f = decide("op", &objects, &pods, "operator", &logs, &settings()).expect("a finding");
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
    assert!(decide("op", &objects, &crashing, "operator", &logs, &settings()).is_none());
    // The threshold is the spec's.
    let mut spec = crate::api::KopfAuditSpec::for_deployment("op");
    spec.thresholds.unhandled_after = Some("30m".into());
    let patient = crate::model::settings::AuditSettings::from_spec(&spec).checks(now());
    let running = [running_pod("operator", true)];
    assert!(decide("op", &objects, &running, "operator", &logs, &patient).is_none());
}

#[test]
fn likely_causes_follow_the_log_and_the_objects() {
    // kopf 1.38 without watch timeouts: a silently frozen stream; a dead watcher.
    let old = likely_causes(&captured("kopf-1.38.0-handlers.json.log"), false);
    assert!(old.contains("dead watcher"), "{old}");
    assert!(old.contains("froze silently"), "{old}");
    // A peering paused in favour of another operator, last thing said.
    let paused = likely_causes(&captured("kopf-1.45.2-peering.plain.log"), false);
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
    let stuck = likely_causes(&LogEvidence::default(), true);
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
    let f = decide(
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
    assert!(decide("op", &lone, &pods, "operator", &logs, &settings()).is_none());
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
    let f = decide("op", &diffed, &pods, "operator", &logs, &settings()).expect("a finding");
    assert!(f.message.contains("ns/lost (over 25 min)"), "{}", f.message);
    // kopf wrote after the other change: nothing waits.
    let answered = [changed("answered", 25, kopf_wrote(5)), diffed[1].clone()];
    assert!(decide("op", &answered, &pods, "operator", &logs, &settings()).is_none());
}

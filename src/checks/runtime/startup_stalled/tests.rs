//! Tests of runtime.startup-stalled.

use super::*;
use crate::catalog::Severity;
use crate::checks::runtime::tests::{FULL_FAIL, changed, now, parse, running_pod, settings};
use crate::model::evidence::Handling;

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
    decide("op", objects, &pods, "operator", &parse(lines), &settings())
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

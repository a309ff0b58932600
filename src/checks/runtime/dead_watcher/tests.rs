//! Tests of runtime.dead-watcher, on what kopf 1.38.0 and 1.45.2 really print.

use super::*;
use crate::catalog::Severity;
use crate::checks::runtime::tests::{captured, parse};
use kopf_log::{KopfVersion, VersionRange};

#[test]
fn a_dead_watcher_of_an_old_kopf_is_blind_until_restarted() {
    let logs = captured("kopf-1.38.0-handlers.json.log");
    let found = decide("op", &logs);
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
    let found = decide("op", &captured("kopf-1.43.0-peering.plain.log"));
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
    let found = decide("op", &logs);
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
    assert!(decide("op", &logs).is_empty());
}

#[test]
fn a_healthy_log_has_no_dead_watcher() {
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    assert!(decide("op", &parse(&[ok])).is_empty());
}

//! Tests of runtime.foreign-peer.

use super::*;
use crate::catalog::Severity;
use crate::checks::runtime::tests::{now, parse, running_pod};
use crate::model::kopf_run::{Peering, Scope};
use crate::model::testing::run;

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
    let found = decide(&t, &run, &objects, &paused, now());
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
    let f = decide(&t, &run, &same, &quiet, now());
    assert!(
        f[0].message.contains("the same priority 10: both pause"),
        "{}",
        f[0].message
    );
    let lower_pod = [peering(vec![
        peer("op-7d9f8c6b5-x2k4z", 10, 5),
        peer("other-5c4b3a291-qw7er", 1, 5),
    ])];
    assert!(decide(&t, &run, &lower_pod, &quiet, now()).is_empty());
    let lower_laptop = [peering(vec![
        peer("op-7d9f8c6b5-x2k4z", 10, 5),
        peer("jane@laptop", 1, 5),
    ])];
    let f = decide(&t, &run, &lower_laptop, &quiet, now());
    assert!(
        f[0].message.contains("a developer's machine"),
        "{}",
        f[0].message
    );
    // Alone, nothing to say; without its own entry, --priority is the operator's.
    let alone = [peering(vec![peer("op-7d9f8c6b5-x2k4z", 0, 5)])];
    assert!(decide(&t, &run, &alone, &quiet, now()).is_empty());
    let mut prioritised = run.clone();
    prioritised.priority = Some(200);
    let freeze = [peering(vec![peer("jane@laptop", 100, 5)])];
    assert!(
        decide(&t, &prioritised, &freeze, &quiet, now())[0]
            .message
            .contains("developer")
    );
    let f = decide(&t, &run, &freeze, &quiet, now());
    assert!(
        f[0].message.contains("kopf freeze's default"),
        "{}",
        f[0].message
    );
}

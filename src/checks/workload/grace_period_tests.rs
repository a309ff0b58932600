use super::*;
use crate::catalog::CheckId;
use crate::model::evidence::KopfEvidence;
use crate::model::source::{DaemonStop, Location, Millis};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};

fn target(grace: Option<i64>) -> TargetEvidence {
    let deployment = Deployment {
        metadata: kube::api::ObjectMeta {
            name: Some("op".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            template: PodTemplateSpec {
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "operator".into(),
                        command: Some(vec!["kopf".into(), "run".into(), "-n".into(), "ns".into()]),
                        ..Default::default()
                    }],
                    termination_grace_period_seconds: grace,
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        },
        ..Default::default()
    };
    TargetEvidence::new(deployment, Vec::new(), None)
}

fn kopf(target: &TargetEvidence, stop: Option<(u64, u64)>) -> KopfEvidence {
    let mut k = target.kopf.clone().expect("runs kopf");
    k.declared_daemon_stop = stop.map(|(backoff, timeout)| DaemonStop {
        function: "watch".into(),
        location: Location::new("op.py", 12),
        backoff: Millis(backoff),
        timeout: Millis(timeout),
    });
    k
}

#[test]
fn a_daemon_waited_for_longer_than_the_default_grace_period_is_reported() {
    let t = target(None);
    let found = grace_period::live_on(&t, &kopf(&t, Some((5_000, 60_000)))).expect("reported");
    assert_eq!(found.check, CheckId::WorkloadGracePeriod);
    assert!(
        found.message.contains("the default, 30 s"),
        "{}",
        found.message
    );
    assert!(found.message.contains("up to 65 s for daemon watch()"));
    assert_eq!(
        found.evidence.as_deref(),
        Some(
            "op.py:12: watch() cancellation_backoff 5 s + cancellation_timeout 60 s = 65 s; no terminationGracePeriodSeconds (the default, 30 s)"
        )
    );
    assert_eq!(
        found.fix.as_deref(),
        Some("spec:\n  template:\n    spec:\n      terminationGracePeriodSeconds: 75\n")
    );
}

#[test]
fn a_grace_period_that_covers_the_wait_or_no_declared_wait_is_no_finding() {
    let t = target(Some(90));
    assert_eq!(
        grace_period::live_on(&t, &kopf(&t, Some((5_000, 60_000)))),
        None
    );
    let t = target(None);
    assert_eq!(
        grace_period::live_on(&t, &kopf(&t, Some((0, 30_000)))),
        None,
        "equal"
    );
    assert_eq!(
        grace_period::live_on(&t, &kopf(&t, None)),
        None,
        "live: no source"
    );
}

#[test]
fn a_set_grace_period_below_a_fractional_wait_is_named() {
    let t = target(Some(10));
    let found = grace_period::live_on(&t, &kopf(&t, Some((0, 10_500)))).expect("reported");
    assert!(found.message.contains("terminationGracePeriodSeconds: 10,"));
    assert!(found.message.contains("10.500 s"));
    assert!(
        found
            .fix
            .is_some_and(|f| f.contains("terminationGracePeriodSeconds: 21"))
    );
}

//! Tests of `runtime.operator-conflict`.

use super::super::operator_conflict;
use crate::catalog::CheckId;
use crate::model::conflict::{Operator, Operators, Searched};
use crate::model::evidence::{Handling, ObjectEvidence};
use crate::model::evidence::{KopfEvidence, ObjectSample, TargetEvidence};
use crate::model::kopf_run::{Peering, Scope};
use crate::model::rbac::ServiceAccountRef;
use crate::model::testing::{ns, run, widget};
use std::collections::{BTreeMap, BTreeSet};

fn target(name: &str, namespace: &str) -> TargetEvidence {
    let mut t = TargetEvidence::default();
    t.deployment.metadata.name = Some(name.into());
    t.deployment.metadata.namespace = Some(namespace.into());
    t
}

fn other(namespace: &str, deployment: &str, scope: Scope, peering: Peering) -> Operator {
    Operator {
        namespace: namespace.into(),
        deployment: deployment.into(),
        service_account: ServiceAccountRef {
            namespace: namespace.into(),
            name: format!("{deployment}-sa"),
        },
        served_names: scope.specific_names(),
        scope,
        peering,
        resources: Some(BTreeSet::from([(
            "example.com".to_string(),
            "widgets".to_string(),
        )])),
    }
}

fn object(name: &str, annotations: &[&str], finalizers: &[&str]) -> ObjectSample {
    ObjectSample {
        resource: 0,
        namespace: "team".into(),
        name: name.into(),
        annotations: annotations
            .iter()
            .map(|k| (k.to_string(), 10))
            .collect::<BTreeMap<_, _>>(),
        finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
        deletion_timestamp: None,
        status_kopf_keys: Vec::new(),
        handling: Handling::default(),
    }
}

fn evidence(
    scope: Scope,
    peering: Peering,
    others: Vec<Operator>,
    samples: Vec<ObjectSample>,
) -> KopfEvidence {
    let mut k = KopfEvidence::unread(run(scope, peering));
    k.handled = Ok(vec![widget(true, true)]);
    k.objects = Ok(ObjectEvidence {
        samples,
        ..Default::default()
    });
    k.operators = Ok(Operators {
        found: others,
        searched: Searched::Namespace("team".into()),
    });
    k
}

#[test]
fn two_standalone_operators_name_each_other_and_the_objects() {
    let t = target("a", "team");
    let k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![
            other("team", "a", ns(&["team"]), Peering::Standalone),
            other("team", "b", ns(&["team"]), Peering::Standalone),
        ],
        vec![
            object(
                "w1",
                &[
                    "a.example.org/last-handled-configuration",
                    "b.example.org/last-handled-configuration",
                ],
                &["a.example.org/finalizer", "b.example.org/finalizer"],
            ),
            object("w2", &[], &[]),
        ],
    );
    let found = operator_conflict(&t, &k);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f.check, CheckId::RuntimeOperatorConflict);
    assert_eq!(f.severity, crate::catalog::Severity::Error);
    assert_eq!(f.target, "a");
    assert!(f.message.contains("Deployment team/b"), "{}", f.message);
    assert!(
        f.message.contains("ServiceAccount team/b-sa"),
        "{}",
        f.message
    );
    assert!(f.message.contains("widgets.example.com"), "{}", f.message);
    assert!(f.message.contains("`--standalone`"), "{}", f.message);
    let evidence = f.evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.contains("team/w1 (diff-bases under a.example.org and b.example.org, finalizers a.example.org/finalizer and b.example.org/finalizer)"),
        "{evidence}"
    );
    assert!(!evidence.contains("team/w2"), "{evidence}");
}

#[test]
fn without_marks_the_objects_both_serve_are_named_bounded() {
    let t = target("a", "team");
    let samples: Vec<ObjectSample> = (0..8).map(|i| object(&format!("w{i}"), &[], &[])).collect();
    let k = evidence(
        ns(&["team"]),
        Peering::Auto,
        vec![other("ops", "wide", Scope::ClusterWide, Peering::Auto)],
        samples,
    );
    let found = operator_conflict(&t, &k);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains("ClusterKopfPeering"),
        "{}",
        found[0].message
    );
    assert_eq!(
        found[0].evidence.as_deref(),
        Some("objects both serve: team/w0, team/w1, team/w2, team/w3, team/w4 and 3 more")
    );
}

#[test]
fn peered_operators_and_other_resources_are_no_conflict() {
    let t = target("a", "team");
    let peered = evidence(
        ns(&["team"]),
        Peering::Named("widgets".into()),
        vec![other(
            "team",
            "b",
            ns(&["team"]),
            Peering::Named("widgets".into()),
        )],
        vec![object("w1", &[], &[])],
    );
    assert!(operator_conflict(&t, &peered).is_empty());
    let mut gizmos = other("team", "b", ns(&["team"]), Peering::Standalone);
    gizmos.resources = Some(BTreeSet::from([(
        "example.com".to_string(),
        "gizmos".to_string(),
    )]));
    let apart = evidence(ns(&["team"]), Peering::Standalone, vec![gizmos], vec![]);
    assert!(operator_conflict(&t, &apart).is_empty());
}

#[test]
fn marks_no_rival_explains_say_where_the_auditor_looked() {
    let t = target("a", "team");
    let k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![],
        vec![object(
            "w1",
            &[
                "kopf.zalando.org/last-handled-configuration",
                "other.example.org/last-handled-configuration",
            ],
            &[],
        )],
    );
    let found = operator_conflict(&t, &k);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains("--allow-cross-namespace"),
        "{}",
        found[0].message
    );
    assert!(
        found[0]
            .evidence
            .as_deref()
            .is_some_and(|e| e.contains("team/w1")),
        "{:?}",
        found[0].evidence
    );
}

#[test]
fn nothing_is_concluded_without_the_other_operators() {
    let t = target("a", "team");
    let mut k = evidence(ns(&["team"]), Peering::Standalone, vec![], vec![]);
    k.operators = Err(crate::model::evidence::Unavailable::new(
        crate::model::evidence::Obstacle::Forbidden,
        "no",
    ));
    assert!(operator_conflict(&t, &k).is_empty());
}

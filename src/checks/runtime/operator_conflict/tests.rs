//! Tests of `runtime.operator-conflict`.

use super::decide as operator_conflict;
use crate::catalog::CheckId;
use crate::model::conflict::{Operator, Operators, Patchers, Searched};
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
        patchers: None,
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

fn account(namespace: &str, name: &str) -> ServiceAccountRef {
    ServiceAccountRef {
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// Widget `w1` in `team` with the diff-bases of two operators.
fn fought_over() -> ObjectSample {
    object(
        "w1",
        &[
            "alpha.example.org/last-handled-configuration",
            "beta.example.org/last-handled-configuration",
        ],
        &["alpha.example.org/finalizer", "beta.example.org/finalizer"],
    )
}

/// What RBAC lets patch Widgets in `team`: these accounts, and the audited operator's
/// own (`team/default`, the target's template names none).
fn may_patch(accounts: &[ServiceAccountRef], cluster_bindings: bool) -> Option<Patchers> {
    let mut set: BTreeSet<ServiceAccountRef> = accounts.iter().cloned().collect();
    set.insert(account("team", "default"));
    Some(Patchers {
        accounts: BTreeMap::from([(
            (
                ("example.com".to_string(), "widgets".to_string()),
                "team".to_string(),
            ),
            set,
        )]),
        cluster_bindings,
    })
}

fn with_operators(k: &mut KopfEvidence, searched: Searched, patchers: Option<Patchers>) {
    if let Ok(operators) = &mut k.operators {
        operators.searched = searched;
        operators.patchers = patchers;
    }
}

#[test]
fn a_rival_in_reach_elsewhere_is_named_by_its_deployment() {
    // With --allow-cross-namespace the rival's Deployment in `ops` is read: the finding
    // names it (and its ServiceAccount), whatever RBAC says of who else may patch.
    let t = target("a", "team");
    let mut k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![other("ops", "beta", ns(&["team"]), Peering::Standalone)],
        vec![fought_over()],
    );
    with_operators(
        &mut k,
        Searched::Cluster,
        may_patch(
            &[account("ops", "beta-sa"), account("ci", "deployer")],
            true,
        ),
    );
    let found = operator_conflict(&t, &k);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains(
            "Deployment ops/beta (ServiceAccount ops/beta-sa) runs another kopf operator"
        ),
        "{}",
        found[0].message
    );
    assert!(
        !found[0].message.contains("ci/deployer"),
        "{}",
        found[0].message
    );
}

#[test]
fn a_rival_out_of_reach_is_named_by_the_service_account_that_may_patch() {
    let t = target("a", "team");
    let mut k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![],
        vec![fought_over()],
    );
    with_operators(
        &mut k,
        Searched::Namespace("team".into()),
        may_patch(&[account("team", "beta-sa")], false),
    );
    let found = operator_conflict(&t, &k);
    assert_eq!(found.len(), 1, "{found:#?}");
    let message = &found[0].message;
    assert!(
        message.contains(
            "RBAC lets one other ServiceAccount patch them, so the other operator likely runs as it: ServiceAccount team/beta-sa."
        ),
        "{message}"
    );
    assert!(
        !message.contains("team/default"),
        "not the own account: {message}"
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
fn many_service_accounts_that_may_patch_are_named_bounded() {
    let t = target("a", "team");
    let mut k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![],
        vec![fought_over()],
    );
    let accounts: Vec<ServiceAccountRef> =
        (0..7).map(|i| account("ops", &format!("sa-{i}"))).collect();
    with_operators(&mut k, Searched::Cluster, may_patch(&accounts, false));
    let found = operator_conflict(&t, &k);
    let message = &found[0].message;
    assert!(
        message.contains(
            "RBAC lets 7 other ServiceAccounts patch them, and the other operator likely runs as one of them: ServiceAccount ops/sa-0, ServiceAccount ops/sa-1, ServiceAccount ops/sa-2 and 4 more."
        ),
        "{message}"
    );
}

#[test]
fn without_cross_namespace_another_namespaces_service_accounts_are_not_named() {
    // A RoleBinding of `team` binds ServiceAccounts of `ops` and `ci`: a tenant's
    // KopfAudit says they exist, not who they are.
    let t = target("a", "team");
    let mut k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![],
        vec![fought_over()],
    );
    let only_elsewhere = [account("ops", "beta-sa")];
    with_operators(
        &mut k,
        Searched::Namespace("team".into()),
        may_patch(&only_elsewhere, false),
    );
    let message = operator_conflict(&t, &k)[0].message.clone();
    assert!(
        message.contains(
            "RBAC lets one other ServiceAccount patch them, so the other operator likely runs as it: a ServiceAccount in another namespace."
        ),
        "{message}"
    );
    assert!(!message.contains("ops"), "{message}");

    let mixed = [
        account("ops", "beta-sa"),
        account("ci", "deployer"),
        account("team", "gamma-sa"),
    ];
    with_operators(
        &mut k,
        Searched::Namespace("team".into()),
        may_patch(&mixed, false),
    );
    let message = operator_conflict(&t, &k)[0].message.clone();
    assert!(
        message.contains(
            "RBAC lets 3 other ServiceAccounts patch them, and the other operator likely runs as one of them: ServiceAccount team/gamma-sa, 2 ServiceAccounts in other namespaces."
        ),
        "{message}"
    );
    assert!(
        !message.contains("ops/") && !message.contains("ci/"),
        "{message}"
    );
}

#[test]
fn without_cross_namespace_a_rival_of_another_namespace_is_not_named() {
    let t = target("a", "team");
    let mut k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![other("ops", "beta", ns(&["team"]), Peering::Standalone)],
        vec![fought_over()],
    );
    with_operators(&mut k, Searched::Namespace("team".into()), None);
    let found = operator_conflict(&t, &k);
    let message = &found[0].message;
    assert!(
        message.starts_with(
            "A Deployment in another namespace (running as a ServiceAccount in another namespace) runs another kopf operator"
        ),
        "{message}"
    );
    assert!(!message.contains("ops/"), "{message}");
}

#[test]
fn a_kopf_deployment_in_reach_that_may_patch_is_named_by_its_deployment() {
    // Its command line hides how it peers: not called a rival, yet it may patch.
    let t = target("a", "team");
    let hidden = other("team", "hidden", ns(&["team"]), Peering::Unknown);
    let mut k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![hidden],
        vec![fought_over()],
    );
    with_operators(
        &mut k,
        Searched::Namespace("team".into()),
        may_patch(&[account("team", "hidden-sa")], false),
    );
    let found = operator_conflict(&t, &k);
    assert!(
        found[0]
            .message
            .contains("likely runs as it: Deployment team/hidden (ServiceAccount team/hidden-sa)."),
        "{}",
        found[0].message
    );
}

#[test]
fn with_no_other_account_that_may_patch_the_finding_says_what_was_read() {
    let t = target("a", "team");
    let mut k = evidence(
        ns(&["team"]),
        Peering::Standalone,
        vec![],
        vec![fought_over()],
    );
    with_operators(
        &mut k,
        Searched::Namespace("team".into()),
        may_patch(&[], false),
    );
    let message = operator_conflict(&t, &k)[0].message.clone();
    assert!(
        message.contains(
            "Its Deployment is outside what this audit may read, and no RoleBinding of namespace team grants another ServiceAccount patch on them (ClusterRoleBindings, cluster-scoped, are read only with --allow-cross-namespace): it cannot be named."
        ),
        "{message}"
    );
    assert!(!message.contains("RBAC lets"), "{message}");
    with_operators(&mut k, Searched::Cluster, may_patch(&[], true));
    let message = operator_conflict(&t, &k)[0].message.clone();
    assert!(
        message.contains(
            "No other ServiceAccount is granted patch on them by a role naming their resource"
        ),
        "{message}"
    );
    // RBAC unread: the finding names no one, and says nothing of RBAC.
    with_operators(&mut k, Searched::Namespace("team".into()), None);
    let message = operator_conflict(&t, &k)[0].message.clone();
    assert!(!message.contains("RBAC"), "{message}");
    assert!(!message.contains("RoleBinding"), "{message}");
}

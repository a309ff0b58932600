//! Tests of the conflict model: who fights whom, and which objects show it.

use super::*;
use crate::model::evidence::Handling;
use crate::model::kopf_run::Scope;
use crate::model::rbac::ServiceAccountRef;
use crate::model::testing::{ns, widget};
use std::collections::{BTreeMap, BTreeSet};

fn widgets() -> BTreeSet<ResourceKey> {
    BTreeSet::from([("example.com".to_string(), "widgets".to_string())])
}

fn operator(namespace: &str, deployment: &str, scope: Scope, peering: Peering) -> Operator {
    let served_names = scope.specific_names();
    Operator {
        namespace: namespace.into(),
        deployment: deployment.into(),
        service_account: ServiceAccountRef {
            namespace: namespace.into(),
            name: format!("{deployment}-sa"),
        },
        scope,
        served_names,
        peering,
        resources: Some(widgets()),
    }
}

#[test]
fn a_cluster_wide_and_a_namespaced_operator_fight_in_the_namespace() {
    let own = operator("ops", "wide", Scope::ClusterWide, Peering::Auto);
    let team = operator("team", "local", ns(&["team"]), Peering::Auto);
    let found = rivals(&own, &[widget(true, true)], std::slice::from_ref(&team));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].operator.name(), "team/local");
    assert_eq!(found[0].resources, vec!["widgets.example.com".to_string()]);
    assert_eq!(found[0].overlap, Overlap::Namespaces(vec!["team".into()]));
    assert_eq!(found[0].apart, Apart::Kinds);
    // And the other way round.
    let back = rivals(&team, &[widget(true, true)], &[own]);
    assert_eq!(back[0].operator.name(), "ops/wide");
}

#[test]
fn two_standalone_operators_fight_but_one_peering_keeps_them_apart() {
    let a = operator("team", "a", ns(&["team"]), Peering::Standalone);
    let b = operator("team", "b", ns(&["team"]), Peering::Standalone);
    let found = rivals(&a, &[widget(true, true)], std::slice::from_ref(&b));
    assert_eq!(found[0].apart, Apart::Standalone);
    let peered_a = operator("team", "a", ns(&["team"]), Peering::Named("widgets".into()));
    let peered_b = operator("team", "b", ns(&["team"]), Peering::Named("widgets".into()));
    assert!(rivals(&peered_a, &[widget(true, true)], &[peered_b]).is_empty());
    let other_b = operator("team", "b", ns(&["team"]), Peering::Named("other".into()));
    let found = rivals(&peered_a, &[widget(true, true)], &[other_b]);
    assert_eq!(
        found[0].apart,
        Apart::Names("widgets".into(), "other".into())
    );
}

#[test]
fn no_rival_without_a_shared_resource_namespace_or_known_peering() {
    let a = operator("team", "a", ns(&["team"]), Peering::Standalone);
    let mut gizmos = operator("team", "b", ns(&["team"]), Peering::Standalone);
    gizmos.resources = Some(BTreeSet::from([(
        "example.com".to_string(),
        "gizmos".to_string(),
    )]));
    assert!(rivals(&a, &[widget(true, true)], &[gizmos]).is_empty());
    let elsewhere = operator("other", "b", ns(&["other"]), Peering::Standalone);
    assert!(rivals(&a, &[widget(true, true)], &[elsewhere]).is_empty());
    let hidden = operator("team", "b", ns(&["team"]), Peering::Unknown);
    assert!(rivals(&a, &[widget(true, true)], &[hidden]).is_empty());
    let mut unread = operator("team", "b", ns(&["team"]), Peering::Standalone);
    unread.resources = None;
    assert!(rivals(&a, &[widget(true, true)], &[unread]).is_empty());
    // The same Deployment (its other replicas) is no rival.
    assert!(rivals(&a, &[widget(true, true)], std::slice::from_ref(&a)).is_empty());
}

#[test]
fn cluster_scoped_resources_are_shared_only_by_two_cluster_wide_operators() {
    let a = operator("ops", "a", Scope::ClusterWide, Peering::Standalone);
    let b = operator("team", "b", ns(&["team"]), Peering::Standalone);
    assert!(rivals(&a, &[widget(false, true)], &[b]).is_empty());
    let c = operator("ops", "c", Scope::Implicit, Peering::Standalone);
    let found = rivals(&a, &[widget(false, true)], &[c]);
    assert_eq!(found[0].overlap, Overlap::Everywhere);
}

#[test]
fn patterns_overlap_the_names_they_match() {
    let a = operator("ops", "a", ns(&["team-*"]), Peering::Standalone);
    let b = operator("team-x", "b", ns(&["team-x", "other"]), Peering::Standalone);
    assert_eq!(
        overlap(&a, &b),
        Some(Overlap::Namespaces(vec!["team-x".into()]))
    );
    let c = operator("ops", "c", ns(&["*-x"]), Peering::Standalone);
    assert_eq!(overlap(&a, &c), None, "two patterns: not known");
}

fn sample(annotations: &[&str], finalizers: &[&str]) -> ObjectSample {
    ObjectSample {
        resource: 0,
        namespace: "team".into(),
        name: "w1".into(),
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

#[test]
fn two_diffbases_or_two_kopf_finalizers_are_disputed() {
    let both = sample(
        &[
            "a.example.org/last-handled-configuration",
            "b.example.org/last-handled-configuration",
            "a.example.org/create_fn",
        ],
        &["a.example.org/finalizer", "b.example.org/finalizer"],
    );
    let found = disputed(&[both], &[widget(true, true)]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].object, "team/w1");
    assert_eq!(
        found[0].marks,
        vec![
            Marks::DiffBases(vec!["a.example.org".into(), "b.example.org".into()]),
            Marks::Finalizers(vec![
                "a.example.org/finalizer".into(),
                "b.example.org/finalizer".into()
            ]),
        ]
    );
    let default_and_group = sample(
        &[crate::model::kopf_marks::DIFFBASE_ANNOTATION],
        &[kopf_marks::DEFAULT_FINALIZER, "example.com/finalizer"],
    );
    let found = disputed(&[default_and_group], &[widget(true, true)]);
    assert_eq!(found[0].marks.len(), 1, "{found:?}");
}

#[test]
fn one_operator_s_marks_and_identical_defaults_are_not_disputed() {
    let one = sample(
        &[
            crate::model::kopf_marks::DIFFBASE_ANNOTATION,
            "kopf.zalando.org/create_fn",
        ],
        &[kopf_marks::DEFAULT_FINALIZER, "foregroundDeletion"],
    );
    assert!(disputed(&[one], &[widget(true, true)]).is_empty());
}

fn sa(namespace: &str, name: &str) -> ServiceAccountRef {
    ServiceAccountRef {
        namespace: namespace.into(),
        name: name.into(),
    }
}

fn contested(namespace: &str, name: &str) -> Disputed {
    Disputed {
        object: format!("{namespace}/{name}"),
        namespace: namespace.into(),
        resource: ("example.com".into(), "widgets".into()),
        marks: vec![Marks::DiffBases(vec!["a.org".into(), "b.org".into()])],
    }
}

fn widgets_in(namespace: &str) -> Place {
    (("example.com".into(), "widgets".into()), namespace.into())
}

#[test]
fn disputed_objects_know_their_resource() {
    let both = sample(
        &[
            "a.example.org/last-handled-configuration",
            "b.example.org/last-handled-configuration",
        ],
        &[],
    );
    let found = disputed(&[both], &[widget(true, true)]);
    assert_eq!(
        found[0].resource,
        ("example.com".to_string(), "widgets".to_string())
    );
}

#[test]
fn objects_a_rival_serves_are_explained_the_others_are_not() {
    let a = operator("team", "a", ns(&["team"]), Peering::Standalone);
    let b = operator("team", "b", ns(&["team"]), Peering::Standalone);
    let found = rivals(&a, &[widget(true, true)], &[b]);
    let objects = [contested("team", "w1"), contested("other", "w2")];
    let left: Vec<&str> = unexplained(&objects, &found)
        .iter()
        .map(|d| d.object.as_str())
        .collect();
    assert_eq!(left, ["other/w2"]);
    assert_eq!(unexplained(&objects, &[]).len(), 2);
}

#[test]
fn only_a_rule_naming_the_resource_with_patch_grants_it() {
    use crate::model::testing::rule;
    let key = ("example.com".to_string(), "widgets".to_string());
    assert!(grants_patch(
        &rule(&["example.com"], &["widgets"], &["get", "patch"]),
        &key
    ));
    assert!(grants_patch(
        &rule(&["example.com"], &["widgets"], &["*"]),
        &key
    ));
    assert!(!grants_patch(
        &rule(&["example.com"], &["widgets"], &["get", "list", "watch"]),
        &key
    ));
    assert!(!grants_patch(
        &rule(&["example.com"], &["widgets/status"], &["patch"]),
        &key
    ));
    assert!(
        !grants_patch(&rule(&["*"], &["*"], &["*"]), &key),
        "cluster-admin"
    );
    assert!(!grants_patch(
        &rule(&["example.com"], &["*"], &["patch"]),
        &key
    ));
    assert!(!grants_patch(
        &rule(&["other.com"], &["widgets"], &["patch"]),
        &key
    ));
}

#[test]
fn suspects_are_the_other_accounts_that_may_patch_by_deployment_when_found() {
    let own = sa("team", "a-sa");
    let hidden = operator("team", "hidden", ns(&["team"]), Peering::Unknown);
    let patchers = Patchers {
        accounts: BTreeMap::from([
            (
                widgets_in("team"),
                BTreeSet::from([
                    own.clone(),
                    sa("ops", "beta"),
                    hidden.service_account.clone(),
                ]),
            ),
            (
                widgets_in("elsewhere"),
                BTreeSet::from([sa("far", "gamma")]),
            ),
        ]),
        cluster_bindings: false,
    };
    let objects = [contested("team", "w1")];
    let disputed: Vec<&Disputed> = objects.iter().collect();
    let found = suspects(&own, &disputed, &patchers, &[hidden]);
    assert_eq!(
        found,
        vec![
            Suspect::Deployment("team/hidden".into(), sa("team", "hidden-sa")),
            Suspect::ServiceAccount(sa("ops", "beta")),
        ],
        "the own account and those of places not in dispute are no suspects"
    );
    assert_eq!(
        found[0].describe(),
        "Deployment team/hidden (ServiceAccount team/hidden-sa)"
    );
    assert_eq!(found[1].describe(), "ServiceAccount ops/beta");
    let alone = Patchers {
        accounts: BTreeMap::from([(widgets_in("team"), BTreeSet::from([own.clone()]))]),
        cluster_bindings: false,
    };
    assert!(suspects(&own, &disputed, &alone, &[]).is_empty());
}

#[test]
fn naming_within_a_namespace_names_only_its_own() {
    let within = Naming::of(&Searched::Namespace("team".into()));
    let everything = Naming::of(&Searched::Cluster);
    let here = Suspect::Deployment("team/hidden".into(), sa("team", "hidden-sa"));
    let there = Suspect::ServiceAccount(sa("ops", "beta"));
    let elsewhere_deployment = Suspect::Deployment("ops/beta".into(), sa("ops", "beta"));
    assert_eq!(here.named(&within), Some(here.describe()));
    assert_eq!(there.named(&within), None);
    assert_eq!(elsewhere_deployment.named(&within), None);
    assert_eq!(
        there.named(&everything),
        Some("ServiceAccount ops/beta".into())
    );
}

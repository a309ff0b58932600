//! Tests of the RBAC authorizer's rules: subjects, roleRefs, aggregation selectors.

use super::*;
use crate::model::rbac::{AUTHENTICATED_GROUP, SERVICE_ACCOUNTS_GROUP};
use kube::core::SelectorExt;
use std::collections::BTreeMap;

fn subject(kind: &str, name: &str, ns: Option<&str>) -> BindingSubject {
    BindingSubject {
        kind: kind.into(),
        name: name.into(),
        namespace: ns.map(str::to_string),
        api_group: None,
    }
}

fn sa() -> ServiceAccountRef {
    ServiceAccountRef {
        namespace: "ns".into(),
        name: "op".into(),
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: kind.into(),
        name: name.into(),
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    }
}

#[test]
fn a_service_account_subject_with_a_namespace_reaches_that_service_account_only() {
    let r = |s: BindingSubject, ns| reaches(&s, &sa(), ns);
    let own = Some(Subject::ServiceAccount(sa()));
    assert_eq!(r(subject("ServiceAccount", "op", Some("ns")), None), own);
    assert_eq!(
        r(subject("ServiceAccount", "op", Some("ns")), Some("other")),
        own,
        "its own namespace wins over the binding's"
    );
    assert_eq!(
        r(subject("ServiceAccount", "op", Some("other")), None),
        None
    );
    assert_eq!(
        r(subject("ServiceAccount", "op", Some("other")), Some("ns")),
        None
    );
    assert_eq!(
        r(subject("ServiceAccount", "other", Some("ns")), None),
        None
    );
}

#[test]
fn a_service_account_subject_without_a_namespace_is_in_its_binding_s() {
    let r = |s: BindingSubject, ns| reaches(&s, &sa(), ns);
    let own = Some(Subject::ServiceAccount(sa()));
    assert_eq!(r(subject("ServiceAccount", "op", None), Some("ns")), own);
    assert_eq!(
        r(subject("ServiceAccount", "op", None), Some("other")),
        None
    );
    // A ClusterRoleBinding's subject naming no namespace reaches no one.
    assert_eq!(r(subject("ServiceAccount", "op", None), None), None);
}

/// The case the resolver used to get wrong: `namespace: ""` (a template rendering an
/// empty value) names no namespace, so the binding's applies, as the RBAC authorizer
/// reads it (`len(subject.Namespace) > 0`); it was taken as the namespace `""`, which
/// reached no one.
#[test]
fn an_empty_namespace_on_a_service_account_subject_is_no_namespace() {
    let r = |s: BindingSubject, ns| reaches(&s, &sa(), ns);
    assert_eq!(
        r(subject("ServiceAccount", "op", Some("")), Some("ns")),
        Some(Subject::ServiceAccount(sa()))
    );
    assert_eq!(r(subject("ServiceAccount", "op", Some("")), None), None);
    assert_eq!(r(subject("ServiceAccount", "op", Some("")), Some("")), None);
    assert_eq!(
        service_accounts(
            Some(&vec![subject("ServiceAccount", "op", Some(""))]),
            Some("ns")
        ),
        vec![sa()]
    );
}

#[test]
fn the_groups_a_service_account_token_carries_reach_it() {
    let r = |s: BindingSubject| reaches(&s, &sa(), None);
    for group in [
        SERVICE_ACCOUNTS_GROUP,
        "system:serviceaccounts:ns",
        AUTHENTICATED_GROUP,
    ] {
        assert_eq!(
            r(subject("Group", group, None)),
            Some(Subject::Group(group.into())),
            "{group}"
        );
    }
    assert_eq!(
        r(subject("Group", "system:serviceaccounts:other", None)),
        None
    );
    assert_eq!(r(subject("Group", "system:masters", None)), None);
    // A group subject's namespace means nothing.
    assert_eq!(
        r(subject("Group", SERVICE_ACCOUNTS_GROUP, Some("other"))),
        Some(Subject::Group(SERVICE_ACCOUNTS_GROUP.into()))
    );
}

#[test]
fn a_user_subject_reaches_when_it_is_the_service_account_s_user_name() {
    let r = |s: BindingSubject, ns| reaches(&s, &sa(), ns);
    assert_eq!(
        r(subject("User", "system:serviceaccount:ns:op", None), None),
        Some(Subject::User("system:serviceaccount:ns:op".into()))
    );
    assert_eq!(
        r(
            subject("User", "system:serviceaccount:other:op", None),
            Some("ns")
        ),
        None
    );
    assert_eq!(r(subject("User", "op", None), Some("ns")), None);
    assert_eq!(r(subject("Robot", "op", Some("ns")), Some("ns")), None);
}

#[test]
fn a_binding_is_reached_by_its_first_subject_in_order_and_keeps_its_scope() {
    let subjects = vec![
        subject("Group", SERVICE_ACCOUNTS_GROUP, None),
        subject("User", "system:serviceaccount:ns:op", None),
        subject("ServiceAccount", "op", None),
    ];
    let scope = BindingKind::RoleBinding("ns".into());
    let (kind, name, role, via) = reached(
        &scope,
        &meta("b"),
        &role_ref("Role", "r"),
        Some(&subjects),
        &sa(),
    )
    .expect("reached");
    assert_eq!(kind, scope);
    assert_eq!(name, "b");
    assert_eq!(role, role_ref("Role", "r"));
    assert_eq!(via, Subject::ServiceAccount(sa()));
    // The same subjects under a ClusterRoleBinding: the unqualified ServiceAccount
    // subject reaches no one, so the user name does.
    let (kind, _, _, via) = reached(
        &BindingKind::ClusterRoleBinding,
        &meta("b"),
        &role_ref("ClusterRole", "r"),
        Some(&subjects),
        &sa(),
    )
    .expect("reached");
    assert_eq!(kind, BindingKind::ClusterRoleBinding);
    assert_eq!(via, Subject::User("system:serviceaccount:ns:op".into()));
}

#[test]
fn a_binding_in_another_namespace_does_not_reach_by_an_unqualified_subject() {
    let subjects = vec![subject("ServiceAccount", "op", None)];
    let elsewhere = BindingKind::RoleBinding("other".into());
    assert!(
        reached(
            &elsewhere,
            &meta("b"),
            &role_ref("Role", "r"),
            Some(&subjects),
            &sa()
        )
        .is_none()
    );
    // Naming the ServiceAccount's namespace, it reaches; its grants stay in `other`.
    let qualified = vec![subject("ServiceAccount", "op", Some("ns"))];
    let (kind, ..) = reached(
        &elsewhere,
        &meta("b"),
        &role_ref("Role", "r"),
        Some(&qualified),
        &sa(),
    )
    .expect("reached");
    assert_eq!(kind.namespace(), Some("other"));
    assert!(reached(&elsewhere, &meta("b"), &role_ref("Role", "r"), None, &sa()).is_none());
}

#[test]
fn a_role_binding_to_a_cluster_role_grants_it_in_its_namespace() {
    let scope = BindingKind::RoleBinding("ns".into());
    let cluster_role = role_ref("ClusterRole", "edit");
    assert_eq!(
        bound_role(&scope, &cluster_role),
        Some(BoundRole::ClusterRole("edit"))
    );
    assert_eq!(scope.namespace(), Some("ns"));
    assert_eq!(
        bound_role(&scope, &role_ref("Role", "r")),
        Some(BoundRole::Role {
            namespace: "ns",
            name: "r"
        })
    );
    assert_eq!(
        bound_role(&BindingKind::ClusterRoleBinding, &cluster_role),
        Some(BoundRole::ClusterRole("edit"))
    );
    assert_eq!(BindingKind::ClusterRoleBinding.namespace(), None);
    // What the API server never resolves grants nothing.
    assert_eq!(
        bound_role(&BindingKind::ClusterRoleBinding, &role_ref("Role", "r")),
        None
    );
    assert_eq!(bound_role(&scope, &role_ref("Group", "r")), None);
}

#[test]
fn a_binding_names_service_accounts_as_such_or_by_their_user_name() {
    let subjects = vec![
        subject("ServiceAccount", "beta", Some("ops")),
        subject("ServiceAccount", "local", None),
        subject("User", "system:serviceaccount:far:gamma", None),
        subject("User", "alice", None),
        subject("User", "system:serviceaccount:broken", None),
        subject("User", "system:serviceaccount:a:b:c", None),
        subject("Group", "system:serviceaccounts:ops", None),
    ];
    let sa = |ns: &str, name: &str| ServiceAccountRef {
        namespace: ns.into(),
        name: name.into(),
    };
    assert_eq!(
        service_accounts(Some(&subjects), Some("team")),
        vec![sa("ops", "beta"), sa("team", "local"), sa("far", "gamma")]
    );
    // A ClusterRoleBinding's ServiceAccount subject without a namespace names no one.
    assert_eq!(
        service_accounts(Some(&subjects), None),
        vec![sa("ops", "beta"), sa("far", "gamma")]
    );
}

#[test]
fn aggregation_selects_by_any_selector_and_nothing_when_one_is_invalid() {
    let rule = |value: serde_json::Value| -> AggregationRule {
        serde_json::from_value(value).expect("an aggregation rule")
    };
    let labels = |k: &str| BTreeMap::from([(k.to_string(), "true".to_string())]);
    let selects = |r: &AggregationRule, k: &str| {
        aggregation_selectors(r)
            .iter()
            .any(|s| s.matches(&labels(k)))
    };
    let two = rule(serde_json::json!({"clusterRoleSelectors": [
        {"matchLabels": {"a": "true"}},
        {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
    ]}));
    assert!(selects(&two, "a"));
    assert!(selects(&two, "b"));
    assert!(!selects(&two, "c"));
    let with_invalid = rule(serde_json::json!({"clusterRoleSelectors": [
        {"matchLabels": {"a": "true"}},
        {"matchExpressions": [{"key": "b", "operator": "NotIn"}]},
    ]}));
    assert!(aggregation_selectors(&with_invalid).is_empty());
    assert!(!selects(&with_invalid, "a"));
    assert!(aggregation_selectors(&rule(serde_json::json!({}))).is_empty());
}

#[test]
fn rules_keep_resource_rules_only() {
    let rules = vec![
        PolicyRule {
            api_groups: Some(vec!["".into()]),
            resources: Some(vec!["pods".into()]),
            verbs: vec!["get".into()],
            ..Default::default()
        },
        PolicyRule {
            non_resource_urls: Some(vec!["/healthz".into()]),
            verbs: vec!["get".into()],
            ..Default::default()
        },
    ];
    assert_eq!(
        rules_of(Some(&rules)),
        vec![crate::model::rbac::test_rule(&[""], &["pods"], &["get"])]
    );
}

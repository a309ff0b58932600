//! Tests of the RBAC model.

use super::test_rule as rule;
use super::*;

#[test]
fn rules_cover_resources_and_subresources() {
    let r = rule(&["g"], &["widgets", "widgets/status"], &["get"]);
    assert!(r.covers_resource("g", "widgets", ""));
    assert!(r.covers_resource("g", "widgets", "status"));
    assert!(!r.covers_resource("h", "widgets", ""));
    assert!(!r.covers_resource("g", "gadgets", ""));
    let star = rule(&["*"], &["*"], &["*"]);
    assert!(star.covers_resource("", "secrets", ""));
    assert!(star.has_verb(Verb::Patch));
    assert_eq!(
        star.flow_yaml(),
        r#"apiGroups: ["*"], resources: ["*"], verbs: ["*"]"#
    );
    assert_eq!(yaml_word(""), r#""""#);
}

#[test]
fn service_account_identity() {
    let sa = ServiceAccountRef {
        namespace: "ns".into(),
        name: "op".into(),
    };
    assert_eq!(sa.username(), "system:serviceaccount:ns:op");
    assert!(
        sa.groups()
            .contains(&"system:serviceaccounts:ns".to_string())
    );
    assert_eq!(
        Permission::new(
            Verb::List,
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None
        )
        .resource_name(),
        "customresourcedefinitions.apiextensions.k8s.io"
    );
}

#[test]
fn broad_subjects_are_the_cluster_defaults() {
    assert!(Subject::Group(SERVICE_ACCOUNTS_GROUP.into()).is_broad());
    assert!(Subject::Group(AUTHENTICATED_GROUP.into()).is_broad());
    assert!(!Subject::Group("system:serviceaccounts:ns".into()).is_broad());
    assert_eq!(RoleKind::parse("ClusterRole"), Some(RoleKind::ClusterRole));
    assert_eq!(RoleKind::parse("Other"), None);
}

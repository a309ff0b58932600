use super::*;
use crate::model::rbac::Verb;

fn manifests(yaml: &str) -> Manifests {
    let mut m = Manifests::default();
    m.read("rbac.yaml", yaml, "ops");
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    m
}

const SA: &str = "ops";

fn sa() -> ServiceAccountRef {
    ServiceAccountRef {
        namespace: SA.into(),
        name: "op".into(),
    }
}

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-aggregate}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {op.example.com/aggregate: "true"}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: op-crds
  labels: {op.example.com/aggregate: "true"}
rules:
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-aggregate}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: op, namespace: ops}
rules:
- apiGroups: [""]
  resources: [events]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: op, namespace: ops}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: op}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]
"#;

fn permission(verb: Verb, group: &str, resource: &str, namespace: Option<&str>) -> Permission {
    Permission {
        verb,
        group: group.into(),
        resource: resource.into(),
        subresource: String::new(),
        namespace: namespace.map(str::to_string),
    }
}

#[test]
fn aggregated_cluster_roles_and_namespaced_roles_grant_as_the_authorizer_does() {
    let m = manifests(RBAC);
    let bindings = bindings(&m, &sa()).expect("all roles are in the files");
    assert_eq!(bindings.len(), 2);
    let crds = "customresourcedefinitions";
    let ext = "apiextensions.k8s.io";
    assert!(allows(&bindings, &permission(Verb::List, ext, crds, None)));
    assert!(!allows(&bindings, &permission(Verb::Get, ext, crds, None)));
    assert!(allows(
        &bindings,
        &permission(Verb::Create, "", "events", Some("ops"))
    ));
    // A RoleBinding grants in its own namespace only.
    assert!(!allows(
        &bindings,
        &permission(Verb::Create, "", "events", Some("other"))
    ));
    assert!(!allows(
        &bindings,
        &permission(Verb::Create, "", "events", None)
    ));
}

#[test]
fn cluster_admin_grants_everything_and_an_undefined_role_leaves_rbac_undecided() {
    let admin = manifests(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: op}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: op, namespace: ops}]\n",
    );
    let granted = bindings(&admin, &sa()).expect("cluster-admin is known");
    assert!(allows(
        &granted,
        &permission(Verb::Patch, "", "secrets", None)
    ));
    assert!(granted[0].is_cluster_admin());

    let view = manifests(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: op}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: ServiceAccount, name: op, namespace: ops}]\n",
    );
    let why = bindings(&view, &sa()).expect_err("view is not in the files");
    assert_eq!(why.why, Obstacle::NotInFiles);
    assert!(why.message.contains("ClusterRole view"), "{}", why.message);
}

#[test]
fn bindings_of_other_service_accounts_grant_nothing() {
    let m = manifests(&RBAC.replace(
        "name: op, namespace: ops}",
        "name: someone-else, namespace: ops}",
    ));
    let bindings = bindings(&m, &sa()).expect("nothing undefined");
    assert!(bindings.is_empty());
}

/// The controller-manager gives up on a ClusterRole whose aggregation has an invalid
/// selector, so it aggregates nothing, the valid selectors' matches included.
#[test]
fn an_invalid_aggregation_selector_aggregates_nothing() {
    let m = manifests(&RBAC.replace(
        "  - matchLabels: {op.example.com/aggregate: \"true\"}\n",
        "  - matchLabels: {op.example.com/aggregate: \"true\"}\n  - matchExpressions: [{key: tier, operator: In}]\n",
    ));
    let bindings = bindings(&m, &sa()).expect("all roles are in the files");
    let aggregate = bindings
        .iter()
        .find(|b| b.role_name == "op-aggregate")
        .expect("the aggregated ClusterRole is bound");
    assert!(aggregate.aggregated);
    assert!(aggregate.rules.is_empty(), "{:?}", aggregate.rules);
    assert!(!allows(
        &bindings,
        &permission(
            Verb::List,
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None
        )
    ));
}

/// The aggregation controller replaces an aggregated ClusterRole's rules with those it
/// selects: rules written in the role itself grant nothing once it has synced. With an
/// invalid selector it never syncs, and the written rules stay.
#[test]
fn an_aggregated_role_s_own_rules_are_replaced_unless_a_selector_is_invalid() {
    let own = "rules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n---";
    let secrets = permission(Verb::Get, "", "secrets", None);
    let crds = permission(
        Verb::List,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    let synced = manifests(&RBAC.replacen("rules: []\n---", own, 1));
    let granted = bindings(&synced, &sa()).expect("all roles are in the files");
    assert!(!allows(&granted, &secrets), "{granted:?}");
    assert!(allows(&granted, &crds));

    let stuck = manifests(
        &RBAC.replacen("rules: []\n---", own, 1).replace(
            "  - matchLabels: {op.example.com/aggregate: \"true\"}\n",
            "  - matchLabels: {op.example.com/aggregate: \"true\"}\n  - matchExpressions: [{key: tier, operator: In}]\n",
        ),
    );
    let granted = bindings(&stuck, &sa()).expect("all roles are in the files");
    assert!(allows(&granted, &secrets), "{granted:?}");
    assert!(!allows(&granted, &crds));
}

/// `namespace: ""` on a ServiceAccount subject (a value the template left empty) is no
/// namespace: the RoleBinding's applies, as the API server reads it.
#[test]
fn an_empty_subject_namespace_is_the_role_binding_s() {
    let m = manifests(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: op, namespace: ops}\nrules: [{apiGroups: [\"\"], resources: [events], verbs: [create]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: op, namespace: ops}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: op}\nsubjects: [{kind: ServiceAccount, name: op, namespace: \"\"}]\n",
    );
    let found = bindings(&m, &sa()).expect("the Role is in the files");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, BindingKind::RoleBinding("ops".into()));
    assert!(allows(
        &found,
        &permission(Verb::Create, "", "events", Some("ops"))
    ));
}

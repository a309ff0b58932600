//! Tests of what re-audits what: RBAC changes reach only the audits whose
//! ServiceAccount they can affect; Deployments and pods re-trigger only on what the checks
//! read of them.

use super::*;
use crate::testing::{audit_of, synced_store};

/// An operator Deployment serving every namespace (`kopf run -A`).
fn deployment(ns: &str, name: &str, sa: &str) -> Deployment {
    operator(ns, name, sa, &["-A"])
}

/// An operator Deployment whose kopf runs with `args`.
fn operator(ns: &str, name: &str, sa: &str, args: &[&str]) -> Deployment {
    let mut command = vec!["kopf", "run"];
    command.extend_from_slice(args);
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "generation": 1,
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}",
                            "skip.kopfaudit.dev/workload.cpu-limit": "policy"}},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "serviceAccountName": sa,
                "containers": [
                    {"name": "operator", "image": "op:1", "command": command,
                     "resources": {"limits": {"memory": "512Mi"}},
                     "volumeMounts": [{"name": "x", "mountPath": "/x"}]},
                    {"name": "sidecar", "image": "envoy", "command": ["envoy"],
                     "resources": {"limits": {"memory": "64Mi"}}}
                ]}}}
    }))
    .expect("deployment")
}

fn binding(name: &str, role: &str, sa_ns: &str, sa: &str) -> ClusterRoleBinding {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": sa_ns}]
    }))
    .expect("binding")
}

fn cluster_role(name: &str, labels: serde_json::Value, aggregates: Option<&str>) -> ClusterRole {
    let mut role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels}
    });
    if let Some(label) = aggregates {
        role["aggregationRule"] =
            serde_json::json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
    }
    serde_json::from_value(role).expect("role")
}

/// Two audited operators (a in ns-a as sa-a, b in ns-b as sa-b); `op-a` bound to the
/// ClusterRole `op-a-role`, which aggregates the ones labelled `aggregate-to-op-a`.
fn mapper() -> RbacMapper {
    let targets = Arc::new(AuditMemory::default());
    targets.remember(
        &audit_of("ns-a", "a", "op-a", None),
        &[deployment("ns-a", "op-a", "sa-a")],
    );
    targets.remember(
        &audit_of("ns-b", "b", "op-b", None),
        &[deployment("ns-b", "op-b", "sa-b")],
    );
    let stores = RbacStores {
        cluster_role_bindings: Some(synced_store(vec![
            binding("op-a", "op-a-role", "ns-a", "sa-a"),
            binding("op-b", "op-b-role", "ns-b", "sa-b"),
        ])),
        cluster_roles: Some(synced_store(vec![
            cluster_role(
                "op-a-role",
                serde_json::json!({}),
                Some("aggregate-to-op-a"),
            ),
            cluster_role("view", serde_json::json!({}), None),
        ])),
        role_bindings: Some((synced_store(Vec::new()), None)),
        roles: Some((synced_store(Vec::new()), None)),
    };
    RbacMapper {
        targets,
        stores,
        shared: Arc::new(Shared::default()),
        last_subjects: Arc::default(),
        churn: ChurnBound::new(super::super::churn::CHURN_PERIOD).0,
    }
}

fn names(refs: &[ObjectRef<KopfAudit>]) -> Vec<String> {
    let mut out: Vec<String> = refs.iter().map(|r| r.name.clone()).collect();
    out.sort();
    out
}

#[test]
fn an_unrelated_cluster_role_re_audits_nothing() {
    let m = mapper();
    let labels = std::collections::BTreeMap::from([("team".to_string(), "x".to_string())]);
    let refs = m.audits_for(RbacChange::ClusterRole {
        name: "view",
        labels: &labels,
    });
    assert!(refs.is_empty(), "{:?}", names(&refs));
}

#[test]
fn a_bound_cluster_role_re_audits_its_operator_only() {
    let m = mapper();
    let none = std::collections::BTreeMap::new();
    let refs = m.audits_for(RbacChange::ClusterRole {
        name: "op-a-role",
        labels: &none,
    });
    assert_eq!(names(&refs), vec!["a"]);
}

#[test]
fn a_role_aggregated_into_a_bound_one_re_audits_its_operator() {
    let m = mapper();
    let labels =
        std::collections::BTreeMap::from([("aggregate-to-op-a".to_string(), "true".to_string())]);
    let refs = m.audits_for(RbacChange::ClusterRole {
        name: "extra-rules",
        labels: &labels,
    });
    assert_eq!(names(&refs), vec!["a"]);
}

/// A ClusterRoleBinding's change, as the watch delivers it.
fn cluster_binding_change<'a>(name: &str, subjects: &'a [Subject]) -> RbacChange<'a> {
    RbacChange::Binding {
        key: BindingKey {
            scope: BindingKind::ClusterRoleBinding,
            name: name.into(),
        },
        subjects,
        deleted: false,
    }
}

#[test]
fn a_binding_change_reaches_its_old_and_new_subjects() {
    let m = mapper();
    let to_b = binding("moving", "anything", "ns-b", "sa-b");
    let refs = m.altered_by(cluster_binding_change(
        "moving",
        to_b.subjects.as_deref().unwrap_or_default(),
    ));
    assert_eq!(names(&refs), vec!["b"]);
    let to_a = binding("moving", "anything", "ns-a", "sa-a");
    let refs = m.altered_by(cluster_binding_change(
        "moving",
        to_a.subjects.as_deref().unwrap_or_default(),
    ));
    assert_eq!(names(&refs), vec!["a", "b"], "b lost it, a gained it");
    let group: Vec<Subject> = serde_json::from_value(
        serde_json::json!([{"kind": "Group", "name": "system:serviceaccounts:ns-b"}]),
    )
    .expect("subjects");
    let refs = m.altered_by(cluster_binding_change("group", &group));
    assert_eq!(
        names(&refs),
        vec!["b"],
        "a group reaches its ServiceAccounts"
    );
}

/// Every authenticated user, as a binding subject.
fn everyone() -> Vec<Subject> {
    serde_json::from_value(serde_json::json!([
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}
    ]))
    .expect("subjects")
}

/// A RoleBinding's change in `ns`, as the watch delivers it.
fn role_binding_change<'a>(ns: &str, subjects: &'a [Subject], deleted: bool) -> RbacChange<'a> {
    RbacChange::Binding {
        key: BindingKey {
            scope: BindingKind::RoleBinding(ns.into()),
            name: "view-for-everyone".into(),
        },
        subjects,
        deleted,
    }
}

/// Besides the mapper's two cluster-wide operators: a tenant's operator serving its own
/// namespace, and operators elsewhere serving theirs, one by name another one too.
fn mapper_with_tenants() -> RbacMapper {
    let m = mapper();
    let operators = [
        ("tenant", "t", &["-n", "tenant"][..]),
        ("team-b", "own-only", &["-n", "team-b"][..]),
        (
            "team-c",
            "serves-tenant",
            &["-n", "team-c", "-n", "tenant"][..],
        ),
        ("team-d", "pattern", &["-n", "team-*"][..]),
    ];
    for (ns, name, args) in operators {
        m.targets.remember(
            &audit_of(ns, name, name, None),
            &[operator(ns, name, "default", args)],
        );
    }
    m
}

#[test]
fn a_role_binding_to_everyone_re_audits_only_the_audits_that_ask_about_its_namespace() {
    let m = mapper_with_tenants();
    let subjects = everyone();
    let refs = m.altered_by(role_binding_change("tenant", &subjects, false));
    assert_eq!(
        names(&refs),
        vec!["serves-tenant", "t"],
        "not the operators that serve other namespaces, cluster-wide ones (checked at \
         cluster scope) or ones with patterns (checked in their own namespace)"
    );
    let refs = m.altered_by(role_binding_change("ns-a", &subjects, false));
    assert_eq!(
        names(&refs),
        vec!["a"],
        "a cluster-wide operator is re-audited by a RoleBinding in its own namespace"
    );
    let refs = m.altered_by(cluster_binding_change("everyone", &subjects));
    assert_eq!(
        refs.len(),
        6,
        "a ClusterRoleBinding to everyone reaches every audit"
    );
}

#[test]
fn a_role_in_a_namespace_re_audits_only_the_audits_that_ask_about_it() {
    let m = mapper_with_tenants();
    let bound: RoleBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "reader", "namespace": "tenant"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": everyone()
    }))
    .expect("binding");
    let m = RbacMapper {
        stores: RbacStores {
            role_bindings: Some((synced_store(vec![bound]), None)),
            ..m.stores.clone()
        },
        ..m
    };
    let refs = m.altered_by(RbacChange::Role {
        namespace: "tenant",
        name: "reader",
    });
    assert_eq!(names(&refs), vec!["serves-tenant", "t"]);
}

#[test]
fn a_tenants_binding_churn_re_runs_its_audits_once_a_period() {
    let m = mapper_with_tenants();
    let subjects = everyone();
    let first = m.audits_for(role_binding_change("tenant", &subjects, false));
    assert_eq!(names(&first), vec!["serves-tenant", "t"]);
    for _ in 0..29 {
        let again = m.audits_for(role_binding_change("tenant", &subjects, false));
        assert!(
            again.is_empty(),
            "held back to the end of the period: {:?}",
            names(&again)
        );
    }
    let elsewhere = m.audits_for(role_binding_change("team-c", &subjects, false));
    assert_eq!(
        names(&elsewhere),
        vec!["serves-tenant"],
        "another namespace's change is bounded apart"
    );
}

#[test]
fn a_deleted_binding_re_audits_its_last_subjects_and_is_forgotten() {
    let m = mapper_with_tenants();
    let subjects = everyone();
    m.altered_by(role_binding_change("tenant", &subjects, false));
    let remembered = || m.last_subjects.lock().map(|l| l.len()).unwrap_or_default();
    assert_eq!(remembered(), 1);
    let refs = m.altered_by(role_binding_change("tenant", &subjects, true));
    assert_eq!(names(&refs), vec!["serves-tenant", "t"]);
    assert_eq!(remembered(), 0, "nothing kept of a deleted binding");
}

#[test]
fn a_binding_re_triggers_on_its_subjects_or_role_not_its_labels() {
    let rb = |labels: serde_json::Value, subjects: serde_json::Value, role: &str| -> RoleBinding {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "tenant", "labels": labels,
                "annotations": {"touched": labels.to_string()}, "resourceVersion": labels.to_string()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects
        }))
        .expect("binding")
    };
    let everyone = serde_json::json!(everyone());
    let base = rb(serde_json::json!({"n": "1"}), everyone.clone(), "view");
    let relabelled = rb(serde_json::json!({"n": "2"}), everyone.clone(), "view");
    let other_role = rb(serde_json::json!({"n": "1"}), everyone, "edit");
    let fewer = rb(serde_json::json!({"n": "1"}), serde_json::json!([]), "view");
    assert_eq!(
        role_binding_content(&base),
        role_binding_content(&relabelled)
    );
    assert_ne!(
        role_binding_content(&base),
        role_binding_content(&other_role)
    );
    assert_ne!(role_binding_content(&base), role_binding_content(&fewer));
    let role = |labels: serde_json::Value| -> ClusterRole { cluster_role("r", labels, None) };
    assert_ne!(
        cluster_role_content(&role(serde_json::json!({"aggregate-to-x": "true"}))),
        cluster_role_content(&role(serde_json::json!({}))),
        "a ClusterRole's labels select it into aggregated ones"
    );
}

#[test]
fn a_deployment_re_triggers_on_its_spec_labels_or_exemptions_only() {
    let meta = |generation: i64, annotations: serde_json::Value| -> PartialObjectMeta<Deployment> {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "op", "namespace": "ns", "generation": generation,
                "labels": {"app": "op"}, "annotations": annotations}
        }))
        .expect("metadata")
    };
    let base = meta(1, serde_json::json!({}));
    let revision = meta(
        1,
        serde_json::json!({"deployment.kubernetes.io/revision": "2"}),
    );
    let exempted = meta(
        1,
        serde_json::json!({"skip.kopfaudit.dev/workload.cpu-limit": "policy"}),
    );
    let rolled = meta(2, serde_json::json!({}));
    assert_eq!(deployment_predicate(&base), deployment_predicate(&revision));
    assert_ne!(deployment_predicate(&base), deployment_predicate(&exempted));
    assert_ne!(deployment_predicate(&base), deployment_predicate(&rolled));
}

#[test]
fn pod_churn_that_no_check_reads_does_not_re_trigger() {
    let pod = |ready: bool, restarts: i32| -> Pod {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "op"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}],
                "containerStatuses": [{"name": "operator", "restartCount": restarts, "ready": ready, "image": "op", "imageID": "op"}]}
        }))
        .expect("pod")
    };
    let (a, b, c) = (pod(true, 0), pod(false, 0), pod(true, 1));
    assert_eq!(pod_predicate(&a), pod_predicate(&b), "readiness churn");
    assert_ne!(pod_predicate(&a), pod_predicate(&c), "a restart");
}

#[test]
fn a_deployment_maps_to_the_audits_that_target_it_in_their_target_namespace() {
    let mut cross = audit_of("team", "cross", "op", None);
    cross.spec.target.namespace = Some("ops".into());
    let audits = synced_store(vec![
        audit_of("ops", "own", "op", None),
        cross,
        audit_of("ops", "other", "x", None),
    ]);
    let meta: PartialObjectMeta<Deployment> = serde_json::from_value(serde_json::json!({
        "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {"name": "op", "namespace": "ops"}
    }))
    .expect("metadata");
    assert_eq!(
        names(&audits_for_deployment(&audits, &meta, true)),
        vec!["cross", "own"]
    );
    assert!(targets_namespace(&audits.state()[0], "ops", true));
    assert!(!targets_namespace(&audits.state()[0], "team", true));
    // Without the allowance the refused audit is never re-run by the other namespace:
    // its audit count would tell the tenant when a guessed Deployment changes.
    assert_eq!(
        names(&audits_for_deployment(&audits, &meta, false)),
        vec!["own"]
    );
    let refused = audits
        .state()
        .into_iter()
        .find(|a| a.metadata.name.as_deref() == Some("cross"))
        .expect("the cross-namespace audit");
    assert!(!targets_namespace(&refused, "ops", false));
}

#[test]
fn rbac_caches_keep_identity_and_only_clusterrole_labels() {
    let full = |kind: &str| -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": "r", "namespace": "ns", "resourceVersion": "7", "uid": "u-1",
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"aggregate-to-x": "true"},
                "annotations": {"a": "b"}, "ownerReferences": [{"apiVersion": "v1",
                    "kind": "ConfigMap", "name": "c", "uid": "u-2"}],
                "managedFields": [{"manager": "kubectl"}]},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"}
        })
    };
    let mut binding: RoleBinding = serde_json::from_value(full("RoleBinding")).expect("binding");
    strip_meta(&mut binding, KeptMeta::Identity);
    let mut role: ClusterRole = serde_json::from_value(full("ClusterRole")).expect("role");
    strip_meta(&mut role, KeptMeta::IdentityAndLabels);

    let identity = ObjectMeta {
        name: Some("r".into()),
        namespace: Some("ns".into()),
        resource_version: Some("7".into()),
        ..ObjectMeta::default()
    };
    assert_eq!(binding.metadata, identity);
    assert_eq!(binding.role_ref.name, "x", "the binding's own fields stay");
    assert_eq!(
        role.metadata,
        ObjectMeta {
            labels: Some([("aggregate-to-x".to_string(), "true".to_string())].into()),
            ..identity
        }
    );
}

#[test]
fn a_deleted_binding_passes_the_filter_with_its_last_content() {
    let b = binding("op-a", "op-a-role", "ns-a", "sa-a");
    let cached = content_or_gone(synced_store(vec![b.clone()]), cluster_role_binding_content);
    let deleted = content_or_gone(synced_store(Vec::new()), cluster_role_binding_content);
    assert!(cached(&b).is_some());
    assert_ne!(cached(&b), deleted(&b), "the delete is a change");
}

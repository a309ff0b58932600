//! Tests of the RBAC checks.

use super::*;
use crate::model::evidence::{KopfEvidence, Obstacle, Unavailable};
use crate::model::kopf_run::Peering;
use crate::model::needs::{CRD_GROUP, CRD_RESOURCE, needs, permissions};
use crate::model::rbac::{PeeringCrds, Permission, RoleKind, Subject};
use crate::model::testing::{ns, rule, run, widget};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, PodSpec};

fn target(namespace: &str, sa: &str) -> TargetEvidence {
    let mut d = Deployment::default();
    d.metadata.name = Some("op".into());
    d.metadata.namespace = Some(namespace.into());
    d.spec.template.spec = Some(PodSpec {
        service_account_name: Some(sa.into()),
        containers: vec![Container {
            name: "operator".into(),
            ..Default::default()
        }],
        ..Default::default()
    });
    TargetEvidence {
        deployment: d,
        ..Default::default()
    }
}

/// Evidence answering every need of `r` as allowed except `denied`.
fn answered(t: &TargetEvidence, k: &KopfEvidence, denied: &[Permission]) -> RbacEvidence {
    let handled = k.handled.as_ref().ok().map(Vec::as_slice);
    let n = needs(&k.run, handled, t.namespace(), &PeeringCrds::default());
    RbacEvidence {
        service_account: t.service_account(),
        answers: permissions(&n)
            .into_iter()
            .map(|p| {
                let ok = !denied.contains(&p);
                (p, ok)
            })
            .collect(),
        bindings: vec![Binding {
            kind: BindingKind::ClusterRoleBinding,
            name: "op-ns".into(),
            role_kind: Some(RoleKind::ClusterRole),
            role_name: "op-ns".into(),
            via: Subject::ServiceAccount(t.service_account()),
            rules: vec![rule(&[CRD_GROUP], &[CRD_RESOURCE], &["get"])],
            role_missing: false,
            aggregated: false,
        }],
        peering_crds: PeeringCrds::default(),
        needs: n,
        unread_namespaces: Default::default(),
    }
}

/// The findings of the RBAC checks.
fn found(t: &TargetEvidence, k: &KopfEvidence) -> Vec<Finding> {
    check(t, k).into_iter().map(|r| r.finding).collect()
}

fn checks(f: &[Finding]) -> Vec<(CheckId, Severity)> {
    f.iter().map(|f| (f.check, f.severity)).collect()
}

#[test]
fn all_granted_means_no_finding() {
    let t = target("ns", "op");
    let r = run(ns(&["ns"]), Peering::Standalone);
    let mut k = KopfEvidence::unread(r);
    k.handled = Ok(vec![widget(true, true)]);
    k.rbac = Ok(answered(&t, &k, &[]));
    assert_eq!(found(&t, &k), Vec::new());
}

#[test]
fn missing_crd_list_is_an_error_with_the_rule_to_paste_and_the_explanation() {
    let t = target("ns", "op");
    let r = run(ns(&["ns"]), Peering::Standalone);
    let mut k = KopfEvidence::unread(r);
    let denied = [
        Permission::new(Verb::List, CRD_GROUP, CRD_RESOURCE, None),
        Permission::new(Verb::Watch, CRD_GROUP, CRD_RESOURCE, None),
    ];
    k.rbac = Ok(answered(&t, &k, &denied));
    let f = found(&t, &k);
    assert_eq!(checks(&f), vec![(CheckId::RbacCrdScan, Severity::Error)]);
    let msg = &f[0].message;
    assert!(
        msg.starts_with("ServiceAccount ns/op may not list, watch customresourcedefinitions.apiextensions.k8s.io at cluster scope: kopf"),
        "{msg}"
    );
    assert!(
        msg.ends_with("Add to its ClusterRole (bound by a ClusterRoleBinding):\n- apiGroups: [apiextensions.k8s.io]\n  resources: [customresourcedefinitions]\n  verbs: [list, watch]"),
        "{msg}"
    );
    let ev = f[0].evidence.as_deref().unwrap_or("");
    assert!(
        ev.contains("ClusterRole op-ns (bound by ClusterRoleBinding op-ns) grants only [get]"),
        "{ev}"
    );
}

#[test]
fn kopf_s_documented_crd_rule_list_and_watch_is_enough() {
    // kopf never gets a CRD (1.45 `_core/reactor/observation.py` lists and watches
    // them; discovery finds the resources): a role granting [list, watch] is complete.
    let t = target("ns", "op");
    let r = run(ns(&["ns"]), Peering::Standalone);
    let mut k = KopfEvidence::unread(r);
    let get = Permission::new(Verb::Get, CRD_GROUP, CRD_RESOURCE, None);
    k.rbac = Ok(answered(&t, &k, std::slice::from_ref(&get)));
    assert_eq!(checks(&found(&t, &k)), Vec::new());
    let asked = k.rbac.as_ref().map(|e| e.answers.contains_key(&get));
    assert_eq!(asked, Ok(false), "get on CRDs is not even asked");
}

#[test]
fn events_patch_is_advice_only_when_create_is_granted() {
    let t = target("ns", "op");
    let r = run(ns(&["ns"]), Peering::Standalone);
    let mut k = KopfEvidence::unread(r);
    let patch = Permission::new(Verb::Patch, "", "events", Some("ns"));
    let create = Permission::new(Verb::Create, "", "events", Some("ns"));
    k.rbac = Ok(answered(&t, &k, std::slice::from_ref(&patch)));
    let f = found(&t, &k);
    assert_eq!(checks(&f), vec![(CheckId::RbacEventsPatch, Severity::Info)]);
    assert!(f[0].message.contains("kopf 1.45 only ever creates"));
    k.rbac = Ok(answered(&t, &k, &[patch, create]));
    let f = found(&t, &k);
    assert_eq!(checks(&f), vec![(CheckId::RbacEvents, Severity::Error)]);
    assert!(
        f[0].message.contains(
            "Add to its Role in namespace ns (bound by a RoleBinding):\n- apiGroups: [\"\"]\n  resources: [events]\n  verbs: [create, patch]"
        ),
        "{}",
        f[0].message
    );
}

#[test]
fn namespaces_severity_follows_patterns() {
    let denied = [Permission::new(Verb::Watch, "", "namespaces", None)];
    for (scope, want) in [
        (ns(&["ns"]), Severity::Warning),
        (ns(&["ns", "team-*"]), Severity::Error),
    ] {
        let t = target("ns", "op");
        let r = run(scope, Peering::Standalone);
        let mut k = KopfEvidence::unread(r);
        k.rbac = Ok(answered(&t, &k, &denied));
        let f = found(&t, &k);
        assert_eq!(checks(&f), vec![(CheckId::RbacNamespaces, want)]);
        assert!(f[0].message.contains("about 2 minutes"), "{}", f[0].message);
        assert!(f[0].message.contains("never lists namespaces"));
    }
}

#[test]
fn handled_status_patch_names_the_source() {
    let t = target("ns", "op");
    let r = run(ns(&["ns"]), Peering::Standalone);
    let mut k = KopfEvidence::unread(r);
    k.handled = Ok(vec![widget(true, true)]);
    let mut denied = Permission::new(Verb::Patch, "example.com", "widgets", Some("ns"));
    denied.subresource = "status".into();
    k.rbac = Ok(answered(&t, &k, &[denied]));
    let f = found(&t, &k);
    assert_eq!(
        checks(&f),
        vec![(CheckId::RbacHandledResources, Severity::Error)]
    );
    assert!(
        f[0].message
            .contains("widgets.example.com/status in namespace ns")
    );
    assert!(f[0].message.contains("inferred as handled"));
    assert!(
        f[0].message
            .contains("resources: [widgets/status]\n  verbs: [patch]")
    );
}

#[test]
fn over_privilege_cluster_admin_wildcards_and_secrets() {
    let t = target("ns", "op");
    let r = run(ns(&["ns"]), Peering::Standalone);
    let mut k = KopfEvidence::unread(r);
    let mut ev = answered(&t, &k, &[]);
    let bind = |kind: BindingKind, name: &str, rules: Vec<Rule>| Binding {
        kind,
        name: name.into(),
        role_kind: Some(RoleKind::ClusterRole),
        role_name: name.into(),
        via: Subject::Group("system:serviceaccounts:ns".into()),
        rules,
        role_missing: false,
        aggregated: false,
    };
    ev.bindings = vec![
        bind(
            BindingKind::ClusterRoleBinding,
            "cluster-admin",
            vec![rule(&["*"], &["*"], &["*"])],
        ),
        bind(
            BindingKind::ClusterRoleBinding,
            "secrets-reader",
            vec![rule(&[""], &["secrets"], &["get", "list"])],
        ),
        // In one namespace only: not cluster-wide.
        bind(
            BindingKind::RoleBinding("ns".into()),
            "ns-secrets",
            vec![rule(&[""], &["secrets"], &["get"])],
        ),
        bind(
            BindingKind::ClusterRoleBinding,
            "fine",
            vec![rule(
                &[CRD_GROUP],
                &[CRD_RESOURCE],
                &["get", "list", "watch"],
            )],
        ),
    ];
    k.rbac = Ok(ev);
    let f = found(&t, &k);
    assert_eq!(
        checks(&f),
        vec![
            (CheckId::RbacOverPrivileged, Severity::Warning),
            (CheckId::RbacOverPrivileged, Severity::Warning)
        ]
    );
    assert!(
        f[0].message.contains("cluster-admin: every verb"),
        "{}",
        f[0].message
    );
    assert!(f[0].message.contains("wildcard rules"));
    assert!(f[1].message.contains("cluster-wide get, list on secrets"));
}

fn log_record(line: &str) -> kopf_log::Record {
    kopf_log::records(line.as_bytes(), Default::default())
        .next()
        .and_then(Result::ok)
        .expect("one record")
}

#[test]
fn correlated_with_live_log_lines() {
    let t = target("ns", "op");
    let r = run(ns(&["ns"]), Peering::Standalone);
    let mut k = KopfEvidence::unread(r);
    let denied = [
        Permission::new(Verb::List, CRD_GROUP, CRD_RESOURCE, None),
        Permission::new(Verb::Create, "", "events", Some("ns")),
    ];
    k.rbac = Ok(answered(&t, &k, &denied));
    let crd_line = r#"[2026-11-30 02:41:55,039] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: GET https://127.0.0.1:6443/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User "system:serviceaccount:ns:op" cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope', {})"#;
    let event_line = r#"[2026-11-30 02:41:56,039] kopf.objects         [WARNING ] [ns/alpha] Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden: User "system:serviceaccount:ns:op" cannot create resource "events" in API group "" in the namespace "ns"."#;
    k.logs = Ok(LogEvidence {
        records: vec![log_record(crd_line), log_record(event_line)],
        ..Default::default()
    });
    let f = found(&t, &k);
    let crd = f
        .iter()
        .find(|f| f.check == CheckId::RbacCrdScan)
        .expect("crd");
    assert!(crd.message.contains("failing now"), "{}", crd.message);
    assert!(
        crd.message.contains("Request attempt #1/9 failed"),
        "{}",
        crd.message
    );
    let ev = f
        .iter()
        .find(|f| f.check == CheckId::RbacEvents)
        .expect("events");
    assert!(
        ev.message.contains("Failed to post an event"),
        "{}",
        ev.message
    );
    // Without logs: the same finding, without the live part.
    k.logs = Err(Unavailable::new(Obstacle::Failed, "not read"));
    let f = found(&t, &k);
    assert!(f.iter().all(|f| !f.message.contains("failing now")));
}

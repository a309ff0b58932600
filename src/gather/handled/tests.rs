//! Tests of inferring the handled resources.

use super::*;
use crate::model::rbac::{BindingKind, RoleKind, Rule, ServiceAccountRef, Subject};
use crate::model::testing::rule;

fn binding(rules: Vec<Rule>) -> Binding {
    Binding {
        kind: BindingKind::RoleBinding("ns".into()),
        name: "b".into(),
        role_kind: Some(RoleKind::Role),
        role_name: "r".into(),
        via: Subject::ServiceAccount(ServiceAccountRef {
            namespace: "ns".into(),
            name: "op".into(),
        }),
        rules,
        role_missing: false,
        aggregated: false,
    }
}

#[test]
fn candidates_are_watched_or_patched_custom_resources() {
    let b = binding(vec![
        rule(
            &["good.example.com"],
            &["widgets", "widgets/status"],
            &["get", "list", "watch", "patch"],
        ),
        // Read and patched, never created: handled (kopf may lack list/watch on it).
        rule(&["other.example.com"], &["gizmos"], &["get", "patch"]),
        // Created: a child the operator manages, not handles.
        rule(
            &["cert-manager.io"],
            &["certificates"],
            &["get", "create", "patch"],
        ),
        rule(&[""], &["configmaps"], &["watch"]),
        rule(&["kopf.dev"], &["kopfpeerings"], &["watch"]),
        rule(&["*"], &["*"], &["*"]),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            &["list", "watch"],
        ),
    ]);
    let got = candidates(&[b]);
    assert_eq!(
        got,
        BTreeMap::from([
            (
                ("good.example.com".to_string(), "widgets".to_string()),
                HandledSource::RbacWatch
            ),
            (
                ("other.example.com".to_string(), "gizmos".to_string()),
                HandledSource::RbacRule
            ),
        ])
    );
}

#[test]
fn a_refused_list_in_the_log_names_a_handled_resource() {
    let line = r#"[2026-11-30 02:41:55,039] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: GET https://x/apis/crash.example.com/v1/namespaces/ns/beacons -> APIForbiddenError('beacons.crash.example.com is forbidden: User "system:serviceaccount:ns:op" cannot list resource "beacons" in API group "crash.example.com" in the namespace "ns"', {})"#;
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records: Vec<kopf_log::Record> =
        parser.push_line(line.as_bytes()).into_iter().collect();
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    let logs = LogEvidence {
        records,
        ..Default::default()
    };
    assert_eq!(
        logged(Some(&logs)),
        BTreeMap::from([(
            ("crash.example.com".to_string(), "beacons".to_string()),
            HandledSource::Log
        )])
    );
}

#[test]
fn crd_status_storage() {
    let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.good.example.com"},
        "spec": {
            "group": "good.example.com", "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object"}}},
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}
            ]
        }
    }))
    .expect("crd");
    let crd = CrdDigest::of(&crd);
    let h = from_crd(&crd, None, HandledSource::RbacWatch);
    assert_eq!(h.version, "v1");
    assert!(!h.namespaced);
    let info = h.crd.expect("crd info");
    assert!(info.status_subresource && info.status_preserves_unknown_fields);
    let old = from_crd(&crd, Some("v1beta1"), HandledSource::Spec);
    let info = old.crd.expect("crd info");
    assert!(!info.status_subresource && !info.status_preserves_unknown_fields);
}

fn discovery_down(
    method: &http::Method,
    path: &str,
    _body: &serde_json::Value,
) -> http::Response<kube::client::Body> {
    assert_eq!((method, path), (&http::Method::GET, "/api/v1"));
    crate::testing::json(
        http::StatusCode::SERVICE_UNAVAILABLE,
        serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "ServiceUnavailable", "code": 503, "message": "unavailable"}),
    )
}

fn discovery_without_the_resource(
    _method: &http::Method,
    _path: &str,
    _body: &serde_json::Value,
) -> http::Response<kube::client::Body> {
    crate::testing::json(
        http::StatusCode::OK,
        serde_json::json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "secrets", "singularName": "secret", "namespaced": true, "kind": "Secret", "verbs": ["get"]}
        ]}),
    )
}

#[tokio::test]
async fn a_failed_discovery_is_no_unknown_kind() {
    let (client, _api) = crate::testing::FakeApi::start("ns", discovery_down);
    let u = discover(&client, "", "v1", "configmaps")
        .await
        .expect_err("the handled resources are not known");
    assert_eq!(u.why, crate::model::evidence::Obstacle::Failed);
    assert!(u.message.contains("/api/v1"), "{}", u.message);

    let (client, _api) = crate::testing::FakeApi::start("ns", discovery_without_the_resource);
    assert_eq!(
        discover(&client, "", "v1", "secrets").await,
        Ok((true, Some("Secret".to_string())))
    );
    assert_eq!(
        discover(&client, "", "v1", "gizmos").await,
        Ok((true, None)),
        "a kind discovery does not know: kopf reports it unresolved"
    );
}

/// A namespace where kopf posted Events about a Secret and a Widget (and one Event whose
/// apiVersion is no valid group/version), with discovery of both.
fn kopf_posted(
    method: &http::Method,
    path: &str,
    _body: &serde_json::Value,
) -> http::Response<kube::client::Body> {
    let ok = |body: serde_json::Value| crate::testing::json(http::StatusCode::OK, body);
    let event = |api_version: &str, kind: &str, name: &str| {
        serde_json::json!({
            "metadata": {"name": format!("kopf-event-{name}"), "namespace": "ns"},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name, "namespace": "ns"},
            "source": {"component": "kopf"}, "reportingComponent": "kopf",
            "type": "Normal", "reason": "Logging", "message": "Handler 'x' succeeded."
        })
    };
    assert_eq!(method, &http::Method::GET, "{path}");
    if path.starts_with("/api/v1/namespaces/ns/events?") {
        assert!(path.contains("fieldSelector=source%3Dkopf"), "{path}");
        return ok(
            serde_json::json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": [
                event("v1", "Secret", "s1"),
                event("example.com/v1", "Widget", "w1"),
                event("v1/../../x", "Pod", "p1"),
            ]}),
        );
    }
    if path == "/api/v1" {
        return ok(
            serde_json::json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                {"name": "secrets", "singularName": "secret", "namespaced": true, "kind": "Secret", "verbs": ["get"]}
            ]}),
        );
    }
    if path == "/apis/example.com/v1" {
        return ok(
            serde_json::json!({"kind": "APIResourceList", "groupVersion": "example.com/v1", "resources": [
                {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget", "verbs": ["get"]},
                {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget", "verbs": ["get"]}
            ]}),
        );
    }
    crate::testing::json(
        http::StatusCode::NOT_FOUND,
        serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"}),
    )
}

fn operator_target() -> TargetEvidence {
    let mut d = k8s_openapi::api::apps::v1::Deployment::default();
    d.metadata.name = Some("op".into());
    d.metadata.namespace = Some("ns".into());
    TargetEvidence {
        deployment: d,
        ..Default::default()
    }
}

#[tokio::test]
async fn with_wildcard_or_core_only_rules_the_kinds_kopf_posted_about_are_learned() {
    use crate::model::kopf_run::{Peering, Scope};
    let (client, _api) = crate::testing::FakeApi::start("ns", kopf_posted);
    let run = crate::model::testing::run(Scope::Unknown, Peering::Unknown);
    let reach = Reach {
        own: "ns".into(),
        cross_namespace: false,
        reader: "ns/audit".into(),
    };
    let cache = RbacReader::default();
    let names = |handled: &[HandledResource]| -> Vec<String> {
        handled
            .iter()
            .map(|h| format!("{}/{}/{} {:?}", h.group, h.version, h.plural, h.source))
            .collect()
    };

    let wildcard = [binding(vec![rule(&["*"], &["*"], &["*"])])];
    let learned = posted_about(
        &client,
        &operator_target(),
        &run,
        None,
        &reach,
        &wildcard,
        &cache,
    )
    .await
    .expect("learned");
    assert_eq!(
        names(&learned),
        vec!["/v1/secrets Events", "example.com/v1/widgets Events"]
    );

    // Rules on core kinds only: the Widget's Events were posted by another operator.
    let core_only = [binding(vec![rule(
        &[""],
        &["secrets"],
        &["get", "list", "watch", "patch"],
    )])];
    let learned = posted_about(
        &client,
        &operator_target(),
        &run,
        None,
        &reach,
        &core_only,
        &cache,
    )
    .await
    .expect("learned");
    assert_eq!(names(&learned), vec!["/v1/secrets Events"]);
    assert_eq!(learned[0].kind.as_deref(), Some("Secret"));
    assert!(learned[0].crd.is_none());
}

#[tokio::test]
async fn the_kinds_kopfs_json_log_names_are_learned_when_its_rules_let_it_watch_them() {
    use crate::model::kopf_run::{Peering, Scope};
    // No Event at all: kopf's JSON records alone name a Widget and a Secret.
    let (client, _api) = crate::testing::FakeApi::start("ns", |method, path, body| {
        if path.starts_with("/api/v1/namespaces/ns/events?") {
            return crate::testing::json(
                http::StatusCode::OK,
                serde_json::json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": []}),
            );
        }
        kopf_posted(method, path, body)
    });
    let run = crate::model::testing::run(Scope::Unknown, Peering::Unknown);
    let reach = Reach {
        own: "ns".into(),
        cross_namespace: false,
        reader: "ns/audit".into(),
    };
    let mut parser = kopf_log::Parser::default();
    let mut records = Vec::new();
    for (api_version, kind) in [("example.com/v1", "Widget"), ("v1", "Secret")] {
        let line = serde_json::json!({
            "message": "Handler 'sync' succeeded.",
            "timestamp": "2026-11-30T02:41:55.039412+00:00",
            "object": {"apiVersion": api_version, "kind": kind, "name": "o", "uid": "u", "namespace": "ns"},
            "severity": "info",
        });
        records.extend(parser.push_line(line.to_string().as_bytes()));
    }
    records.extend(parser.finish());
    let logs = LogEvidence {
        records,
        ..Default::default()
    };
    let core_only = [binding(vec![rule(
        &[""],
        &["secrets"],
        &["get", "list", "watch", "patch"],
    )])];
    let learned = posted_about(
        &client,
        &operator_target(),
        &run,
        Some(&logs),
        &reach,
        &core_only,
        &RbacReader::default(),
    )
    .await
    .expect("learned");
    let names: Vec<String> = learned
        .iter()
        .map(|h| format!("{}/{}/{} {:?}", h.group, h.version, h.plural, h.source))
        .collect();
    // Its rules do not let it watch Widgets, so kopf cannot serve them: as for the
    // kinds of kopf's Events, only what it may watch is learned.
    assert_eq!(names, vec!["/v1/secrets LogObjects"]);
}

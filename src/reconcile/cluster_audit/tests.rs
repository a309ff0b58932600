//! The ClusterKopfAudit reconcile against a fake API server: what it lists, applies,
//! deletes and writes.

use super::*;
use crate::reconcile::Settings;
use crate::testing::{FakeApi, json, synced_store};
use http::{Method, Response, StatusCode};
use kube::client::Body;

fn cluster_audit() -> ClusterKopfAudit {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "ClusterKopfAudit",
        "metadata": {"name": "platform", "uid": "cka-uid", "generation": 2},
        "spec": {
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "exclusions": {"deployments": [{"namespace": "a", "name": "excluded"}]},
            "defaults": {"interval": "1m"}
        }
    }))
    .expect("ClusterKopfAudit")
}

/// A KopfAudit `platform` generated earlier for a Deployment that is gone.
fn stale_generated() -> KopfAudit {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "gone", "namespace": "a",
                     "labels": {"kopfaudit.dev/cluster-audit": "platform"}},
        "spec": {"target": {"deployment": "gone"}}
    }))
    .expect("KopfAudit")
}

fn kopf_deployment(namespace: &str, name: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"), "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"spec": {"containers": [{
                "name": "operator", "image": "op:1", "command": ["kopf", "run", "-A", "op.py"]
            }]}}
        }
    })
}

/// The controller's context over the fake API: `cka` the only ClusterKopfAudit, `audits`
/// the KopfAudits its cache holds.
fn context(
    client: kube::Client,
    cka: &ClusterKopfAudit,
    audits: Vec<KopfAudit>,
) -> Arc<ClusterContext> {
    Arc::new(ClusterContext {
        inner: Arc::new(Context::for_test(client, Settings::default())),
        audits: synced_store(audits),
        clusters: synced_store(vec![cka.clone()]),
        fingerprints: Mutex::default(),
        failures: Mutex::default(),
    })
}

fn answer(method: &Method, path: &str, _: &serde_json::Value) -> Response<Body> {
    if *method == Method::GET && path.starts_with("/api/v1/namespaces?") {
        return json(
            StatusCode::OK,
            serde_json::json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
                "metadata": {}, "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                "metadata": {"name": "a"}}]}),
        );
    }
    if *method == Method::GET && path.starts_with("/apis/apps/v1/deployments?") {
        return json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": [
                kopf_deployment("a", "op"),
                kopf_deployment("a", "excluded"),
                kopf_deployment("b", "elsewhere"),
            ]}),
        );
    }
    if *method == Method::PATCH || *method == Method::DELETE {
        return json(
            StatusCode::OK,
            serde_json::json!({
                "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
                "metadata": {"name": "x", "namespace": "a"}, "spec": {"target": {"deployment": "x"}}
            }),
        );
    }
    json(StatusCode::NOT_FOUND, serde_json::json!({"code": 404}))
}

#[tokio::test]
async fn a_reconcile_applies_one_audit_per_operator_in_scope_deletes_the_stale_and_writes_status() {
    let (client, api) = FakeApi::start("a", answer);
    let cka = Arc::new(cluster_audit());
    let ctx = context(client, &cka, vec![stale_generated()]);
    let action = reconcile(cka, ctx).await.expect("reconciled");
    assert_eq!(action, Action::requeue(Duration::from_secs(60)));
    let seen = api.take();
    let namespaces = seen
        .iter()
        .find(|s| s.path.starts_with("/api/v1/namespaces?"))
        .expect("the namespaces listed");
    assert!(
        namespaces.path.contains("labelSelector=team%3Da"),
        "{}",
        namespaces.path
    );
    let applied: Vec<&str> = seen
        .iter()
        .filter(|s| s.method == Method::PATCH && s.path.contains("/kopfaudits/"))
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(
        applied.len(),
        1,
        "only a/op (b is out of scope, excluded is excluded): {applied:?}"
    );
    assert!(
        applied[0].starts_with("/apis/kopfaudit.dev/v1alpha1/namespaces/a/kopfaudits/op?")
            && applied[0].contains("fieldManager=kopf-audit")
            && applied[0].contains("force=true"),
        "{applied:?}"
    );
    let deleted: Vec<&str> = seen
        .iter()
        .filter(|s| s.method == Method::DELETE)
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(
        deleted,
        ["/apis/kopfaudit.dev/v1alpha1/namespaces/a/kopfaudits/gone?"]
    );
    let status = seen
        .iter()
        .find(|s| s.path.contains("/clusterkopfaudits/platform/status"))
        .expect("the status written");
    assert_eq!(
        status.body["status"]["summary"]["discovered"], 1,
        "{}",
        status.body
    );
    assert_eq!(status.body["status"]["observedGeneration"], 2);
    assert!(
        !seen.iter().any(|s| s.path.contains("/pods")),
        "the spec decided: no pod listed, no log read: {seen:#?}"
    );
}

#[tokio::test]
async fn an_invalid_selector_stalls_without_a_request_but_the_status() {
    let (client, api) = FakeApi::start("a", answer);
    let mut cka = cluster_audit();
    cka.spec.namespace_selector = Some(
        serde_json::from_value(serde_json::json!({
            "matchExpressions": [{"key": "team", "operator": "In"}]
        }))
        .expect("selector"),
    );
    let cka = Arc::new(cka);
    let ctx = context(client, &cka, Vec::new());
    let action = reconcile(cka, ctx).await.expect("reconciled");
    assert_eq!(action, Action::await_change());
    let seen = api.take();
    let [status] = &seen[..] else {
        panic!("only the status is written: {seen:#?}")
    };
    let stalled = status.body["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Stalled").cloned())
        .expect("Stalled");
    assert_eq!(
        (stalled["status"].as_str(), stalled["reason"].as_str()),
        (Some("True"), Some("InvalidSpec"))
    );
}

/// Three kopf operators in `a`; a tenant's quota refuses the KopfAudits of `op` and
/// `op2`.
fn answer_with_a_quota(method: &Method, path: &str, body: &serde_json::Value) -> Response<Body> {
    if *method == Method::GET && path.starts_with("/apis/apps/v1/deployments?") {
        return json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": [
                kopf_deployment("a", "op"),
                kopf_deployment("a", "op2"),
                kopf_deployment("a", "op3"),
            ]}),
        );
    }
    let refused = ["/kopfaudits/op?", "/kopfaudits/op2?"];
    if *method == Method::PATCH && refused.iter().any(|r| path.contains(r)) {
        return json(
            StatusCode::FORBIDDEN,
            serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403,
                "reason": "Forbidden",
                "message": "kopfaudits.kopfaudit.dev \"op\" is forbidden: exceeded quota: no-audits"
            }),
        );
    }
    answer(method, path, body)
}

#[tokio::test]
async fn a_kopf_audit_that_cannot_be_written_stops_none_of_the_others() {
    let (client, api) = FakeApi::start("a", answer_with_a_quota);
    let cka = Arc::new(cluster_audit());
    let ctx = context(client, &cka, vec![stale_generated()]);
    let error = reconcile(cka, ctx).await.expect_err("two writes refused");
    assert!(
        matches!(
            error,
            ClusterAuditError::Writes {
                failed: 2,
                attempted: 4,
                ..
            }
        ),
        "{error}"
    );
    let seen = api.take();
    let patched = |name: &str| {
        seen.iter().any(|s| {
            s.method == Method::PATCH
                && s.path.starts_with(&format!(
                    "/apis/kopfaudit.dev/v1alpha1/namespaces/a/kopfaudits/{name}?"
                ))
        })
    };
    assert!(
        patched("op") && patched("op2") && patched("op3"),
        "every apply attempted: {seen:#?}"
    );
    assert!(
        seen.iter().any(|s| s.method == Method::DELETE
            && s.path == "/apis/kopfaudit.dev/v1alpha1/namespaces/a/kopfaudits/gone?"),
        "the stale one deleted all the same: {seen:#?}"
    );
    let status = seen
        .iter()
        .find(|s| s.path.contains("/clusterkopfaudits/platform/status"))
        .expect("the status written");
    let ready = status.body["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready").cloned())
        .expect("Ready");
    assert_eq!(ready["status"], "False", "{ready}");
    assert_eq!(ready["reason"], "DiscoveryFailed", "{ready}");
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("2 of 4 writes") && message.contains("exceeded quota"),
        "a person can tell what to fix: {message}"
    );
}

//! Reconciles against a fake API server (tower-test's mock service): every request the
//! reconcile makes is answered by a route table and recorded, so a test asserts the
//! exact requests. A new KopfAudit gets two status writes (pending, result) and one
//! headline Event; an unchanged audit writes nothing and emits nothing.

use super::pipeline::reconcile;
use super::{Context, Settings};
use crate::api::{KopfAudit, KopfAuditStatus};
use crate::catalog::REQUESTED_AT_ANNOTATION;
use crate::gather::Shared;
use crate::gather::changes::Watched;
use crate::gather::rbac::{RbacReader, RbacStores};
use crate::testing::synced_store;
use crate::testing::{FakeApi, Seen};
use http::{Method, Response, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::ResourceExt;
use kube::client::Body;
use std::sync::Arc;

const NS: &str = "ns";

/// kopf's output of a healthy operator, with the kubelet's timestamps.
const GOOD_LOG: &str = "2026-12-01T10:00:00.000000000Z [2026-12-01 10:00:00,000] kopf._core.engines.a [INFO    ] Initial authentication has been initiated.\n\
2026-12-01T10:00:01.000000000Z [2026-12-01 10:00:01,000] kopf.objects         [INFO    ] [ns/w1] Handler 'reconcile' succeeded.\n";

use crate::testing::json;

fn list(kind: &str, api_version: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {}, "items": []})
}

fn list_of(
    kind: &str,
    api_version: &str,
    item: Option<impl serde::Serialize>,
) -> serde_json::Value {
    let mut list = list(kind, api_version);
    list["items"] = serde_json::json!(item.into_iter().collect::<Vec<_>>());
    list
}

/// The same cluster without the target Deployment.
fn answer_without_target(method: &Method, path: &str, body: &serde_json::Value) -> Response<Body> {
    if method == Method::GET && path.contains("/deployments?") {
        return json(StatusCode::OK, list("DeploymentList", "apps/v1"));
    }
    answer(method, path, body)
}

fn not_found() -> Response<Body> {
    json(
        StatusCode::NOT_FOUND,
        serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"}),
    )
}

/// The answer of a healthy cluster to what an audit asks.
fn answer(method: &Method, path: &str, body: &serde_json::Value) -> Response<Body> {
    let is = |m: &Method, part: &str| method == m && path.contains(part);
    if is(&Method::GET, "/pods/op-1/log") {
        return Response::new(Body::from(GOOD_LOG.as_bytes().to_vec()));
    }
    if is(&Method::GET, "/apis/apps/v1/namespaces/ns/deployments?") {
        let (deployment, _) = compliant_target();
        let selected = path.contains("fieldSelector=metadata.name%3Dop");
        return json(
            StatusCode::OK,
            list_of("DeploymentList", "apps/v1", selected.then_some(deployment)),
        );
    }
    if is(&Method::GET, "/api/v1/namespaces/ns/pods?") {
        let (_, pod) = compliant_target();
        let selected = path.contains("labelSelector=app%3Dop");
        return json(
            StatusCode::OK,
            list_of("PodList", "v1", selected.then_some(pod)),
        );
    }
    if is(&Method::POST, "/subjectaccessreviews") {
        let mut review = body.clone();
        review["status"] = serde_json::json!({"allowed": true});
        return json(StatusCode::CREATED, review);
    }
    if is(&Method::GET, "/clusterrolebindings") {
        return json(
            StatusCode::OK,
            list("ClusterRoleBindingList", "rbac.authorization.k8s.io/v1"),
        );
    }
    if is(&Method::GET, "/rolebindings") {
        return json(
            StatusCode::OK,
            list("RoleBindingList", "rbac.authorization.k8s.io/v1"),
        );
    }
    if is(
        &Method::GET,
        "/customresourcedefinitions/widgets.example.com",
    ) {
        return json(StatusCode::OK, widget_crd());
    }
    if is(&Method::GET, "/apis/example.com/v1/namespaces/ns/widgets?") {
        return json(StatusCode::OK, list("WidgetList", "example.com/v1"));
    }
    if is(&Method::GET, "/api/v1/namespaces/ns/events?") {
        return json(StatusCode::OK, list("EventList", "v1"));
    }
    if is(&Method::PATCH, "/kopfaudits/audit/status") {
        let mut audit = body.clone();
        audit["metadata"] =
            serde_json::json!({"name": "audit", "namespace": NS, "resourceVersion": "2"});
        audit["spec"] = serde_json::json!({"target": {"deployment": "op"}});
        return json(StatusCode::OK, audit);
    }
    if is(&Method::POST, "/apis/events.k8s.io/v1/namespaces/ns/events") {
        return json(StatusCode::CREATED, body.clone());
    }
    // The PolicyReport CRD is not installed.
    not_found()
}

/// The CRD of the resource the operator handles: status kept, with a subresource.
fn widget_crd() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    })
}

/// A compliant kopf Deployment `op` in `ns` and its running pod `op-1`.
fn compliant_target() -> (Deployment, Pod) {
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "namespace": NS},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app": "op"}},
            "template": {
                "metadata": {"labels": {"app": "op"}},
                "spec": {
                    "serviceAccountName": "op",
                    "containers": [{
                        "name": "operator",
                        "command": ["kopf", "run"],
                        "args": ["--standalone", "-n", NS, "--liveness=http://0.0.0.0:8080/healthz", "/app/op.py"],
                        "resources": {"requests": {"memory": "256Mi", "cpu": "100m"}, "limits": {"memory": "512Mi"}},
                        "livenessProbe": {"httpGet": {"port": 8080, "path": "/healthz"}}
                    }]
                }
            }
        }
    }))
    .expect("deployment");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "op-1", "namespace": NS, "labels": {"app": "op"}},
        "spec": {"containers": [{"name": "operator"}]},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "operator", "restartCount": 0, "ready": true, "image": "op", "imageID": "op"
        }]}
    }))
    .expect("pod");
    (deployment, pod)
}

fn audit_with(status: Option<KopfAuditStatus>) -> Arc<KopfAudit> {
    let mut audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "audit", "namespace": NS, "uid": "u-1", "generation": 1, "resourceVersion": "1"},
        "spec": {
            "target": {"deployment": "op"}, "interval": "5m",
            "handledResources": [{"group": "example.com", "version": "v1", "plural": "widgets"}]
        }
    }))
    .expect("audit");
    audit.status = status;
    Arc::new(audit)
}

fn context(client: Client) -> Arc<Context> {
    Arc::new(Context::for_test(
        client,
        Settings {
            instance: "test".into(),
            ..Default::default()
        },
    ))
}

fn status_writes(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter()
        .filter(|s| s.is(&Method::PATCH, "/kopfaudits/audit/status"))
        .collect()
}

fn events(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter()
        .filter(|s| s.is(&Method::POST, "/apis/events.k8s.io/v1/"))
        .collect()
}

#[tokio::test]
async fn a_new_audit_writes_twice_and_emits_one_headline_then_a_steady_one_nothing() {
    let (client, api) = FakeApi::start(NS, answer);
    let ctx = watched_context(client);

    let first = reconcile(audit_with(None), ctx.clone()).await;
    assert!(first.is_ok(), "{first:?}");
    let seen = api.take();
    let writes = status_writes(&seen);
    assert_eq!(writes.len(), 2, "pending, then the result: {seen:#?}");
    let emitted = events(&seen);
    assert_eq!(emitted.len(), 1, "one headline Event: {emitted:#?}");
    assert_eq!(emitted[0].body["reason"], "AuditPassed");
    let result: KopfAuditStatus =
        serde_json::from_value(writes[1].body["status"].clone()).expect("status written");
    assert!(result.findings.is_empty(), "{:#?}", result.findings);
    let reads: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.method == Method::GET || s.is(&Method::POST, "/subjectaccessreviews"))
        .collect();
    // The log, the bindings, and one review per distinct permission: CRDs
    // list/watch, events create/patch, namespaces list/watch, widgets
    // get/list/watch/patch and widgets/status patch.
    assert_eq!(
        seen.iter()
            .filter(|s| s.is(&Method::POST, "/subjectaccessreviews"))
            .count(),
        11,
        "{reads:#?}"
    );
    assert_eq!(seen.iter().filter(|s| s.path.contains("/log")).count(), 1);
    // The target is read live, by name, and its pods by its selector: nothing else of
    // the namespace's Deployments and pods but one page of their projections, to find
    // the other kopf operators (runtime.operator-conflict, once per interval).
    let (discovery, target_reads): (Vec<&str>, Vec<&str>) = seen
        .iter()
        .filter(|s| s.path.contains("/deployments") || s.path.contains("/pods?"))
        .map(|s| s.path.as_str())
        .partition(|p| p.contains("/deployments?&limit="));
    assert_eq!(
        discovery,
        ["/apis/apps/v1/namespaces/ns/deployments?&limit=500"]
    );
    assert_eq!(target_reads.len(), 2, "{target_reads:#?}");
    assert!(target_reads[0].contains("fieldSelector=metadata.name%3Dop"));
    assert!(target_reads[1].contains("labelSelector=app%3Dop"));

    let second = reconcile(audit_with(Some(result)), ctx.clone()).await;
    assert!(second.is_ok(), "{second:?}");
    let seen = api.take();
    assert!(
        status_writes(&seen).is_empty(),
        "no write in a steady state: {seen:#?}"
    );
    assert!(
        events(&seen).is_empty(),
        "no Event in a steady state: {seen:#?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.method == Method::PATCH || s.method == Method::PUT),
        "nothing written at all: {seen:#?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.is(&Method::POST, "/subjectaccessreviews")),
        "the answers are remembered: {seen:#?}"
    );
    // The target and its pods are what the first run read (the watches saw no change),
    // the other operators what it discovered: the log, the Events and the handled
    // objects are all a steady audit asks for.
    assert!(
        !seen
            .iter()
            .any(|s| s.path.contains("/deployments") || s.path.contains("/pods?")),
        "the target is not read again: {seen:#?}"
    );
    assert!(seen.len() <= 4, "a steady audit asks little: {seen:#?}");
    let log = seen
        .iter()
        .find(|s| s.path.contains("/log"))
        .expect("the log read");
    assert!(
        log.path.contains("sinceTime="),
        "from where it stopped: {}",
        log.path
    );
}

/// A context as the operator runs it: its RBAC watch caches synced (with what the fake
/// API lists: no bindings), its Deployment and pod watches listed and telling changes;
/// an audit may be asked for at any time.
fn watched_context(client: Client) -> Arc<Context> {
    let mut ctx = Context::for_test(
        client,
        Settings {
            instance: "test".into(),
            audit_now_min_gap: std::time::Duration::ZERO,
            ..Default::default()
        },
    );
    let stores = RbacStores {
        cluster_role_bindings: Some(synced_store(Vec::new())),
        cluster_roles: Some(synced_store(Vec::new())),
        role_bindings: Some((synced_store(Vec::new()), None)),
        roles: Some((synced_store(Vec::new()), None)),
    };
    let shared = Shared {
        rbac: RbacReader::new(stores),
        ..Shared::default()
    };
    shared.changes.listed(Watched::Deployments);
    shared.changes.listed(Watched::Pods);
    ctx.shared = Arc::new(shared);
    Arc::new(ctx)
}

/// The paths of the target's reads (its Deployment by name, its pods by selector).
fn target_reads(seen: &[Seen]) -> Vec<&str> {
    seen.iter()
        .map(|s| s.path.as_str())
        .filter(|p| p.contains("fieldSelector=metadata.name%3Dop") || p.contains("/pods?"))
        .collect()
}

#[tokio::test]
async fn the_target_is_read_again_after_a_change_in_its_namespace_a_request_or_a_new_spec() {
    let (client, api) = FakeApi::start(NS, answer);
    let ctx = watched_context(client);
    let first = reconcile(audit_with(None), ctx.clone()).await;
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(target_reads(&api.take()).len(), 2, "read at first");

    ctx.shared.changes.changed(Watched::Pods, "elsewhere");
    let _ = reconcile(audit_with(None), ctx.clone()).await;
    assert!(target_reads(&api.take()).is_empty(), "another namespace");

    ctx.shared.changes.changed(Watched::Pods, NS);
    let _ = reconcile(audit_with(None), ctx.clone()).await;
    assert_eq!(target_reads(&api.take()).len(), 2, "a pod changed");

    let _ = reconcile(audit_with(None), ctx.clone()).await;
    assert!(target_reads(&api.take()).is_empty(), "and kept again");

    let mut asked = (*audit_with(None)).clone();
    asked.annotations_mut().insert(
        REQUESTED_AT_ANNOTATION.into(),
        "2026-12-07T10:00:00Z".into(),
    );
    let _ = reconcile(Arc::new(asked), ctx.clone()).await;
    assert_eq!(target_reads(&api.take()).len(), 2, "audit-now reads anew");

    let mut respecced = (*audit_with(None)).clone();
    respecced.metadata.generation = Some(2);
    let _ = reconcile(Arc::new(respecced), ctx.clone()).await;
    assert_eq!(target_reads(&api.take()).len(), 2, "a new spec reads anew");

    ctx.shared.changes.restarted(Watched::Deployments);
    let _ = reconcile(audit_with(None), ctx.clone()).await;
    assert_eq!(target_reads(&api.take()).len(), 2, "the watch lists again");
}

#[tokio::test]
async fn without_listed_watches_every_audit_reads_its_target() {
    let (client, api) = FakeApi::start(NS, answer);
    let ctx = context(client);
    for _ in 0..2 {
        let run = reconcile(audit_with(None), ctx.clone()).await;
        assert!(run.is_ok(), "{run:?}");
        assert_eq!(target_reads(&api.take()).len(), 2);
    }
}

#[tokio::test]
async fn a_target_that_is_gone_stalls_without_backing_off() {
    let (client, api) = FakeApi::start(NS, answer_without_target);
    let ctx = Arc::new(Context::for_test(client, Settings::default()));
    let action = reconcile(audit_with(None), ctx).await;
    assert!(action.is_ok(), "a stall is not an error: {action:?}");
    let seen = api.take();
    let writes = status_writes(&seen);
    let status: KopfAuditStatus =
        serde_json::from_value(writes[writes.len() - 1].body["status"].clone()).expect("status");
    let stalled = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Stalled")
        .expect("Stalled");
    assert_eq!(
        (stalled.status.as_str(), stalled.reason.as_str()),
        ("True", "TargetNotFound")
    );
    assert_eq!(events(&seen).len(), 1, "one TargetMissing Event");
    assert!(
        !seen
            .iter()
            .any(|s| s.path.contains("/log") || s.path.contains("subjectaccessreviews")),
        "nothing of the target is read: {seen:#?}"
    );
}

/// The healthy cluster, where the operator peers (no `--standalone`) and a tenant wrote
/// its KopfPeering's status with values past the end of time.
fn answer_with_hostile_peering(
    method: &Method,
    path: &str,
    body: &serde_json::Value,
) -> Response<Body> {
    let is = |m: &Method, part: &str| method == m && path.contains(part);
    if is(&Method::GET, "/apis/apps/v1/namespaces/ns/deployments?") {
        let (mut deployment, _) = compliant_target();
        if let Some(c) = deployment
            .spec
            .template
            .spec
            .as_mut()
            .and_then(|s| s.containers.first_mut())
        {
            c.args = Some(vec!["-n".into(), NS.into(), "/app/op.py".into()]);
        }
        let selected = path.contains("fieldSelector=metadata.name%3Dop");
        return json(
            StatusCode::OK,
            list_of("DeploymentList", "apps/v1", selected.then_some(deployment)),
        );
    }
    if is(
        &Method::GET,
        "/apis/kopf.dev/v1/namespaces/ns/kopfpeerings/default",
    ) {
        return json(
            StatusCode::OK,
            serde_json::json!({
                "apiVersion": "kopf.dev/v1", "kind": "KopfPeering",
                "metadata": {"name": "default", "namespace": NS},
                "status": {
                    "forever": {"priority": 0, "lifetime": i64::MAX, "lastseen": "2026-12-01T10:00:00+00:00"},
                    "never": {"priority": 0, "lifetime": i64::MIN, "lastseen": "2026-12-01T10:00:00+00:00"},
                    "late": {"priority": 0, "lifetime": 60, "lastseen": "9999-12-31T23:59:59+00:00"},
                    "early": {"priority": 0, "lifetime": -60, "lastseen": "-009999-01-01T00:00:00+00:00"}
                }
            }),
        );
    }
    answer(method, path, body)
}

fn last_status(seen: &[Seen]) -> KopfAuditStatus {
    let writes = status_writes(seen);
    let last = writes.last().expect("a status write");
    serde_json::from_value(last.body["status"].clone()).expect("status")
}

fn condition(status: &KopfAuditStatus, type_: &str) -> (String, String) {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_peering_status_past_the_end_of_time_is_audited_without_a_panic() {
    let (client, api) = FakeApi::start(NS, answer_with_hostile_peering);
    let ctx = context(client);
    let action = reconcile(audit_with(None), ctx).await;
    assert!(action.is_ok(), "{action:?}");
    let seen = api.take();
    assert!(
        seen.iter()
            .any(|s| s.path.contains("/kopfpeerings/default")),
        "the peering object was read: {seen:#?}"
    );
    let status = last_status(&seen);
    assert_eq!(
        condition(&status, "Ready"),
        ("True".into(), "AuditSucceeded".into())
    );
    // The peer alive for ever is not one of the operator's pods.
    assert!(
        status
            .findings
            .iter()
            .any(|f| f.check == crate::catalog::CheckId::RuntimeForeignPeer),
        "{:#?}",
        status.findings
    );
}

#[tokio::test]
async fn a_panicking_audit_stalls_and_the_next_audit_runs() {
    let (client, api) = FakeApi::start(NS, answer);
    let ctx = context(client);
    let panicking = {
        let mut audit = (*audit_with(None)).clone();
        audit.spec.target.deployment = Some(crate::gather::PANICKING_TARGET.into());
        Arc::new(audit)
    };
    let action = super::reconcile_counted(panicking, ctx.clone()).await;
    assert!(
        action.is_ok(),
        "a contained panic is a stall, not an error: {action:?}"
    );
    let status = last_status(&api.take());
    assert_eq!(
        condition(&status, "Stalled"),
        ("True".into(), "InternalError".into())
    );
    let stalled = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Stalled")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(stalled.contains("a panic forced by a test"), "{stalled}");

    let next = super::reconcile_counted(audit_with(None), ctx).await;
    assert!(next.is_ok(), "{next:?}");
    let status = last_status(&api.take());
    assert_eq!(
        condition(&status, "Ready"),
        ("True".into(), "AuditSucceeded".into())
    );
}

#[tokio::test]
async fn a_panic_anywhere_in_a_reconcile_becomes_its_error() {
    let outcome = super::pipeline::contain_panic(async {
        let values: Vec<u32> = Vec::new();
        values[usize::MAX / 2]
    })
    .await;
    let message = outcome.expect_err("the panic, as a message");
    assert!(message.contains("index out of bounds"), "{message}");
}

/// A failure the next attempt may not meet: the API server is unavailable.
fn unavailable() -> Response<Body> {
    json(
        StatusCode::SERVICE_UNAVAILABLE,
        serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "ServiceUnavailable", "code": 503, "message": "try again"}),
    )
}

/// The healthy cluster, where the requests `fails` says yes to fail while `failing`
/// is set; and the flag.
fn failing_while(
    fails: fn(&Method, &str) -> bool,
) -> (
    impl Fn(&Method, &str, &serde_json::Value) -> Response<Body> + Send + 'static,
    Arc<std::sync::atomic::AtomicBool>,
) {
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = failing.clone();
    let route = move |method: &Method, path: &str, body: &serde_json::Value| {
        if flag.load(std::sync::atomic::Ordering::SeqCst) && fails(method, path) {
            return unavailable();
        }
        answer(method, path, body)
    };
    (route, failing)
}

fn is_event_post(method: &Method, path: &str) -> bool {
    method == Method::POST && path.contains("/apis/events.k8s.io/v1/")
}

#[tokio::test]
async fn a_failed_event_is_posted_again_at_the_next_audit_under_its_name_and_arrives_once() {
    let (route, failing) = failing_while(is_event_post);
    let (client, api) = FakeApi::start(NS, route);
    let ctx = context(client);

    let first = reconcile(audit_with(None), ctx.clone()).await;
    assert!(
        first.is_ok(),
        "a failed Event fails nothing else: {first:?}"
    );
    let seen = api.take();
    let tried = events(&seen);
    assert_eq!(tried.len(), 1, "{seen:#?}");
    assert_eq!(tried[0].body["reason"], "AuditPassed");
    let name = tried[0].body["metadata"]["name"].clone();
    let result = last_status(&seen);

    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    let second = reconcile(audit_with(Some(result.clone())), ctx.clone()).await;
    assert!(second.is_ok(), "{second:?}");
    let seen = api.take();
    assert!(
        status_writes(&seen).is_empty(),
        "nothing changed: {seen:#?}"
    );
    let delivered = events(&seen);
    assert_eq!(delivered.len(), 1, "the owed Event: {seen:#?}");
    assert_eq!(delivered[0].body["reason"], "AuditPassed");
    assert_eq!(
        delivered[0].body["metadata"]["name"], name,
        "under the name it was first tried with"
    );

    let third = reconcile(audit_with(Some(result)), ctx).await;
    assert!(third.is_ok(), "{third:?}");
    assert!(events(&api.take()).is_empty(), "delivered once");
}

/// The healthy cluster, where every Event POST answers AlreadyExists: an earlier
/// attempt had reached the API server.
fn answer_already_exists(method: &Method, path: &str, body: &serde_json::Value) -> Response<Body> {
    if is_event_post(method, path) {
        return json(
            StatusCode::CONFLICT,
            serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "AlreadyExists", "code": 409, "message": "exists"}),
        );
    }
    answer(method, path, body)
}

#[tokio::test]
async fn an_event_that_already_exists_counts_as_delivered() {
    let (client, api) = FakeApi::start(NS, answer_already_exists);
    let ctx = context(client);
    let first = reconcile(audit_with(None), ctx.clone()).await;
    assert!(first.is_ok(), "{first:?}");
    let seen = api.take();
    assert_eq!(events(&seen).len(), 1);
    let second = reconcile(audit_with(Some(last_status(&seen))), ctx).await;
    assert!(second.is_ok(), "{second:?}");
    assert!(events(&api.take()).is_empty(), "not posted again");
}

fn is_policy_report_write(method: &Method, path: &str) -> bool {
    method == Method::PATCH && path.contains("/policyreports/kopf-audit-audit")
}

/// The healthy cluster with the PolicyReport CRD installed, its writes failing while
/// the flag is set.
fn with_policy_reports(
    route: impl Fn(&Method, &str, &serde_json::Value) -> Response<Body> + Send + 'static,
) -> impl Fn(&Method, &str, &serde_json::Value) -> Response<Body> + Send + 'static {
    move |method: &Method, path: &str, body: &serde_json::Value| {
        let response = route(method, path, body);
        if is_policy_report_write(method, path) && response.status() == StatusCode::NOT_FOUND {
            return json(StatusCode::OK, body.clone());
        }
        response
    }
}

#[tokio::test]
async fn a_failed_policy_report_is_written_at_the_next_audit() {
    let (route, failing) = failing_while(is_policy_report_write);
    let (client, api) = FakeApi::start(NS, with_policy_reports(route));
    let ctx = context(client);
    let reports = |seen: &[Seen]| {
        seen.iter()
            .filter(|s| is_policy_report_write(&s.method, &s.path))
            .count()
    };

    let first = reconcile(audit_with(None), ctx.clone()).await;
    assert!(first.is_ok(), "{first:?}");
    let seen = api.take();
    assert_eq!(reports(&seen), 1, "tried once: {seen:#?}");
    let result = last_status(&seen);

    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    let second = reconcile(audit_with(Some(result.clone())), ctx.clone()).await;
    assert!(second.is_ok(), "{second:?}");
    let seen = api.take();
    assert!(
        status_writes(&seen).is_empty(),
        "nothing changed: {seen:#?}"
    );
    assert_eq!(reports(&seen), 1, "written again though nothing changed");

    let third = reconcile(audit_with(Some(result)), ctx).await;
    assert!(third.is_ok(), "{third:?}");
    assert_eq!(reports(&api.take()), 0, "and then no more");
}

#[tokio::test]
async fn a_leader_past_its_renewal_deadline_writes_nothing() {
    let (client, api) = FakeApi::start(NS, answer);
    let mut ctx = Context::for_test(client, Settings::default());
    let (_sender, leading) = tokio::sync::watch::channel(true);
    // Held by the lease manager's word, never renewed as far as this client saw.
    ctx.mandate = super::leader::Mandate::of_lease(leading, Arc::default());
    let result = reconcile(audit_with(None), Arc::new(ctx)).await;
    assert!(
        matches!(result, Err(super::pipeline::ReconcileError::NotLeading)),
        "{result:?}"
    );
    let seen = api.take();
    assert!(
        !seen
            .iter()
            .any(|s| s.method != Method::GET && !s.path.contains("subjectaccessreviews")),
        "nothing written: {seen:#?}"
    );
}

#[tokio::test]
async fn audits_past_the_slots_wait_and_are_counted_as_queued() {
    let (client, _api) = FakeApi::start(NS, answer_without_target);
    let settings = Settings {
        max_concurrent_audits: 1,
        ..Settings::default()
    };
    let ctx = Arc::new(Context::for_test(client, settings));
    let first = ctx.audit_slot().await.expect("a free slot");
    let waiting = {
        let ctx = ctx.clone();
        tokio::spawn(async move { ctx.audit_slot().await.is_some() })
    };
    let queued = |ctx: &Context| ctx.metrics.encode().contains("kopf_audit_audits_queued 1");
    for _ in 0..100 {
        if queued(&ctx) {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(queued(&ctx), "{}", ctx.metrics.encode());
    assert!(
        !waiting.is_finished(),
        "the second audit waits for the slot"
    );
    drop(first);
    assert!(
        waiting.await.expect("joined"),
        "it runs once the slot is free"
    );
    assert!(ctx.metrics.encode().contains("kopf_audit_audits_queued 0"));
}

#[tokio::test]
async fn a_reconcile_waiting_for_its_slot_holds_little_of_the_audit() {
    // The controller starts a reconcile for every due audit at once, and all but the
    // slots' number wait: each waiting one must hold its own small future, not the
    // audit's (boxed once the slot is held).
    let (client, _api) = FakeApi::start(NS, answer);
    let ctx = context(client);
    let audit = audit_with(None);
    let waiting = std::mem::size_of_val(&super::reconcile_counted(audit.clone(), ctx.clone()));
    let whole = std::mem::size_of_val(&reconcile(audit, ctx));
    assert!(waiting <= 1024, "a waiting reconcile holds {waiting} bytes");
    assert!(
        whole > 8 * waiting,
        "the audit's future ({whole} bytes) is what the box keeps off the queue"
    );
}

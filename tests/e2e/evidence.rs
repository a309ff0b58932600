//! Missing evidence is never health: a real kopf operator with handler failures loses
//! its pods, is audited by a tenant with a tiny log window first, handles a resource
//! whose discovery fails, has permissions the API server cannot decide, logs more
//! distinct failures than the auditor keeps, or handles an object too costly to parse;
//! its findings are neither resolved nor hidden, and no area turns True for lack of
//! evidence.

use crate::operator::{
    Setup, audit_events, condition, create_audit, ensure_crd, fixture_deployment, found_checks,
    wait_status,
};
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use kopf_audit::api::{KopfAudit, KopfAuditStatus};
use kube::ResourceExt;
use kube::api::Api;
use std::time::Duration;

fn audit(name: &str, deployment: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut spec = serde_json::json!({
        "target": {"deployment": deployment}, "interval": "30s",
        "thresholds": {"resolveAfter": "0s"}
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name}, "spec": spec
    })
}

#[tokio::test]
async fn an_operator_without_running_pods_keeps_its_findings_and_is_not_healthy() {
    let t = Setup::new("no-pods")
        .fixture("silent-failures")
        .start()
        .await;
    let (client, ns, deployment) = (t.client.clone(), &t.ns, t.deployment.clone());
    t.create_audit(audit("audit", &deployment, serde_json::json!({})))
        .await;
    t.wait_status(
        "audit",
        "runtime.handler-failures",
        Duration::from_secs(180),
        |s| found_checks(s).contains("runtime.handler-failures"),
    )
    .await;
    support::scale_to_zero(&client, &ns.name, &deployment).await;
    say("scaled to 0: the log is gone, and with it the evidence");
    t.wait_status(
        "audit",
        "RuntimeHealthy Unknown, reason NoRunningPod",
        Duration::from_secs(120),
        |s| condition(s, "RuntimeHealthy") == Some(("Unknown", "NoRunningPod")),
    )
    .await;
    // Two more audits: with resolveAfter 0s, any resolution would show at once.
    tokio::time::sleep(Duration::from_secs(65)).await;
    let status = Api::<kopf_audit::api::KopfAudit>::namespaced(client.clone(), &ns.name)
        .get("audit")
        .await
        .expect("audit")
        .status
        .expect("status");
    assert_eq!(
        condition(&status, "RuntimeHealthy"),
        Some(("Unknown", "NoRunningPod")),
        "{:#?}",
        status.conditions
    );
    assert_ne!(
        condition(&status, "EventsCompliant").map(|c| c.0),
        Some("True")
    );
    let kept = status
        .findings
        .iter()
        .find(|f| f.check.as_str() == "runtime.handler-failures")
        .unwrap_or_else(|| panic!("the finding is kept: {:#?}", status.findings));
    assert!(kept.stale, "{kept:#?}");
    let events = audit_events(&client, &ns.name, "audit").await;
    let resolved: Vec<_> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("FindingResolved"))
        .collect();
    assert!(
        resolved.is_empty(),
        "nothing resolved by not looking: {resolved:#?}"
    );
    drop(t.kopf);
}

#[tokio::test]
async fn a_tenant_s_tiny_log_window_does_not_blind_another_audit_of_the_operator() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "log-windows").await;
    let _kopf = Fixture::start("silent-failures", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    // kopf retries every 5 s: let failures pile up before anyone reads.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    let tiny = serde_json::json!({"logs": {"window": "1m", "limitBytes": "1Ki"}});
    create_audit(&client, &ns.name, audit("tenant", &deployment, tiny))
        .await
        .expect("the tenant's KopfAudit");
    wait_status(
        &client,
        &ns.name,
        "tenant",
        "the tenant's first audit",
        Duration::from_secs(120),
        |s| condition(s, "Ready") == Some(("True", "AuditSucceeded")),
    )
    .await;
    create_audit(
        &client,
        &ns.name,
        audit("platform", &deployment, serde_json::json!({})),
    )
    .await
    .expect("the platform's KopfAudit");
    let platform = wait_status(
        &client,
        &ns.name,
        "platform",
        "the platform's audit: runtime.handler-failures",
        Duration::from_secs(120),
        |s| {
            condition(s, "Ready") == Some(("True", "AuditSucceeded"))
                && found_checks(s).contains("runtime.handler-failures")
        },
    )
    .await;
    let status = platform.status.expect("status");
    assert_eq!(
        condition(&status, "RuntimeHealthy").map(|c| c.0),
        Some("False"),
        "{:#?}",
        status.conditions
    );
}

/// The Events about a KopfAudit with reason `FindingResolved`.
async fn resolved_events(client: &kube::Client, ns: &str, name: &str) -> Vec<String> {
    audit_events(client, ns, name)
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FindingResolved"))
        .filter_map(|e| e.note)
        .collect()
}

/// The status of a KopfAudit as it is now.
async fn status_now(client: &kube::Client, ns: &str, name: &str) -> KopfAuditStatus {
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("the KopfAudit")
        .status
        .expect("its status")
}

/// A condition's message.
fn message<'a>(status: &'a KopfAuditStatus, type_: &str) -> &'a str {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map_or("", |c| c.message.as_str())
}

/// An APIService for a group whose Service does not exist: the aggregator answers 503
/// for it, so discovery of that group fails. Deleted when dropped: while it exists,
/// every client's discovery of the whole cluster is partial.
struct BrokenApiService {
    name: String,
}

impl BrokenApiService {
    fn create(group: &str, service_namespace: &str) -> BrokenApiService {
        let name = format!("v1.{group}");
        let manifest = serde_json::json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name},
            "spec": {"group": group, "version": "v1", "insecureSkipTLSVerify": true,
                "groupPriorityMinimum": 1000, "versionPriority": 15,
                "service": {"namespace": service_namespace, "name": "no-such-service", "port": 443}}
        });
        let (ok, _, err) = support::kubectl_run(&["apply", "-f", "-"], Some(&manifest.to_string()));
        assert!(ok, "creating APIService {name}: {err}");
        BrokenApiService { name }
    }
}

impl Drop for BrokenApiService {
    fn drop(&mut self) {
        let (ok, _, err) = support::kubectl_run(
            &[
                "delete",
                "apiservice",
                &self.name,
                "--ignore-not-found",
                "--wait=false",
            ],
            None,
        );
        if !ok {
            say(format!("could not delete APIService {}: {err}", self.name));
        }
    }
}

#[tokio::test]
async fn a_failed_discovery_of_a_handled_resource_leaves_its_areas_unknown() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "discovery").await;
    let _kopf = Fixture::start("silent-failures", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let group = format!("{}.discovery.e2e.kopf-audit.dev", ns.name);
    let broken = BrokenApiService::create(&group, &ns.name);
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    let handled = serde_json::json!({"handledResources": [
        {"group": "silent-failures.fixtures.kopf-audit.dev", "version": "v1", "plural": "mailboxes"},
        {"group": group, "version": "v1", "plural": "things"}
    ]});
    create_audit(&client, &ns.name, audit("audit", &deployment, handled))
        .await
        .expect("creating the KopfAudit");
    let unknown = |s: &KopfAuditStatus| {
        ["EventsCompliant", "PersistenceCompliant"]
            .iter()
            .all(|t| condition(s, t) == Some(("Unknown", "GatherFailed")))
    };
    wait_status(
        &client,
        &ns.name,
        "audit",
        "EventsCompliant and PersistenceCompliant Unknown, reason GatherFailed",
        Duration::from_secs(180),
        unknown,
    )
    .await;
    // Two more audits (interval 30s, resolveAfter 0s): nothing turns True or resolves.
    tokio::time::sleep(Duration::from_secs(65)).await;
    let status = status_now(&client, &ns.name, "audit").await;
    drop(broken);
    assert!(unknown(&status), "{:#?}", status.conditions);
    for t in ["EventsCompliant", "PersistenceCompliant"] {
        let text = message(&status, t);
        assert!(
            text.contains(&format!("/apis/{group}/v1")),
            "{t} names the discovery that failed: {text}"
        );
    }
    assert!(
        status
            .findings
            .iter()
            .all(|f| !f.check.as_str().starts_with("persistence.")),
        "nothing is concluded of objects never read: {:#?}",
        status.findings
    );
    let resolved = resolved_events(&client, &ns.name, "audit").await;
    assert!(resolved.is_empty(), "nothing resolved: {resolved:#?}");
}

/// A plain-HTTP proxy to the API server, as the admin, that answers every
/// SubjectAccessReview about `user` with an `evaluationError`, as the API server does
/// when an authorizer fails (a webhook authorizer down). The RBAC authorizer itself
/// never sets one (it puts a missing role in `reason`), so the failure is injected
/// here, on the real API server's answer.
async fn undeciding_proxy(admin: kube::Client, user: String) -> u16 {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port for the proxy");
    let port = listener.local_addr().expect("its address").port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let admin = admin.clone();
            let user = user.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: http::Request<hyper::body::Incoming>| {
                        let admin = admin.clone();
                        let user = user.clone();
                        async move {
                            let (mut parts, body) = req.into_parts();
                            let bytes = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            parts.headers.remove(http::header::HOST);
                            let review = parts.method == http::Method::POST
                                && parts.uri.path().ends_with("/subjectaccessreviews");
                            let request = http::Request::from_parts(
                                parts,
                                kube::client::Body::from(bytes.to_vec()),
                            );
                            let response = admin.send(request).await?;
                            if !review {
                                return Ok::<_, kube::Error>(response);
                            }
                            let (parts, body) = response.into_parts();
                            let bytes = body.collect().await?.to_bytes();
                            let mut json: serde_json::Value =
                                serde_json::from_slice(&bytes).unwrap_or_default();
                            if json["spec"]["user"].as_str() == Some(user.as_str()) {
                                json["status"] = serde_json::json!({
                                    "allowed": false,
                                    "evaluationError": "webhook authorizer: Post \"https://authz.example/\": connection refused"
                                });
                            }
                            let mut parts = parts;
                            parts.headers.remove(http::header::CONTENT_LENGTH);
                            Ok(http::Response::from_parts(
                                parts,
                                kube::client::Body::from(json.to_string().into_bytes()),
                            ))
                        }
                    },
                );
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    port
}

#[tokio::test]
async fn an_undecided_subject_access_review_leaves_rbac_unknown() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "undecided").await;
    let _kopf = Fixture::start("silent-failures", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await;
    let account = deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.service_account_name.clone())
        .expect("the fixture's ServiceAccount");
    let user = format!("system:serviceaccount:{}:{account}", ns.name);
    let port = undeciding_proxy(client.clone(), user).await;
    let kubeconfig = support::workdir().join(format!("kubeconfig-undecided-{}", ns.name));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster: {{server: \"http://127.0.0.1:{port}\"}}\nusers:\n- name: none\n  user: {{}}\ncontexts:\n- name: proxy\n  context: {{cluster: proxy, user: none}}\ncurrent-context: proxy\n"
        ),
    )
    .expect("the proxy's kubeconfig");
    let _auditor = Auditor::start(&kubeconfig, &ns.name, &[]);
    create_audit(
        &client,
        &ns.name,
        audit("audit", &deployment.name_any(), serde_json::json!({})),
    )
    .await
    .expect("creating the KopfAudit");
    let undecided = |s: &KopfAuditStatus| {
        condition(s, "RBACCompliant") == Some(("Unknown", "AuthorizationUndecided"))
    };
    wait_status(
        &client,
        &ns.name,
        "audit",
        "RBACCompliant Unknown, reason AuthorizationUndecided",
        Duration::from_secs(180),
        |s| undecided(s) && condition(s, "Ready") == Some(("True", "AuditSucceeded")),
    )
    .await;
    // Asked again at every audit (never remembered): two more, still undecided.
    tokio::time::sleep(Duration::from_secs(65)).await;
    let status = status_now(&client, &ns.name, "audit").await;
    assert!(undecided(&status), "{:#?}", status.conditions);
    let text = message(&status, "RBACCompliant");
    assert!(
        text.contains("connection refused"),
        "the error is quoted: {text}"
    );
    assert!(
        status
            .findings
            .iter()
            .all(|f| !f.check.as_str().starts_with("rbac.")),
        "an undecided permission is neither granted nor denied: {:#?}",
        status.findings
    );
    let resolved = resolved_events(&client, &ns.name, "audit").await;
    assert!(resolved.is_empty(), "nothing resolved: {resolved:#?}");
}

#[tokio::test]
async fn log_records_past_the_digest_bound_leave_the_log_areas_partial() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "dropped").await;
    let _kopf = Fixture::start("silent-failures", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    // Each Mailbox fails on its own, every 5 s: more distinct failures than the auditor
    // keeps of one container (64).
    let mailboxes = kube::api::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(
            "silent-failures.fixtures.kopf-audit.dev",
            "v1",
            "Mailbox",
        ),
        "mailboxes",
    );
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), &ns.name, &mailboxes);
    for i in 0..80 {
        let mut object = kube::api::DynamicObject::new(&format!("box-{i}"), &mailboxes);
        object.data = serde_json::json!({"spec": {"backend": format!("backend-{i}")}});
        api.create(&kube::api::PostParams::default(), &object)
            .await
            .expect("a Mailbox");
    }
    tokio::time::sleep(Duration::from_secs(20)).await;
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(
        &client,
        &ns.name,
        audit("audit", &deployment, serde_json::json!({})),
    )
    .await
    .expect("creating the KopfAudit");
    let partial = |s: &KopfAuditStatus| {
        ["RuntimeHealthy", "EventsCompliant"]
            .iter()
            .all(|t| message(s, t).contains("were read but not kept"))
    };
    wait_status(
        &client,
        &ns.name,
        "audit",
        "RuntimeHealthy and EventsCompliant saying records were not kept",
        Duration::from_secs(180),
        partial,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(65)).await;
    let status = status_now(&client, &ns.name, "audit").await;
    assert!(partial(&status), "{:#?}", status.conditions);
    for t in ["RuntimeHealthy", "EventsCompliant"] {
        assert_ne!(
            condition(&status, t).map(|c| c.0),
            Some("True"),
            "{t}: {:#?}",
            status.conditions
        );
    }
    let resolved = resolved_events(&client, &ns.name, "audit").await;
    assert!(resolved.is_empty(), "nothing resolved: {resolved:#?}");
}

#[tokio::test]
async fn a_handled_object_too_costly_to_parse_is_named_not_compared() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "shape").await;
    let _kopf = Fixture::start("good", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(
        &client,
        &ns.name,
        audit("audit", &deployment, serde_json::json!({})),
    )
    .await
    .expect("creating the KopfAudit");
    wait_status(
        &client,
        &ns.name,
        "audit",
        "PersistenceCompliant True",
        Duration::from_secs(180),
        |s| condition(s, "PersistenceCompliant") == Some(("True", "NoFindings")),
    )
    .await;
    // 64 KB of tiny maps: about 6 MiB once parsed into a tree, past one object's
    // budget (4 MiB), yet small for the API server and for kopf, which handles it.
    let widgets = kube::api::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("good.fixtures.kopf-audit.dev", "v1", "Widget"),
        "widgets",
    );
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), &ns.name, &widgets);
    let mut big = kube::api::DynamicObject::new("tiny-maps", &widgets);
    big.data = serde_json::json!({"spec": {"items": vec![serde_json::json!({"a": 0}); 8000]}});
    api.create(&kube::api::PostParams::default(), &big)
        .await
        .expect("the Widget of tiny maps");
    let named = format!("{}/tiny-maps", ns.name);
    let partial = |s: &KopfAuditStatus| {
        ["PersistenceCompliant", "RuntimeHealthy"].iter().all(|t| {
            condition(s, t) == Some(("Unknown", "ObjectsPartial")) && message(s, t).contains(&named)
        })
    };
    wait_status(
        &client,
        &ns.name,
        "audit",
        "PersistenceCompliant and RuntimeHealthy Unknown, reason ObjectsPartial",
        Duration::from_secs(120),
        partial,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(35)).await;
    let status = status_now(&client, &ns.name, "audit").await;
    assert!(partial(&status), "{:#?}", status.conditions);
    let resolved = resolved_events(&client, &ns.name, "audit").await;
    assert!(resolved.is_empty(), "nothing resolved: {resolved:#?}");
    // Gone while its operator runs, so that its finalizer does not hold the namespace.
    api.delete("tiny-maps", &kube::api::DeleteParams::default())
        .await
        .expect("deleting the Widget");
    wait_for(
        "the Widget of tiny maps gone",
        Duration::from_secs(60),
        || {
            let api = api.clone();
            async move { api.get_opt("tiny-maps").await.ok()?.is_none().then_some(()) }
        },
    )
    .await;
}

//! Missing evidence is never health: a real kopf operator with handler failures loses
//! its pods, or is audited by a tenant with a tiny log window first; its findings are
//! neither resolved nor hidden, and no area turns True for lack of evidence.

use crate::operator::{
    audit_events, condition, create_audit, ensure_crd, fixture_deployment, found_checks,
    wait_status,
};
use crate::support::{self, Auditor, Fixture, TestNamespace, say};
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
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "no-pods").await;
    let kopf = Fixture::start("silent-failures", &ns.name, None);
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
        "runtime.handler-failures",
        Duration::from_secs(180),
        |s| found_checks(s).contains("runtime.handler-failures"),
    )
    .await;
    support::scale_to_zero(&client, &ns.name, &deployment).await;
    say("scaled to 0: the log is gone, and with it the evidence");
    wait_status(
        &client,
        &ns.name,
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
    drop(kopf);
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

//! Bounds: a KopfAudit with the longest name the API allows, auditing a Deployment whose
//! exemption annotation holds 200 KiB with bidirectional controls and a password, gets
//! its Events and its PolicyReport (their names derive from the KopfAudit's), and its
//! `status.skipped` stays under 4 KiB, clean and redacted.

use crate::operator::{audit_events, condition, ensure_crd, wait_status};
use crate::support::{self, Auditor, TestNamespace, say, wait_for};
use crate::tenancy::install_policy_report_crd;
use kopf_audit::api::KopfAudit;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::time::Duration;

/// The password in the exemption's reason: it must reach no reader.
const PASSWORD: &str = "hunter2-e2e-bounds";

/// Whether `text` holds a bidirectional control.
fn has_bidi(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
    })
}

/// 200 KiB of reason: bidi controls, a password, line breaks.
fn huge_reason() -> String {
    let mut reason = format!("exempt \u{202E}by policy\u{2066} password={PASSWORD}\n");
    while reason.len() < 200 * 1024 {
        reason.push_str("probed \u{202E}elsewhere\u{2069};\n");
    }
    reason
}

/// A Deployment of no pods whose kopf serves every namespace, exempted from
/// `workload.liveness` with `reason`.
async fn exempted_deployment(client: &Client, ns: &str, name: &str, reason: &str) {
    let exemption = serde_json::json!({"skip.kopfaudit.dev/workload.liveness": reason});
    support::idle_kopf_deployment(client, ns, name, &["-A", "/app/op.py"], exemption).await;
}

#[tokio::test]
async fn a_253_character_audit_with_a_200_kib_exemption_gets_events_a_report_and_a_clean_status() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    install_policy_report_crd(&client).await;
    let ns = TestNamespace::create(&client, "bounds").await;
    exempted_deployment(&client, &ns.name, "op", &huge_reason()).await;
    let name = format!("{}end", "long-name-".repeat(25));
    assert_eq!(name.len(), 253);
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name},
        "spec": {"target": {"deployment": "op"}, "interval": "30s"}
    }))
    .expect("KopfAudit");
    Api::<KopfAudit>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &audit)
        .await
        .expect("the 253-character KopfAudit");
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);

    let audited = wait_status(
        &client,
        &ns.name,
        &name,
        "the audit with its exemption in status.skipped",
        Duration::from_secs(120),
        |s| {
            condition(s, "Ready") == Some(("True", "AuditSucceeded"))
                && s.skipped
                    .iter()
                    .any(|s| s.check.as_str() == "workload.liveness")
        },
    )
    .await;
    let status = audited.status.expect("a status");
    let skipped = serde_json::to_string(&status.skipped).expect("skipped JSON");
    say(format!("status.skipped is {} bytes", skipped.len()));
    assert!(skipped.len() < 4096, "{} bytes: {skipped}", skipped.len());
    assert!(!skipped.contains(PASSWORD), "{skipped}");
    assert!(!has_bidi(&skipped), "{skipped:?}");
    let liveness = status
        .skipped
        .iter()
        .find(|s| s.check.as_str() == "workload.liveness")
        .expect("the exemption in status.skipped");
    assert!(liveness.honoured, "{liveness:?}");
    assert!(
        liveness.reason.starts_with("exempt by policy password=***"),
        "{}",
        liveness.reason
    );
    assert!(liveness.reason.ends_with('…'), "{}", liveness.reason);

    let events = wait_for(
        "the auditor's Events about the 253-character KopfAudit",
        Duration::from_secs(60),
        || {
            let client = client.clone();
            let (ns, name) = (ns.name.clone(), name.clone());
            async move {
                let events = audit_events(&client, &ns, &name).await;
                (!events.is_empty()).then_some(events)
            }
        },
    )
    .await;
    for e in &events {
        let event_name = e.metadata.name.clone().unwrap_or_default();
        assert!(
            event_name.len() <= 253 && event_name.starts_with("long-name-long-name-"),
            "{event_name}"
        );
    }
    let events = serde_json::to_string(&events).expect("events JSON");
    assert!(!events.contains(PASSWORD) && !has_bidi(&events), "{events}");

    let reports = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &ns.name,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport"),
            "policyreports",
        ),
    );
    let report = wait_for(
        "the PolicyReport of the 253-character KopfAudit",
        Duration::from_secs(60),
        || {
            let reports = reports.clone();
            let name = name.clone();
            async move {
                let list = reports.list(&ListParams::default()).await.ok()?;
                list.items
                    .into_iter()
                    .find(|r| r.data["scope"]["name"].as_str() == Some(name.as_str()))
            }
        },
    )
    .await;
    let report_name = report.metadata.name.clone().unwrap_or_default();
    assert!(
        report_name.starts_with("kopf-audit-long-name-"),
        "{report_name}"
    );
    let report = serde_json::to_string(&report).expect("report JSON");
    assert!(!report.contains(PASSWORD) && !has_bidi(&report), "{report}");
    say(format!(
        "Events and PolicyReport {report_name} written; status.skipped bounded and clean"
    ));
}

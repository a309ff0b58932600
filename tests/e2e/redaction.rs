//! No secret reaches what a KopfAudit's readers can read: a real kopf operator prints
//! every line of the redaction corpus and fails with each; its status, PolicyReport and
//! the auditor's Events hold no part of any corpus secret.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopf_audit::api::KopfAudit;
use kopf_audit::catalog::REPORTING_CONTROLLER;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::time::Duration;

/// The secrets of the corpus (between ⟦ and ⟧).
fn corpus_secrets() -> Vec<String> {
    let text = std::fs::read_to_string(
        support::repo().join("crates/kopf-log/tests/data/secrets/corpus.txt"),
    )
    .expect("the corpus");
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut rest = line;
        while let Some(open) = rest.find('⟦') {
            let after = &rest[open + '⟦'.len_utf8()..];
            let Some(close) = after.find('⟧') else {
                break;
            };
            out.push(after[..close].to_string());
            rest = &after[close + '⟧'.len_utf8()..];
        }
    }
    out
}

/// The 8-character windows of a secret (the whole of a shorter one), backslashes aside
/// (escapes differ between a raw line and JSON).
fn windows(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= 8 {
        return vec![secret.to_string()];
    }
    chars
        .windows(8)
        .filter(|w| !w.contains(&'\\'))
        .map(|w| w.iter().collect())
        .collect()
}

#[tokio::test]
async fn no_secret_an_operator_prints_reaches_status_policy_report_or_events() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "policyreports.wgpolicyk8s.io"},
        "spec": {"group": "wgpolicyk8s.io", "scope": "Namespaced",
            "names": {"kind": "PolicyReport", "plural": "policyreports", "singular": "policyreport"},
            "versions": [{"name": "v1alpha2", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("CRD");
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            "policyreports.wgpolicyk8s.io",
            &PatchParams::apply("kopf-audit-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .expect("PolicyReport CRD");
    let ns = TestNamespace::create(&client, "leaky").await;
    let _kopf = Fixture::start("leaky", &ns.name, None);
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "leaky"},
        "spec": {"target": {"deployment": "leaky-operator"}, "interval": "30s"}
    }))
    .expect("KopfAudit");
    let audits: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    audits
        .create(&PostParams::default(), &audit)
        .await
        .expect("creating the KopfAudit");
    wait_for(
        "the leaky operator's failures quoted",
        Duration::from_secs(180),
        || {
            let audits = audits.clone();
            async move {
                let status = audits.get("leaky").await.ok()?.status?;
                let failures = status
                    .findings
                    .iter()
                    .filter(|f| f.check.as_str() == "runtime.handler-failures")
                    .count();
                (failures >= 20).then_some(())
            }
        },
    )
    .await;
    // One more interval, so that Events and the PolicyReport follow.
    tokio::time::sleep(Duration::from_secs(35)).await;

    let status = serde_json::to_string(&audits.get("leaky").await.expect("audit").status)
        .expect("status JSON");
    let reports = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &ns.name,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport"),
            "policyreports",
        ),
    )
    .list(&ListParams::default())
    .await
    .expect("policy reports");
    assert!(!reports.items.is_empty(), "a PolicyReport was written");
    let reports = serde_json::to_string(&reports.items).expect("reports JSON");
    let events: Vec<k8s_openapi::api::events::v1::Event> =
        Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .filter(|e| e.reporting_controller.as_deref() == Some(REPORTING_CONTROLLER))
            .collect();
    assert!(!events.is_empty(), "the auditor posted its Events");
    let events = serde_json::to_string(&events).expect("events JSON");
    let secrets = corpus_secrets();
    assert!(secrets.len() > 40, "the corpus: {}", secrets.len());
    for (what, text) in [
        ("status", &status),
        ("PolicyReport", &reports),
        ("Events", &events),
    ] {
        for secret in &secrets {
            for w in windows(secret) {
                assert!(
                    !text.contains(&w),
                    "{what} holds {w:?} of the secret {secret:?}:\n{text}"
                );
            }
        }
    }
    say(format!(
        "no part of {} corpus secrets in the status, PolicyReport or Events",
        secrets.len()
    ));
}

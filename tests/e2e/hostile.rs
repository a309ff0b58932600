//! A tenant who is not trusted hands the shared auditor hostile data: values past the
//! end of time in its peering objects. The auditor keeps running and keeps auditing
//! everyone, the tenant's audit included.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, TestNamespace, say, wait_for};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopf_audit::api::{KopfAudit, KopfAuditStatus};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::time::Duration;

/// kopf's namespaced peering CRD (`kopf.dev/v1`), as kopf's docs publish it.
async fn ensure_peering_crd(client: &Client) {
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "kopfpeerings.kopf.dev"},
        "spec": {"group": "kopf.dev", "scope": "Namespaced",
            "names": {"kind": "KopfPeering", "plural": "kopfpeerings", "singular": "kopfpeering"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    }))
    .expect("CRD");
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            "kopfpeerings.kopf.dev",
            &PatchParams::apply("kopf-audit-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .expect("KopfPeering CRD");
    wait_for(
        "the KopfPeering CRD to be served",
        Duration::from_secs(30),
        || {
            let api = peerings(client, "default");
            async move { api.list(&Default::default()).await.ok().map(|_| ()) }
        },
    )
    .await;
}

fn peerings(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("kopf.dev", "v1", "KopfPeering"),
            "kopfpeerings",
        ),
    )
}

/// A Deployment of no pods that runs kopf with `args`.
async fn deployment(client: &Client, ns: &str, name: &str, args: &[&str]) {
    support::idle_kopf_deployment(client, ns, name, args, serde_json::json!({})).await;
}

async fn audit(client: &Client, ns: &str, name: &str, target: &str) {
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name}, "spec": {"target": {"deployment": target}, "interval": "30s"}
    }))
    .expect("KopfAudit");
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &audit)
        .await
        .expect("KopfAudit");
}

fn ready(status: &KopfAuditStatus) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True" && c.reason == "AuditSucceeded")
}

/// `kopf_audit_audits_total` of one audit, summed over its outcomes.
fn audits_total(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("kopf_audit_audits_total{") && l.contains(&format!("name=\"{name}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn a_peering_status_past_the_end_of_time_leaves_the_auditor_serving_everyone() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    ensure_peering_crd(&client).await;
    let ns = TestNamespace::create(&client, "hostile").await;
    deployment(&client, &ns.name, "peered", &["-n", &ns.name, "/app/op.py"]).await;
    deployment(
        &client,
        &ns.name,
        "alone",
        &["--standalone", "-n", &ns.name, "/app/op.py"],
    )
    .await;
    let hostile: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopf.dev/v1", "kind": "KopfPeering",
        "metadata": {"name": "default", "namespace": ns.name},
        "status": {
            "forever": {"priority": 0, "lifetime": i64::MAX, "lastseen": "2026-12-01T10:00:00+00:00"},
            "never": {"priority": 0, "lifetime": i64::MIN, "lastseen": "2026-12-01T10:00:00+00:00"},
            "late": {"priority": 0, "lifetime": 60, "lastseen": "9999-12-31T23:59:59.999999+00:00"},
            "negative": {"priority": 0, "lifetime": -9_000_000_000_000_i64, "lastseen": "2026-12-01T10:00:00"}
        }
    }))
    .expect("KopfPeering");
    peerings(&client, &ns.name)
        .create(&PostParams::default(), &hostile)
        .await
        .expect("the hostile KopfPeering");
    audit(&client, &ns.name, "hostile", "peered").await;
    audit(&client, &ns.name, "bystander", "alone").await;

    let mut auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    for name in ["hostile", "bystander"] {
        wait_for(&format!("{name}: audited"), Duration::from_secs(90), || {
            let api = api.clone();
            async move { api.get(name).await.ok()?.status.filter(ready) }
        })
        .await;
    }
    let before = audits_total(&auditor.http_get("/metrics"), "bystander");
    let hostile_before = audits_total(&auditor.http_get("/metrics"), "hostile");
    say("the next interval: both audits run again, the process stays up");
    // A requeue lands between half and one and a half intervals later (30s).
    let http = auditor.http.clone();
    wait_for("both audits to run again", Duration::from_secs(120), || {
        let http = http.clone();
        async move {
            let (_, metrics) = support::http_get(&http, "/metrics")?;
            (audits_total(&metrics, "bystander") > before
                && audits_total(&metrics, "hostile") > hostile_before)
                .then_some(())
        }
    })
    .await;
    assert!(
        auditor.is_running(),
        "the auditor exited:\n{}",
        auditor.logs()
    );
    let log = auditor.logs();
    assert!(!log.contains("panicked"), "{log}");
}

//! Tenancy: a tenant who is not trusted cannot read another namespace through its own
//! KopfAudits. Its Deployments claim to serve every namespace (`-A`) or the victim's
//! (`-n victim`), with no pod needed (replicas 0), and its KopfAudits name Secrets and
//! ConfigMaps as handled. Without --allow-cross-namespace not one byte of the victim's
//! marker or object names reaches the tenant's status, PolicyReport, Events or metrics;
//! with it, the same audit sees the victim's objects.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, TestNamespace, say, wait_for};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopf_audit::api::{KopfAudit, KopfAuditStatus};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::time::Duration;

/// What the victim's objects carry: it must never reach the tenant.
const MARKER: &str = "victim-marker-7f3a";

/// kopf's annotations, so that the persistence checks would quote the objects.
fn kopf_annotations() -> serde_json::Value {
    serde_json::json!({
        "kopf.zalando.org/last-handled-configuration": format!("{{\"spec\": \"{MARKER}\"}}"),
        "kopf.zalando.org/reconcile": format!("{{\"started\": \"{MARKER}\"}}"),
    })
}

async fn seed_victim(client: &Client, victim: &str) {
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{MARKER}"), "namespace": victim, "annotations": kopf_annotations()},
        "data": {"note": MARKER}
    }))
    .expect("configmap");
    Api::<ConfigMap>::namespaced(client.clone(), victim)
        .create(&PostParams::default(), &cm)
        .await
        .expect("victim configmap");
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("secret-{MARKER}"), "namespace": victim, "annotations": kopf_annotations()},
        "stringData": {"password": MARKER}
    }))
    .expect("secret");
    Api::<Secret>::namespaced(client.clone(), victim)
        .create(&PostParams::default(), &secret)
        .await
        .expect("victim secret");
    for i in 0..5 {
        let event: Event = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": "victim-", "namespace": victim},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": victim, "name": format!("cm-{MARKER}")},
            "type": if i % 2 == 0 { "Normal" } else { "Warning" },
            "reason": "Logging",
            "message": format!("{MARKER} the victim's own message"),
            "source": {"component": "kopf"}, "reportingComponent": "kopf",
            "firstTimestamp": jiff::Timestamp::now().to_string(),
            "lastTimestamp": jiff::Timestamp::now().to_string(),
        }))
        .expect("event");
        Api::<Event>::namespaced(client.clone(), victim)
            .create(&PostParams::default(), &event)
            .await
            .expect("victim event");
    }
}

/// A Deployment of no pods whose kopf claims `args`.
async fn tenant_deployment(client: &Client, ns: &str, name: &str, args: &[&str]) {
    support::idle_kopf_deployment(client, ns, name, args, serde_json::json!({})).await;
}

async fn tenant_audit(client: &Client, ns: &str, name: &str, target: &str, handled: bool) {
    let mut spec = serde_json::json!({"target": {"deployment": target}, "interval": "30s"});
    if handled {
        spec["handledResources"] = serde_json::json!([
            {"group": "", "version": "v1", "plural": "secrets"},
            {"group": "", "version": "v1", "plural": "configmaps"}
        ]);
    }
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("KopfAudit");
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &audit)
        .await
        .expect("tenant KopfAudit");
}

/// Installs a PolicyReport CRD that keeps any report, so that the auditor writes them.
pub async fn install_policy_report_crd(client: &Client) {
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
}

/// Everything the tenant can read of the auditor's output, as one text.
async fn tenant_view(client: &Client, tenant: &str, auditor: &Auditor) -> String {
    let audits = Api::<KopfAudit>::namespaced(client.clone(), tenant)
        .list(&ListParams::default())
        .await
        .expect("audits");
    let statuses: Vec<&KopfAuditStatus> = audits
        .items
        .iter()
        .filter_map(|a| a.status.as_ref())
        .collect();
    let reports = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        tenant,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport"),
            "policyreports",
        ),
    )
    .list(&ListParams::default())
    .await
    .map(|l| serde_json::to_string(&l.items).unwrap_or_default())
    .unwrap_or_default();
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), tenant)
        .list(&ListParams::default())
        .await
        .map(|l| serde_json::to_string(&l.items).unwrap_or_default())
        .unwrap_or_default();
    format!(
        "{}\n{reports}\n{events}\n{}",
        serde_json::to_string(&statuses).unwrap_or_default(),
        auditor.http_get("/metrics")
    )
}

fn condition<'a>(status: &'a KopfAuditStatus, type_: &str) -> Option<(&'a str, &'a str)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.as_str(), c.reason.as_str()))
}

const AUDITS: [(&str, &str, bool); 4] = [
    ("wide", "wide", false),
    ("wide-handled", "wide", true),
    ("narrow", "narrow", false),
    ("narrow-handled", "narrow", true),
];

#[tokio::test]
async fn a_tenant_reads_nothing_of_another_namespace_through_its_kopfaudits() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    install_policy_report_crd(&client).await;
    let tenant = TestNamespace::create(&client, "tenant").await;
    let victim = TestNamespace::create(&client, "victim").await;
    seed_victim(&client, &victim.name).await;
    tenant_deployment(&client, &tenant.name, "wide", &["-A", "/app/op.py"]).await;
    tenant_deployment(
        &client,
        &tenant.name,
        "narrow",
        &["-n", &victim.name, "/app/op.py"],
    )
    .await;
    for (name, target, handled) in AUDITS {
        tenant_audit(&client, &tenant.name, name, target, handled).await;
    }

    // The admin's kubeconfig: tenancy is the auditor's rule, not an accident of RBAC.
    let auditor = Auditor::start(&support::kubeconfig_path(), &tenant.name, &[]);
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), &tenant.name);
    for (name, _, _) in AUDITS {
        let status = wait_for(
            &format!("{name}: audited, the areas beyond the namespace OutsideNamespace"),
            Duration::from_secs(120),
            || {
                let api = api.clone();
                async move {
                    let status = api.get(name).await.ok()?.status?;
                    let outside = condition(&status, "PersistenceCompliant")
                        == Some(("Unknown", "OutsideNamespace"));
                    (condition(&status, "Ready") == Some(("True", "AuditSucceeded")) && outside)
                        .then_some(status)
                }
            },
        )
        .await;
        let persistence = status
            .conditions
            .iter()
            .find(|c| c.type_ == "PersistenceCompliant")
            .map(|c| c.message.clone())
            .unwrap_or_default();
        assert!(
            persistence.contains("--allow-cross-namespace"),
            "{name}: the message names the allowance: {persistence}"
        );
        assert_eq!(
            condition(&status, "EventsCompliant"),
            Some(("Unknown", "OutsideNamespace")),
            "{name}: {:#?}",
            status.conditions
        );
    }
    // Two more intervals: every audit has run again and published what it would.
    tokio::time::sleep(Duration::from_secs(35)).await;
    let view = tenant_view(&client, &tenant.name, &auditor).await;
    assert!(
        !view.contains(MARKER),
        "the victim's marker reached the tenant:\n{view}"
    );
    say("nothing of the victim reached the tenant");
    drop(auditor);

    say("the same audits with --allow-cross-namespace see the victim's objects");
    let _platform = Auditor::start(
        &support::kubeconfig_path(),
        &tenant.name,
        &["--allow-cross-namespace"],
    );
    let status = wait_for(
        "narrow-handled: the victim's annotated objects in the findings",
        Duration::from_secs(120),
        || {
            let api = api.clone();
            async move {
                let status = api.get("narrow-handled").await.ok()?.status?;
                let text = serde_json::to_string(&status.findings).ok()?;
                text.contains(MARKER).then_some(status)
            }
        },
    )
    .await;
    assert!(
        status
            .findings
            .iter()
            .any(|f| f.check.as_str().starts_with("persistence.")),
        "{:#?}",
        status.findings
    );
}

/// The auditor's `kopf_audit_audits_total` of one audit.
fn audits_of(auditor: &Auditor, ns: &str, name: &str) -> f64 {
    support::audits_total(&auditor.http_get("/metrics"), ns, name)
}

/// Changes a Deployment's pod template (a rollout), as its owner would.
async fn roll(client: &Client, ns: &str, name: &str, n: usize) {
    let patch = serde_json::json!({"spec": {"template": {"metadata": {"annotations": {
        "e2e.kopf-audit.dev/rollout": n.to_string()
    }}}}});
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), ns)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("rolling {ns}/{name}: {e}"));
}

#[tokio::test]
async fn a_refused_kopfaudit_tells_its_tenant_nothing_of_another_namespaces_deployment() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let home = TestNamespace::create(&client, "refused-home").await;
    let tenant = TestNamespace::create(&client, "refused-tenant").await;
    let victim = TestNamespace::create(&client, "refused-victim").await;
    let scoped = support::ScopedAuditor::create(&client, &home.name, &[&tenant.name]).await;
    support::idle_kopf_deployment(
        &client,
        &victim.name,
        "guarded",
        &["-A"],
        serde_json::json!({}),
    )
    .await;
    support::idle_kopf_deployment(
        &client,
        &tenant.name,
        "own",
        &["-n", &tenant.name],
        serde_json::json!({}),
    )
    .await;
    // Cluster-wide, as the chart installs it: it watches Deployments everywhere.
    let auditor = Auditor::start_cluster_wide(&scoped.kubeconfig, "refused-watch", &[]);
    let audits: Api<KopfAudit> = Api::namespaced(client.clone(), &tenant.name);
    for (name, target) in [
        (
            "probe",
            serde_json::json!({"deployment": "guarded", "namespace": victim.name}),
        ),
        ("own", serde_json::json!({"deployment": "own"})),
    ] {
        let audit: KopfAudit = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": name},
            "spec": {"target": target, "interval": "1h"}
        }))
        .expect("KopfAudit");
        audits
            .create(&PostParams::default(), &audit)
            .await
            .unwrap_or_else(|e| panic!("creating {name}: {e}"));
    }
    wait_for("the probe refused", Duration::from_secs(60), || async {
        let a = audits.get("probe").await.ok()?;
        let stalled = a.status.as_ref()?.conditions.iter().any(|c| {
            c.type_ == "Stalled" && c.status == "True" && c.reason == "CrossNamespaceRefused"
        });
        stalled.then_some(())
    })
    .await;
    wait_for("the own audit done", Duration::from_secs(60), || async {
        (audits_of(&auditor, &tenant.name, "own") >= 1.0).then_some(())
    })
    .await;
    // Let the first audits settle, then count.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let probe_before = audits_of(&auditor, &tenant.name, "probe");
    let own_before = audits_of(&auditor, &tenant.name, "own");
    say(format!("before: probe {probe_before}, own {own_before}"));

    for n in 0..5 {
        roll(&client, &victim.name, "guarded", n).await;
    }
    // The control: the same kind of change to the tenant's own Deployment re-runs its
    // audit, so the watch works and the probe's silence means something.
    roll(&client, &tenant.name, "own", 0).await;
    wait_for(
        "the own audit re-run by its rollout",
        Duration::from_secs(60),
        || async { (audits_of(&auditor, &tenant.name, "own") > own_before).then_some(()) },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let probe_after = audits_of(&auditor, &tenant.name, "probe");
    assert_eq!(
        probe_after, probe_before,
        "the refused audit ran again when the other namespace's Deployment changed"
    );
    let status = audits
        .get("probe")
        .await
        .expect("probe")
        .status
        .expect("status");
    assert!(
        status.findings.is_empty() && status.targets.is_empty(),
        "{status:#?}"
    );
}

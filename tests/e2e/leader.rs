//! Leader election: with two instances exactly one audits; when the leader dies without
//! releasing its Lease, the standby takes over within the Lease duration plus one
//! interval.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, TestNamespace, say, wait_for};
use kopf_audit::api::KopfAudit;
use kube::api::{Api, PostParams};
use std::time::Duration;

/// How long the auditor's Lease lasts without renewal.
const LEASE_SECONDS: u64 = 15;

async fn create(client: &kube::Client, ns: &str, name: &str) {
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name},
        "spec": {"target": {"deployment": "absent"}, "interval": "30s"}
    }))
    .expect("KopfAudit");
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &audit)
        .await
        .expect("create KopfAudit");
}

async fn wait_audited(client: &kube::Client, ns: &str, name: &str, timeout: Duration) {
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), ns);
    wait_for(&format!("KopfAudit {name} to be audited"), timeout, || {
        let api = api.clone();
        async move {
            let audit = api.get(name).await.ok()?;
            let stalled = audit
                .status?
                .conditions
                .iter()
                .any(|c| c.type_ == "Stalled" && c.reason == "TargetNotFound");
            stalled.then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn the_standby_takes_over_when_the_leader_dies() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "leader").await;
    let kubeconfig = support::kubeconfig_path();
    let election = ["--leader-election", "--lease-namespace", ns.name.as_str()];
    let mut first = Auditor::start(&kubeconfig, &ns.name, &election);
    first.wait_log("leading", Duration::from_secs(30)).await;
    let second = Auditor::start(&kubeconfig, &ns.name, &election);
    second
        .wait_log("waiting for leadership", Duration::from_secs(30))
        .await;

    create(&client, &ns.name, "before").await;
    wait_audited(&client, &ns.name, "before", Duration::from_secs(30)).await;
    assert!(
        !second.logs().contains("leading"),
        "only one instance leads"
    );
    assert!(
        !second.logs().contains("audited"),
        "the standby writes nothing"
    );

    say("killing the leader (SIGKILL: the Lease is not released)");
    first.kill();
    create(&client, &ns.name, "after").await;
    // The Lease lasts 15 s (README, "The binary"): a standby takes over within it.
    let bound = Duration::from_secs(LEASE_SECONDS + 30 + 10);
    wait_audited(&client, &ns.name, "after", bound).await;
    assert!(second.logs().contains("leading"), "the standby took over");
}

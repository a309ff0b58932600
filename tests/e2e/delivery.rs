//! Nothing lost on a transient failure: a transition Event whose POST is refused is
//! kept, and arrives exactly once after the refusal ends.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, ScopedAuditor, TestNamespace, say, wait_for};
use k8s_openapi::api::events::v1::Event;
use kopf_audit::api::KopfAudit;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use std::time::Duration;

/// The Events with `reason` regarding the KopfAudit `audit` in `ns`.
async fn events_about(client: &Client, ns: &str, audit: &str, reason: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("listing Events")
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("KopfAudit") && r.name.as_deref() == Some(audit)
                })
        })
        .collect()
}

/// The reason of the KopfAudit's Ready condition.
async fn ready_reason(client: &Client, ns: &str, audit: &str) -> Option<String> {
    let audit = Api::<KopfAudit>::namespaced(client.clone(), ns)
        .get(audit)
        .await
        .ok()?;
    audit
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.reason)
}

/// The auditor may not create Events in the audit's namespace while the audit is
/// suspended (a transition: the `Suspended` Event); the status is written, the Event is
/// owed. Once `create` is granted again, the next audit posts it, and it is there once.
#[tokio::test]
async fn a_refused_transition_event_arrives_once_after_the_grant_returns() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "delivery").await;
    let scoped = ScopedAuditor::create(&client, &ns.name, &[ns.name.as_str()]).await;
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "audit"},
        "spec": {"target": {"deployment": "absent"}, "interval": "30s"}
    }))
    .expect("KopfAudit JSON");
    let audits: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    audits
        .create(&PostParams::default(), &audit)
        .await
        .expect("creating the KopfAudit");
    let auditor = Auditor::start(&scoped.kubeconfig, &ns.name, &[]);
    wait_for("the TargetMissing Event", Duration::from_secs(90), || {
        let client = client.clone();
        let ns = ns.name.clone();
        async move {
            let found = events_about(&client, &ns, "audit", "TargetMissing").await;
            (!found.is_empty()).then_some(())
        }
    })
    .await;

    scoped.revoke(&ns.name, "events");
    // The API server's RBAC authorizer reads its own watch cache: let it see the delete.
    tokio::time::sleep(Duration::from_secs(3)).await;
    audits
        .patch(
            "audit",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"suspend": true}})),
        )
        .await
        .expect("suspending the audit");
    wait_for("the Suspended status", Duration::from_secs(60), || {
        let client = client.clone();
        let ns = ns.name.clone();
        async move {
            (ready_reason(&client, &ns, "audit").await.as_deref() == Some("Suspended"))
                .then_some(())
        }
    })
    .await;
    auditor
        .wait_log(
            "event not created: retried at the next audit",
            Duration::from_secs(30),
        )
        .await;
    assert!(
        events_about(&client, &ns.name, "audit", "Suspended")
            .await
            .is_empty(),
        "the refused Event is not there"
    );

    scoped.grant(&ns.name, "events");
    let arrived = wait_for(
        "the Suspended Event, at the next audit",
        Duration::from_secs(120),
        || {
            let client = client.clone();
            let ns = ns.name.clone();
            async move {
                let found = events_about(&client, &ns, "audit", "Suspended").await;
                (!found.is_empty()).then_some(found)
            }
        },
    )
    .await;
    say(format!(
        "the Suspended Event arrived: {:?}",
        arrived
            .iter()
            .map(|e| e.metadata.name.clone().unwrap_or_default())
            .collect::<Vec<_>>()
    ));
    // The audit that delivered it is counted a moment after its POST.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after_arrival = support::audits_total(&auditor.http_get("/metrics"), &ns.name, "audit");
    wait_for(
        "one more audit after the delivery",
        Duration::from_secs(90),
        || {
            let metrics = auditor.http_get("/metrics");
            let now = support::audits_total(&metrics, &ns.name, "audit");
            std::future::ready((now > after_arrival).then_some(()))
        },
    )
    .await;
    assert_eq!(
        events_about(&client, &ns.name, "audit", "Suspended")
            .await
            .len(),
        1,
        "the owed Event arrived exactly once"
    );
    assert_eq!(
        events_about(&client, &ns.name, "audit", "TargetMissing")
            .await
            .len(),
        1,
        "and nothing else was posted again"
    );
}

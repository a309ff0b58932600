//! Tests of stepping down: on tokio's paused clock (a fake one, advanced by the tests'
//! sleeps), a leader whose renewals stop stops writing and steps down before its Lease
//! can expire; the renewals are seen on the client the lease manager uses.

use super::*;
use crate::testing::{FakeApi, json};
use http::StatusCode;

#[tokio::test(start_paused = true)]
async fn a_leader_may_write_until_the_renewal_deadline_only() {
    let renewals = Arc::new(Renewals::default());
    let (_sender, leading) = watch::channel(true);
    let mandate = Mandate::of_lease(leading, renewals.clone());
    assert!(!mandate.holds(), "nothing renewed yet");
    renewals.renewed(Instant::now());
    assert!(mandate.holds());
    tokio::time::sleep(RENEW_DEADLINE - Duration::from_millis(1)).await;
    assert!(mandate.holds());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(!mandate.holds(), "not renewed for the deadline");
    renewals.renewed(Instant::now());
    assert!(mandate.holds(), "renewed again");
    assert!(
        RENEW_DEADLINE < Duration::from_secs(LEASE_SECONDS),
        "it stops before its Lease can expire"
    );
    assert!(Mandate::default().holds(), "without election: always");
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_renewals_fail_steps_down_before_its_lease_expires() {
    let renewals = Arc::new(Renewals::default());
    let (sender, leading) = watch::channel(true);
    renewals.renewed(Instant::now());
    let start = Instant::now();
    let renewing = {
        let renewals = renewals.clone();
        // Renewals every 8 s for 40 s, then none: the API server is gone, and the
        // lease manager still says this instance leads.
        async move {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_secs(8)).await;
                renewals.renewed(Instant::now());
            }
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = until_lost(leading, renewals, start) => {}
        () = renewing => {}
    }
    let stepped_down = Instant::now() - start;
    assert_eq!(
        stepped_down,
        Duration::from_secs(40) + RENEW_DEADLINE,
        "at the deadline after the last renewal"
    );
    assert!(*sender.borrow(), "though the lease manager never said so");
}

#[tokio::test(start_paused = true)]
async fn a_leader_told_it_lost_steps_down_at_once() {
    let renewals = Arc::new(Renewals::default());
    renewals.renewed(Instant::now());
    let (sender, leading) = watch::channel(true);
    let lost = tokio::spawn(until_lost(leading, renewals, Instant::now()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!lost.is_finished());
    let _ = sender.send(false);
    let done = tokio::time::timeout(Duration::from_millis(10), lost).await;
    assert!(done.is_ok(), "lost at once");
}

#[tokio::test(start_paused = true)]
async fn a_lease_claimed_without_a_write_has_the_deadline_to_be_renewed() {
    // A restarted container keeps its pod's name: the lease manager claims the Lease
    // that still names it without writing it, and renews it within the grace.
    let renewals = Arc::new(Renewals::default());
    let (_sender, leading) = watch::channel(true);
    let mandate = Mandate::of_lease(leading.clone(), renewals.clone());
    let start = Instant::now();
    let renewing = {
        let renewals = renewals.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            renewals.renewed(Instant::now());
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = until_lost(leading, renewals, start) => {}
        () = renewing => {}
    }
    assert_eq!(
        Instant::now() - start,
        Duration::from_secs(5) + RENEW_DEADLINE
    );
    assert!(!mandate.holds());
}

/// A fake API server answering the lease manager: Lease PATCHes succeed or fail by
/// the Lease's name.
fn lease_answers(
    method: &http::Method,
    path: &str,
    body: &serde_json::Value,
) -> http::Response<Body> {
    if method == http::Method::PATCH && path.contains("/leases/refused") {
        return json(
            StatusCode::FORBIDDEN,
            serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403, "message": "no"}),
        );
    }
    json(StatusCode::OK, body.clone())
}

/// PATCHes the Lease `name` in `ops` through `client`, whatever the answer.
async fn patch_lease(client: &Client, name: &str) {
    let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(client.clone(), "ops");
    let _ = api
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {}})),
        )
        .await;
}

#[tokio::test]
async fn only_a_successful_patch_of_its_own_lease_is_a_renewal() {
    let (client, _api) = FakeApi::start("ops", lease_answers);
    let renewals = Arc::new(Renewals::default());
    let refused = observing_renewals(client.clone(), "ops", "refused", renewals.clone());
    patch_lease(&refused, "refused").await;
    assert!(renewals.deadline().is_none(), "a refused renewal");
    let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(refused, "ops");
    let _ = api.get("refused").await;
    assert!(renewals.deadline().is_none(), "a read");

    let renewals = Arc::new(Renewals::default());
    let observed = observing_renewals(client.clone(), "ops", "kopf-audit", renewals.clone());
    patch_lease(&observed, "other").await;
    assert!(renewals.deadline().is_none(), "another Lease");
    patch_lease(&client, "kopf-audit").await;
    assert!(
        renewals.deadline().is_none(),
        "not through the observed client"
    );
    patch_lease(&observed, "kopf-audit").await;
    assert!(renewals.fresh_at(Instant::now()), "renewed");
}

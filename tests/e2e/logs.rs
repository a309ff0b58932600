//! The events, persistence and runtime areas against real kopf operators: what they
//! log, the Events they post (or fail to), what they leave on their objects; in kopf's
//! three log formats.

use crate::operator::{
    audit_fixture, create_audit, ensure_crd, fixture_deployment, found_checks, wait_status,
};
use crate::support::{self, Auditor, Fixture, TestNamespace, expectations, say};
use kopf_audit::catalog::Severity;
use kube::ResourceExt;
use std::time::Duration;

const AREAS: [&str; 3] = ["events.", "persistence.", "runtime."];

macro_rules! fixture_log_test {
    ($($test:ident => $fixture:literal, $format:expr),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                audit_fixture($fixture, &AREAS, $format).await;
            }
        )*
    };
}

fixture_log_test! {
    logs_of_good => "good", None,
    logs_of_silent_failures => "silent-failures", None,
    logs_of_silent_failures_json => "silent-failures", Some("json"),
    logs_of_silent_failures_plain => "silent-failures", Some("plain"),
    logs_of_logging_flood => "logging-flood", None,
    logs_of_no_events_create => "no-events-create", None,
    logs_of_no_events_create_json => "no-events-create", Some("json"),
    logs_of_annotations_storage => "annotations-storage", None,
    logs_of_pruning_status => "pruning-status", None,
    logs_of_pruning_status_plain => "pruning-status", Some("plain"),
    logs_of_crashloop => "crashloop", None,
    logs_of_cluster_scoped_posted => "cluster-scoped-posted", None,
    logs_of_status_kept => "status-kept", None,
}

#[tokio::test]
async fn inconsistencies_on_core_secrets_say_what_is_true_for_a_built_in_kind() {
    // kopf writes status.kopf and a handler's result into core Secrets, which have no
    // status: the API server drops them and kopf logs the inconsistency. No CRD schema
    // is involved, and the fix is where kopf keeps its state.
    let fixture = "core-secrets";
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, fixture).await;
    let _kopf = Fixture::start(fixture, &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(
        &client,
        &ns.name,
        serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": "audit"},
            "spec": {
                "target": {"deployment": deployment}, "interval": "30s",
                "handledResources": [{"group": "", "version": "v1", "plural": "secrets"}]
            }
        }),
    )
    .await
    .expect("creating the KopfAudit");
    let audit = wait_status(
        &client,
        &ns.name,
        "audit",
        "persistence.patch-inconsistencies",
        Duration::from_secs(180),
        |s| found_checks(s).contains("persistence.patch-inconsistencies"),
    )
    .await;
    let status = audit.status.expect("status");
    let f = status
        .findings
        .iter()
        .find(|f| f.check.as_str() == "persistence.patch-inconsistencies")
        .expect("the finding");
    assert_eq!(f.severity, Severity::Warning, "{}", f.message);
    assert!(
        f.message.contains("Secret objects, a built-in kind"),
        "{}",
        f.message
    );
    assert!(f.message.contains("annotations"), "{}", f.message);
    assert!(
        !f.message.contains("CRD"),
        "no schema to change: {}",
        f.message
    );
    let found = found_checks(&status);
    for id in &expectations(fixture).must_not {
        assert!(
            !found.contains(id),
            "{fixture}: {id}: {:#?}",
            status.findings
        );
    }
    say(format!("{fixture}: {}", f.message));
}

#[tokio::test]
async fn logging_events_kopf_posts_into_default_are_found_with_the_allowance() {
    // The operator logs in without a namespace (as through the `kubernetes` client), so
    // kopf posts the Events of its cluster-scoped Lamps into `default`.
    let fixture = "cluster-scoped-default";
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, fixture).await;
    let _kopf = Fixture::start(fixture, &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let audit_for = |name: &str| {
        serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": name},
            "spec": {"target": {"deployment": deployment}, "interval": "30s"}
        })
    };
    let expect = expectations(fixture);
    {
        let _auditor = Auditor::start(
            &support::kubeconfig_path(),
            &ns.name,
            &["--allow-cross-namespace"],
        );
        create_audit(&client, &ns.name, audit_for("allowed"))
            .await
            .expect("creating the KopfAudit");
        let audit = wait_status(
            &client,
            &ns.name,
            "allowed",
            "events.logging-flood from the Events in default",
            Duration::from_secs(180),
            |s| expect.must.iter().all(|id| found_checks(s).contains(id)),
        )
        .await;
        let status = audit.status.expect("status");
        let flood = status
            .findings
            .iter()
            .find(|f| f.check.as_str() == "events.logging-flood")
            .expect("the flood");
        assert!(
            flood
                .evidence
                .as_deref()
                .is_some_and(|e| e.starts_with("Lamp Normal") && e.contains(": Logging ")),
            "a Logging Event about a Lamp: {flood:#?}"
        );
        let found = found_checks(&status);
        for id in &expect.must_not {
            assert!(
                !found.contains(id),
                "{fixture}: {id}: {:#?}",
                status.findings
            );
        }
        say(format!("{fixture} with the allowance: {found:?}"));
    }
    // Without the allowance `default` is out of reach: the area says so, and claims
    // neither compliance nor silence.
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit_for("confined"))
        .await
        .expect("creating the KopfAudit");
    let audit = wait_status(
        &client,
        &ns.name,
        "confined",
        "EventsCompliant Unknown/OutsideNamespace naming default",
        Duration::from_secs(180),
        |s| {
            s.conditions.iter().any(|c| {
                c.type_ == "EventsCompliant"
                    && c.status == "Unknown"
                    && c.reason == "OutsideNamespace"
                    && c.message.contains("namespace default")
            })
        },
    )
    .await;
    let found = found_checks(&audit.status.expect("status"));
    assert!(!found.contains("events.silent-failures"), "{found:?}");
    say(format!("{fixture} without the allowance: {found:?}"));
}

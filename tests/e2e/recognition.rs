//! Real kopf operators as they are really installed: started by the image's CMD (the
//! Deployment sets no command) or from Python with `kopf.run()`. The auditor recognises
//! them by their log, says so in status, and reports what it reports when the command
//! is written out.

use crate::operator::{
    audit_fixture, audit_for, condition, create_audit, ensure_crd, fixture_deployment,
    found_checks, wait_status,
};
use crate::support::{self, Auditor, Fixture, TestNamespace, expectations, say};
use kopf_audit::api::{KopfAuditStatus, Recognition};
use kube::ResourceExt;
use std::collections::BTreeSet;
use std::time::Duration;

/// Every area's prefix: the whole of expect.yaml is asserted.
const ALL_AREAS: [&str; 5] = ["workload.", "rbac.", "events.", "persistence.", "runtime."];

/// Runs the `image-cmd` fixture (with `options` for hack/fixture.py) in a namespace of
/// its own, audits it with a default KopfAudit, and returns the status once the
/// expected findings are there.
async fn audit_image_cmd(prefix: &str, options: &[&str]) -> KopfAuditStatus {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, prefix).await;
    let _kopf = Fixture::start_with("image-cmd", &ns.name, None, options);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit_for("audit", &deployment, "30s"))
        .await
        .expect("creating the KopfAudit");
    let must: BTreeSet<String> = expectations("image-cmd").must.into_iter().collect();
    let audit = wait_status(
        &client,
        &ns.name,
        "audit",
        &format!("image-cmd {options:?}: findings {must:?}"),
        Duration::from_secs(180),
        |s| {
            condition(s, "Ready") == Some(("True", "AuditSucceeded"))
                && must.is_subset(&found_checks(s))
        },
    )
    .await;
    audit.status.expect("status")
}

#[tokio::test]
async fn an_operator_started_by_its_image_cmd_gets_the_findings_of_its_written_out_command() {
    let (hidden, written) = tokio::join!(
        audit_image_cmd("image-cmd-hidden", &[]),
        audit_image_cmd("image-cmd-written", &["--write-command"]),
    );
    let target = &hidden.targets[0];
    assert!(target.kopf, "{target:#?}");
    assert_eq!(target.recognised_by, Some(Recognition::Log), "{target:#?}");
    let why = target.recognition.as_deref().unwrap_or_default();
    assert!(why.contains("kopf's own lines"), "{why}");
    assert_eq!(
        written.targets[0].recognised_by,
        Some(Recognition::CommandLine)
    );
    let expect = expectations("image-cmd");
    let found = found_checks(&hidden);
    for id in &expect.must_not {
        assert!(!found.contains(id), "{id} must not be reported: {found:?}");
    }
    assert_eq!(
        found,
        found_checks(&written),
        "the same operator, command hidden or written out"
    );
    say(format!("image-cmd: {found:?}; {why}"));
}

#[tokio::test]
async fn an_operator_started_from_python_with_kopf_run_is_recognised_by_its_log() {
    let status = audit_fixture("python-run", &ALL_AREAS, None).await;
    let target = &status.targets[0];
    assert_eq!(target.recognised_by, Some(Recognition::Log), "{target:#?}");
    // kopf.run(namespaces=...) is invisible from outside: the scope is unknown, and the
    // status says what was checked instead.
    assert_eq!(target.mode.as_deref(), Some("unknown"), "{target:#?}");
    let why = target.recognition.as_deref().unwrap_or_default();
    assert!(why.contains("own namespace only"), "{why}");
    assert_ne!(
        condition(&status, "WorkloadCompliant").map(|c| c.1),
        Some("NotKopf")
    );
}

#[tokio::test]
async fn kopf_logging_through_pythons_basic_config_is_parsed_as_kopfs_records() {
    // kopf.run() with logging.basicConfig(): `ERROR:kopf.objects:Handler ... failed
    // permanently` is a kopf record, so the failure is reported from it.
    let status = audit_fixture("python-basic", &ALL_AREAS, None).await;
    let target = &status.targets[0];
    assert_eq!(target.recognised_by, Some(Recognition::Log), "{target:#?}");
    assert_eq!(target.log_format.as_deref(), Some("basic"), "{target:#?}");
    let failure = status
        .findings
        .iter()
        .find(|f| f.check.as_str() == "runtime.handler-failures")
        .expect("the permanent failure");
    assert!(failure.message.contains("provision"), "{}", failure.message);
    assert!(
        failure
            .evidence
            .as_deref()
            .is_some_and(|e| e.contains("doohickey rejected")),
        "{failure:#?}"
    );
}

#[tokio::test]
async fn with_wildcard_rbac_on_core_secrets_the_handled_resource_is_learned_from_kopfs_events() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "wildcard-secrets").await;
    let _kopf = Fixture::start("wildcard-secrets", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit_for("audit", &deployment, "30s"))
        .await
        .expect("creating the KopfAudit");
    let learned = "secrets.core/v1 (kopf's Events)";
    let audit = wait_status(
        &client,
        &ns.name,
        "audit",
        "secrets learned from kopf's Events",
        Duration::from_secs(180),
        |s| {
            s.targets
                .first()
                .is_some_and(|t| t.handled_resources.iter().any(|h| h == learned))
        },
    )
    .await;
    let status = audit.status.expect("status");
    let found = found_checks(&status);
    let expect = expectations("wildcard-secrets");
    for id in &expect.must {
        assert!(found.contains(id), "{id} must be reported: {found:?}");
    }
    for id in &expect.must_not {
        assert!(!found.contains(id), "{id} must not be reported: {found:?}");
    }
    for area in ["EventsCompliant", "PersistenceCompliant"] {
        let (_, reason) = condition(&status, area).expect("condition");
        assert_ne!(reason, "NothingHandled", "{area}: {:#?}", status.conditions);
    }
    // Secrets are handled but never read: the persistence area says so, is not True,
    // and asks for no permission.
    let persistence = status
        .conditions
        .iter()
        .find(|c| c.type_ == "PersistenceCompliant")
        .expect("PersistenceCompliant");
    assert_ne!(persistence.status, "True", "{persistence:#?}");
    assert!(
        persistence.message.contains("core Secrets only"),
        "{persistence:#?}"
    );
    assert!(
        !persistence.message.contains("grant it"),
        "{persistence:#?}"
    );
    if persistence.status == "Unknown" {
        assert_eq!(persistence.reason, "SecretsNotSampled", "{persistence:#?}");
    }
}

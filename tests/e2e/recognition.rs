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
    python_logging_is_parsed("python-basic").await;
}

#[tokio::test]
async fn kopf_logging_in_a_custom_python_format_is_parsed_as_kopfs_records() {
    // basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s"), as
    // published operators started with kopf.run() set it.
    python_logging_is_parsed("python-custom-format").await;
}

/// Audits a fixture whose kopf logs through Python's own logging: recognised by its
/// log, its permanent failure reported from the records.
async fn python_logging_is_parsed(fixture: &str) {
    let status = audit_fixture(fixture, &ALL_AREAS, None).await;
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

/// The python-spread operator's Role and RoleBinding in `namespace`: what its
/// manifests grant in its own, for the namespace only its log shows.
async fn grant_doohickeys(client: &kube::Client, namespace: &str, operator_namespace: &str) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let name = "python-spread-operator";
    let role: Role = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": namespace},
        "rules": [
            {"apiGroups": ["pyrun.fixtures.kopf-audit.dev"], "resources": ["doohickeys"],
             "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": ["pyrun.fixtures.kopf-audit.dev"], "resources": ["doohickeys/status"],
             "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
        ]
    }))
    .expect("role");
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": operator_namespace}]
    }))
    .expect("role binding");
    kube::Api::<Role>::namespaced(client.clone(), namespace)
        .create(&Default::default(), &role)
        .await
        .expect("creating the Role");
    kube::Api::<RoleBinding>::namespaced(client.clone(), namespace)
        .create(&Default::default(), &binding)
        .await
        .expect("creating the RoleBinding");
}

#[tokio::test]
async fn a_namespace_its_log_names_is_served_and_its_reach_is_named() {
    // kopf.run() serves the operator's namespace and `<ns>-b`, which only its log shows:
    // `[<ns>-b/elsewhere] Handler 'provision' succeeded.`
    let fixture = "python-spread";
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, fixture).await;
    let other = format!("{}-b", ns.name);
    let _other = TestNamespace::named(&client, &other).await;
    grant_doohickeys(&client, &other, &ns.name).await;
    let _kopf = Fixture::start(fixture, &ns.name, None);
    let doohickey: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "pyrun.fixtures.kopf-audit.dev/v1", "kind": "Doohickey",
        "metadata": {"name": "elsewhere", "namespace": other}, "spec": {}
    }))
    .expect("doohickey");
    let resource = kube::discovery::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("pyrun.fixtures.kopf-audit.dev", "v1", "Doohickey"),
        "doohickeys",
    );
    kube::Api::<kube::api::DynamicObject>::namespaced_with(client.clone(), &other, &resource)
        .create(&Default::default(), &doohickey)
        .await
        .expect("creating the doohickey in the other namespace");
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit_for("audit", &deployment, "30s"))
        .await
        .expect("creating the KopfAudit");
    let expect = expectations(fixture);
    let must: BTreeSet<String> = expect.must.iter().cloned().collect();
    let audit = wait_status(
        &client,
        &ns.name,
        "audit",
        &format!("{other} learned from the log, findings {must:?}"),
        Duration::from_secs(180),
        |s| {
            s.targets
                .first()
                .and_then(|t| t.recognition.as_deref())
                .is_some_and(|r| r.contains(&other))
                && must.is_subset(&found_checks(s))
        },
    )
    .await;
    let status = audit.status.expect("status");
    let target = &status.targets[0];
    assert_eq!(target.recognised_by, Some(Recognition::Log), "{target:#?}");
    assert_eq!(target.mode.as_deref(), Some("unknown"), "{target:#?}");
    let found = found_checks(&status);
    for id in &expect.must_not {
        assert!(!found.contains(id), "{id} must not be reported: {found:?}");
    }
    // Without the cross-namespace allowance, the Events of `<ns>-b` are not read: the
    // area says so and names the allowance, it does not pass on its own namespace alone.
    let events = status
        .conditions
        .iter()
        .find(|c| c.type_ == "EventsCompliant")
        .expect("EventsCompliant");
    assert_eq!(
        (events.status.as_str(), events.reason.as_str()),
        ("Unknown", "OutsideNamespace"),
        "{events:#?}"
    );
    assert!(
        events.message.contains("--allow-cross-namespace"),
        "{events:#?}"
    );
    say(format!(
        "{fixture}: {}",
        target.recognition.as_deref().unwrap_or_default()
    ));
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

#[tokio::test]
async fn with_no_events_the_handled_resource_is_learned_from_kopfs_json_log() {
    // Image CMD `kopf run --log-format=json`, a wildcard Role, posting off: only the
    // `object` of kopf's JSON records names what it handles.
    let fixture = "json-secrets";
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, fixture).await;
    let _kopf = Fixture::start(fixture, &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit_for("audit", &deployment, "30s"))
        .await
        .expect("creating the KopfAudit");
    let learned = "secrets.core/v1 (kopf's JSON log)";
    let audit = wait_status(
        &client,
        &ns.name,
        "audit",
        "secrets learned from kopf's JSON log",
        Duration::from_secs(180),
        |s| {
            s.targets
                .first()
                .is_some_and(|t| t.handled_resources.iter().any(|h| h == learned))
        },
    )
    .await;
    let status = audit.status.expect("status");
    let target = &status.targets[0];
    assert_eq!(target.recognised_by, Some(Recognition::Log), "{target:#?}");
    assert_eq!(target.log_format.as_deref(), Some("json"), "{target:#?}");
    let found = found_checks(&status);
    let expect = expectations(fixture);
    for id in &expect.must {
        assert!(found.contains(id), "{id} must be reported: {found:?}");
    }
    for id in &expect.must_not {
        assert!(!found.contains(id), "{id} must not be reported: {found:?}");
    }
    let (_, reason) = condition(&status, "PersistenceCompliant").expect("condition");
    assert_ne!(reason, "NothingHandled", "{:#?}", status.conditions);
    assert_ne!(reason, "Forbidden", "{:#?}", status.conditions);
}

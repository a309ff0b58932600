//! The production failures kopf teams hit, on real kopf processes: an operator that
//! stops handling while its pod runs (SIGSTOP), a dead watcher on kopf 1.38, a sloppy
//! Deployment, a developer's `kopf run --dev` joining production's peering, and
//! finalized objects of an operator scaled to zero, kopf-managed admission webhooks that
//! fail closed, and an expired caBundle in such a webhook.

use crate::operator::{
    audit_fixture, audit_fixture_with, audit_running_fixture, condition, create_audit, ensure_crd,
    fixture_deployment, found_checks, wait_status,
};
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kopf_audit::api::{Finding, KopfAudit, KopfAuditStatus};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ALL_AREAS: [&str; 5] = ["workload.", "rbac.", "events.", "persistence.", "runtime."];

#[tokio::test]
async fn a_sloppy_deployment_overlaps_rollouts_logs_debug_and_binds_liveness_to_localhost() {
    let status = audit_fixture("sloppy", &ALL_AREAS, None).await;
    let liveness = finding(&status, "workload.liveness");
    assert!(
        liveness.message.contains("0.0.0.0"),
        "the fix is named: {}",
        liveness.message
    );
    let version = finding(&status, "runtime.kopf-version");
    assert!(
        version.message.contains("kopf 1.45.2"),
        "{}",
        version.message
    );
}

#[tokio::test]
async fn kopf_1_38_leaves_a_watcher_dead_and_its_wording_dates_the_log() {
    let status = audit_fixture("blind-watcher", &ALL_AREAS, None).await;
    let dead = finding(&status, "runtime.dead-watcher");
    assert!(
        dead.message
            .contains("watcher for widgets.v1.blind-watcher.fixtures.kopf-audit.dev"),
        "{}",
        dead.message
    );
    assert!(
        dead.message.contains("does not respawn it"),
        "{}",
        dead.message
    );
    let version = finding(&status, "runtime.kopf-version");
    assert_eq!(
        version.severity,
        kopf_audit::catalog::Severity::Warning,
        "{}",
        version.message
    );
    assert!(version.message.contains("or older"), "{}", version.message);
}

#[tokio::test]
async fn api_priority_and_fairness_refusing_kopf_1_45_s_patches_is_rate_limiting() {
    let status = audit_fixture("rate-limited", &ALL_AREAS, None).await;
    let limited = finding(&status, "runtime.rate-limited");
    assert!(
        limited.message.contains("HTTP 429") && limited.message.contains("FlowSchema"),
        "the cause and the fix are named: {}",
        limited.message
    );
    assert!(
        !limited.message.contains("1.42.1 and older"),
        "kopf 1.45 retries every request: {}",
        limited.message
    );
    assert!(
        limited
            .evidence
            .as_deref()
            .is_some_and(|e| e.contains("APITooManyRequestsError")),
        "{limited:?}"
    );
    let version = finding(&status, "runtime.kopf-version");
    assert!(
        version.message.contains("1.42.2") || version.message.contains("1.45"),
        "{}",
        version.message
    );
}

#[tokio::test]
async fn the_same_timers_under_the_default_priority_levels_are_not_rate_limited() {
    let status = audit_fixture("rate-limited-twin", &ALL_AREAS, None).await;
    assert!(
        !found_checks(&status).contains("runtime.rate-limited"),
        "{:#?}",
        status.findings
    );
}

#[tokio::test]
async fn kopf_1_38_posts_every_object_log_line_so_failures_are_not_silent() {
    // expect.yaml: events.logging-flood and runtime.handler-failures, and no
    // events.silent-failures (the failure is posted as a `Logging` Error Event).
    let status = audit_fixture("old-posting", &ALL_AREAS, None).await;
    let flood = finding(&status, "events.logging-flood");
    assert!(
        flood.message.contains("1.40 and older") && flood.message.contains("posting.level"),
        "the version's own fix is named: {}",
        flood.message
    );
    let version = finding(&status, "runtime.kopf-version");
    assert!(version.message.contains("or older"), "{}", version.message);
}

#[tokio::test]
async fn a_posting_level_above_info_drops_kopf_info_and_is_named() {
    let status = audit_fixture("posting-level", &ALL_AREAS, None).await;
    let level = finding(&status, "events.posting-level");
    assert!(
        level.message.contains("kopf.info()") && level.message.contains("kopf.event("),
        "the dropped call and the fix are named: {}",
        level.message
    );
}

#[tokio::test]
async fn lifecycle_events_through_kopf_event_pass_any_posting_level() {
    let status = audit_fixture("posting-level-twin", &ALL_AREAS, None).await;
    assert!(
        !found_checks(&status).contains("events.posting-level"),
        "{:#?}",
        status.findings
    );
}

#[tokio::test]
async fn an_update_handler_stamping_its_own_object_loops_and_is_named() {
    let status = audit_fixture("handler-loop", &ALL_AREAS, None).await;
    let looping = finding(&status, "runtime.handler-loop");
    assert!(
        looping.message.contains("Handler 'stamp'") && looping.message.contains("/looping"),
        "the handler and the object are named: {}",
        looping.message
    );
    assert!(
        looping.message.contains("10 or more times")
            && looping.message.contains("only when the value differs"),
        "the rate and the fix are given: {}",
        looping.message
    );
}

#[tokio::test]
async fn a_handler_that_patches_only_what_differs_rests_and_is_not_a_loop() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "handler-loop-twin").await;
    let kopf = Fixture::start("handler-loop-twin", &ns.name, None);
    // The round after its own first patch: kopf handled the update the handler caused.
    wait_for(
        "the twin's second success",
        Duration::from_secs(120),
        || async {
            let log = std::fs::read_to_string(&kopf.log).unwrap_or_default();
            (log.matches("Handler 'stamp' succeeded.").count() >= 2).then_some(())
        },
    )
    .await;
    let status = audit_after(&client, &ns.name, jiff::Timestamp::now()).await;
    let log = std::fs::read_to_string(&kopf.log).unwrap_or_default();
    assert!(
        log.matches("Handler 'stamp' succeeded.").count() < 10,
        "the twin rests: {log}"
    );
    assert!(
        !found_checks(&status).contains("runtime.handler-loop"),
        "{:#?}",
        status.findings
    );
}

#[tokio::test]
async fn a_startup_handler_that_never_returns_is_a_stalled_startup() {
    let status = audit_fixture("startup-stalled", &ALL_AREAS, None).await;
    let stalled = finding(&status, "runtime.startup-stalled");
    assert!(
        stalled.message.contains("/north") && stalled.message.contains("/south"),
        "the unhandled objects are named: {}",
        stalled.message
    );
    assert!(
        stalled.message.contains("@kopf.on.startup"),
        "the likely cause is named: {}",
        stalled.message
    );
}

/// kopf issue 1243 as it happens: `@kopf.index` with `settings.queueing.worker_limit`
/// below the number of objects deadlocks the start; the check sees it from outside.
#[tokio::test]
async fn an_index_under_a_worker_limit_is_a_stalled_startup() {
    let status = audit_fixture("index-stalled", &ALL_AREAS, None).await;
    let stalled = finding(&status, "runtime.startup-stalled");
    assert!(
        ["/north", "/south", "/east"]
            .iter()
            .any(|name| stalled.message.contains(name)),
        "the unhandled objects are named: {}",
        stalled.message
    );
    assert!(
        stalled.message.contains("worker_limit"),
        "the cause is among those named: {}",
        stalled.message
    );
}

#[tokio::test]
async fn a_bounded_startup_wait_is_not_a_stalled_startup() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "startup-stalled-twin").await;
    let _kopf = Fixture::start("startup-stalled-twin", &ns.name, None);
    let started = kopf_started(&client, &ns.name).await;
    // Judged only once the stalled fixture's operator would have been judged stalled.
    let status = audit_after(&client, &ns.name, started + Duration::from_secs(150)).await;
    assert!(
        !found_checks(&status).contains("runtime.startup-stalled"),
        "{:#?}",
        status.findings
    );
}

/// When the fixture's kopf container started running.
async fn kopf_started(client: &Client, namespace: &str) -> jiff::Timestamp {
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), namespace);
    wait_for(
        "the kopf container's start",
        Duration::from_secs(60),
        || async {
            let list = pods.list(&Default::default()).await.ok()?;
            list.items
                .iter()
                .flat_map(|p| p.status.iter())
                .flat_map(|s| s.container_statuses.iter().flatten())
                .find_map(|cs| Some(cs.state.as_ref()?.running.as_ref()?.started_at.as_ref()?.0))
        },
    )
    .await
}

/// The status of the first audit of the namespace's fixture Deployment, by an auditor
/// and a KopfAudit started after `moment` (an audit that changes nothing does not
/// rewrite the status, so a later one cannot be waited for).
async fn audit_after(client: &Client, namespace: &str, moment: jiff::Timestamp) -> KopfAuditStatus {
    wait_for(&format!("{moment}"), Duration::from_secs(300), || async {
        (jiff::Timestamp::now() > moment).then_some(())
    })
    .await;
    audit_running_fixture(
        client,
        namespace,
        &format!("an audit after {moment}"),
        Duration::from_secs(300),
        |s| s.last_audit_time.as_ref().is_some_and(|t| t.0 > moment),
    )
    .await
}

#[tokio::test]
async fn kopf_1_37_posts_every_object_log_line_so_failures_are_not_silent() {
    // The old-posting operator on kopf 1.37.5 (hack/requirements-kopf-1.37.5.txt), which
    // has no posting.loggers either (its _core/engines/posting.py filters on
    // posting.enabled and posting.level only): expect.yaml holds as on 1.38.
    let status = audit_fixture_with(
        "old-posting",
        &ALL_AREAS,
        None,
        &["--kopf-version", "1.37.5"],
    )
    .await;
    let flood = finding(&status, "events.logging-flood");
    assert!(
        flood.message.contains("1.40 and older") && flood.message.contains("posting.level"),
        "{}",
        flood.message
    );
    let version = finding(&status, "runtime.kopf-version");
    assert!(version.message.contains("or older"), "{}", version.message);
}

#[tokio::test]
async fn kopf_1_44_loops_on_a_self_stamping_handler_the_same_way() {
    // kopf 1.44.6 (hack/requirements-kopf-1.44.6.txt) writes the same success and
    // `is processed` lines as 1.45.2 (_core/actions/execution.py, _core/reactor/
    // processing.py).
    let status = audit_fixture_with(
        "handler-loop",
        &ALL_AREAS,
        None,
        &["--kopf-version", "1.44.6"],
    )
    .await;
    let looping = finding(&status, "runtime.handler-loop");
    assert!(
        looping.message.contains("Handler 'stamp'"),
        "{}",
        looping.message
    );
}

#[tokio::test]
async fn a_warning_per_failed_attempt_of_a_retried_handler_is_not_spam() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "retry-warnings").await;
    let kopf = Fixture::start("retry-warnings", &ns.name, None);
    // Three failed attempts: three OpenFailed Warnings, as many as make spam.
    wait_for(
        "three failed attempts",
        Duration::from_secs(120),
        || async {
            let log = std::fs::read_to_string(&kopf.log).unwrap_or_default();
            (log.matches("Handler 'open_gate' failed temporarily")
                .count()
                >= 3)
                .then_some(())
        },
    )
    .await;
    let status = audit_after(&client, &ns.name, jiff::Timestamp::now()).await;
    let found = found_checks(&status);
    assert!(
        found.contains("runtime.handler-failures") && !found.contains("events.steady-state-spam"),
        "{:#?}",
        status.findings
    );
}

#[tokio::test]
async fn the_same_warning_on_every_tick_of_a_timer_is_spam() {
    let status = audit_fixture("tick-warnings", &ALL_AREAS, None).await;
    let spam = finding(&status, "events.steady-state-spam");
    assert!(spam.message.contains("GateLocked"), "{}", spam.message);
}

fn finding<'a>(status: &'a KopfAuditStatus, id: &str) -> &'a Finding {
    status
        .findings
        .iter()
        .find(|f| f.check.as_str() == id)
        .unwrap_or_else(|| panic!("no {id} in {:#?}", status.findings))
}

/// A KopfAudit every 30 s with its own thresholds, resolving at once.
fn audit(deployment: &str, unhandled_after: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "audit"},
        "spec": {
            "target": {"deployment": deployment},
            "interval": "30s",
            "thresholds": {"unhandledAfter": unhandled_after, "resolveAfter": "0s"},
        }
    })
}

/// The kopf process of a fixture's pod (hack/fixture.py writes its pid next to its log).
fn kopf_pid(fixture: &Fixture) -> String {
    let path = fixture.log.parent().expect("a log directory").join("pid");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .to_string()
}

/// A stopped process: continued when dropped, so that a failing test leaves none.
struct Stopped(String);

impl Stopped {
    fn stop(pid: String) -> Stopped {
        signal("-STOP", &pid);
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal("-CONT", &self.0);
    }
}

fn signal(which: &str, pid: &str) {
    let ok = Command::new("kill")
        .args([which, pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {which} {pid}");
}

fn widgets(client: &Client, ns: &str, group: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", "Widget");
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    )
}

/// Waits until kopf has stored a diff-base on the widget (it handled it).
async fn wait_handled(api: &Api<DynamicObject>, name: &str, size: i64) {
    support::wait_for(
        &format!("kopf to handle widget {name} at size {size}"),
        Duration::from_secs(90),
        || {
            let api = api.clone();
            async move {
                let w = api.get(name).await.ok()?;
                let base = w.data.pointer("/status/kopf/last-handled-configuration")?;
                let base: serde_json::Value = serde_json::from_str(base.as_str()?).ok()?;
                (base.pointer("/spec/size")?.as_i64()? == size).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_frozen_operator_is_not_handling_until_it_resumes_and_scaled_to_zero_orphans_its_finalizers()
 {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "frozen").await;
    let kopf = Fixture::start("good", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let widgets = widgets(&client, &ns.name, "good.fixtures.kopf-audit.dev");
    wait_handled(&widgets, "alpha", 1).await;
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit(&deployment, "1m"))
        .await
        .expect("creating the KopfAudit");
    let audited = wait_status(
        &client,
        &ns.name,
        "audit",
        "a first audit",
        Duration::from_secs(90),
        |s| condition(s, "Ready") == Some(("True", "AuditSucceeded")),
    )
    .await;
    let first = found_checks(audited.status.as_ref().expect("status"));
    assert!(!first.contains("runtime.not-handling"), "{first:?}");

    // Frozen: the pod stays Running, its liveness endpoint does not matter here, and
    // nothing handles the change.
    let stopped = Stopped::stop(kopf_pid(&kopf));
    say("kopf stopped (SIGSTOP); changing widget alpha");
    widgets
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"size": 4}})),
        )
        .await
        .expect("patching alpha");
    let raised = wait_status(
        &client,
        &ns.name,
        "audit",
        "runtime.not-handling once the change waited over 1m",
        Duration::from_secs(240),
        |s| found_checks(s).contains("runtime.not-handling"),
    )
    .await;
    let status = raised.status.expect("status");
    let f = finding(&status, "runtime.not-handling");
    assert!(
        f.message.contains(&format!("{}/alpha (over", ns.name)),
        "{}",
        f.message
    );
    assert!(
        !f.message.contains("/beta"),
        "beta was not changed: {}",
        f.message
    );
    assert_eq!(f.severity, kopf_audit::catalog::Severity::Error);

    // Continued, kopf handles the change and the finding resolves.
    drop(stopped);
    say("kopf continued (SIGCONT)");
    wait_handled(&widgets, "alpha", 4).await;
    wait_status(
        &client,
        &ns.name,
        "audit",
        "runtime.not-handling to resolve",
        Duration::from_secs(120),
        |s| !found_checks(s).contains("runtime.not-handling"),
    )
    .await;

    // Scaled to zero with finalized widgets: every deletion would hang.
    support::scale_to_zero(&client, &ns.name, &deployment).await;
    let orphaned = wait_status(
        &client,
        &ns.name,
        "audit",
        "persistence.orphaned-finalizers as an error",
        Duration::from_secs(120),
        |s| {
            s.findings.iter().any(|f| {
                f.check.as_str() == "persistence.orphaned-finalizers"
                    && f.severity == kopf_audit::catalog::Severity::Error
            })
        },
    )
    .await;
    let status = orphaned.status.expect("status");
    let f = status
        .findings
        .iter()
        .find(|f| {
            f.check.as_str() == "persistence.orphaned-finalizers"
                && f.severity == kopf_audit::catalog::Severity::Error
        })
        .expect("the error");
    assert!(f.message.contains("scaled to 0 replicas"), "{}", f.message);
    assert!(f.message.contains("/alpha"), "{}", f.message);
    drop(kopf);
    ns.delete(&client).await;
}

/// `kopf run --dev` from a developer's machine (the admin kubeconfig, this host's name)
/// in the fixture's peering; killed when dropped.
struct DevRun(Child, PathBuf);

impl DevRun {
    fn start(ns: &str, peering: &str, operator: &Path) -> DevRun {
        let venv = Command::new(support::repo().join("hack/kopf-venv.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("hack/kopf-venv.sh");
        let venv = String::from_utf8_lossy(&venv.stdout)
            .lines()
            .last()
            .expect("the venv path")
            .trim()
            .to_string();
        let log = support::workdir().join(format!("dev-run-{ns}.log"));
        let file = std::fs::File::create(&log).expect("a log file");
        let child = Command::new(Path::new(&venv).join("bin/kopf"))
            .args(["run", "--dev", "-n", ns, "--peering", peering])
            .arg(operator)
            .env("KUBECONFIG", support::kubeconfig_path())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .expect("starting kopf run --dev");
        say(format!("kopf run --dev started (log {})", log.display()));
        DevRun(child, log)
    }
}

impl Drop for DevRun {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_developer_s_dev_run_in_production_s_peering_is_a_foreign_peer() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "foreign-peer").await;
    let kopf = Fixture::start("sloppy", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit(&deployment, "10m"))
        .await
        .expect("creating the KopfAudit");
    let alone = wait_status(
        &client,
        &ns.name,
        "audit",
        "a first audit",
        Duration::from_secs(90),
        |s| condition(s, "RuntimeHealthy").is_some_and(|c| c.0 != "Unknown"),
    )
    .await;
    let alone = found_checks(alone.status.as_ref().expect("status"));
    assert!(!alone.contains("runtime.foreign-peer"), "{alone:?}");

    let operator = support::repo().join("tests/fixtures/kopf/sloppy/operator.py");
    let dev = DevRun::start(&ns.name, "sloppy", &operator);
    let raised = wait_status(
        &client,
        &ns.name,
        "audit",
        "runtime.foreign-peer naming the --dev run",
        Duration::from_secs(180),
        |s| {
            s.findings.iter().any(|f| {
                f.check.as_str() == "runtime.foreign-peer" && f.message.contains("log confirms")
            })
        },
    )
    .await;
    let status = raised.status.expect("status");
    let f = finding(&status, "runtime.foreign-peer");
    assert!(
        f.message.contains("priority 666, what --dev sets"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains(&format!("KopfPeering {}/sloppy", ns.name)),
        "{}",
        f.message
    );
    assert!(
        !f.message.contains(&kopf.pod),
        "its own pod is not foreign: {}",
        f.message
    );
    let evidence = f.evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.contains("Pausing operations in favour of"),
        "{evidence}"
    );
    say(format!("dev run log: {}", dev.1.display()));
    drop(dev);
    drop(kopf);
    ns.delete(&client).await;
}

/// A cluster-scoped webhook configuration, deleted when dropped (kopf removes its own on
/// a graceful stop; a failing test must leave none behind either). kubectl, not the
/// test's client: a drop cannot wait on the runtime it runs in.
struct DeleteWebhookConfiguration(String);

impl Drop for DeleteWebhookConfiguration {
    fn drop(&mut self) {
        let _ = Command::new(support::kubectl())
            .arg("--kubeconfig")
            .arg(support::kubeconfig_path())
            .args([
                "delete",
                "validatingwebhookconfiguration",
                &self.0,
                "--ignore-not-found",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[tokio::test]
async fn kopf_managed_webhooks_failing_closed_on_one_replica_are_a_blast_radius() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "webhooks").await;
    // kopf names each webhook `<handler>.<this>`: a domain of three segments or more.
    let configuration = format!("{}.webhooks.fixtures.kopf-audit.dev", ns.name);
    let _delete = DeleteWebhookConfiguration(configuration.clone());
    let _kopf = Fixture::start("webhooks", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();

    // kopf creates the configuration and serves it: a negative size is refused by the
    // operator's handler, through the API server.
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    wait_for(
        "kopf's ValidatingWebhookConfiguration",
        Duration::from_secs(90),
        || {
            let (configs, name) = (configs.clone(), configuration.clone());
            async move {
                let c = configs.get_opt(&name).await.ok()??;
                c.webhooks.filter(|w| !w.is_empty()).map(|_| ())
            }
        },
    )
    .await;
    let gizmos = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &ns.name,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("webhooks.fixtures.kopf-audit.dev", "v1", "Gizmo"),
            "gizmos",
        ),
    );
    let refused = wait_for(
        "the webhook refusing a negative size",
        Duration::from_secs(60),
        || {
            let gizmos = gizmos.clone();
            async move {
                let bad: DynamicObject = serde_json::from_value(serde_json::json!({
                    "apiVersion": "webhooks.fixtures.kopf-audit.dev/v1", "kind": "Gizmo",
                    "metadata": {"name": "negative"}, "spec": {"size": -1},
                }))
                .ok()?;
                match gizmos.create(&Default::default(), &bad).await {
                    Err(kube::Error::Api(e)) if e.message.contains("size must not be negative") => {
                        Some(e.message)
                    }
                    Ok(_) => {
                        let _ = gizmos.delete("negative", &Default::default()).await;
                        None
                    }
                    Err(_) => None,
                }
            }
        },
    )
    .await;
    say(format!("refused by kopf's webhook: {refused}"));

    let _auditor = Auditor::start(
        &support::kubeconfig_path(),
        &ns.name,
        &["--allow-cross-namespace"],
    );
    create_audit(&client, &ns.name, audit(&deployment, "10m"))
        .await
        .expect("creating the KopfAudit");
    let audit = wait_status(
        &client,
        &ns.name,
        "audit",
        "workload.webhook-blast-radius",
        Duration::from_secs(120),
        |s| found_checks(s).contains("workload.webhook-blast-radius"),
    )
    .await;
    let status = audit.status.expect("status");
    let blast = finding(&status, "workload.webhook-blast-radius");
    for part in [
        configuration.as_str(),
        "failurePolicy: Fail with 1 replica(s)",
        "kube-system",
        "127.0.0.1",
    ] {
        assert!(blast.message.contains(part), "{part}: {}", blast.message);
    }
    assert!(
        !status
            .skipped
            .iter()
            .any(|k| k.check.as_str() == "workload.webhook-blast-radius"),
        "read with the allowance: {:#?}",
        status.skipped
    );
}

/// Writes the expired bundle over every webhook of `configuration` whose bundle is
/// another (kopf wrote its own again).
async fn keep_expired_bundle(
    configs: &Api<ValidatingWebhookConfiguration>,
    configuration: &str,
    webhooks: &[String],
) {
    let Ok(current) = configs.get(configuration).await else {
        return;
    };
    let replaced = current.webhooks.iter().flatten().any(|w| {
        w.client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()) != Some(EXPIRED_CA_BUNDLE)
    });
    if !replaced {
        return;
    }
    say(format!("writing the expired caBundle over {configuration}"));
    let bundle = serde_json::to_value(k8s_openapi::ByteString(EXPIRED_CA_BUNDLE.to_vec()))
        .expect("a base64 caBundle");
    let hooks: Vec<serde_json::Value> = webhooks
        .iter()
        .map(|name| serde_json::json!({"name": name, "clientConfig": {"caBundle": bundle}}))
        .collect();
    configs
        .patch(
            configuration,
            &PatchParams::default(),
            &Patch::Strategic(serde_json::json!({"webhooks": hooks})),
        )
        .await
        .expect("writing the expired caBundle");
}

/// kopf's self-signed certificate, expired (`tests/fixtures/ca_bundle/make.py`).
const EXPIRED_CA_BUNDLE: &[u8] = include_bytes!("../fixtures/ca_bundle/kopf-expired.pem");

#[tokio::test]
async fn an_expired_ca_bundle_of_kopf_s_webhook_is_an_error() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "webhook-cert").await;
    let configuration = format!("{}.webhooks.fixtures.kopf-audit.dev", ns.name);
    let _delete = DeleteWebhookConfiguration(configuration.clone());
    let _kopf = Fixture::start("webhooks", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let webhooks = wait_for(
        "kopf's ValidatingWebhookConfiguration",
        Duration::from_secs(90),
        || {
            let (configs, name) = (configs.clone(), configuration.clone());
            async move {
                let c = configs.get_opt(&name).await.ok()??;
                let names: Vec<String> = c.webhooks?.into_iter().map(|w| w.name).collect();
                (!names.is_empty()).then_some(names)
            }
        },
    )
    .await;

    // kopf patches the configuration again whenever its client config changes and
    // whenever its insights change (a CRD or namespace appears anywhere in the
    // cluster: kopf 1.45.2 `_core/engines/admission.py` `configuration_manager`), and
    // the other tests create CRDs. So the expired bundle is written again each time
    // kopf has written its own, until an audit reports it.
    let _auditor = Auditor::start(
        &support::kubeconfig_path(),
        &ns.name,
        &["--allow-cross-namespace"],
    );
    create_audit(&client, &ns.name, audit(&deployment, "10m"))
        .await
        .expect("creating the KopfAudit");
    let audits: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    let audit = wait_for(
        "runtime.webhook-certificate on the expired bundle",
        Duration::from_secs(180),
        || {
            let (configs, configuration, audits) =
                (configs.clone(), configuration.clone(), audits.clone());
            let webhooks = &webhooks;
            async move {
                keep_expired_bundle(&configs, &configuration, webhooks).await;
                let audit = audits.get("audit").await.ok()?;
                let expired = audit.status.as_ref().is_some_and(|s| {
                    s.findings.iter().any(|f| {
                        f.check.as_str() == "runtime.webhook-certificate"
                            && f.message.contains("expired at")
                    })
                });
                expired.then_some(audit)
            }
        },
    )
    .await;
    let status = audit.status.expect("status");
    let f = finding(&status, "runtime.webhook-certificate");
    assert_eq!(f.severity.as_str(), "error", "{f:#?}");
    for part in [
        configuration.as_str(),
        "expired at 2025-01-09T12:00:00Z",
        webhooks[0].as_str(),
    ] {
        assert!(f.message.contains(part), "{part}: {}", f.message);
    }
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.contains("kopf's self-signed shape")),
        "{f:#?}"
    );
}

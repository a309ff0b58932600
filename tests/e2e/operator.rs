//! The auditor against the real API server: KopfAudits on real kopf fixtures, the
//! schema refusing bad objects, transitions producing exactly one Event, steady state
//! writing nothing, and `kopf-audit check` agreeing with the status.

use crate::support::{self, Auditor, Fixture, TestNamespace, expectations, say, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopf_audit::api::{KopfAudit, KopfAuditStatus};
use kopf_audit::catalog::{REPORTING_CONTROLLER, Severity};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, CustomResourceExt, ResourceExt};
use std::collections::BTreeSet;
use std::time::Duration;

/// Installs (server-side apply) the KopfAudit CRD and waits until it is established.
pub async fn ensure_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "kopfaudits.kopfaudit.dev",
        &PatchParams::apply("kopf-audit-e2e").force(),
        &Patch::Apply(KopfAudit::crd()),
    )
    .await
    .expect("applying the KopfAudit CRD");
    wait_for(
        "the KopfAudit CRD to be established",
        Duration::from_secs(30),
        || {
            let crds = crds.clone();
            async move {
                let crd = crds.get("kopfaudits.kopfaudit.dev").await.ok()?;
                let established = crd
                    .status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                established.then_some(())
            }
        },
    )
    .await;
}

/// Creates a KopfAudit from JSON.
pub async fn create_audit(
    client: &Client,
    ns: &str,
    body: serde_json::Value,
) -> Result<KopfAudit, kube::Error> {
    let audit: KopfAudit = serde_json::from_value(body).expect("KopfAudit JSON");
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &audit)
        .await
}

/// A default KopfAudit of one Deployment.
pub fn audit_for(name: &str, deployment: &str, interval: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name},
        "spec": {"target": {"deployment": deployment}, "interval": interval}
    })
}

/// The usual set-up of a test of the auditor: the KopfAudit CRD, a namespace of the
/// test's own, a kopf fixture in it (optional), and the auditor watching the namespace
/// (as the admin). Built by steps, as the
/// tests differ only in these:
/// `Setup::new("cli").fixture("bad-resources").start().await`.
pub struct Setup {
    prefix: String,
    fixture: Option<String>,
    log_format: Option<String>,
    options: Vec<String>,
}

impl Setup {
    /// A namespace named after `prefix`, and nothing running in it yet.
    pub fn new(prefix: &str) -> Setup {
        Setup {
            prefix: prefix.to_string(),
            fixture: None,
            log_format: None,
            options: Vec::new(),
        }
    }

    /// Runs the kopf fixture `name` in the namespace before the auditor starts.
    pub fn fixture(mut self, name: &str) -> Setup {
        self.fixture = Some(name.to_string());
        self
    }

    /// The fixture's kopf `--log-format`.
    pub fn log_format(mut self, format: Option<&str>) -> Setup {
        self.log_format = format.map(str::to_string);
        self
    }

    /// More hack/fixture.py options for the fixture ([`Fixture::start_with`]).
    pub fn fixture_options(mut self, options: &[&str]) -> Setup {
        self.options = options.iter().map(|o| o.to_string()).collect();
        self
    }

    /// Does it all, in the order the tests did: CRD, namespace, fixture (and its
    /// Deployment's name), auditor.
    pub async fn start(self) -> Audited {
        let client = support::admin_client().await;
        ensure_crd(&client).await;
        let ns = TestNamespace::create(&client, &self.prefix).await;
        let options: Vec<&str> = self.options.iter().map(String::as_str).collect();
        let kopf = self.fixture.as_deref().map(|fixture| {
            Fixture::start_with(fixture, &ns.name, self.log_format.as_deref(), &options)
        });
        let deployment = if kopf.is_some() {
            fixture_deployment(&client, &ns.name).await.name_any()
        } else {
            String::new()
        };
        let auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
        Audited {
            auditor,
            kopf,
            deployment,
            client,
            ns,
        }
    }
}

/// What [`Setup::start`] set up. Its fields drop in the order the tests' locals did:
/// the auditor first, then the fixture, then the namespace.
pub struct Audited {
    /// The auditor, watching [`Audited::ns`].
    pub auditor: Auditor,
    /// The fixture, if one was asked for.
    pub kopf: Option<Fixture>,
    /// The fixture's Deployment (empty without a fixture).
    pub deployment: String,
    /// The admin client.
    pub client: Client,
    /// The test's namespace.
    pub ns: TestNamespace,
}

impl Audited {
    /// Creates the KopfAudit `body` in the namespace; panics if the API server refuses it.
    pub async fn create_audit(&self, body: serde_json::Value) -> KopfAudit {
        create_audit(&self.client, &self.ns.name, body)
            .await
            .expect("creating the KopfAudit")
    }

    /// Creates the default KopfAudit `name` of the fixture's Deployment, audited every
    /// `interval` ([`audit_for`]).
    pub async fn audit_fixture(&self, name: &str, interval: &str) -> KopfAudit {
        self.create_audit(audit_for(name, &self.deployment, interval))
            .await
    }

    /// Waits until the status of the KopfAudit `name` satisfies `ok`
    /// ([`wait_status`]).
    pub async fn wait_status(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        ok: impl Fn(&KopfAuditStatus) -> bool,
    ) -> KopfAudit {
        wait_status(&self.client, &self.ns.name, name, what, timeout, ok).await
    }
}

/// A condition's (status, reason).
pub fn condition<'a>(status: &'a KopfAuditStatus, type_: &str) -> Option<(&'a str, &'a str)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.as_str(), c.reason.as_str()))
}

/// Waits until the audit's status satisfies `ok`.
pub async fn wait_status(
    client: &Client,
    ns: &str,
    name: &str,
    what: &str,
    timeout: Duration,
    ok: impl Fn(&KopfAuditStatus) -> bool,
) -> KopfAudit {
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), ns);
    let ok = &ok;
    wait_for(what, timeout, || {
        let api = api.clone();
        async move {
            let audit = api.get(name).await.ok()?;
            let passes = audit.status.as_ref().is_some_and(ok);
            passes.then_some(audit)
        }
    })
    .await
}

/// The auditor's Events about one KopfAudit.
pub async fn audit_events(client: &Client, ns: &str, name: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some(REPORTING_CONTROLLER))
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("KopfAudit") && r.name.as_deref() == Some(name)
            })
        })
        .collect()
}

fn reasons(events: &[Event]) -> Vec<String> {
    events.iter().filter_map(|e| e.reason.clone()).collect()
}

/// The check IDs of the findings in a status.
pub fn found_checks(status: &KopfAuditStatus) -> BTreeSet<String> {
    status
        .findings
        .iter()
        .map(|f| f.check.as_str().to_string())
        .collect()
}

/// The Deployment a fixture created (each fixture has one).
pub async fn fixture_deployment(client: &Client, ns: &str) -> Deployment {
    let list = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("deployments");
    list.items
        .into_iter()
        .next()
        .expect("the fixture's Deployment")
}

/// Audits the fixture already running in `namespace`: starts an auditor and the
/// KopfAudit `audit` of the fixture's Deployment (every 30 s), and waits up to `timeout`
/// for a successful audit whose status `done` accepts. The auditor stops on return.
pub async fn audit_running_fixture(
    client: &Client,
    namespace: &str,
    what: &str,
    timeout: Duration,
    done: impl Fn(&KopfAuditStatus) -> bool,
) -> KopfAuditStatus {
    let deployment = fixture_deployment(client, namespace).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), namespace, &[]);
    create_audit(client, namespace, audit_for("audit", &deployment, "30s"))
        .await
        .expect("creating the KopfAudit");
    let audit = wait_status(client, namespace, "audit", what, timeout, |s| {
        condition(s, "Ready") == Some(("True", "AuditSucceeded")) && done(s)
    })
    .await;
    audit.status.expect("status")
}

/// Audits a fixture and checks the findings its expect.yaml declares for the areas
/// named by `prefixes` (e.g. `["workload."]`), with kopf's `--log-format` overridden
/// when `log_format` is given.
pub async fn audit_fixture(
    fixture: &str,
    prefixes: &[&str],
    log_format: Option<&str>,
) -> KopfAuditStatus {
    audit_fixture_with(fixture, prefixes, log_format, &[]).await
}

/// [`audit_fixture`] with more hack/fixture.py options (e.g. `--kopf-version 1.37.5`:
/// the same operator on another pinned kopf).
pub async fn audit_fixture_with(
    fixture: &str,
    prefixes: &[&str],
    log_format: Option<&str>,
    options: &[&str],
) -> KopfAuditStatus {
    let t = Setup::new(fixture)
        .fixture(fixture)
        .log_format(log_format)
        .fixture_options(options)
        .start()
        .await;
    t.audit_fixture("audit", "30s").await;
    let expect = expectations(fixture);
    let in_scope = |c: &String| prefixes.iter().any(|p| c.starts_with(p));
    let must: BTreeSet<String> = expect
        .must
        .iter()
        .filter(|c| in_scope(c))
        .cloned()
        .collect();
    let what = format!(
        "{fixture} ({}): findings {must:?}",
        log_format.unwrap_or("full")
    );
    let audit = t
        .wait_status("audit", &what, Duration::from_secs(180), |s| {
            condition(s, "Ready") == Some(("True", "AuditSucceeded"))
                && must.is_subset(&found_checks(s))
        })
        .await;
    let status = audit.status.expect("status");
    let found = found_checks(&status);
    for id in expect.must_not.iter().filter(|c| in_scope(c)) {
        assert!(
            !found.contains(id),
            "{fixture}: {id} must not be reported; findings: {:#?}",
            status.findings
        );
    }
    assert_eq!(status.targets.len(), 1);
    assert!(status.targets[0].kopf, "{fixture} runs kopf");
    say(format!("{fixture}: {found:?}"));
    status
}

/// The workload area of a fixture, and its condition.
async fn audit_fixture_workload(fixture: &str) {
    let status = audit_fixture(fixture, &["workload."], None).await;
    let must_any = expectations(fixture)
        .must
        .iter()
        .any(|c| c.starts_with("workload."));
    let expected = if must_any { "False" } else { "True" };
    assert_eq!(
        condition(&status, "WorkloadCompliant").map(|c| c.0),
        Some(expected),
        "{fixture}: {:#?}",
        status.conditions
    );
}

macro_rules! fixture_workload_test {
    ($($test:ident => $fixture:literal),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                audit_fixture_workload($fixture).await;
            }
        )*
    };
}

fixture_workload_test! {
    workload_findings_of_good => "good",
    workload_findings_of_bad_resources => "bad-resources",
    workload_findings_of_crashloop => "crashloop",
    workload_findings_of_silent_failures => "silent-failures",
    workload_findings_of_no_crd_list => "no-crd-list",
}

#[tokio::test]
async fn a_crash_at_import_quotes_python_s_traceback_from_the_previous_log() {
    // `kopf run` dies importing the operator's module: Python's traceback on stderr is
    // the whole log, no kopf line. The crash-loop finding quotes its exception.
    let fixture = "import-error";
    let t = Setup::new(fixture).fixture(fixture).start().await;
    t.audit_fixture("audit", "30s").await;
    let crash = |s: &KopfAuditStatus| {
        s.findings
            .iter()
            .find(|f| f.check.as_str() == "workload.crash-loop")
            .cloned()
    };
    let audit = t
        .wait_status(
            "audit",
            "workload.crash-loop quoting the ImportError",
            Duration::from_secs(180),
            |s| {
                crash(s).is_some_and(|f| {
                    f.evidence.as_deref().is_some_and(|e| {
                        e.contains(
                            "ImportError: cannot import name 'StatusDiffbaseStorage' from 'kopf'",
                        )
                    })
                })
            },
        )
        .await;
    let status = audit.status.expect("status");
    let f = crash(&status).expect("crash-loop");
    let evidence = f.evidence.unwrap_or_default();
    assert!(!evidence.contains("no error"), "{evidence}");
    let found = found_checks(&status);
    for id in expectations(fixture)
        .must_not
        .iter()
        .filter(|c| c.starts_with("workload."))
    {
        assert!(
            !found.contains(id),
            "{fixture}: {id}: {:#?}",
            status.findings
        );
    }
    say(format!("{fixture}: {evidence}"));
}

#[tokio::test]
async fn target_loss_and_return_are_one_event_each_and_steady_state_writes_nothing() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "lifecycle").await;
    let _kopf = Fixture::start("good", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await;
    let name = deployment.name_any();
    let auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit_for("lifecycle", &name, "30s"))
        .await
        .expect("create");

    wait_status(
        &client,
        &ns.name,
        "lifecycle",
        "WorkloadCompliant=True",
        Duration::from_secs(90),
        |s| condition(s, "WorkloadCompliant") == Some(("True", "NoFindings")),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let first = audit_events(&client, &ns.name, "lifecycle").await;
    assert_eq!(
        first.len(),
        1,
        "one Event for the first result: {:?}",
        reasons(&first)
    );

    say("deleting the target Deployment");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    deployments
        .delete(&name, &DeleteParams::foreground())
        .await
        .expect("delete");
    wait_status(
        &client,
        &ns.name,
        "lifecycle",
        "Stalled/TargetNotFound",
        Duration::from_secs(60),
        |s| condition(s, "Stalled") == Some(("True", "TargetNotFound")),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after_loss = audit_events(&client, &ns.name, "lifecycle").await;
    assert_eq!(
        after_loss.len(),
        2,
        "exactly one Event for the loss: {:?}",
        reasons(&after_loss)
    );
    assert!(reasons(&after_loss).contains(&"TargetMissing".to_string()));

    say("restoring the target Deployment");
    let mut restored = deployment.clone();
    restored.metadata = kube::api::ObjectMeta {
        name: deployment.metadata.name.clone(),
        namespace: deployment.metadata.namespace.clone(),
        labels: deployment.metadata.labels.clone(),
        annotations: deployment.metadata.annotations.clone(),
        ..Default::default()
    };
    restored.status = None;
    wait_for(
        "the old Deployment to be gone",
        Duration::from_secs(60),
        || {
            let deployments = deployments.clone();
            let name = name.clone();
            async move {
                deployments
                    .get_opt(&name)
                    .await
                    .ok()
                    .flatten()
                    .is_none()
                    .then_some(())
            }
        },
    )
    .await;
    deployments
        .create(&PostParams::default(), &restored)
        .await
        .expect("restore");
    wait_status(
        &client,
        &ns.name,
        "lifecycle",
        "audit running again",
        Duration::from_secs(60),
        |s| {
            condition(s, "Stalled") == Some(("False", "AuditSucceeded"))
                && condition(s, "WorkloadCompliant") == Some(("True", "NoFindings"))
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after_return = audit_events(&client, &ns.name, "lifecycle").await;
    assert_eq!(
        after_return.len(),
        3,
        "exactly one Event for the return: {:?}",
        reasons(&after_return)
    );

    let api: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    let before = api.get("lifecycle").await.expect("get").resource_version();
    say("watching three intervals (30s each) of steady state");
    tokio::time::sleep(Duration::from_secs(95)).await;
    let after = api.get("lifecycle").await.expect("get").resource_version();
    assert_eq!(before, after, "no status write in a steady state");
    let steady = audit_events(&client, &ns.name, "lifecycle").await;
    assert_eq!(
        steady.len(),
        3,
        "no Event in a steady state: {:?}",
        reasons(&steady)
    );
    let audits = auditor.logs().matches("audited").count();
    assert!(
        audits >= 3,
        "the auditor kept auditing during the steady state ({audits} audits logged)"
    );
}

#[tokio::test]
async fn invalid_kopfaudits_are_refused_by_the_api_server_with_the_schema_message() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "invalid").await;
    let cases = [
        (
            serde_json::json!({"target": {"deployment": "op"}, "interval": "10s"}),
            "interval must be at least 30s",
        ),
        (
            serde_json::json!({"target": {"deployment": "op", "selector": {"matchLabels": {"a": "b"}}}}),
            "set exactly one of target.deployment or target.selector",
        ),
        (
            serde_json::json!({"target": {}}),
            "set exactly one of target.deployment or target.selector",
        ),
        (
            serde_json::json!({"target": {"deployment": "op"}, "checks": {"disable": ["workload.nope"]}}),
            "Unsupported value",
        ),
        (
            serde_json::json!({"target": {"deployment": "op"}, "checks": {"severity": {"rbac.nope": "error"}}}),
            "checks.severity names an unknown check ID",
        ),
        (
            serde_json::json!({"target": {"deployment": "op"}, "thresholds": {"memoryLimit": "-1Mi"}}),
            "must be a positive quantity",
        ),
        (
            serde_json::json!({"target": {"deployment": "op"}, "thresholds": {"eventRepeats": 0}}),
            "greater than or equal to 2",
        ),
        (
            serde_json::json!({"target": {"deployment": "op"}, "interval": "5 minutes"}),
            "should match",
        ),
        // Names that would steer a request path: the name grammars refuse them.
        (
            serde_json::json!({"target": {"deployment": "op"}, "handledResources": [{"version": "v1/pods?", "plural": "x"}]}),
            "spec.handledResources[0].version in body should match",
        ),
        (
            serde_json::json!({"target": {"deployment": "op"}, "handledResources": [{"version": "v1", "plural": "pods/log"}]}),
            "spec.handledResources[0].plural in body should match",
        ),
        (
            serde_json::json!({"target": {"deployment": "op"}, "handledResources": [{"group": "a/../b", "version": "v1", "plural": "x"}]}),
            "spec.handledResources[0].group in body should match",
        ),
        (
            serde_json::json!({"target": {"deployment": "op?watch=1"}}),
            "spec.target.deployment in body should match",
        ),
        (
            serde_json::json!({"target": {"deployment": "op", "namespace": "a/b"}}),
            "spec.target.namespace in body should match",
        ),
        (
            serde_json::json!({"target": {"deployment": "op", "container": "Op Erator"}}),
            "spec.target.container in body should match",
        ),
        (
            serde_json::json!({"target": {"selector": {"matchLabels": {"app": "x,name!=y"}}}}),
            "spec.target.selector.matchLabels.app in body should match",
        ),
        (
            serde_json::json!({"target": {"selector": {"matchLabels": {"a b": "x"}}}}),
            "matchLabels keys must be label keys",
        ),
        (
            serde_json::json!({"target": {"selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a)"]}]}}}),
            "spec.target.selector.matchExpressions[0].values[0] in body should match",
        ),
        (
            serde_json::json!({"target": {"selector": {"matchExpressions": [{"key": "tier", "operator": "Near"}]}}}),
            "Unsupported value",
        ),
    ];
    for (i, (spec, message)) in cases.into_iter().enumerate() {
        let body = serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": format!("bad-{i}")}, "spec": spec
        });
        let resource = kube::core::ApiResource::erase::<KopfAudit>(&());
        let api: Api<kube::api::DynamicObject> =
            Api::namespaced_with(client.clone(), &ns.name, &resource);
        let object: kube::api::DynamicObject =
            serde_json::from_value(body.clone()).expect("object");
        let refused = api.create(&PostParams::default(), &object).await;
        match refused {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "case {i}: {status:?}");
                assert!(
                    status.message.contains(message),
                    "case {i}: expected {message:?} in {:?}",
                    status.message
                );
                say(format!("refused as expected: {}", status.message));
            }
            other => panic!(
                "case {i} ({spec_str}) was not refused: {other:?}",
                spec_str = body["spec"]
            ),
        }
    }
}

#[tokio::test]
async fn check_cli_prints_the_same_findings_as_the_status() {
    let t = Setup::new("cli").fixture("bad-resources").start().await;
    let (ns, deployment, auditor) = (&t.ns, t.deployment.clone(), &t.auditor);
    t.audit_fixture("cli", "30s").await;
    let audit = t
        .wait_status("cli", "the first audit", Duration::from_secs(90), |s| {
            condition(s, "Ready") == Some(("True", "AuditSucceeded"))
        })
        .await;
    assert!(audit.status.is_some(), "the first audit wrote a status");
    let series = format!(
        r#"kopf_audit_findings{{namespace="{}",name="cli",check="workload.standalone-replicas",severity="error"}} 1"#,
        ns.name
    );
    // An audit records its metrics once it has published everything (the status, then
    // the PolicyReport and the Events): a moment after the status shows.
    let mut metrics = auditor.http_get("/metrics");
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !metrics.contains(&series) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        metrics = auditor.http_get("/metrics");
    }
    assert!(
        metrics.contains(&series),
        "/metrics shows the findings: {metrics}"
    );
    assert!(
        metrics.contains("kopf_audit_api_requests_total"),
        "{metrics}"
    );
    // An audit needs only the target caches; readiness waits for the RBAC caches too.
    wait_for("/readyz ready", Duration::from_secs(60), || {
        let ready = auditor.http_get("/readyz").trim() == "ready";
        async move { ready.then_some(()) }
    })
    .await;
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .args([
            "check",
            "--namespace",
            &ns.name,
            "--audit",
            "cli",
            "--output",
            "json",
            "--fail-on",
            "error",
        ])
        .env("KUBECONFIG", support::kubeconfig_path())
        .output()
        .expect("running kopf-audit check");
    let printed: KopfAuditStatus = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "check printed no status JSON ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let strip = |s: &KopfAuditStatus| -> Vec<(String, String, String, String, Option<String>)> {
        s.findings
            .iter()
            .map(|f| {
                (
                    f.check.to_string(),
                    f.severity.to_string(),
                    f.target.clone(),
                    f.message.clone(),
                    f.evidence.clone(),
                )
            })
            .collect()
    };
    // kopf adds its finalizers to the fixture's objects a moment after the fixture is
    // ready, so the operator's first audit can predate them while `check`, run later,
    // sees them (persistence.orphaned-finalizers): the operator's next audit (interval
    // 30s) must then show what `check` printed.
    let agreed = t
        .wait_status(
            "cli",
            "the operator's status to hold the findings check printed",
            Duration::from_secs(75),
            |s| strip(s) == strip(&printed),
        )
        .await;
    assert_eq!(
        strip(&printed),
        strip(agreed.status.as_ref().expect("status")),
        "check and the operator agree"
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "bad-resources has errors, so --fail-on error exits 1"
    );
    let table = std::process::Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .args([
            "check",
            "--namespace",
            &ns.name,
            "--deployment",
            &deployment,
            "--fail-on",
            "never",
        ])
        .env("KUBECONFIG", support::kubeconfig_path())
        .output()
        .expect("running kopf-audit check");
    let text = String::from_utf8_lossy(&table.stdout);
    assert_eq!(table.status.code(), Some(0));
    assert!(text.contains("workload.standalone-replicas"), "{text}");
}

#[tokio::test]
async fn cross_namespace_targets_are_refused_and_exemptions_are_reported() {
    let t = Setup::new("tenancy").fixture("bad-resources").start().await;
    let (client, ns, deployment) = (t.client.clone(), &t.ns, t.deployment.clone());

    let mut elsewhere = audit_for("elsewhere", &deployment, "30s");
    elsewhere["spec"]["target"]["namespace"] = serde_json::json!("kube-system");
    create_audit(&client, &ns.name, elsewhere)
        .await
        .expect("create");
    let refused = t
        .wait_status(
            "elsewhere",
            "CrossNamespaceRefused",
            Duration::from_secs(60),
            |s| condition(s, "Stalled") == Some(("True", "CrossNamespaceRefused")),
        )
        .await;
    assert!(
        refused.status.expect("status").findings.is_empty(),
        "nothing of another namespace is read"
    );

    say("exempting workload.cpu-limit by annotation");
    let patch = serde_json::json!({"metadata": {"annotations": {
        "skip.kopfaudit.dev/workload.cpu-limit": "CPU limits are cluster policy here"
    }}});
    Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .patch(&deployment, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotate");
    create_audit(&client, &ns.name, audit_for("exempt", &deployment, "30s"))
        .await
        .expect("create");
    let audit = t
        .wait_status(
            "exempt",
            "the exemption reported",
            Duration::from_secs(60),
            |s| {
                s.skipped
                    .iter()
                    .any(|k| k.check.as_str() == "workload.cpu-limit" && k.honoured)
            },
        )
        .await;
    let status = audit.status.expect("status");
    assert!(
        !found_checks(&status).contains("workload.cpu-limit"),
        "{:#?}",
        status.findings
    );
    assert!(
        found_checks(&status).contains("workload.memory-limit"),
        "other checks still run"
    );
    let cpu_limit = status
        .skipped
        .iter()
        .find(|k| k.check.as_str() == "workload.cpu-limit")
        .expect("the exemption is listed");
    assert_eq!(cpu_limit.reason, "CPU limits are cluster policy here");
}

#[tokio::test]
async fn a_policy_report_mirrors_the_findings_when_its_crd_is_installed() {
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
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "policyreports.wgpolicyk8s.io",
        &PatchParams::apply("kopf-audit-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("PolicyReport CRD");
    let ns = TestNamespace::create(&client, "report").await;
    let _kopf = Fixture::start("bad-resources", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&client, &ns.name, audit_for("reported", &deployment, "30s"))
        .await
        .expect("create");
    let reports: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport"),
            "policyreports",
        ),
    );
    let report = wait_for("the PolicyReport", Duration::from_secs(90), || {
        let reports = reports.clone();
        async move { reports.get("kopf-audit-reported").await.ok() }
    })
    .await;
    let policies: Vec<String> = report.data["results"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x["policy"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        policies.contains(&"workload.standalone-replicas".to_string()),
        "{policies:?}"
    );
    assert!(
        report
            .metadata
            .owner_references
            .is_some_and(|o| o[0].kind == "KopfAudit")
    );
}

#[tokio::test]
async fn granting_a_missing_permission_re_audits_at_once() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "regrant").await;
    let _kopf = Fixture::start("no-events-create", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await;
    let account = deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into());
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    // A long interval: only the watch on RBAC objects can explain a quick re-audit.
    create_audit(
        &client,
        &ns.name,
        audit_for("regrant", &deployment.name_any(), "1h"),
    )
    .await
    .expect("create");
    wait_status(
        &client,
        &ns.name,
        "regrant",
        "rbac.events",
        Duration::from_secs(90),
        |s| found_checks(s).contains("rbac.events"),
    )
    .await;
    say("granting events create and patch");
    let manifest = format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"events","namespace":"{ns}"}},
            "rules":[{{"apiGroups":[""],"resources":["events"],"verbs":["create","patch"]}}]}}"#,
        ns = ns.name
    );
    let binding = format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{{"name":"events","namespace":"{ns}"}},
            "roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"events"}},
            "subjects":[{{"kind":"ServiceAccount","name":"{account}","namespace":"{ns}"}}]}}"#,
        ns = ns.name
    );
    for doc in [manifest, binding] {
        let (ok, _, err) = support::kubectl_run(&["apply", "-f", "-"], Some(&doc));
        assert!(ok, "kubectl apply: {err}");
    }
    // A complete audit no longer finds it at once; it stays, marked absent, for the
    // hold-down (at least 10 minutes by default) before it resolves.
    let audit = wait_status(
        &client,
        &ns.name,
        "regrant",
        "rbac.events no longer found, without waiting for the interval",
        Duration::from_secs(60),
        |s| {
            s.findings
                .iter()
                .any(|f| f.check.as_str() == "rbac.events" && f.absent_since.is_some())
        },
    )
    .await;
    let status = audit.status.expect("status");
    assert_eq!(
        condition(&status, "RBACCompliant").map(|c| c.0),
        Some("False"),
        "the area stays False during the hold-down"
    );
    let resolved = audit_events(&client, &ns.name, "regrant")
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FindingResolved"))
        .count();
    assert_eq!(resolved, 0, "nothing resolves before the hold-down");
}

#[tokio::test]
async fn the_well_behaved_operator_is_compliant_in_every_area() {
    let status = audit_fixture(
        "good",
        &["workload.", "rbac.", "events.", "persistence.", "runtime."],
        None,
    )
    .await;
    for condition_type in [
        "WorkloadCompliant",
        "RBACCompliant",
        "EventsCompliant",
        "PersistenceCompliant",
        "RuntimeHealthy",
        "Compliant",
    ] {
        assert_eq!(
            condition(&status, condition_type).map(|c| c.0),
            Some("True"),
            "{condition_type}: {:#?}",
            status.conditions
        );
    }
    // The one finding a well-behaved operator may carry: it finalizes objects in
    // its own namespace (info, "common and usually fine"), which is how the
    // fixture is deployed.
    let unexpected: Vec<_> = status
        .findings
        .iter()
        .filter(|f| {
            f.check.as_str() != "persistence.orphaned-finalizers" || f.severity != Severity::Info
        })
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");
}

//! Calm under faults, against the local cluster: an API-server pause, a revoked
//! permission, a flapping operator and a crash-looping one. Alerting is built on the
//! auditor's Events and conditions, so a fault must not fabricate transitions.
//!
//! A separate test binary from `tests/e2e`: pausing the API server would fail the
//! end-to-end tests running beside it; these four tolerate it by design and run
//! together. They FAIL with the reason when no cluster is running.

#[path = "../e2e/support.rs"]
mod support;

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopf_audit::api::{KopfAudit, KopfAuditStatus};
use kopf_audit::catalog::REPORTING_CONTROLLER;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, CustomResourceExt, ResourceExt};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::{Auditor, Fixture, TestNamespace, say, wait_for};

async fn ensure_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "kopfaudits.kopfaudit.dev",
        &PatchParams::apply("kopf-audit-e2e").force(),
        &Patch::Apply(KopfAudit::crd()),
    )
    .await
    .expect("applying the KopfAudit CRD");
    wait_for("the KopfAudit CRD", Duration::from_secs(30), || {
        let crds = crds.clone();
        async move {
            let crd = crds.get("kopfaudits.kopfaudit.dev").await.ok()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        }
    })
    .await;
}

async fn first_deployment(client: &Client, ns: &str) -> String {
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("deployments")
        .items
        .first()
        .expect("the fixture's Deployment")
        .name_any()
}

async fn create_audit(client: &Client, ns: &str, name: &str, spec: serde_json::Value) {
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("KopfAudit");
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &audit)
        .await
        .unwrap_or_else(|e| panic!("creating KopfAudit {ns}/{name}: {e}"));
}

fn condition<'a>(status: &'a KopfAuditStatus, type_: &str) -> Option<(&'a str, &'a str)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.as_str(), c.reason.as_str()))
}

async fn status_of(client: &Client, ns: &str, name: &str) -> Option<KopfAuditStatus> {
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .ok()?
        .status
}

/// The auditor's Events in a namespace, by reason, regarding one KopfAudit (all: `None`).
async fn event_reasons(client: &Client, ns: &str, audit: Option<&str>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let list = Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("events");
    for e in list.items {
        let ours = e.reporting_controller.as_deref() == Some(REPORTING_CONTROLLER);
        let about = e
            .regarding
            .as_ref()
            .and_then(|r| r.name.as_deref())
            .is_some_and(|n| audit.is_none_or(|a| a == n));
        if ours && about {
            *out.entry(e.reason.unwrap_or_default()).or_default() += 1;
        }
    }
    out
}

/// The FindingRaised and FindingResolved Events of one KopfAudit, by the check they name.
async fn finding_events(client: &Client, ns: &str, audit: &str) -> Vec<(String, String)> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some(REPORTING_CONTROLLER))
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(audit))
        .filter_map(|e| {
            let reason = e.reason.clone()?;
            let check = e.note.as_deref()?.split_whitespace().next()?.to_string();
            reason.starts_with("Finding").then_some((reason, check))
        })
        .collect()
}

fn finding_count(reasons: &BTreeMap<String, usize>) -> usize {
    reasons.get("FindingRaised").copied().unwrap_or(0)
        + reasons.get("FindingResolved").copied().unwrap_or(0)
}

/// The kube-apiserver's pid, from kwokctl's work dir.
fn apiserver_pid() -> String {
    let path = support::workdir().join("kwok/clusters/kopf-audit/pids/kube-apiserver.pid");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .trim()
        .to_string()
}

fn signal(pid: &str, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

/// Resumes the API server when dropped, so a failing test never leaves it paused.
struct Paused(String);

impl Drop for Paused {
    fn drop(&mut self) {
        signal(&self.0, "-CONT");
    }
}

#[tokio::test]
async fn a_paused_api_server_fabricates_no_transition() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "pause").await;
    let _fixtures: Vec<Fixture> = ["good", "bad-resources", "silent-failures"]
        .iter()
        .map(|f| Fixture::start(f, &ns.name, None))
        .collect();
    let deployments =
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .expect("deployments")
            .items;
    let names: Vec<String> = deployments.iter().map(|d| d.name_any()).collect();
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    for name in &names {
        create_audit(
            &client,
            &ns.name,
            name,
            serde_json::json!({"target": {"deployment": name}, "interval": "30s"}),
        )
        .await;
    }
    for name in &names {
        wait_for(&format!("{name}: Ready"), Duration::from_secs(180), || {
            let client = client.clone();
            let (ns, name) = (ns.name.clone(), name.clone());
            async move {
                let s = status_of(&client, &ns, &name).await?;
                (condition(&s, "Ready") == Some(("True", "AuditSucceeded"))).then_some(())
            }
        })
        .await;
    }
    say("two intervals of steady state before the pause");
    tokio::time::sleep(Duration::from_secs(70)).await;
    let before = event_reasons(&client, &ns.name, None).await;

    say("SIGSTOP the kube-apiserver for 40 s");
    let pid = apiserver_pid();
    signal(&pid, "-STOP");
    let paused = Paused(pid);
    tokio::time::sleep(Duration::from_secs(40)).await;
    drop(paused);
    say("SIGCONT: every audit current again within two intervals");
    let resumed = Instant::now();
    for name in &names {
        wait_for(
            &format!("{name}: Ready and current"),
            Duration::from_secs(90),
            || {
                let client = client.clone();
                let (ns, name) = (ns.name.clone(), name.clone());
                async move {
                    let s = status_of(&client, &ns, &name).await?;
                    let current = s
                        .conditions
                        .iter()
                        .all(|c| c.observed_generation == s.observed_generation);
                    (condition(&s, "Ready") == Some(("True", "AuditSucceeded")) && current)
                        .then_some(())
                }
            },
        )
        .await;
    }
    // One more interval after the last audit came back, for late Events.
    tokio::time::sleep(Duration::from_secs(35)).await;
    say(format!(
        "all current {}s after the resume",
        resumed.elapsed().as_secs()
    ));
    let after = event_reasons(&client, &ns.name, None).await;
    assert_eq!(
        finding_count(&after),
        finding_count(&before),
        "FindingRaised/FindingResolved caused by the pause: before {before:?}, after {after:?}"
    );
    for headline in [
        "AuditPassed",
        "NonCompliant",
        "ComplianceUnknown",
        "AuditStalled",
        "TargetMissing",
    ] {
        assert_eq!(
            after.get(headline),
            before.get(headline),
            "a headline Event caused by the pause: before {before:?}, after {after:?}"
        );
    }
}

/// A ClusterRole and binding like the chart's, for the auditor's ServiceAccount: the
/// rules `kopf-audit run` needs, pods/log included.
async fn auditor_rbac(client: &Client, ns: &str) -> (String, Vec<PolicyRule>) {
    let rules: Vec<PolicyRule> = serde_json::from_value(serde_json::json!([
        {"apiGroups": ["kopfaudit.dev"], "resources": ["kopfaudits"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["kopfaudit.dev"], "resources": ["kopfaudits/status"], "verbs": ["patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "create", "patch"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "clusterroles", "rolebindings", "clusterrolebindings"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get"]},
        {"apiGroups": ["good.fixtures.kopf-audit.dev"], "resources": ["widgets"], "verbs": ["get", "list"]}
    ]))
    .expect("rules");
    let name = format!("kopf-audit-{ns}");
    let role: ClusterRole = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": rules
    }))
    .expect("role");
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "kopf-audit", "namespace": ns}]
    }))
    .expect("binding");
    let pp = PatchParams::apply("kopf-audit-e2e").force();
    Api::<ClusterRole>::all(client.clone())
        .patch(&name, &pp, &Patch::Apply(&role))
        .await
        .expect("auditor ClusterRole");
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(&name, &pp, &Patch::Apply(&binding))
        .await
        .expect("auditor ClusterRoleBinding");
    (name, rules)
}

async fn set_rules(client: &Client, name: &str, rules: &[PolicyRule]) {
    let patch = serde_json::json!({"rules": rules});
    Api::<ClusterRole>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("updating the auditor's ClusterRole");
}

#[tokio::test]
async fn a_revoked_and_restored_permission_emits_no_finding_event() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "revoke").await;
    let _kopf = Fixture::start("bad-resources", &ns.name, None);
    let sa: k8s_openapi::api::core::v1::ServiceAccount = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kopf-audit", "namespace": ns.name}
    }))
    .expect("sa");
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &sa)
        .await
        .expect("auditor ServiceAccount");
    let (role, rules) = auditor_rbac(&client, &ns.name).await;
    let kubeconfig = support::token_kubeconfig(&client, &ns.name, "kopf-audit").await;
    let _auditor = Auditor::start(&kubeconfig, &ns.name, &[]);
    let deployment = first_deployment(&client, &ns.name).await;
    create_audit(
        &client,
        &ns.name,
        "revoke",
        serde_json::json!({"target": {"deployment": deployment}, "interval": "30s"}),
    )
    .await;
    let wait_area = |want: (&'static str, &'static str)| {
        let client = client.clone();
        let ns = ns.name.clone();
        async move {
            wait_for(
                &format!("RuntimeHealthy={want:?}"),
                Duration::from_secs(150),
                || {
                    let (client, ns) = (client.clone(), ns.clone());
                    async move {
                        let s = status_of(&client, &ns, "revoke").await?;
                        (condition(&s, "RuntimeHealthy") == Some(want)).then_some(s)
                    }
                },
            )
            .await
        }
    };
    let audited = wait_area(("True", "NoFindings")).await;
    tokio::time::sleep(Duration::from_secs(35)).await;
    let before = event_reasons(&client, &ns.name, Some("revoke")).await;

    say("revoking pods/log");
    let without: Vec<PolicyRule> = rules
        .iter()
        .filter(|r| !r.resources.iter().flatten().any(|x| x == "pods/log"))
        .cloned()
        .collect();
    set_rules(&client, &role, &without).await;
    let blind = wait_area(("Unknown", "Forbidden")).await;
    assert_eq!(
        blind.findings.len(),
        audited.findings.len(),
        "the findings are kept: {:#?}",
        blind.findings
    );
    say("restoring pods/log");
    set_rules(&client, &role, &rules).await;
    wait_area(("True", "NoFindings")).await;
    tokio::time::sleep(Duration::from_secs(35)).await;
    let after = event_reasons(&client, &ns.name, Some("revoke")).await;
    assert_eq!(
        finding_count(&after),
        finding_count(&before),
        "finding Events caused by the revocation: before {before:?}, after {after:?}"
    );
    let _ = Api::<ClusterRole>::all(client.clone())
        .delete(&role, &Default::default())
        .await;
    let _ = Api::<ClusterRoleBinding>::all(client.clone())
        .delete(&role, &Default::default())
        .await;
}

fn flapping_widgets() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flapping.fixtures.kopf-audit.dev", "v1", "Widget"),
        "widgets",
    )
}

#[tokio::test]
async fn a_flapping_operator_is_raised_once_and_resolved_once() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "flapping").await;
    let _kopf = Fixture::start("flapping", &ns.name, None);
    let deployment = first_deployment(&client, &ns.name).await;
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    // A 1-minute window: each 30 s burst stays in the window about 90 s of every 150 s,
    // so a finding that resolved at once would flip twice per burst.
    create_audit(
        &client,
        &ns.name,
        "flapping",
        serde_json::json!({
            "target": {"deployment": deployment}, "interval": "30s",
            "logs": {"window": "1m"},
            "thresholds": {"resolveAfter": "3m"}
        }),
    )
    .await;
    say("the operator flaps for 10 minutes");
    tokio::time::sleep(Duration::from_secs(600)).await;
    let flapped = finding_events(&client, &ns.name, "flapping").await;
    say(format!("while flapping: {flapped:?}"));
    let raised = |events: &[(String, String)], check: &str| {
        events
            .iter()
            .filter(|(r, c)| r == "FindingRaised" && c == check)
            .count()
    };
    let resolved = |events: &[(String, String)], check: &str| {
        events
            .iter()
            .filter(|(r, c)| r == "FindingResolved" && c == check)
            .count()
    };
    for check in ["runtime.handler-failures", "events.silent-failures"] {
        assert!(raised(&flapped, check) <= 1, "{check}: {flapped:?}");
        assert_eq!(resolved(&flapped, check), 0, "{check}: {flapped:?}");
    }
    let status = status_of(&client, &ns.name, "flapping")
        .await
        .expect("status");
    assert!(
        status
            .findings
            .iter()
            .any(|f| f.check.as_str() == "runtime.handler-failures"),
        "the flapping failure is a finding: {:#?}",
        status.findings
    );

    say("the operator stops flapping");
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &ns.name, &flapping_widgets());
    widgets
        .patch(
            "flappy",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"flap": false}})),
        )
        .await
        .expect("stopping the flap");
    // Out of the window (1 min after the last burst, up to 150 s away), then the
    // hold-down (3 min), then an interval.
    let quiet = wait_for(
        "runtime.handler-failures resolved once, after the hold-down",
        Duration::from_secs(480),
        || {
            let client = client.clone();
            let ns = ns.name.clone();
            async move {
                let events = finding_events(&client, &ns, "flapping").await;
                (resolved(&events, "runtime.handler-failures") >= 1).then_some(events)
            }
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(35)).await;
    let end = finding_events(&client, &ns.name, "flapping").await;
    assert_eq!(resolved(&end, "runtime.handler-failures"), 1, "{quiet:?}");
    assert!(raised(&end, "runtime.handler-failures") <= 1, "{end:?}");
}

#[tokio::test]
async fn a_crash_looping_operator_flips_no_finding_more_than_once() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "crashing").await;
    let _kopf = Fixture::start("crashloop", &ns.name, None);
    let deployment = first_deployment(&client, &ns.name).await;
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(
        &client,
        &ns.name,
        "crashing",
        serde_json::json!({"target": {"deployment": deployment}, "interval": "30s"}),
    )
    .await;
    say("the operator crash-loops for 10 minutes");
    let mut presence: BTreeMap<String, (bool, usize)> = BTreeMap::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(600) {
        if let Some(status) = status_of(&client, &ns.name, "crashing").await {
            let now: Vec<String> = status
                .findings
                .iter()
                .filter(|f| f.absent_since.is_none())
                .map(|f| f.check.as_str().to_string())
                .collect();
            for check in now
                .iter()
                .chain(presence.keys().cloned().collect::<Vec<_>>().iter())
            {
                let here = now.contains(check);
                let entry = presence.entry(check.clone()).or_insert((here, 0));
                if entry.0 != here {
                    *entry = (here, entry.1 + 1);
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    say(format!("findings and their flips: {presence:?}"));
    for (check, (_, flips)) in &presence {
        assert!(*flips <= 1, "{check} flipped {flips} times");
    }
    let events = finding_events(&client, &ns.name, "crashing").await;
    let mut per_check: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in &events {
        *per_check.entry(e.clone()).or_default() += 1;
    }
    assert!(
        per_check.values().all(|n| *n <= 1),
        "an Event repeated for one check: {per_check:?}"
    );
}

//! The RBAC area against the real API server and real kopf fixtures: each missing
//! permission yields exactly its finding with the rule to paste; the well-behaved
//! fixture, aggregated ClusterRoles and group bindings yield none; cluster-admin is
//! over-privileged; the failures kopf logs are correlated live; the SubjectAccessReviews
//! per audit are bounded by the distinct permissions needed.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use kopf_audit::api::{Finding, KopfAudit, KopfAuditStatus};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use std::collections::BTreeSet;
use std::time::Duration;

fn condition<'a>(status: &'a KopfAuditStatus, type_: &str) -> Option<(&'a str, &'a str)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.as_str(), c.reason.as_str()))
}

fn rbac_checks(status: &KopfAuditStatus) -> BTreeSet<String> {
    rbac_findings(status)
        .iter()
        .map(|f| f.check.as_str().to_string())
        .collect()
}

fn rbac_findings(status: &KopfAuditStatus) -> Vec<&Finding> {
    status
        .findings
        .iter()
        .filter(|f| f.check.as_str().starts_with("rbac."))
        .collect()
}

/// A running fixture, the auditor watching its namespace and a KopfAudit on it.
struct Audited {
    client: Client,
    ns: TestNamespace,
    kopf: Fixture,
    auditor: Auditor,
}

impl Audited {
    async fn start(fixture: &str, handled: Option<serde_json::Value>) -> Audited {
        let client = support::admin_client().await;
        ensure_crd(&client).await;
        let ns = TestNamespace::create(&client, fixture).await;
        let kopf = Fixture::start(fixture, &ns.name, None);
        let deployment = Api::<Deployment>::namespaced(client.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .expect("deployments")
            .items
            .into_iter()
            .next()
            .expect("the fixture's Deployment")
            .name_any();
        let auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
        let mut spec = serde_json::json!({"target": {"deployment": deployment}, "interval": "30s"});
        if let Some(h) = handled {
            spec["handledResources"] = h;
        }
        let audit: KopfAudit = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": "audit"}, "spec": spec
        }))
        .expect("KopfAudit JSON");
        Api::<KopfAudit>::namespaced(client.clone(), &ns.name)
            .create(&PostParams::default(), &audit)
            .await
            .expect("creating the KopfAudit");
        Audited {
            client,
            ns,
            kopf,
            auditor,
        }
    }

    /// Waits until the RBAC area is decided and `ok` holds.
    async fn wait(&self, what: &str, ok: impl Fn(&KopfAuditStatus) -> bool) -> KopfAuditStatus {
        let api: Api<KopfAudit> = Api::namespaced(self.client.clone(), &self.ns.name);
        let ok = &ok;
        wait_for(what, Duration::from_secs(240), || {
            let api = api.clone();
            async move {
                let status = api.get("audit").await.ok()?.status?;
                let decided = matches!(
                    condition(&status, "RBACCompliant"),
                    Some(("True", _)) | Some(("False", _))
                ) || rbac_checks(&status).contains("rbac.events-patch");
                (condition(&status, "Ready") == Some(("True", "AuditSucceeded"))
                    && decided
                    && ok(&status))
                .then_some(status)
            }
        })
        .await
    }

    /// The `needed`/`asked` figures of the auditor's SubjectAccessReview debug lines.
    fn review_counts(&self) -> Vec<(usize, usize)> {
        let field = |line: &str, key: &str| -> Option<usize> {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .and_then(|v| v.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        };
        let logs = kopf_log::strip_ansi(&self.auditor.logs());
        logs.lines()
            .filter(|l| l.contains("subject access reviews"))
            .filter_map(|l| Some((field(l, "needed=")?, field(l, "asked=")?)))
            .collect()
    }
}

/// Asserts that the fixture yields exactly `want` among the rbac checks, each missing
/// permission with a rule to paste, and returns the status.
async fn expect_exactly(fixture: &str, want: &[&str]) -> (Audited, KopfAuditStatus) {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    let declared = support::expectations(fixture);
    let must: BTreeSet<String> = declared
        .must
        .iter()
        .filter(|c| c.starts_with("rbac."))
        .cloned()
        .collect();
    assert_eq!(
        must, want,
        "{fixture}: expect.yaml declares these rbac checks"
    );
    for id in &want {
        assert!(
            !declared.must_not.contains(id),
            "{fixture}: {id} in both lists"
        );
    }
    let audited = Audited::start(fixture, None).await;
    let status = audited
        .wait(&format!("{fixture}: rbac findings {want:?}"), |s| {
            rbac_checks(s) == want
        })
        .await;
    for f in rbac_findings(&status) {
        say(format!(
            "{fixture}: {} {}: {}\n  evidence: {}",
            f.check.as_str(),
            f.severity,
            f.message,
            f.evidence.as_deref().unwrap_or("")
        ));
        if f.check.as_str() != "rbac.over-privileged" {
            assert!(
                f.message.contains("\n- apiGroups: [") && f.message.contains("\n  verbs: ["),
                "{fixture}: {} has no rule to paste: {}",
                f.check.as_str(),
                f.message
            );
        }
    }
    (audited, status)
}

#[tokio::test]
async fn rbac_good_fixture_has_no_rbac_finding_and_reviews_are_bounded() {
    let (audited, status) = expect_exactly("good", &[]).await;
    assert_eq!(
        condition(&status, "RBACCompliant"),
        Some(("True", "NoFindings")),
        "{:#?}",
        status.conditions
    );
    let counts = audited.review_counts();
    say(format!(
        "good: SubjectAccessReviews (needed, asked) per audit: {counts:?}"
    ));
    assert!(!counts.is_empty(), "the auditor logs its review counts");
    for (needed, asked) in &counts {
        // CRDs list/watch (kopf never gets one), namespaces list/watch, events
        // create/patch, widgets get/list/watch/patch, widgets/status patch.
        assert_eq!(*needed, 11, "distinct permissions of the good fixture");
        assert!(asked <= needed, "asked {asked} of {needed}");
    }
}

#[tokio::test]
async fn rbac_missing_crd_list_is_correlated_with_the_live_log() {
    let (audited, _) = expect_exactly("no-crd-list", &["rbac.crd-scan"]).await;
    let status = audited
        .wait(
            "no-crd-list: the crd-scan finding quotes the live log",
            |s| {
                rbac_findings(s)
                    .iter()
                    .any(|f| f.message.contains("failing now"))
            },
        )
        .await;
    let f = rbac_findings(&status)[0];
    assert_eq!(f.severity.as_str(), "error");
    assert!(
        f.message.contains(
            "may not list, watch customresourcedefinitions.apiextensions.k8s.io at cluster scope"
        ),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("customresourcedefinitions.apiextensions.k8s.io is forbidden"),
        "quotes kopf's retry line: {}",
        f.message
    );
    assert!(
        f.message.ends_with("- apiGroups: [apiextensions.k8s.io]\n  resources: [customresourcedefinitions]\n  verbs: [list, watch]"),
        "{}",
        f.message
    );
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.contains("grants only [get]")),
        "{:?}",
        f.evidence
    );
}

#[tokio::test]
async fn rbac_a_refused_crd_watch_is_one_finding_not_a_runtime_one_too() {
    // kopf 1.45 logs `Not enough permissions to watch for resources` once its CRD
    // watch is refused (after ~54 s of retries): the same cause as rbac.crd-scan, which
    // names the rule to add, so runtime.permission-degraded must not repeat it.
    let (audited, _) = expect_exactly("no-crd-list", &["rbac.crd-scan"]).await;
    let log = audited.kopf.log.clone();
    wait_for(
        "kopf to log that it may not watch CRDs",
        Duration::from_secs(240),
        || {
            let log = log.clone();
            async move {
                std::fs::read_to_string(&log)
                    .ok()
                    .filter(|l| l.contains("Not enough permissions to watch for resources"))
                    .map(|_| ())
            }
        },
    )
    .await;
    // Over two audit intervals (30 s) after the line: a repeat would be raised by then.
    let api: Api<KopfAudit> = Api::namespaced(audited.client.clone(), &audited.ns.name);
    let until = std::time::Instant::now() + Duration::from_secs(75);
    while std::time::Instant::now() < until {
        if let Some(status) = api.get("audit").await.ok().and_then(|a| a.status) {
            let checks: BTreeSet<&str> = status.findings.iter().map(|f| f.check.as_str()).collect();
            assert!(
                !checks.contains("runtime.permission-degraded"),
                "one cause, one finding: {:#?}",
                status.findings
            );
            assert!(checks.contains("rbac.crd-scan"), "{checks:?}");
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

#[tokio::test]
async fn rbac_missing_events_create_is_correlated_with_the_live_log() {
    let (audited, _) = expect_exactly("no-events-create", &["rbac.events"]).await;
    let status = audited
        .wait(
            "no-events-create: the events finding quotes kopf's outcome line once it is logged",
            |s| {
                rbac_findings(s).iter().any(|f| {
                    f.message.contains("failing now")
                        && f.message.contains("Failed to post an event")
                })
            },
        )
        .await;
    let f = rbac_findings(&status)[0];
    assert!(
        f.message.contains("Failed to post an event"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("resources: [events]\n  verbs: [create, patch]"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn rbac_missing_events_patch_is_advice_only() {
    let (_a, status) = expect_exactly("rbac-no-events-patch", &["rbac.events-patch"]).await;
    assert_eq!(rbac_findings(&status)[0].severity.as_str(), "info");
    assert_eq!(
        condition(&status, "RBACCompliant").map(|c| c.0),
        Some("True"),
        "info only"
    );
}

#[tokio::test]
async fn rbac_missing_namespaces_with_a_pattern_is_an_error() {
    let (_a, status) = expect_exactly("rbac-no-namespaces", &["rbac.namespaces"]).await;
    let f = rbac_findings(&status)[0];
    assert_eq!(f.severity.as_str(), "error");
    assert!(
        f.message.contains("never lists namespaces"),
        "{}",
        f.message
    );
    assert_eq!(
        condition(&status, "RBACCompliant").map(|c| c.0),
        Some("False")
    );
}

#[tokio::test]
async fn rbac_missing_peering_permissions() {
    let (_a, status) = expect_exactly("rbac-no-peering", &["rbac.peering"]).await;
    let f = rbac_findings(&status)[0];
    assert!(
        f.message.contains("kopfpeerings.kopf.dev in namespace")
            && f.message.contains("--peering rbac-no-peering"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn rbac_missing_status_patch_on_a_handled_resource() {
    let (_a, status) = expect_exactly("rbac-no-status-patch", &["rbac.handled-resources"]).await;
    let f = rbac_findings(&status)[0];
    assert!(
        f.message
            .contains("widgets.rbac-no-status-patch.fixtures.kopf-audit.dev/status")
            && f.message.contains("inferred as handled"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn rbac_a_crash_looping_operator_without_list_gets_the_rule_to_add() {
    // Its Role grants get and patch on beacons, not list and watch: kopf crash-loops on
    // the refused list. The resource is inferred from the rule (and the log), and the
    // denial is one finding, with the rule to add.
    let (_a, status) = expect_exactly("crashloop", &["rbac.handled-resources"]).await;
    let f = rbac_findings(&status)[0];
    assert!(
        f.message
            .contains("may not list, watch beacons.crashloop.fixtures.kopf-audit.dev"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("resources: [beacons]\n  verbs: [get, list, watch, patch]"),
        "{}",
        f.message
    );
    assert!(
        !status
            .findings
            .iter()
            .any(|f| f.check.as_str() == "runtime.startup-forbidden"),
        "the refused list is the RBAC finding's cause, not a second finding: {:#?}",
        status.findings
    );
}

#[tokio::test]
async fn rbac_handled_resources_from_the_spec_are_checked_too() {
    // The good fixture's RBAC, but the spec names a resource it may not touch.
    let audited = Audited::start(
        "good",
        Some(serde_json::json!([
            {"group": "good.fixtures.kopf-audit.dev", "version": "v1", "plural": "widgets"},
            {"group": "", "version": "v1", "plural": "configmaps"}
        ])),
    )
    .await;
    let status = audited
        .wait("good + configmaps in spec: rbac.handled-resources", |s| {
            rbac_checks(s) == BTreeSet::from(["rbac.handled-resources".to_string()])
        })
        .await;
    let f = rbac_findings(&status)[0];
    assert!(
        f.message
            .contains("may not get, list, watch, patch configmaps in namespace")
            && f.message.contains("spec.handledResources"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn rbac_cluster_admin_is_over_privileged() {
    let (_a, status) = expect_exactly("rbac-cluster-admin", &["rbac.over-privileged"]).await;
    let f = rbac_findings(&status)[0];
    assert!(f.message.contains("cluster-admin"), "{}", f.message);
    assert_eq!(f.severity.as_str(), "warning");
}

#[tokio::test]
async fn rbac_aggregated_cluster_roles_are_recognised_as_granted() {
    let (_a, status) = expect_exactly("rbac-aggregated", &[]).await;
    assert_eq!(
        condition(&status, "RBACCompliant"),
        Some(("True", "NoFindings"))
    );
}

#[tokio::test]
async fn rbac_group_bindings_are_recognised_as_granted() {
    let (_a, status) = expect_exactly("rbac-group-binding", &[]).await;
    assert_eq!(
        condition(&status, "RBACCompliant"),
        Some(("True", "NoFindings"))
    );
}

#[tokio::test]
async fn rbac_area_is_unknown_forbidden_when_the_auditor_may_not_ask() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "rbac-auditor").await;
    let _kopf = Fixture::start("good", &ns.name, None);
    // The auditor may read everything and write its status and Events, but may not create
    // SubjectAccessReviews.
    let name = format!("kopf-audit-no-sar-{}", ns.name);
    let manifests = format!(
        r#"
apiVersion: v1
kind: ServiceAccount
metadata: {{name: kopf-audit, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}}}
rules:
- {{apiGroups: ["*"], resources: ["*"], verbs: [get, list, watch]}}
- {{apiGroups: [kopfaudit.dev], resources: [kopfaudits, kopfaudits/status], verbs: [patch, update]}}
- {{apiGroups: ["", events.k8s.io], resources: [events], verbs: [create, patch]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}}}
subjects: [{{kind: ServiceAccount, name: kopf-audit, namespace: {ns}}}]
"#,
        ns = ns.name
    );
    let (ok, _, err) = support::kubectl_run(&["apply", "-f", "-"], Some(&manifests));
    assert!(ok, "applying the auditor's RBAC: {err}");
    let kubeconfig = support::token_kubeconfig(&client, &ns.name, "kopf-audit").await;
    let deployment = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .expect("deployments")
        .items
        .into_iter()
        .next()
        .expect("the fixture's Deployment")
        .name_any();
    let _auditor = Auditor::start(&kubeconfig, &ns.name, &[]);
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "audit"},
        "spec": {"target": {"deployment": deployment}, "interval": "30s"}
    }))
    .expect("KopfAudit JSON");
    Api::<KopfAudit>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &audit)
        .await
        .expect("creating the KopfAudit");
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    let status = wait_for(
        "RBACCompliant Unknown/Forbidden naming subjectaccessreviews",
        Duration::from_secs(120),
        || {
            let api = api.clone();
            async move {
                let status = api.get("audit").await.ok()?.status?;
                let rbac = status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == "RBACCompliant")?;
                (rbac.status == "Unknown"
                    && rbac.reason == "Forbidden"
                    && rbac.message.contains("subjectaccessreviews"))
                .then_some(status)
            }
        },
    )
    .await;
    say(format!(
        "auditor without SubjectAccessReview create: {:?}",
        status
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
            .collect::<Vec<_>>()
    ));
    assert_eq!(
        condition(&status, "WorkloadCompliant"),
        Some(("True", "NoFindings")),
        "the other areas still work"
    );
    assert!(rbac_checks(&status).is_empty());
    let _ = support::kubectl_run(
        &[
            "delete",
            "clusterrole,clusterrolebinding",
            &name,
            "--ignore-not-found",
        ],
        None,
    );
}

/// A kopf Deployment of no pods whose kopf runs with `args`, and a KopfAudit of it that
/// runs again only every 10 minutes (so that any re-run in a test is a triggered one).
async fn quiet_operator(client: &Client, ns: &str, name: &str, args: &[&str]) {
    support::idle_kopf_deployment(client, ns, name, args, serde_json::json!({})).await;
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name},
        "spec": {"target": {"deployment": name}, "interval": "10m"}
    }))
    .expect("KopfAudit JSON");
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &audit)
        .await
        .expect("creating the KopfAudit");
}

/// How often each audit ran, from the auditor's /metrics.
fn runs(auditor: &Auditor, audits: &[(String, String)]) -> Vec<f64> {
    // Nothing answers until the auditor listens: count no runs yet.
    let metrics = support::http_get(&auditor.http, "/metrics")
        .map(|(_, body)| body)
        .unwrap_or_default();
    audits
        .iter()
        .map(|(ns, name)| support::audits_total(&metrics, ns, name))
        .collect()
}

/// Applies the tenant's RoleBinding granting `view` to every authenticated user (and,
/// when `extra_user`, to one more subject), labelled `round`.
fn apply_view_for_everyone(ns: &str, round: usize, extra_user: bool) {
    let extra = if extra_user {
        ", {kind: User, apiGroup: rbac.authorization.k8s.io, name: e2e-someone}"
    } else {
        ""
    };
    let manifest = format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: view-for-everyone, namespace: {ns}, labels: {{round: "{round}"}}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
subjects: [{{kind: Group, apiGroup: rbac.authorization.k8s.io, name: "system:authenticated"}}{extra}]
"#
    );
    let (ok, _, err) = support::kubectl_run(&["apply", "-f", "-"], Some(&manifest));
    assert!(ok, "applying the tenant's RoleBinding: {err}");
}

/// The issue's loop: a tenant relabels a RoleBinding of its namespace, granting `view`
/// to `system:authenticated`, 30 times in 60 s. No audit of an operator in another
/// namespace runs again, not even a cluster-wide one's; the tenant's own audit runs
/// once, for the binding's creation. Then 10 changes of its subjects in 10 s re-run the
/// tenant's audit twice: at once, and once at the end of the 30 s bound.
#[tokio::test]
async fn rbac_a_tenants_binding_churn_re_runs_no_audit_of_another_namespace() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let tenant = TestNamespace::create(&client, "churn-tenant").await;
    let others = [
        TestNamespace::create(&client, "churn-b").await,
        TestNamespace::create(&client, "churn-c").await,
    ];
    let home = TestNamespace::create(&client, "churn-auditor").await;
    let mut writable = vec![tenant.name.as_str()];
    writable.extend(others.iter().map(|o| o.name.as_str()));
    let scoped = support::ScopedAuditor::create(&client, &home.name, &writable).await;

    quiet_operator(&client, &tenant.name, "tenant-op", &["-n", &tenant.name]).await;
    let mut bystanders = Vec::new();
    for other in &others {
        for i in 0..4 {
            let name = format!("op-{i}");
            quiet_operator(&client, &other.name, &name, &["-n", &other.name]).await;
            bystanders.push((other.name.clone(), name));
        }
        quiet_operator(&client, &other.name, "wide", &["-A"]).await;
        bystanders.push((other.name.clone(), "wide".to_string()));
    }
    let tenant_audit = vec![(tenant.name.clone(), "tenant-op".to_string())];

    let auditor = Auditor::start_cluster_wide(&scoped.kubeconfig, "churn", &[]);
    wait_for("every audit's first run", Duration::from_secs(180), || {
        let all: Vec<f64> = runs(&auditor, &bystanders)
            .into_iter()
            .chain(runs(&auditor, &tenant_audit))
            .collect();
        std::future::ready(all.iter().all(|n| *n >= 1.0).then_some(()))
    })
    .await;
    // The RBAC caches' first lists can re-run the first audits once more (the cluster's
    // own ClusterRoleBindings to every authenticated user reach them): wait until the
    // counts hold still for 10 s.
    let mut settled = runs(&auditor, &bystanders);
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let now = runs(&auditor, &bystanders);
        if now == settled {
            break;
        }
        settled = now;
    }
    let before = runs(&auditor, &bystanders);
    let tenant_before = runs(&auditor, &tenant_audit)[0];

    say("30 label changes in 60 s on the tenant's RoleBinding (view to system:authenticated)");
    let start = tokio::time::Instant::now();
    for round in 0..30u32 {
        tokio::time::sleep_until(start + Duration::from_secs(2) * round).await;
        apply_view_for_everyone(&tenant.name, round as usize, false);
    }
    say("waiting out the 30 s bound: a held-back re-run would land now");
    tokio::time::sleep(Duration::from_secs(35)).await;
    let after = runs(&auditor, &bystanders);
    let tenant_after = runs(&auditor, &tenant_audit)[0];
    say(format!(
        "re-runs: others {:?}, the tenant's {}",
        before
            .iter()
            .zip(&after)
            .map(|(b, a)| a - b)
            .collect::<Vec<_>>(),
        tenant_after - tenant_before
    ));
    for (audit, (b, a)) in bystanders.iter().zip(before.iter().zip(&after)) {
        assert_eq!(
            a, b,
            "{audit:?} ran again on another namespace's RoleBinding churn"
        );
    }
    assert_eq!(
        tenant_after - tenant_before,
        1.0,
        "the tenant's audit runs for the binding's creation, not for its labels"
    );

    say("10 changes of the binding's subjects in 10 s");
    let start = tokio::time::Instant::now();
    for round in 0..10u32 {
        tokio::time::sleep_until(start + Duration::from_secs(1) * round).await;
        apply_view_for_everyone(&tenant.name, 100 + round as usize, round % 2 == 0);
    }
    tokio::time::sleep_until(start + Duration::from_secs(45)).await;
    let tenant_churned = runs(&auditor, &tenant_audit)[0];
    assert_eq!(
        tenant_churned - tenant_after,
        2.0,
        "once at once, once at the end of the 30 s bound"
    );
    assert_eq!(
        runs(&auditor, &bystanders),
        before,
        "the others still did not run again"
    );
}

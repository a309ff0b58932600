//! The Helm chart against the real API server: its rendered objects install, and the
//! operator, run as a local process with a token of the chart's ServiceAccount, audits
//! real kopf fixtures with correct results and no 403 in its own log (the rules suffice)
//! while reading a Secret is refused (the rules are tight). Also: the chart's variants
//! render as documented, and `kubectl wait --for=condition=Ready` works on a KopfAudit.
//!
//! helm comes from `hack/build-helm.sh` (built from its Go module, cached outside the
//! clone); a missing helm FAILS the test with the command that builds it.

use crate::operator::{audit_for, create_audit, ensure_crd, fixture_deployment};
use crate::support::{self, Auditor, Fixture, TestNamespace, expectations, say, wait_for};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kopf_audit::api::{KopfAudit, KopfAuditStatus};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The helm binary `hack/build-helm.sh` builds, at the version the script pins (or
/// `KOPF_AUDIT_HELM`), or a panic saying how to build it.
pub fn helm() -> PathBuf {
    if let Some(p) = std::env::var_os("KOPF_AUDIT_HELM") {
        return PathBuf::from(p);
    }
    let script = support::repo().join("hack/build-helm.sh");
    let text = std::fs::read_to_string(&script)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", script.display()));
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("HELM_VERSION="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .expect("HELM_VERSION= in hack/build-helm.sh");
    let cache = std::env::var_os("KOPF_AUDIT_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("kopf-audit")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/kopf-audit")))
        .expect("KOPF_AUDIT_CACHE, XDG_CACHE_HOME or HOME");
    let path = cache.join(format!("bin-helm-{version}/helm"));
    assert!(
        path.is_file(),
        "helm {version} is not built at {}: run `hack/build-helm.sh` (builds it from its Go module in 4-8 minutes, once; hack/test.sh does it)",
        path.display()
    );
    path
}

fn chart_dir() -> PathBuf {
    support::repo().join("charts/kopf-audit")
}

/// Runs helm with `args`; panics with its stderr when it fails.
fn helm_run(args: &[&str]) -> String {
    let out = Command::new(helm())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run helm: {e}"));
    assert!(
        out.status.success(),
        "helm {} failed: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `helm template` of the chart: the rendered objects.
pub(crate) fn render(release: &str, namespace: &str, extra: &[&str]) -> Vec<Value> {
    let chart = chart_dir();
    let mut args = vec![
        "template",
        release,
        chart.to_str().expect("utf-8 path"),
        "--namespace",
        namespace,
    ];
    args.extend_from_slice(extra);
    let text = helm_run(&args);
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|doc| <Value as serde::Deserialize>::deserialize(doc).ok())
        .filter(|v| v.is_mapping())
        .collect()
}

pub(crate) fn kind(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or_default()
}

pub(crate) fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

pub(crate) fn of_kind<'a>(objects: &'a [Value], k: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| kind(o) == k).collect()
}

/// (apiGroup, resource, verb) triples granted by a list of rules.
pub(crate) fn grants(rules: &Value) -> BTreeSet<(String, String, String)> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_sequence()
            .map(|s| {
                s.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = BTreeSet::new();
    for rule in rules.as_sequence().into_iter().flatten() {
        for g in strings(&rule["apiGroups"]) {
            for r in strings(&rule["resources"]) {
                for v in strings(&rule["verbs"]) {
                    out.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    out
}

pub(crate) fn grant(g: &str, r: &str, v: &str) -> (String, String, String) {
    (g.into(), r.into(), v.into())
}

/// The container's args of the rendered Deployment.
pub(crate) fn deployment_args(objects: &[Value]) -> Vec<String> {
    let deployments = of_kind(objects, "Deployment");
    assert_eq!(deployments.len(), 1, "one Deployment");
    deployments[0]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_chart_lints_and_its_variants_render_as_documented() {
    let chart = chart_dir();
    let chart = chart.to_str().expect("utf-8 path");
    let lint = helm_run(&["lint", "--strict", chart]);
    assert!(lint.contains("0 chart(s) failed"), "{lint}");

    // The default: one ClusterRole with exactly the operator's rules, no lease rule.
    let objects = render("rel", "ops", &[]);
    let roles = of_kind(&objects, "ClusterRole");
    let main = roles
        .iter()
        .find(|r| name(r) == "rel-kopf-audit")
        .expect("the ClusterRole");
    let granted = grants(&main["rules"]);
    for g in [
        grant("kopfaudit.dev", "kopfaudits", "watch"),
        grant("kopfaudit.dev", "kopfaudits/status", "patch"),
        grant("apps", "deployments", "watch"),
        grant("", "pods", "list"),
        grant("", "pods/log", "get"),
        grant("", "events", "create"),
        grant("", "events", "patch"),
        grant("events.k8s.io", "events", "create"),
        grant("events.k8s.io", "events", "patch"),
        grant("authorization.k8s.io", "subjectaccessreviews", "create"),
        grant("rbac.authorization.k8s.io", "clusterrolebindings", "list"),
        grant("rbac.authorization.k8s.io", "rolebindings", "watch"),
        grant("rbac.authorization.k8s.io", "clusterroles", "watch"),
        grant("apiextensions.k8s.io", "customresourcedefinitions", "get"),
        grant("wgpolicyk8s.io", "policyreports", "create"),
        grant("wgpolicyk8s.io", "policyreports", "patch"),
        grant("openreports.io", "reports", "create"),
        grant("openreports.io", "reports", "patch"),
        grant("kopf.dev", "kopfpeerings", "get"),
        grant("zalando.org", "clusterkopfpeerings", "list"),
        grant(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "list",
        ),
        grant(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "list",
        ),
    ] {
        assert!(granted.contains(&g), "missing {g:?} in {granted:?}");
    }
    assert!(
        !granted
            .iter()
            .any(|(g, r, v)| g == "*" || r == "*" || v == "*" || r == "secrets"),
        "no wildcard, no secrets: {granted:?}"
    );
    assert!(
        objects.iter().all(|o| !serde_yaml_ng::to_string(o)
            .unwrap_or_default()
            .contains("leases")),
        "no lease permission with one replica"
    );
    assert!(of_kind(&objects, "Role").is_empty());
    assert!(of_kind(&objects, "ServiceMonitor").is_empty());
    assert!(of_kind(&objects, "PrometheusRule").is_empty());
    let args = deployment_args(&objects);
    assert_eq!(
        args,
        [
            "--log-format=json",
            "--log-level=info",
            "--http-addr=0.0.0.0:8080",
            "--max-concurrent-audits=8",
            "--log-memory-mib=64",
            "--reports=policy-report",
            "--cluster-audits"
        ],
        "the image's entrypoint is `/kopf-audit run`"
    );
    // ClusterKopfAudits (rbac.clusterAudits, on by default cluster-wide): a role of
    // their own, bound to the auditor.
    let cluster_audits = roles
        .iter()
        .find(|r| name(r) == "rel-kopf-audit-cluster-audits")
        .expect("the cluster audits' ClusterRole");
    let cluster_granted = grants(&cluster_audits["rules"]);
    for g in [
        grant("kopfaudit.dev", "clusterkopfaudits", "watch"),
        grant("kopfaudit.dev", "clusterkopfaudits/status", "patch"),
        grant("kopfaudit.dev", "kopfaudits", "create"),
        grant("kopfaudit.dev", "kopfaudits", "patch"),
        grant("kopfaudit.dev", "kopfaudits", "delete"),
        grant("", "namespaces", "list"),
    ] {
        assert!(
            cluster_granted.contains(&g),
            "missing {g:?} in {cluster_granted:?}"
        );
    }
    assert!(
        of_kind(&objects, "ClusterRoleBinding")
            .iter()
            .any(|b| name(b) == "rel-kopf-audit-cluster-audits"
                && b["subjects"][0]["name"].as_str() == Some("rel-kopf-audit")),
        "the cluster audits' role is bound to the auditor"
    );
    let without = render("rel", "ops", &["--set", "rbac.clusterAudits=false"]);
    assert!(
        of_kind(&without, "ClusterRole")
            .iter()
            .all(|r| name(r) != "rel-kopf-audit-cluster-audits"),
        "rbac.clusterAudits=false grants nothing for them"
    );
    assert!(
        !deployment_args(&without)
            .iter()
            .any(|a| a == "--cluster-audits")
    );
    let deployment = of_kind(&objects, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let sc = &container["securityContext"];
    assert_eq!(sc["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(sc["runAsUser"].as_i64(), Some(65532));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["capabilities"]["drop"][0].as_str(), Some("ALL"));
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault")
    );
    assert_eq!(
        container["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/healthz")
    );
    assert_eq!(
        container["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/readyz")
    );
    assert_eq!(container["ports"][0]["containerPort"].as_i64(), Some(8080));
    assert!(
        container["resources"]["limits"]["cpu"].is_null(),
        "no CPU limit"
    );
    assert!(
        !container["resources"]["requests"]["cpu"].is_null(),
        "a CPU request"
    );
    assert!(
        !container["resources"]["limits"]["memory"].is_null(),
        "a memory limit"
    );
    assert_eq!(container["env"][0]["name"].as_str(), Some("POD_NAME"));
    assert_eq!(
        container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        Some("metadata.name")
    );
    assert_eq!(
        deployment["spec"]["strategy"]["type"].as_str(),
        Some("Recreate"),
        "one replica and no Lease: never two auditors at once"
    );
    assert!(
        of_kind(&objects, "PodDisruptionBudget").is_empty(),
        "no PodDisruptionBudget for one replica"
    );
    assert_eq!(of_kind(&objects, "Service").len(), 1, "the metrics Service");
    assert!(of_kind(&objects, "FlowSchema").is_empty(), "APF is opt-in");

    // API Priority and Fairness: the auditor's ServiceAccount, a level of its own.
    let objects = render("rel", "ops", &["--set", "apiPriority.enabled=true"]);
    let schema = of_kind(&objects, "FlowSchema")[0];
    let level = of_kind(&objects, "PriorityLevelConfiguration")[0];
    assert_eq!(
        schema["spec"]["priorityLevelConfiguration"]["name"].as_str(),
        Some(name(level))
    );
    let subject = &schema["spec"]["rules"][0]["subjects"][0]["serviceAccount"];
    assert_eq!(
        (subject["name"].as_str(), subject["namespace"].as_str()),
        (Some("rel-kopf-audit"), Some("ops"))
    );
    assert_eq!(schema["spec"]["matchingPrecedence"].as_i64(), Some(1000));
    let limited = &level["spec"]["limited"];
    assert_eq!(limited["nominalConcurrencyShares"].as_i64(), Some(10));
    assert_eq!(limited["lendablePercent"].as_i64(), Some(0));
    assert_eq!(limited["limitResponse"]["type"].as_str(), Some("Queue"));

    // Namespaced, two replicas, flags, handled resources, monitoring.
    let objects = render(
        "rel",
        "ops",
        &[
            "--set",
            "rbac.namespaced=true",
            "--set",
            "replicas=2",
            "--set",
            "refuseExemptions=true",
            "--set",
            "allowCrossNamespace=true",
            "--set",
            "logFormat=text",
            "--set",
            "rbac.handledResources[0].apiGroups[0]=example.com",
            "--set",
            "rbac.handledResources[0].resources[0]=widgets",
            "--set",
            "rbac.extraRules[0].apiGroups[0]=example.com",
            "--set",
            "rbac.extraRules[0].resources[0]=gadgets",
            "--set",
            "rbac.extraRules[0].verbs[0]=get",
            "--set",
            "serviceMonitor.enabled=true",
            "--set",
            "prometheusRule.enabled=true",
        ],
    );
    let role = of_kind(&objects, "Role")
        .into_iter()
        .find(|r| name(r) == "rel-kopf-audit")
        .expect("a Role in the namespaced install");
    assert_eq!(role["metadata"]["namespace"].as_str(), Some("ops"));
    let granted = grants(&role["rules"]);
    assert!(
        granted.contains(&grant("example.com", "widgets", "list")),
        "{granted:?}"
    );
    assert!(
        granted.contains(&grant("example.com", "gadgets", "get")),
        "{granted:?}"
    );
    assert!(
        of_kind(&objects, "ClusterRole")
            .iter()
            .all(|r| name(r) != "rel-kopf-audit"),
        "no cluster-wide role of the operator's rules when namespaced"
    );
    let lease = of_kind(&objects, "Role")
        .into_iter()
        .find(|r| name(r) == "rel-kopf-audit-leader-election")
        .expect("the lease Role with two replicas");
    let lease_grants = grants(&lease["rules"]);
    assert!(lease_grants.contains(&grant("coordination.k8s.io", "leases", "create")));
    assert!(lease_grants.contains(&grant("coordination.k8s.io", "leases", "patch")));
    assert_eq!(
        lease["rules"][1]["resourceNames"][0].as_str(),
        Some("rel-kopf-audit")
    );
    // A standby is ready (src/reconcile/readiness.rs): the rollout keeps every ready
    // replica, and a node drain evicts one at a time.
    let strategy = &of_kind(&objects, "Deployment")[0]["spec"]["strategy"];
    assert_eq!(strategy["type"].as_str(), Some("RollingUpdate"));
    assert_eq!(
        strategy["rollingUpdate"]["maxUnavailable"].as_i64(),
        Some(0)
    );
    assert_eq!(strategy["rollingUpdate"]["maxSurge"].as_i64(), Some(1));
    let budgets = of_kind(&objects, "PodDisruptionBudget");
    assert_eq!(budgets.len(), 1, "a PodDisruptionBudget with two replicas");
    assert_eq!(budgets[0]["spec"]["maxUnavailable"].as_i64(), Some(1));
    assert_eq!(
        budgets[0]["spec"]["selector"]["matchLabels"],
        of_kind(&objects, "Deployment")[0]["spec"]["selector"]["matchLabels"]
    );
    let args = deployment_args(&objects);
    assert!(
        !args.iter().any(|a| a == "--cluster-audits")
            && of_kind(&objects, "ClusterRole")
                .iter()
                .all(|r| name(r) != "rel-kopf-audit-cluster-audits"),
        "a namespaced install ignores rbac.clusterAudits: {args:?}"
    );
    for flag in [
        "--log-format=text",
        "--refuse-exemptions",
        "--allow-cross-namespace",
        "--watch-namespace=ops",
        "--leader-election",
        "--lease-name=rel-kopf-audit",
    ] {
        assert!(args.iter().any(|a| a == flag), "{flag} in {args:?}");
    }
    let monitor = of_kind(&objects, "ServiceMonitor");
    assert_eq!(monitor.len(), 1);
    assert_eq!(
        monitor[0]["spec"]["endpoints"][0]["honorLabels"].as_bool(),
        Some(true)
    );
    let rules = of_kind(&objects, "PrometheusRule");
    assert_eq!(rules.len(), 1);
    let text = serde_yaml_ng::to_string(rules[0]).expect("yaml");
    for expr in [
        r#"kopf_audit_condition{condition="Compliant",status="False"} == 1"#,
        r#"kopf_audit_condition{condition="Stalled",status="True"} == 1"#,
        "kopf_audit_audit_failures_total",
        "{{ $labels.namespace }}/{{ $labels.name }}",
    ] {
        assert!(text.contains(expr), "{expr} in {text}");
    }
    the_placement_and_extension_values_render();
    say("helm lint and helm template: the variants render as documented");
}

/// `commonLabels`, `podAnnotations`, `extraArgs`, `extraEnv`,
/// `topologySpreadConstraints`, the budget's `minAvailable` and the ServiceMonitor's
/// namespace and relabelings, as documented in values.yaml.
fn the_placement_and_extension_values_render() {
    let values = values_file(
        "placement",
        serde_json::json!({
            "replicas": 3,
            "commonLabels": {"team": "platform"},
            "podAnnotations": {"example.com/note": "kept"},
            "extraArgs": ["--log-format=text"],
            "extraEnv": [{"name": "RUST_BACKTRACE", "value": "1"}],
            "podDisruptionBudget": {"minAvailable": "50%"},
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"own": "selector"}}}
            ],
            "serviceMonitor": {
                "enabled": true,
                "namespace": "monitoring",
                "relabelings": [{"action": "labeldrop", "regex": "pod"}],
                "metricRelabelings": [{"action": "drop", "sourceLabels": ["__name__"], "regex": "kopf_audit_build_info"}]
            }
        }),
    );
    let objects = render(
        "rel",
        "ops",
        &["--values", values.to_str().expect("utf-8 path")],
    );
    for object in &objects {
        assert_eq!(
            object["metadata"]["labels"]["team"].as_str(),
            Some("platform"),
            "commonLabels on {} {}",
            kind(object),
            name(object)
        );
    }
    let deployment = of_kind(&objects, "Deployment")[0];
    let template = &deployment["spec"]["template"];
    assert_eq!(
        template["metadata"]["labels"]["team"].as_str(),
        Some("platform")
    );
    assert_eq!(
        template["metadata"]["annotations"]["example.com/note"].as_str(),
        Some("kept")
    );
    assert_eq!(
        deployment_args(&objects).last().map(String::as_str),
        Some("--log-format=text"),
        "extraArgs after the chart's own"
    );
    let container = &template["spec"]["containers"][0];
    let env = container["env"].as_sequence().expect("env");
    assert!(
        env.iter()
            .any(|e| e["name"].as_str() == Some("RUST_BACKTRACE")
                && e["value"].as_str() == Some("1")),
        "{env:?}"
    );
    let spread = &template["spec"]["topologySpreadConstraints"];
    assert_eq!(
        spread[0]["labelSelector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"],
        "a constraint without labelSelector selects the chart's pods"
    );
    assert_eq!(
        spread[1]["labelSelector"]["matchLabels"]["own"].as_str(),
        Some("selector")
    );
    assert!(spread[1]["labelSelector"]["matchLabels"]["app.kubernetes.io/name"].is_null());
    let budget = of_kind(&objects, "PodDisruptionBudget")[0];
    assert_eq!(budget["spec"]["minAvailable"].as_str(), Some("50%"));
    assert!(budget["spec"]["maxUnavailable"].is_null());
    let monitor = of_kind(&objects, "ServiceMonitor")[0];
    assert_eq!(
        monitor["metadata"]["namespace"].as_str(),
        Some("monitoring")
    );
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"][0].as_str(),
        Some("ops"),
        "it scrapes the release namespace's Service"
    );
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(
        endpoint["relabelings"][0]["action"].as_str(),
        Some("labeldrop")
    );
    assert_eq!(
        endpoint["metricRelabelings"][0]["action"].as_str(),
        Some("drop")
    );
}

/// Cluster-scoped objects of one test, deleted when dropped.
pub(crate) struct ClusterScoped(Vec<(String, String)>);

impl Drop for ClusterScoped {
    fn drop(&mut self) {
        for (kind, name) in &self.0 {
            let _ = support::kubectl_run(
                &["delete", kind, name, "--ignore-not-found", "--wait=false"],
                None,
            );
        }
    }
}

/// Applies objects with kubectl (server-side, as the admin).
pub(crate) fn apply(objects: &[&Value]) {
    let text: String = objects
        .iter()
        .map(|o| format!("---\n{}", serde_yaml_ng::to_string(o).expect("yaml")))
        .collect();
    let (ok, out, err) = support::kubectl_run(
        &[
            "apply",
            "--server-side",
            "--field-manager=kopf-audit-e2e-chart",
            "-f",
            "-",
        ],
        Some(&text),
    );
    assert!(
        ok,
        "kubectl apply of the rendered chart failed: {err}\n{out}"
    );
    say(format!("applied: {}", out.trim().replace('\n', "; ")));
}

fn condition<'a>(status: &'a KopfAuditStatus, type_: &str) -> Option<(&'a str, &'a str)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.as_str(), c.reason.as_str()))
}

fn found_checks(status: &KopfAuditStatus) -> BTreeSet<String> {
    status
        .findings
        .iter()
        .map(|f| f.check.as_str().to_string())
        .collect()
}

#[test]
fn a_403_inside_a_timestamp_is_no_refusal() {
    assert!(
        support::refused_lines("2026-11-30T06:55:43.204037Z INFO audited changed=false").is_empty()
    );
    assert_eq!(
        support::refused_lines("ApiError: code: 403, reason: x").len(),
        1
    );
    assert_eq!(support::refused_lines("status 403").len(), 1);
}

const AREAS: [&str; 5] = [
    "WorkloadCompliant",
    "RBACCompliant",
    "EventsCompliant",
    "PersistenceCompliant",
    "RuntimeHealthy",
];

/// Waits until the KopfAudit `audit` in `ns` is Ready with every area decided and the
/// fixture's expected findings, then checks its results and the auditor's log.
async fn audited_without_refusal(
    admin: &Client,
    fixture: &str,
    ns: &str,
    auditor: &Auditor,
    timeout: Duration,
) -> KopfAuditStatus {
    let expect = expectations(fixture);
    let must: BTreeSet<String> = expect.must.iter().cloned().collect();
    let api: Api<KopfAudit> = Api::namespaced(admin.clone(), ns);
    let status = wait_for(
        &format!("{fixture}: Ready=True, every area decided, findings {must:?}"),
        timeout,
        || {
            let (api, must) = (api.clone(), must.clone());
            async move {
                let status = api.get("audit").await.ok()?.status?;
                let ready = condition(&status, "Ready") == Some(("True", "AuditSucceeded"));
                let decided = AREAS
                    .iter()
                    .all(|a| condition(&status, a).is_some_and(|c| c.0 != "Unknown"));
                (ready && decided && must.is_subset(&found_checks(&status))).then_some(status)
            }
        },
    )
    .await;
    let found = found_checks(&status);
    for id in &expect.must_not {
        assert!(
            !found.contains(id),
            "{fixture}: {id} must not be reported; findings: {:#?}",
            status.findings
        );
    }
    for area in AREAS {
        let (s, reason) = condition(&status, area).expect("area condition");
        assert_ne!(reason, "Forbidden", "{fixture}: {area} is {s}/{reason}");
    }
    let workload_must = must.iter().any(|c| c.starts_with("workload."));
    assert_eq!(
        condition(&status, "WorkloadCompliant").map(|c| c.0),
        Some(if workload_must { "False" } else { "True" }),
        "{fixture}: {:#?}",
        status.conditions
    );
    if fixture == "good" {
        assert_eq!(
            condition(&status, "Compliant"),
            Some(("True", "AllAreasCompliant")),
            "{:#?}",
            status.conditions
        );
    }
    say(format!(
        "{fixture} audited with the chart's RBAC: {found:?}"
    ));
    auditor.wait_log("audited", Duration::from_secs(30)).await;
    let log = auditor.logs();
    let refused = support::refused_lines(&log);
    assert!(
        refused.is_empty(),
        "{fixture}: the auditor was refused something:\n{}",
        refused.join("\n")
    );
    status
}

/// Writes a values file for a release.
pub(crate) fn values_file(release: &str, values: serde_json::Value) -> PathBuf {
    let path = support::workdir().join(format!("chart-values-{release}.yaml"));
    std::fs::write(&path, serde_yaml_ng::to_string(&values).expect("yaml")).expect("values file");
    path
}

/// The cluster-scoped objects among rendered ones, deleted when the guard drops.
pub(crate) fn cleanup_of(objects: &[&Value]) -> ClusterScoped {
    ClusterScoped(
        objects
            .iter()
            .filter(|o| matches!(kind(o), "ClusterRole" | "ClusterRoleBinding"))
            .map(|o| (kind(o).to_string(), name(o).to_string()))
            .collect(),
    )
}

#[tokio::test]
async fn a_namespaced_install_audits_its_namespace_with_a_role_and_reads_nothing_else() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let release_ns = TestNamespace::create(&admin, "chartns").await;
    let release = format!("r{}", release_ns.name.trim_start_matches("e2e-chartns-"));
    let fullname = format!("{release}-kopf-audit");
    let watched = TestNamespace::create(&admin, "good").await;
    let _kopf = Fixture::start("good", &watched.name, None);
    let (group, plural) = support::fixture_crd("good");
    let values = values_file(
        &release,
        serde_json::json!({
            "watchNamespace": watched.name,
            "rbac": {
                "namespaced": true,
                "handledResources": [{"apiGroups": [group], "resources": [plural]}]
            }
        }),
    );
    let objects = render(
        &release,
        &release_ns.name,
        &["--values", values.to_str().expect("utf-8 path")],
    );
    let role = of_kind(&objects, "Role")
        .into_iter()
        .find(|r| name(r) == fullname)
        .expect("the Role");
    assert_eq!(
        role["metadata"]["namespace"].as_str(),
        Some(watched.name.as_str())
    );
    let all: Vec<&Value> = objects.iter().collect();
    let _cleanup = cleanup_of(&all);
    apply(&all);

    let kubeconfig = support::token_kubeconfig(&admin, &release_ns.name, &fullname).await;
    let as_chart = support::client_for(&kubeconfig).await;
    for (what, result) in [
        (
            "pods in its own (unwatched) namespace",
            Api::<k8s_openapi::api::core::v1::Pod>::namespaced(as_chart.clone(), &release_ns.name)
                .list(&ListParams::default())
                .await
                .map(|_| ()),
        ),
        (
            "pods cluster-wide",
            Api::<k8s_openapi::api::core::v1::Pod>::all(as_chart.clone())
                .list(&ListParams::default())
                .await
                .map(|_| ()),
        ),
        (
            "Secrets in the watched namespace",
            Api::<Secret>::namespaced(as_chart.clone(), &watched.name)
                .list(&ListParams::default())
                .await
                .map(|_| ()),
        ),
    ] {
        match result {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "{what}: {s:?}"),
            other => panic!("reading {what} must be refused with 403, got {other:?}"),
        }
    }
    say("a namespaced install reads only its namespace");

    let deployment = fixture_deployment(&admin, &watched.name).await.name_any();
    let auditor = Auditor::start(&kubeconfig, &watched.name, &[]);
    create_audit(
        &admin,
        &watched.name,
        audit_for("audit", &deployment, "30s"),
    )
    .await
    .expect("creating KopfAudit audit");
    audited_without_refusal(
        &admin,
        "good",
        &watched.name,
        &auditor,
        Duration::from_secs(120),
    )
    .await;
    let _ = std::fs::remove_file(&values);
    let _ = std::fs::remove_file(&kubeconfig);
}

#[tokio::test]
async fn with_the_charts_rbac_handled_secrets_are_not_sampled_and_not_forbidden() {
    // An operator that handles core Secrets, audited with the chart's RBAC (no Secrets
    // read, on purpose): the persistence area says the Secrets are never read, and
    // asks for no permission.
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let release_ns = TestNamespace::create(&admin, "chartsec").await;
    let release = format!("r{}", release_ns.name.trim_start_matches("e2e-chartsec-"));
    let fullname = format!("{release}-kopf-audit");
    let watched = TestNamespace::create(&admin, "wildcard-secrets").await;
    let _kopf = Fixture::start("wildcard-secrets", &watched.name, None);
    let values = values_file(
        &release,
        serde_json::json!({"watchNamespace": watched.name, "rbac": {"namespaced": true}}),
    );
    let objects = render(
        &release,
        &release_ns.name,
        &["--values", values.to_str().expect("utf-8 path")],
    );
    let all: Vec<&Value> = objects.iter().collect();
    let _cleanup = cleanup_of(&all);
    apply(&all);
    let kubeconfig = support::token_kubeconfig(&admin, &release_ns.name, &fullname).await;

    let deployment = fixture_deployment(&admin, &watched.name).await.name_any();
    let _auditor = Auditor::start(&kubeconfig, &watched.name, &[]);
    create_audit(
        &admin,
        &watched.name,
        audit_for("audit", &deployment, "30s"),
    )
    .await
    .expect("creating KopfAudit audit");
    let audits: Api<KopfAudit> = Api::namespaced(admin.clone(), &watched.name);
    let status = wait_for(
        "PersistenceCompliant: the Secrets not sampled",
        Duration::from_secs(120),
        || {
            let audits = audits.clone();
            async move {
                let status = audits.get("audit").await.ok()?.status?;
                let persistence = status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == "PersistenceCompliant")?;
                persistence
                    .message
                    .contains("core Secrets only")
                    .then_some(status)
            }
        },
    )
    .await;
    let persistence = status
        .conditions
        .iter()
        .find(|c| c.type_ == "PersistenceCompliant")
        .expect("PersistenceCompliant");
    assert_ne!(persistence.reason, "Forbidden", "{persistence:#?}");
    assert_ne!(persistence.status, "True", "{persistence:#?}");
    assert!(
        !persistence.message.contains("grant it"),
        "{persistence:#?}"
    );
    if persistence.status == "Unknown" {
        assert_eq!(persistence.reason, "SecretsNotSampled", "{persistence:#?}");
    }
    say(format!("with the chart's RBAC: {}", persistence.message));
    let _ = std::fs::remove_file(&values);
    let _ = std::fs::remove_file(&kubeconfig);
}

#[tokio::test]
async fn the_operator_with_only_the_charts_rbac_audits_the_fixtures_and_cannot_read_secrets() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let release_ns = TestNamespace::create(&admin, "chart").await;
    let release = format!("r{}", release_ns.name.trim_start_matches("e2e-chart-"));
    let fullname = format!("{release}-kopf-audit");

    // The fixtures first: their CRDs must exist before the aggregated role can name them.
    let fixtures = ["good", "no-events-create", "bad-resources"];
    let mut running = Vec::new();
    for fixture in fixtures {
        let ns = TestNamespace::create(&admin, fixture).await;
        let kopf = Fixture::start(fixture, &ns.name, None);
        running.push((fixture, ns, kopf));
    }

    // Handled resources both ways the chart offers: values for two fixtures, an
    // aggregated ClusterRole (labelled) for the third.
    let handled: Vec<serde_json::Value> = fixtures[..2]
        .iter()
        .map(|f| {
            let (group, plural) = support::fixture_crd(f);
            serde_json::json!({"apiGroups": [group], "resources": [plural]})
        })
        .collect();
    let values = values_file(
        &release,
        serde_json::json!({"rbac": {"handledResources": handled}}),
    );
    // Two replicas, so that the lease rules are rendered and proven too.
    let objects = render(
        &release,
        &release_ns.name,
        &[
            "--values",
            values.to_str().expect("utf-8 path"),
            "--set",
            "replicas=2",
        ],
    );
    let (tunnel_group, tunnel_plural) = support::fixture_crd(fixtures[2]);
    let aggregated_source: Value = serde_yaml_ng::to_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {
            "name": format!("{release}-e2e-tunnels-reader"),
            "labels": {"kopfaudit.dev/aggregate-to-kopf-audit": "true"}
        },
        "rules": [{"apiGroups": [tunnel_group], "resources": [tunnel_plural], "verbs": ["get", "list"]}]
    }))
    .expect("yaml value");

    let mut cluster_scoped: Vec<(String, String)> = objects
        .iter()
        .filter(|o| matches!(kind(o), "ClusterRole" | "ClusterRoleBinding"))
        .map(|o| (kind(o).to_string(), name(o).to_string()))
        .collect();
    cluster_scoped.push(("ClusterRole".into(), name(&aggregated_source).to_string()));
    let _cleanup = ClusterScoped(cluster_scoped);

    // Everything the chart renders installs (the Deployment too: kwok runs its pod).
    let mut to_apply: Vec<&Value> = objects.iter().collect();
    to_apply.push(&aggregated_source);
    for expected in [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Service",
    ] {
        assert!(
            to_apply.iter().any(|o| kind(o) == expected),
            "the chart renders a {expected}"
        );
    }
    apply(&to_apply);
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let aggregated = format!("{fullname}-handled-resources");
    wait_for(
        "the handled-resources ClusterRole to aggregate the labelled one",
        Duration::from_secs(60),
        || {
            let (roles, aggregated, group) = (
                roles.clone(),
                aggregated.clone(),
                support::fixture_crd(fixtures[2]).0,
            );
            async move {
                let role = roles.get(&aggregated).await.ok()?;
                role.rules?
                    .iter()
                    .any(|r| r.api_groups.iter().flatten().any(|g| *g == group))
                    .then_some(())
            }
        },
    )
    .await;

    let kubeconfig = support::token_kubeconfig(&admin, &release_ns.name, &fullname).await;
    say(format!(
        "acting as system:serviceaccount:{}:{fullname}",
        release_ns.name
    ));
    let as_chart = support::client_for(&kubeconfig).await;

    // Tight: no Secret, anywhere.
    for (scope, result) in [
        (
            "in its own namespace",
            Api::<Secret>::namespaced(as_chart.clone(), &release_ns.name)
                .list(&ListParams::default())
                .await
                .map(|_| ()),
        ),
        (
            "in a fixture's namespace",
            Api::<Secret>::namespaced(as_chart.clone(), &running[0].1.name)
                .get("anything")
                .await
                .map(|_| ()),
        ),
        (
            "cluster-wide",
            Api::<Secret>::all(as_chart.clone())
                .list(&ListParams::default())
                .await
                .map(|_| ()),
        ),
    ] {
        match result {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "reading Secrets {scope}: {s:?}"),
            other => panic!("reading Secrets {scope} must be refused with 403, got {other:?}"),
        }
    }
    say("reading Secrets is refused (403)");

    // Sufficient: one auditor per fixture namespace, all with the chart's token.
    // The first one elects itself leader with the chart's Lease, as a replica would.
    let mut audited = Vec::new();
    for (i, (fixture, ns, _)) in running.iter().enumerate() {
        let deployment = fixture_deployment(&admin, &ns.name).await.name_any();
        let lease = [
            "--leader-election",
            "--lease-name",
            &fullname,
            "--lease-namespace",
            &release_ns.name,
        ];
        let auditor = Auditor::start(&kubeconfig, &ns.name, if i == 0 { &lease } else { &[] });
        create_audit(&admin, &ns.name, audit_for("audit", &deployment, "30s"))
            .await
            .expect("creating KopfAudit audit");
        audited.push((*fixture, ns.name.clone(), auditor));
    }
    let deadline = Instant::now() + Duration::from_secs(240);
    for (fixture, ns, auditor) in &audited {
        let remaining = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(30));
        audited_without_refusal(&admin, fixture, ns, auditor, remaining).await;
    }
    let lease = Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(
        admin.clone(),
        &release_ns.name,
    )
    .get(&fullname)
    .await
    .expect("the chart's Lease, created by the auditor with the chart's RBAC");
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(
        holder.starts_with("e2e-"),
        "the leader election auditor holds the Lease: {holder:?}"
    );
    // A last look after every audit ran at least once more (30s interval).
    tokio::time::sleep(Duration::from_secs(5)).await;
    for (fixture, _, auditor) in &audited {
        let log = auditor.logs();
        let refused = support::refused_lines(&log);
        assert!(
            refused.is_empty(),
            "{fixture}: the auditor was refused something:\n{}",
            refused.join("\n")
        );
    }
    let _ = std::fs::remove_file(&values);
    let _ = std::fs::remove_file(&kubeconfig);
}

/// Runs `kubectl wait` as the admin; (success, output).
fn kubectl_wait(ns: &str, target: &str, timeout: &str) -> std::thread::JoinHandle<(bool, String)> {
    let (ns, target, timeout) = (ns.to_string(), target.to_string(), timeout.to_string());
    std::thread::spawn(move || {
        let (ok, out, err) = support::kubectl_run(
            &[
                "wait",
                "--for=condition=Ready",
                &target,
                "-n",
                &ns,
                &format!("--timeout={timeout}"),
            ],
            None,
        );
        (ok, format!("{out}{err}"))
    })
}

#[tokio::test]
async fn kubectl_wait_for_condition_ready_returns_once_audited() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let ns = TestNamespace::create(&admin, "kwait").await;
    let _kopf = Fixture::start("good", &ns.name, None);
    let deployment = fixture_deployment(&admin, &ns.name).await.name_any();
    create_audit(&admin, &ns.name, audit_for("ready", &deployment, "30s"))
        .await
        .expect("creating KopfAudit ready");
    create_audit(
        &admin,
        &ns.name,
        audit_for("missing", "no-such-deployment", "30s"),
    )
    .await
    .expect("creating KopfAudit missing");

    // Started before the auditor: kubectl must really wait for the condition.
    let waiting = kubectl_wait(&ns.name, "kopfaudit/ready", "150s");
    let stalled = kubectl_wait(&ns.name, "kopfaudit/missing", "45s");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !waiting.is_finished(),
        "kubectl wait returned before any audit ran"
    );
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);

    let (ok, output) =
        tokio::task::spawn_blocking(move || waiting.join().expect("kubectl wait thread"))
            .await
            .expect("join");
    assert!(
        ok,
        "kubectl wait --for=condition=Ready kopfaudit/ready failed: {output}"
    );
    assert!(output.contains("condition met"), "{output}");
    let status = Api::<KopfAudit>::namespaced(admin.clone(), &ns.name)
        .get("ready")
        .await
        .expect("get")
        .status
        .expect("status");
    assert_eq!(
        condition(&status, "Ready"),
        Some(("True", "AuditSucceeded"))
    );
    say(format!("kubectl wait: {}", output.trim()));

    let (ok, output) =
        tokio::task::spawn_blocking(move || stalled.join().expect("kubectl wait thread"))
            .await
            .expect("join");
    assert!(
        !ok,
        "a KopfAudit whose target is missing never becomes Ready: {output}"
    );
    let status = Api::<KopfAudit>::namespaced(admin.clone(), &ns.name)
        .get("missing")
        .await
        .expect("get")
        .status
        .expect("status");
    assert_eq!(
        condition(&status, "Stalled"),
        Some(("True", "TargetNotFound"))
    );
    say("kubectl wait times out on a stalled KopfAudit, as it should");
}

/// The instances whose `/readyz` a [`ReadinessWatch`] samples: the replicas a
/// Deployment counts (a terminating pod is taken out before it is stopped).
type Replicas = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Samples every replica's `/readyz` until dropped, keeping the fewest found ready.
struct ReadinessWatch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<(usize, usize)>>,
}

impl ReadinessWatch {
    fn start(replicas: Replicas) -> ReadinessWatch {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut fewest, mut samples) = (usize::MAX, 0);
            while !stopping.load(Ordering::SeqCst) {
                let addresses = replicas.lock().map(|r| r.clone()).unwrap_or_default();
                let ready = addresses
                    .iter()
                    .filter(|a| {
                        support::http_get(a, "/readyz").is_some_and(|(code, _)| code == 200)
                    })
                    .count();
                fewest = fewest.min(ready);
                samples += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            (fewest, samples)
        });
        ReadinessWatch {
            stop,
            thread: Some(thread),
        }
    }

    /// The fewest replicas found ready at once, and how many samples were taken.
    fn finish(mut self) -> (usize, usize) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or((0, 0))
    }
}

impl Drop for ReadinessWatch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

async fn wait_ready(auditor: &Auditor) {
    let addr = auditor.http.clone();
    wait_for(
        &format!("/readyz 200 at {addr}"),
        Duration::from_secs(60),
        || {
            let addr = addr.clone();
            async move {
                support::http_get(&addr, "/readyz")
                    .filter(|(code, _)| *code == 200)
                    .map(|_| ())
            }
        },
    )
    .await;
}

/// The chart's update strategy with two replicas (RollingUpdate, maxSurge 1,
/// maxUnavailable 0), replayed with real auditors as the Deployment controller runs
/// it: a new pod starts, the rollout waits for its `/readyz`, then takes an old pod out
/// and stops it with SIGTERM (as the kubelet does), the leader first; twice. A standby
/// is ready (src/reconcile/readiness.rs), so one replica is ready at every sample, and
/// a new leader audits after the rollout.
#[tokio::test]
async fn a_rolling_update_of_two_replicas_keeps_one_ready_throughout() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let ns = TestNamespace::create(&admin, "rollout").await;
    let kubeconfig = support::kubeconfig_path();
    let election = ["--leader-election", "--lease-namespace", ns.name.as_str()];
    let start = || Auditor::start(&kubeconfig, &ns.name, &election);

    let mut old = vec![start(), start()];
    for auditor in &old {
        wait_ready(auditor).await;
    }
    wait_for("one old replica to lead", Duration::from_secs(30), || {
        let led = old.iter().any(|a| a.logs().contains("leading: auditing"));
        async move { led.then_some(()) }
    })
    .await;
    // The leader is taken out first: the worst case for the rollout.
    old.sort_by_key(|a| !a.logs().contains("leading: auditing"));
    let replicas: Replicas = std::sync::Arc::new(std::sync::Mutex::new(
        old.iter().map(|a| a.http.clone()).collect(),
    ));
    let watch = ReadinessWatch::start(replicas.clone());

    let mut new = Vec::new();
    for mut leaving in old.drain(..) {
        let surge = start();
        wait_ready(&surge).await;
        say(format!(
            "surge {} ready: taking out {}",
            surge.http, leaving.http
        ));
        if let Ok(mut r) = replicas.lock() {
            r.push(surge.http.clone());
            r.retain(|a| *a != leaving.http);
        }
        leaving.stop();
        new.push(surge);
    }
    create_audit(
        &admin,
        &ns.name,
        audit_for("after-rollout", "no-such-deployment", "30s"),
    )
    .await
    .expect("creating KopfAudit after-rollout");
    let audits: Api<KopfAudit> = Api::namespaced(admin.clone(), &ns.name);
    // A Lease not released lasts 15 s (README, "The binary"); then one interval.
    wait_for(
        "a new replica to lead and audit",
        Duration::from_secs(15 + 30 + 10),
        || {
            let audits = audits.clone();
            async move {
                let status = audits.get("after-rollout").await.ok()?.status?;
                (condition(&status, "Stalled") == Some(("True", "TargetNotFound"))).then_some(())
            }
        },
    )
    .await;
    let (fewest, samples) = watch.finish();
    assert!(samples >= 10, "readiness sampled {samples} times");
    assert!(
        fewest >= 1,
        "a moment with no ready replica during the rollout ({samples} samples)"
    );
    assert!(
        new.iter().any(|a| a.logs().contains("leading: auditing")),
        "a new replica leads"
    );
    say(format!(
        "rolling update: at least {fewest} of the replicas ready in each of {samples} samples"
    ));
}

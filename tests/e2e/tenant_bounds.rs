//! A hostile tenant against the shared auditor, second round, on the real API server:
//! it cannot change or delete the KopfAudit a ClusterKopfAudit generated in its
//! namespace (the chart's admission policy); a namespace of fat Deployments keeps the
//! auditor under the chart's memory limit while discovery, the conflict scan and a
//! selector that matches them all run; and rounds of made-up plurals in
//! `spec.handledResources` leave the per-resource metrics bounded.
//!
//! Other tests run at the same time: each test's ClusterKopfAudit selects only its own
//! namespaces, the auditor may write only there, and the admission policy binds only
//! there.

use crate::cluster_audit::{ClusterAuditGrants, ClusterAuditGuard, ensure_cluster_crd};
use crate::operator::ensure_crd;
use crate::support::{
    self, Auditor, ScopedAuditor, TestNamespace, idle_kopf_deployment, kubectl_run, say,
    token_kubeconfig, wait_for,
};
use k8s_openapi::api::apps::v1::Deployment;
use kopf_audit::api::{ClusterKopfAudit, KopfAudit};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// The chart's memory limit (`resources.limits.memory` in charts/kopf-audit/values.yaml).
const CHART_MEMORY_LIMIT_MIB: u64 = 192;

/// Creates the ClusterKopfAudit `name` over the namespaces `ours`, re-discovering every
/// 30 s.
async fn cluster_audit(client: &Client, name: &str, ours: &[&str]) {
    let cka: ClusterKopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "ClusterKopfAudit",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "In", "values": ours
            }]},
            "defaults": {"interval": "30s"}
        }
    }))
    .expect("ClusterKopfAudit JSON");
    Api::<ClusterKopfAudit>::all(client.clone())
        .create(&PostParams::default(), &cka)
        .await
        .expect("creating the ClusterKopfAudit");
}

/// The chart's admission policy for generated KopfAudits, rendered by helm for an
/// auditor running as the ServiceAccount `kopf-audit` of `home`, its binding limited to
/// the namespace `tenant` (the policy is cluster-wide; other tests' auditors write
/// their own generated KopfAudits meanwhile). Deleted when dropped.
struct GeneratedAuditsPolicy {
    name: String,
}

impl GeneratedAuditsPolicy {
    fn apply(home: &str, tenant: &str) -> GeneratedAuditsPolicy {
        let release = format!("e2e-{home}");
        let out = std::process::Command::new(crate::chart::helm())
            .args(["template", &release])
            .arg(support::repo().join("charts/kopf-audit"))
            .args(["-n", home, "--set", "serviceAccount.name=kopf-audit"])
            .args([
                "--api-versions",
                "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
            ])
            .args(["--show-only", "templates/generated-audits-policy.yaml"])
            .output()
            .expect("running helm");
        assert!(
            out.status.success(),
            "helm template: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut docs: Vec<serde_json::Value> = Vec::new();
        for doc in serde_yaml_ng::Deserializer::from_slice(&out.stdout) {
            let value: serde_json::Value =
                serde::Deserialize::deserialize(doc).expect("a YAML document");
            if !value.is_null() {
                docs.push(value);
            }
        }
        assert_eq!(docs.len(), 2, "a policy and its binding");
        let binding = docs
            .iter_mut()
            .find(|d| d["kind"] == "ValidatingAdmissionPolicyBinding")
            .expect("the binding");
        binding["spec"]["matchResources"] = serde_json::json!({"namespaceSelector": {
            "matchLabels": {"kubernetes.io/metadata.name": tenant}
        }});
        let name = docs[0]["metadata"]["name"]
            .as_str()
            .expect("a name")
            .to_string();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": docs});
        let (ok, _, err) = kubectl_run(&["apply", "-f", "-"], Some(&list.to_string()));
        assert!(ok, "applying the admission policy: {err}");
        say(format!("admission policy {name} bound in {tenant}"));
        GeneratedAuditsPolicy { name }
    }
}

impl Drop for GeneratedAuditsPolicy {
    fn drop(&mut self) {
        let _ = kubectl_run(
            &[
                "delete",
                "validatingadmissionpolicybinding,validatingadmissionpolicy",
                &self.name,
                "--ignore-not-found",
            ],
            None,
        );
    }
}

/// A kubeconfig for the ServiceAccount `team` of `ns`, which may do anything to
/// KopfAudits there (what a tenant's `edit` role gives).
async fn tenant_kubeconfig(client: &Client, ns: &str) -> PathBuf {
    let manifests = format!(
        r#"
apiVersion: v1
kind: ServiceAccount
metadata: {{name: team, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: team-kopfaudits, namespace: {ns}}}
rules:
- {{apiGroups: [kopfaudit.dev], resources: [kopfaudits], verbs: ["*"]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: team-kopfaudits, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: team-kopfaudits}}
subjects: [{{kind: ServiceAccount, name: team, namespace: {ns}}}]
"#
    );
    let (ok, _, err) = kubectl_run(&["apply", "-f", "-"], Some(&manifests));
    assert!(ok, "the tenant's RBAC: {err}");
    token_kubeconfig(client, ns, "team").await
}

/// Runs kubectl as the tenant: (success, stdout and stderr).
fn as_tenant(kubeconfig: &std::path::Path, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let path = kubeconfig.to_string_lossy().into_owned();
    let mut all = vec!["--kubeconfig", path.as_str()];
    all.extend_from_slice(args);
    let (ok, out, err) = kubectl_run(&all, stdin);
    (ok, format!("{out}{err}"))
}

/// Waits until the generated KopfAudit `ns/name` exists, and returns it.
async fn generated(client: &Client, ns: &str, name: &str) -> KopfAudit {
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), ns);
    wait_for(
        "the generated KopfAudit",
        Duration::from_secs(120),
        || async { api.get_opt(name).await.ok().flatten() },
    )
    .await
}

#[tokio::test]
async fn a_tenant_cannot_change_or_delete_the_platforms_generated_audit() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    ensure_cluster_crd(&client).await;
    let home = TestNamespace::create(&client, "vap-home").await;
    let tenant = TestNamespace::create(&client, "vap-tenant").await;
    let ours = [tenant.name.as_str()];
    idle_kopf_deployment(
        &client,
        &tenant.name,
        "op",
        &["-n", &tenant.name, "op.py"],
        serde_json::json!({}),
    )
    .await;
    let _policy = GeneratedAuditsPolicy::apply(&home.name, &tenant.name);
    let cka_name = format!("e2e-{}", home.name);
    let scoped = ScopedAuditor::create(&client, &home.name, &ours).await;
    let _grants = ClusterAuditGrants::apply(&home.name, &cka_name, &ours);
    let _guard = ClusterAuditGuard(cka_name.clone());
    let auditor =
        Auditor::start_cluster_wide(&scoped.kubeconfig, &home.name, &["--cluster-audits"]);
    cluster_audit(&client, &cka_name, &ours).await;
    let before = generated(&client, &tenant.name, "op").await;
    say(format!("generated: {}/{}", tenant.name, before.name_any()));

    let team = tenant_kubeconfig(&client, &tenant.name).await;
    let ns = tenant.name.as_str();
    let refused = |what: &str, (ok, out): (bool, String), says: &str| {
        assert!(!ok, "the tenant could {what}: {out}");
        assert!(out.contains(says), "{what}: {out}");
        say(format!("refused to {what}"));
    };
    refused(
        "disable a check of the generated KopfAudit",
        as_tenant(
            &team,
            &[
                "patch",
                "kopfaudit",
                "op",
                "-n",
                ns,
                "--type",
                "merge",
                "-p",
                r#"{"spec":{"checks":{"disable":["workload.liveness"]}}}"#,
            ],
            None,
        ),
        &format!("is generated by ClusterKopfAudit {cka_name}"),
    );
    refused(
        "suspend it",
        as_tenant(
            &team,
            &[
                "patch",
                "kopfaudit",
                "op",
                "-n",
                ns,
                "--type",
                "merge",
                "-p",
                r#"{"spec":{"suspend":true}}"#,
            ],
            None,
        ),
        "only kopf-audit changes its spec",
    );
    refused(
        "take its label off",
        as_tenant(
            &team,
            &[
                "label",
                "kopfaudit",
                "op",
                "-n",
                ns,
                "kopfaudit.dev/cluster-audit-",
            ],
            None,
        ),
        "only kopf-audit changes its spec, labels and owner",
    );
    refused(
        "delete it",
        as_tenant(&team, &["delete", "kopfaudit", "op", "-n", ns], None),
        "exclude it (spec.exclusions)",
    );
    let forged = format!(
        "apiVersion: kopfaudit.dev/v1alpha1\nkind: KopfAudit\nmetadata: {{name: forged, namespace: {ns}, labels: {{kopfaudit.dev/cluster-audit: {cka_name}}}}}\nspec: {{target: {{deployment: op}}}}\n"
    );
    refused(
        "create a KopfAudit labelled as generated",
        as_tenant(&team, &["create", "-f", "-"], Some(&forged)),
        "Only kopf-audit creates KopfAudits labelled",
    );

    // What stays allowed: asking for an audit now, and a KopfAudit of its own.
    let (ok, out) = as_tenant(
        &team,
        &[
            "annotate",
            "kopfaudit",
            "op",
            "-n",
            ns,
            "--overwrite",
            &format!(
                "kopfaudit.dev/requested-at={}",
                jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ")
            ),
        ],
        None,
    );
    assert!(ok, "the tenant may ask for an audit now: {out}");
    let own = format!(
        "apiVersion: kopfaudit.dev/v1alpha1\nkind: KopfAudit\nmetadata: {{name: mine, namespace: {ns}}}\nspec: {{target: {{deployment: op}}, checks: {{disable: [workload.liveness]}}}}\n"
    );
    let (ok, out) = as_tenant(&team, &["create", "-f", "-"], Some(&own));
    assert!(ok, "the tenant may write a KopfAudit of its own: {out}");

    // The generated one is unchanged, and the auditor still changes it: a new default
    // reaches it at the next discovery.
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), ns);
    let now = api.get("op").await.expect("the generated KopfAudit");
    assert_eq!(now.spec, before.spec);
    Api::<ClusterKopfAudit>::all(client.clone())
        .patch(
            &cka_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"defaults": {"interval": "45s"}}})),
        )
        .await
        .expect("changing the ClusterKopfAudit's defaults");
    wait_for(
        "the auditor to change the generated KopfAudit",
        Duration::from_secs(120),
        || async {
            let a = api.get("op").await.ok()?;
            (a.spec.interval == "45s").then_some(())
        },
    )
    .await;
    let logs = auditor.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}

/// Deployments of the fat namespace.
const FAT_DEPLOYMENTS: usize = 130;

/// Bytes of the one environment value of each (under etcd's 1.5 MiB request limit).
const FAT_BYTES: usize = 1_400_000;

/// Creates [`FAT_DEPLOYMENTS`] Deployments in `ns` (replicas 0, paused), each labelled
/// `tenant: fat` with one environment value of [`FAT_BYTES`]; the first two run kopf.
async fn fat_deployments(client: &Client, ns: &str) {
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let blob = "x".repeat(FAT_BYTES);
    for i in 0..FAT_DEPLOYMENTS {
        let name = format!("fat-{i:03}");
        let command: Vec<&str> = if i < 2 {
            vec!["kopf", "run", "-n", ns, "op.py"]
        } else {
            vec!["/app/server"]
        };
        let d: Deployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": {"tenant": "fat"}},
            "spec": {
                "replicas": 0,
                // Paused: the controller makes no ReplicaSet (another 1.4 MB each in
                // etcd, which the other tests share).
                "paused": true,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name, "tenant": "fat"}},
                    "spec": {"containers": [{
                        "name": "main", "image": "tenant/app:1", "command": command,
                        "env": [{"name": "BLOB", "value": blob}],
                    }]},
                },
            },
        }))
        .expect("Deployment JSON");
        api.create(&PostParams::default(), &d)
            .await
            .unwrap_or_else(|e| panic!("creating Deployment {ns}/{name}: {e}"));
    }
}

/// The auditor's /metrics text; empty while it does not serve yet.
fn metrics_of(auditor: &Auditor) -> String {
    support::http_get(&auditor.http, "/metrics")
        .map(|(_, body)| body)
        .unwrap_or_default()
}

/// `kopf_audit_audits_total` of the KopfAudit `ns/name`, from the auditor's /metrics.
fn audits_of(auditor: &Auditor, ns: &str, name: &str) -> f64 {
    support::audits_total(&metrics_of(auditor), ns, name)
}

/// 130 Deployments of 1.4 MB each in one namespace (182 MB as the API server sends
/// them), a KopfAudit naming one of its kopf operators (its conflict scan discovers the
/// namespace), a KopfAudit whose selector matches all 130, and a ClusterKopfAudit over
/// the namespace: after two audits of each and two discoveries, the auditor's peak
/// resident memory stays under the chart's limit, and the selector's audit is stalled
/// with TargetTooLarge instead of holding them.
#[tokio::test]
async fn fat_deployments_keep_the_auditor_under_its_memory_limit() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    ensure_cluster_crd(&client).await;
    let home = TestNamespace::create(&client, "fat-home").await;
    let fat = TestNamespace::create(&client, "fat").await;
    let ours = [fat.name.as_str()];
    say(format!(
        "creating {FAT_DEPLOYMENTS} Deployments of {FAT_BYTES} bytes in {}",
        fat.name
    ));
    fat_deployments(&client, &fat.name).await;
    let cka_name = format!("e2e-{}", home.name);
    let scoped = ScopedAuditor::create(&client, &home.name, &ours).await;
    let _grants = ClusterAuditGrants::apply(&home.name, &cka_name, &ours);
    let _guard = ClusterAuditGuard(cka_name.clone());
    let auditor =
        Auditor::start_cluster_wide(&scoped.kubeconfig, &home.name, &["--cluster-audits"]);
    wait_for("the auditor to serve", Duration::from_secs(60), || async {
        (!metrics_of(&auditor).is_empty()).then_some(())
    })
    .await;
    let at_start = auditor.peak_rss_kib();
    let audits = format!(
        "apiVersion: kopfaudit.dev/v1alpha1\nkind: KopfAudit\nmetadata: {{name: one, namespace: {ns}}}\nspec: {{target: {{deployment: fat-000}}, interval: 30s}}\n---\napiVersion: kopfaudit.dev/v1alpha1\nkind: KopfAudit\nmetadata: {{name: all, namespace: {ns}}}\nspec: {{target: {{selector: {{matchLabels: {{tenant: fat}}}}}}, interval: 30s}}\n",
        ns = fat.name
    );
    let (ok, _, err) = kubectl_run(&["apply", "-f", "-"], Some(&audits));
    assert!(ok, "the KopfAudits: {err}");
    cluster_audit(&client, &cka_name, &ours).await;
    wait_for(
        "two audits of each KopfAudit and two discoveries",
        Duration::from_secs(240),
        || async {
            let metrics = metrics_of(&auditor);
            let one = support::audits_total(&metrics, &fat.name, "one");
            let all = support::audits_total(&metrics, &fat.name, "all");
            let discovered = auditor
                .logs()
                .lines()
                .filter(|l| l.contains("cluster audit discovered"))
                .count();
            (one >= 2.0 && all >= 2.0 && discovered >= 2).then_some(())
        },
    )
    .await;
    let peak = auditor.peak_rss_kib();
    say(format!(
        "auditor VmHWM: {} MiB at start, {} MiB after two audits and two discoveries of {FAT_DEPLOYMENTS} fat Deployments",
        at_start / 1024,
        peak / 1024
    ));
    let stalled = Api::<KopfAudit>::namespaced(client.clone(), &fat.name)
        .get("all")
        .await
        .expect("the selector's KopfAudit");
    let reasons: BTreeSet<String> = stalled
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .filter(|c| c.type_ == "Stalled" && c.status == "True")
        .map(|c| c.reason.clone())
        .collect();
    assert_eq!(
        reasons,
        BTreeSet::from(["TargetTooLarge".to_string()]),
        "{:?}",
        stalled.status.map(|s| s.conditions)
    );
    assert!(audits_of(&auditor, &fat.name, "one") >= 2.0);
    assert!(
        peak / 1024 < CHART_MEMORY_LIMIT_MIB,
        "the auditor peaked at {} MiB, over the chart's limit of {CHART_MEMORY_LIMIT_MIB} MiB",
        peak / 1024
    );
    let logs = auditor.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}

/// Made-up plurals per round.
const PLURALS_PER_ROUND: usize = 32;

/// The `resource` label values of the auditor's per-request metrics.
fn resource_labels(metrics: &str) -> BTreeSet<String> {
    metrics
        .lines()
        .filter(|l| l.starts_with("kopf_audit_api_"))
        .filter_map(|l| l.split("resource=\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect()
}

/// The count of API responses under `resource="other"`.
fn other_responses(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("kopf_audit_api_responses_total{"))
        .filter(|l| l.contains("resource=\"other\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Five rounds of 32 made-up plurals in a tenant's `spec.handledResources`, each round
/// audited at once: the auditor requests every one (the `other` responses grow), and no
/// made-up plural becomes a label value, so the per-resource series stay as many as
/// before the first round.
#[tokio::test]
async fn made_up_plurals_leave_the_per_resource_metrics_bounded() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let tenant = TestNamespace::create(&client, "plurals").await;
    idle_kopf_deployment(
        &client,
        &tenant.name,
        "op",
        &["-n", &tenant.name, "op.py"],
        serde_json::json!({}),
    )
    .await;
    let scoped = ScopedAuditor::create(&client, &tenant.name, &[tenant.name.as_str()]).await;
    let auditor = Auditor::start(&scoped.kubeconfig, &tenant.name, &[]);
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), &tenant.name);
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "plurals", "namespace": tenant.name},
        "spec": {"target": {"deployment": "op"}, "interval": "30s"}
    }))
    .expect("KopfAudit JSON");
    api.create(&PostParams::default(), &audit)
        .await
        .expect("creating the KopfAudit");
    wait_for("the first audit", Duration::from_secs(120), || async {
        (audits_of(&auditor, &tenant.name, "plurals") >= 1.0).then_some(())
    })
    .await;
    let before = resource_labels(&auditor.http_get("/metrics"));
    let mut other = other_responses(&auditor.http_get("/metrics"));
    let mut made_up: BTreeSet<String> = BTreeSet::new();
    for round in 0..5 {
        let names: Vec<String> = (0..PLURALS_PER_ROUND)
            .map(|i| format!("madeup{round}x{i}"))
            .collect();
        made_up.extend(names.iter().cloned());
        let plurals: Vec<serde_json::Value> = names
            .iter()
            .map(|plural| {
                serde_json::json!({"group": "made-up.example.com", "version": "v1",
                                   "plural": plural})
            })
            .collect();
        let audited = audits_of(&auditor, &tenant.name, "plurals");
        let patched = api
            .patch(
                "plurals",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"spec": {"handledResources": plurals}})),
            )
            .await
            .expect("a round of made-up plurals");
        // An audit of this round's spec: one of the spec before it may still have been
        // running when the patch landed, and would count as an audit too.
        let generation = patched.metadata.generation;
        wait_for("the round's audit", Duration::from_secs(120), || async {
            let status = api.get("plurals").await.ok()?.status?;
            (status.observed_generation >= generation
                && audits_of(&auditor, &tenant.name, "plurals") > audited)
                .then_some(())
        })
        .await;
        let metrics = auditor.http_get("/metrics");
        let labels = resource_labels(&metrics);
        let now_other = other_responses(&metrics);
        say(format!(
            "round {round}: {} resource label values, {now_other} responses under `other`",
            labels.len()
        ));
        assert!(
            now_other >= other + PLURALS_PER_ROUND as f64,
            "round {round}: the made-up plurals were requested ({other} -> {now_other})"
        );
        other = now_other;
        let new: Vec<&String> = labels.difference(&before).collect();
        let named: Vec<&String> = labels.intersection(&made_up).collect();
        assert!(
            named.is_empty(),
            "round {round}: made-up plurals became label values: {named:?}"
        );
        assert!(
            labels.len() <= before.len() + 1,
            "round {round}: {} label values, {} before: {new:?}",
            labels.len(),
            before.len()
        );
    }
    let logs = auditor.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}

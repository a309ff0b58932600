//! Helm for real, against the local cluster: the README's install section, run word
//! for word (only `<your registry>` is filled in): `helm install` with the values it
//! sets, `helm test`, the upgrade note (the CRD applied first, then `helm upgrade` with
//! changed values), and the uninstall, after which nothing of the release is left but
//! the CRD. kwok runs the release's pods (it fakes them: the binary does not run, so
//! these tests check the objects Helm created; tests/e2e/image.rs runs the image).
//! And `values.schema.json` refuses bad values with the schema's message.

use crate::chart::helm;
use crate::operator::ensure_crd;
use crate::support::{self, TestNamespace, say};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The README's "Install with Helm" section.
fn install_section() -> String {
    let readme = std::fs::read_to_string(support::repo().join("README.md")).expect("README.md");
    let start = readme
        .find("\n## Install with Helm\n")
        .expect("the README's `## Install with Helm` section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end].to_string()
}

/// The section's ```sh blocks, each as its commands (continuation lines joined,
/// comments dropped).
fn sh_blocks(section: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```sh" {
            continue;
        }
        let mut commands = Vec::new();
        let mut current = String::new();
        for line in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            let code = line.split(" #").next().unwrap_or_default().trim_end();
            if code.trim_start().starts_with('#') || code.trim().is_empty() {
                continue;
            }
            match code.strip_suffix('\\') {
                Some(part) => current.push_str(part),
                None => {
                    current.push_str(code);
                    commands.push(current.split_whitespace().collect::<Vec<_>>().join(" "));
                    current.clear();
                }
            }
        }
        blocks.push(commands);
    }
    blocks
}

/// A lock held across test processes sharing the work dir (the cluster is shared per
/// work dir, and the README's release has one fixed name); released when dropped.
struct Lock(PathBuf);

impl Lock {
    fn take(name: &str) -> Lock {
        let path = support::workdir().join(format!("{name}.lock"));
        let start = Instant::now();
        loop {
            match std::fs::create_dir(&path) {
                Ok(()) => return Lock(path),
                Err(_) => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(1200));
                    if stale {
                        let _ = std::fs::remove_dir(&path);
                        continue;
                    }
                    assert!(
                        start.elapsed() < Duration::from_secs(900),
                        "{} held for 15 minutes",
                        path.display()
                    );
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Runs one README command with bash as a user would: helm and the cluster's kubectl
/// first on PATH, KUBECONFIG the admin's, in the repository root.
fn shell(command: &str) -> String {
    let helm = helm();
    let path = format!(
        "{}:{}:{}",
        helm.parent().expect("helm's dir").display(),
        support::kubectl()
            .parent()
            .expect("kubectl's dir")
            .display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = support::workdir().join("helm-home");
    say(format!("$ {command}"));
    let started = Instant::now();
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", command])
        .current_dir(support::repo())
        .env("PATH", path)
        .env("KUBECONFIG", support::kubeconfig_path())
        .env("KUBECACHEDIR", support::workdir().join("kube-cache"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "`{command}` failed:\n{text}");
    say(format!("  ok in {:.1}s", started.elapsed().as_secs_f64()));
    text
}

/// `kubectl get -o json` as the admin; the object or list, None when not found.
fn get(args: &[&str]) -> Option<Json> {
    let mut all = vec!["get", "-o", "json"];
    all.extend_from_slice(args);
    let (ok, out, _) = support::kubectl_run(&all, None);
    ok.then(|| serde_json::from_str(&out).expect("kubectl JSON"))
}

/// Names of the objects of `kinds` labelled as the release's, in `namespace` or (None)
/// cluster-wide.
fn release_objects(kinds: &str, namespace: Option<&str>, selector: &str) -> Vec<String> {
    let mut args = vec![kinds, "-l", selector];
    if let Some(ns) = namespace {
        args.extend(["-n", ns]);
    }
    get(&args)
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or_default(),
                o["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn container_args(deployment: &Json) -> Vec<String> {
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_string())
        .collect()
}

const RELEASE: &str = "kopf-audit";
const NAMESPACE: &str = "kopf-audit";
const NAMESPACED_KINDS: &str = "deployments,replicasets,pods,services,serviceaccounts,configmaps,jobs,roles,rolebindings,networkpolicies,poddisruptionbudgets";

#[tokio::test]
async fn the_readmes_helm_install_test_upgrade_and_uninstall_work_word_for_word() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let _lock = Lock::take("helm-readme");
    let section = install_section();
    let blocks = sh_blocks(&section);
    assert_eq!(
        blocks.len(),
        3,
        "install, upgrade, uninstall blocks: {blocks:?}"
    );
    let fill = |c: &String| c.replace("<your registry>", "localhost");
    let (install, upgrade, uninstall) = (&blocks[0], &blocks[1], &blocks[2]);
    // A release left by an interrupted run goes first.
    let (_, list, _) = support::kubectl_run(&["get", "namespace", NAMESPACE, "-o", "name"], None);
    if !list.trim().is_empty() {
        say("a previous run's release is still there: removing it");
        let _ = Command::new(helm())
            .args(["uninstall", RELEASE, "-n", NAMESPACE, "--wait"])
            .env("KUBECONFIG", support::kubeconfig_path())
            .status();
        let _ = support::kubectl_run(&["delete", "namespace", NAMESPACE, "--wait=true"], None);
    }
    let selector = format!("app.kubernetes.io/instance={RELEASE}");

    // Install, as the README says.
    assert!(install[0].starts_with("helm install "), "{install:?}");
    shell(&fill(&install[0]));
    let deployment = get(&["deployment", RELEASE, "-n", NAMESPACE]).expect("the Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"], "localhost/kopf-audit:0.1.0",
        "the values the README sets"
    );
    assert_eq!(
        deployment["status"]["readyReplicas"], 1,
        "--wait: kwok runs the pod"
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"],
        RELEASE
    );
    let service = get(&["service", &format!("{RELEASE}-metrics"), "-n", NAMESPACE])
        .expect("the metrics Service");
    for (kind, name) in [
        ("serviceaccount", RELEASE.to_string()),
        ("configmap", format!("{RELEASE}-dashboard")),
        // On by default, and accepted by the API server (kwok enforces none).
        ("networkpolicy", RELEASE.to_string()),
    ] {
        assert!(
            get(&[kind, &name, "-n", NAMESPACE]).is_some(),
            "{kind}/{name}"
        );
    }
    for (kind, name) in [
        ("clusterrole", RELEASE.to_string()),
        ("clusterrolebinding", RELEASE.to_string()),
        ("clusterrole", format!("{RELEASE}-handled-resources")),
        ("clusterrolebinding", format!("{RELEASE}-handled-resources")),
        ("crd", "kopfaudits.kopfaudit.dev".to_string()),
    ] {
        assert!(get(&[kind, &name]).is_some(), "{kind}/{name}");
    }
    let dashboard = get(&[
        "configmap",
        &format!("{RELEASE}-dashboard"),
        "-n",
        NAMESPACE,
    ])
    .expect("dashboard");
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    assert!(
        get(&[
            "role",
            &format!("{RELEASE}-leader-election"),
            "-n",
            NAMESPACE
        ])
        .is_none()
    );

    // The test hook asks /readyz of the metrics Service, whose selector is the pod's.
    let hooks = shell(&format!("helm get hooks {RELEASE} -n {NAMESPACE}"));
    let port = service["spec"]["ports"][0]["port"].as_i64().expect("port");
    let url = format!("http://{RELEASE}-metrics.{NAMESPACE}.svc:{port}/readyz");
    assert!(hooks.contains(&url), "the hook GETs {url}:\n{hooks}");
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(&pod_labels[k], v, "the Service selects the operator's pods");
    }
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "http");
    assert_eq!(container["ports"][0]["name"], "http");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    for command in &install[1..] {
        let out = shell(&fill(command));
        if command.starts_with("helm test ") {
            // kwok completes the hook's pod (it does not run wget): Helm's part is real.
            assert!(out.contains("Phase:") && out.contains("Succeeded"), "{out}");
            assert!(
                get(&["job", &format!("{RELEASE}-test-readiness"), "-n", NAMESPACE]).is_none(),
                "hook-succeeded deletes the test Job"
            );
        }
    }

    // The upgrade note: the CRD first (Helm never upgrades it), then changed values.
    assert!(
        upgrade
            .iter()
            .any(|c| c.contains("kubectl apply") && c.contains("crds/")),
        "{upgrade:?}"
    );
    assert!(
        upgrade.iter().any(|c| c.starts_with("helm upgrade ")),
        "{upgrade:?}"
    );
    for command in upgrade {
        shell(&fill(command));
    }
    let deployment = get(&["deployment", RELEASE, "-n", NAMESPACE]).expect("the Deployment");
    let args = container_args(&deployment);
    for flag in ["--leader-election", &format!("--lease-name={RELEASE}")] {
        assert!(
            args.iter().any(|a| a == flag),
            "{flag} after the upgrade: {args:?}"
        );
    }
    assert_eq!(deployment["spec"]["replicas"], 2);
    // Two replicas: a rolling update that keeps every ready replica (a standby is
    // ready), and a PodDisruptionBudget for drains.
    assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(
        deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        0
    );
    let budget = get(&["poddisruptionbudget", RELEASE, "-n", NAMESPACE])
        .expect("the PodDisruptionBudget, with two replicas");
    assert_eq!(budget["spec"]["maxUnavailable"], 1);
    let schema = get(&["flowschema", RELEASE]).expect("the FlowSchema, accepted by the API server");
    assert_eq!(
        schema["spec"]["priorityLevelConfiguration"]["name"], RELEASE,
        "{schema}"
    );
    assert!(get(&["prioritylevelconfiguration", RELEASE]).is_some());
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "localhost/kopf-audit:0.1.0",
        "the install's values are kept"
    );
    assert!(
        get(&[
            "configmap",
            &format!("{RELEASE}-dashboard"),
            "-n",
            NAMESPACE
        ])
        .is_some()
    );
    assert!(
        get(&[
            "role",
            &format!("{RELEASE}-leader-election"),
            "-n",
            NAMESPACE
        ])
        .is_some()
    );
    let status = shell(&format!("helm status {RELEASE} -n {NAMESPACE}"));
    assert!(
        status.contains("REVISION: 2") && status.contains("STATUS: deployed"),
        "{status}"
    );

    // Uninstall: nothing of the release is left but the CRD.
    assert!(uninstall[0].starts_with("helm uninstall "), "{uninstall:?}");
    shell(&fill(&uninstall[0]));
    let start = Instant::now();
    loop {
        let mut left = release_objects(NAMESPACED_KINDS, Some(NAMESPACE), &selector);
        left.extend(release_objects(
            "clusterroles,clusterrolebindings,flowschemas,prioritylevelconfigurations",
            None,
            &selector,
        ));
        left.extend(release_objects(
            "secrets",
            Some(NAMESPACE),
            &format!("owner=helm,name={RELEASE}"),
        ));
        if left.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "left after helm uninstall: {left:?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let pods = get(&["pods", "-n", NAMESPACE]).expect("pods");
    assert_eq!(
        pods["items"].as_array().map(Vec::len),
        Some(0),
        "no pod left: {pods}"
    );
    assert!(
        get(&["crd", "kopfaudits.kopfaudit.dev"]).is_some(),
        "the CRD stays, as Helm does"
    );
    say(format!(
        "after helm uninstall only the CRD is left ({}s)",
        start.elapsed().as_secs()
    ));
    for command in &uninstall[1..] {
        shell(&fill(command));
    }
    assert!(
        get(&["namespace", NAMESPACE]).is_none(),
        "the namespace is deleted"
    );
    assert!(
        section.contains("`kubectl delete crd kopfaudits.kopfaudit.dev`"),
        "the README says how to remove the CRD (not run here: the cluster is shared)"
    );
}

/// `helm install`, `helm template` and `helm lint --strict` with a bad value: each fails
/// with the schema's message, and nothing is installed.
async fn refused(set: &str, message: &str) {
    let admin = support::admin_client().await;
    let ns = TestNamespace::create(&admin, "badvalues").await;
    let chart = support::repo().join("charts/kopf-audit");
    for verb in ["install", "template"] {
        let out = Command::new(helm())
            .args([verb, "bad"])
            .arg(&chart)
            .args(["-n", &ns.name, "--set", set])
            .env("KUBECONFIG", support::kubeconfig_path())
            .output()
            .expect("helm");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "helm {verb} --set {set} must fail");
        assert!(
            stderr.contains("values don't meet the specifications of the schema")
                && stderr.contains(message),
            "helm {verb} --set {set}: expected `{message}` in:\n{stderr}"
        );
        say(format!(
            "helm {verb} --set {set}: {}",
            stderr.lines().last().unwrap_or_default().trim()
        ));
    }
    let lint = Command::new(helm())
        .args(["lint", "--strict"])
        .arg(&chart)
        .args(["--set", set])
        .output()
        .expect("helm");
    let lint_out = String::from_utf8_lossy(&lint.stdout);
    assert!(
        !lint.status.success() && lint_out.contains(message),
        "helm lint --strict --set {set}: expected `{message}` in:\n{lint_out}"
    );
    let (_, out, _) =
        support::kubectl_run(&["get", "all,secrets", "-n", &ns.name, "-o", "name"], None);
    assert!(
        !out.lines().any(|l| !l.starts_with("secret/default-token")),
        "nothing installed: {out}"
    );
}

#[tokio::test]
async fn the_schema_refuses_zero_replicas() {
    refused("replicas=0", "at '/replicas': minimum: got 0, want 1").await;
}

#[tokio::test]
async fn the_schema_refuses_an_alert_for_that_is_no_prometheus_duration() {
    refused(
        "prometheusRule.nonCompliant.for=15 minutes",
        "at '/prometheusRule/nonCompliant/for': '15 minutes' does not match pattern",
    )
    .await;
}

#[tokio::test]
async fn the_schema_refuses_a_misspelt_dashboard_value() {
    refused(
        "grafanaDashboard.enable=true",
        "at '/grafanaDashboard': additional properties 'enable' not allowed",
    )
    .await;
}

#[tokio::test]
async fn the_schema_refuses_a_misspelt_top_level_key() {
    refused(
        "replica=3",
        "at '': additional properties 'replica' not allowed",
    )
    .await;
}

#[tokio::test]
async fn the_schema_refuses_a_misspelt_service_monitor_value() {
    refused(
        "serviceMonitor.enable=true",
        "at '/serviceMonitor': additional properties 'enable' not allowed",
    )
    .await;
}

#[tokio::test]
async fn the_schema_refuses_a_memory_limit_that_is_no_quantity() {
    refused(
        "resources.limits.memory=lots",
        "at '/resources/limits/memory': 'lots' does not match pattern",
    )
    .await;
}

/// tracing would read `verbose` as a target name and log nothing of the operator's;
/// the schema names the levels (as `kopf-audit run --log-level` does).
#[tokio::test]
async fn the_schema_refuses_an_unknown_log_level() {
    refused(
        "logLevel=verbose",
        "at '/logLevel': 'verbose' does not match pattern '^([A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*=)?(error|warn|warning|info|debug|trace|off)",
    )
    .await;
}

/// `--reports` takes one of four words; a misspelt one would stop the auditor at start.
#[tokio::test]
async fn the_schema_refuses_an_unknown_report_kind() {
    refused(
        "reports=openreports",
        "at '/reports': value must be one of 'policy-report', 'open-reports', 'both', 'none'",
    )
    .await;
}

//! The chart's alerts and dashboard, evaluated by Prometheus itself (Debian's
//! `prometheus` package: Prometheus 2.42 and promtool):
//!
//! - `promtool check rules` and `promtool test rules` (hack/prometheus/alerts-test.yaml)
//!   on the PrometheusRule's groups extracted from the rendered chart;
//! - every PromQL expression of the dashboard (charts/kopf-audit/monitoring/) passes
//!   `promtool check rules`, and the ConfigMap that ships it renders;
//! - a real Prometheus on loopback scrapes two auditors during a fixture run: the
//!   broken fixture's `KopfAuditNonCompliant` goes pending, then firing; the good one's
//!   never; and the dashboard's expressions return series;
//! - kube-state-metrics (hack/build-kube-state-metrics.sh) with the chart's
//!   CustomResourceStateMetrics config exports the KopfAudits' conditions.

use crate::image::{audited, render};
use crate::operator::{audit_for, create_audit, ensure_crd, fixture_deployment};
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use kube::ResourceExt;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn tool(name: &str) -> PathBuf {
    let path = PathBuf::from("/usr/bin").join(name);
    assert!(
        path.is_file(),
        "{} is missing: apt-get install -y prometheus (Debian's package brings prometheus and promtool; hack/test.sh installs it)",
        path.display()
    );
    path
}

/// A fresh directory under the work dir.
fn scratch(name: &str) -> PathBuf {
    let dir = support::workdir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The PrometheusRule's `spec` (its `groups`) rendered with `sets`, as a rule file.
fn rule_file(sets: &[String]) -> String {
    let mut all = vec!["prometheusRule.enabled=true".to_string()];
    all.extend_from_slice(sets);
    let objects = render("kopf-audit", "monitoring", &all);
    let rule = objects
        .iter()
        .find(|o| o["kind"].as_str() == Some("PrometheusRule"))
        .expect("the chart's PrometheusRule");
    serde_yaml_ng::to_string(&rule["spec"]).expect("yaml")
}

/// Runs promtool; panics with its output when it fails.
fn promtool(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(tool("promtool"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool {} failed:\n{text}",
        args.join(" ")
    );
    text
}

/// The dashboard's JSON, as shipped in the chart.
fn dashboard() -> Json {
    let path = support::repo().join("charts/kopf-audit/monitoring/grafana-dashboard.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("dashboard")).expect("JSON")
}

/// Every `targets[].expr` of every panel: (panel title, expression).
fn dashboard_exprs(dashboard: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                out.push((
                    panel["title"].as_str().unwrap_or_default().to_string(),
                    expr.to_string(),
                ));
            }
        }
    }
    out
}

/// An expression with Grafana's variables as Grafana sends them with "All" selected
/// (their allValue `.*`) and a concrete rate interval.
fn grafana_substituted(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$namespace", ".*")
        .replace("$job", ".*")
}

#[test]
fn promtool_checks_and_unit_tests_the_charts_alerts_and_the_dashboards_queries() {
    let dir = scratch("promtool");
    // The chart's defaults (for: 15m), as the unit tests expect.
    std::fs::write(dir.join("rules.yaml"), rule_file(&[])).expect("rules");
    let check = promtool(&dir, &["check", "rules", "rules.yaml"]);
    assert!(check.contains("SUCCESS: 7 rules found"), "{check}");
    // Every alert links a runbook heading that exists.
    let runbooks = std::fs::read_to_string(support::repo().join("docs/runbooks.md"))
        .expect("docs/runbooks.md");
    let anchors: Vec<String> = runbooks
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| h.trim().to_lowercase().replace(' ', "-"))
        .collect();
    let rules: Json = serde_yaml_ng::from_str(&rule_file(&[])).expect("rules");
    let alerts = rules["groups"][0]["rules"].as_array().expect("rules");
    for alert in alerts {
        let name = alert["alert"].as_str().expect("an alert");
        let url = alert["annotations"]["runbook_url"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no runbook_url"));
        let (page, anchor) = url.split_once('#').expect("a fragment");
        assert!(page.ends_with("/docs/runbooks.md"), "{url}");
        assert!(
            anchors.iter().any(|a| a == anchor),
            "{name}: #{anchor} is no heading of docs/runbooks.md ({anchors:?})"
        );
    }
    std::fs::copy(
        support::repo().join("hack/prometheus/alerts-test.yaml"),
        dir.join("alerts-test.yaml"),
    )
    .expect("copy the tests");
    let test = promtool(&dir, &["test", "rules", "alerts-test.yaml"]);
    assert!(test.contains("SUCCESS"), "{test}");
    say(format!(
        "promtool test rules: {}",
        test.trim().replace('\n', " ")
    ));

    // Every query of the dashboard is valid PromQL: as recording rules, promtool parses them.
    let exprs = dashboard_exprs(&dashboard());
    assert!(exprs.len() >= 12, "{exprs:?}");
    let rules: Vec<Json> = exprs
        .iter()
        .enumerate()
        .map(|(i, (_, e))| serde_json::json!({"record": format!("dashboard:query_{i}"), "expr": grafana_substituted(e)}))
        .collect();
    let file = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    std::fs::write(
        dir.join("dashboard.yaml"),
        serde_yaml_ng::to_string(&file).expect("yaml"),
    )
    .expect("write");
    let check = promtool(&dir, &["check", "rules", "dashboard.yaml"]);
    assert!(
        check.contains(&format!("SUCCESS: {} rules found", exprs.len())),
        "{check}"
    );
    for metric in [
        "kopf_audit_condition",
        "kopf_audit_findings",
        "kopf_audit_audits_total",
        "kopf_audit_audit_failures_total",
        "kopf_audit_audit_duration_seconds_bucket",
        "kopf_audit_last_audit_timestamp_seconds",
        "kopf_audit_api_requests_total",
        "kopf_audit_status_writes_total",
    ] {
        assert!(
            exprs.iter().any(|(_, e)| e.contains(metric)),
            "a panel reads {metric}"
        );
    }

    // The ConfigMap renders only when enabled, labelled for Grafana's sidecar, with
    // the dashboard as it is in the chart.
    let objects = render("kopf-audit", "monitoring", &[]);
    assert!(
        !objects
            .iter()
            .any(|o| o["kind"].as_str() == Some("ConfigMap"))
    );
    let objects = render(
        "kopf-audit",
        "monitoring",
        &["grafanaDashboard.enabled=true".to_string()],
    );
    let cm = objects
        .iter()
        .find(|o| o["kind"].as_str() == Some("ConfigMap"))
        .expect("the dashboard ConfigMap");
    assert_eq!(
        cm["metadata"]["labels"]["grafana_dashboard"].as_str(),
        Some("1")
    );
    let shipped: Json = serde_json::from_str(
        cm["data"]["kopf-audit.json"]
            .as_str()
            .expect("kopf-audit.json"),
    )
    .expect("the ConfigMap's dashboard is JSON");
    assert_eq!(shipped, dashboard());
    say(format!(
        "the dashboard's {} queries pass promtool; its ConfigMap renders",
        exprs.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child process, stopped (SIGTERM, then SIGKILL) when dropped.
struct Process(Child, &'static str);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        say(format!("{} did not stop on SIGTERM: killing it", self.1));
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Percent-encodes a query parameter.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GETs a Prometheus API path; the JSON `data`.
fn api(prom: &str, path: &str) -> Option<Json> {
    let (code, body) = support::http_get(prom, path)?;
    let json: Json = serde_json::from_str(&body).ok()?;
    (code == 200 && json["status"] == "success").then(|| json["data"].clone())
}

/// An instant query's result vector.
fn query(prom: &str, expr: &str) -> Vec<Json> {
    api(prom, &format!("/api/v1/query?query={}", encode(expr)))
        .and_then(|d| d["result"].as_array().cloned())
        .unwrap_or_default()
}

/// The `KopfAuditNonCompliant` alerts: (namespace, state).
fn non_compliant_alerts(prom: &str) -> Vec<(String, String)> {
    api(prom, "/api/v1/alerts")
        .and_then(|d| d["alerts"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|a| a["labels"]["alertname"] == "KopfAuditNonCompliant")
        .map(|a| {
            (
                a["labels"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                a["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Starts Prometheus with `dir/prometheus.yml`, its data and log in `dir`, on a free
/// loopback port; waits until it is ready.
async fn start_prometheus(dir: &Path) -> (Process, String) {
    let prom = format!("127.0.0.1:{}", support::free_port());
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("log");
    say(format!(
        "starting Prometheus on {prom} (data and log in {})",
        dir.display()
    ));
    let process = Process(
        Command::new(tool("prometheus"))
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .arg("--storage.tsdb.retention.time=1h")
            .current_dir(dir)
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting prometheus"),
        "prometheus",
    );
    wait_for("Prometheus to be ready", Duration::from_secs(60), || {
        let prom = prom.clone();
        async move { matches!(support::http_get(&prom, "/-/ready"), Some((200, _))).then_some(()) }
    })
    .await;
    (process, prom)
}

#[tokio::test]
async fn a_real_prometheus_fires_non_compliant_for_the_broken_fixture_and_never_for_the_good_one() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let bad = TestNamespace::create(&admin, "prom-bad").await;
    let good = TestNamespace::create(&admin, "prom-good").await;
    let _bad_kopf = Fixture::start("bad-resources", &bad.name, None);
    let _good_kopf = Fixture::start("good", &good.name, None);
    let kubeconfig = support::kubeconfig_path();
    // The broken fixture's auditor runs as a ServiceAccount that may write the
    // KopfAudit's status but not Events there: its Event posts get a 403, which the
    // scrape must show by verb, resource and code.
    let scoped = support::ScopedAuditor::create(&admin, &bad.name, &[]).await;
    scoped.grant(&bad.name, "status");
    let bad_auditor = Auditor::start(&scoped.kubeconfig, &bad.name, &[]);
    let good_auditor = Auditor::start(&kubeconfig, &good.name, &[]);

    // The chart's rules, with a short `for:` so that pending and firing fit in a test.
    let for_ = Duration::from_secs(20);
    let dir = scratch(&format!("prometheus-{}", bad.name));
    std::fs::write(
        dir.join("rules.yaml"),
        rule_file(&[format!(
            "prometheusRule.nonCompliant.for={}s",
            for_.as_secs()
        )]),
    )
    .expect("rules");
    promtool(&dir, &["check", "rules", "rules.yaml"]);
    let config = serde_json::json!({
        "global": {"scrape_interval": "2s", "evaluation_interval": "2s", "scrape_timeout": "2s"},
        "rule_files": ["rules.yaml"],
        "scrape_configs": [{
            // The job the chart's ServiceMonitor gives (the Service's name), as its
            // KopfAuditDown and KopfAuditAbsent rules expect.
            "job_name": "kopf-audit-metrics",
            // As the chart's ServiceMonitor: the metrics' namespace and name are the KopfAudit's.
            "honor_labels": true,
            "static_configs": [{"targets": [bad_auditor.http, good_auditor.http]}]
        }]
    });
    std::fs::write(
        dir.join("prometheus.yml"),
        serde_yaml_ng::to_string(&config).expect("yaml"),
    )
    .expect("config");
    let (_prometheus, prom) = start_prometheus(&dir).await;

    for (ns, fixture) in [(&bad.name, "bad-resources"), (&good.name, "good")] {
        let target = fixture_deployment(&admin, ns).await.name_any();
        create_audit(&admin, ns, audit_for("audit", &target, "30s"))
            .await
            .expect("creating KopfAudit audit");
        audited(&admin, fixture, ns, "audit", Duration::from_secs(180)).await;
    }
    say("both audited; watching the alerts");

    // Pending, then firing, for the broken one; nothing for the good one, while its
    // Compliant=True series has been scraped for longer than `for:`.
    let mut seen_pending = None;
    let mut seen_firing = None;
    let good_compliant = format!(
        r#"kopf_audit_condition{{namespace="{}",condition="Compliant",status="True"}} == 1"#,
        good.name
    );
    let mut good_since: Option<Instant> = None;
    let start = Instant::now();
    loop {
        let alerts = non_compliant_alerts(&prom);
        assert!(
            !alerts.iter().any(|(ns, _)| ns == &good.name),
            "KopfAuditNonCompliant for the good fixture: {alerts:?}"
        );
        for (ns, state) in &alerts {
            if ns == &bad.name && state == "pending" && seen_pending.is_none() {
                say(format!(
                    "KopfAuditNonCompliant pending for {ns} after {}s",
                    start.elapsed().as_secs()
                ));
                seen_pending = Some(Instant::now());
            }
            if ns == &bad.name && state == "firing" && seen_firing.is_none() {
                say(format!(
                    "KopfAuditNonCompliant firing for {ns} after {}s",
                    start.elapsed().as_secs()
                ));
                seen_firing = Some(Instant::now());
            }
        }
        if good_since.is_none() && !query(&prom, &good_compliant).is_empty() {
            good_since = Some(Instant::now());
        }
        let good_long_enough =
            good_since.is_some_and(|t| t.elapsed() > for_ + Duration::from_secs(10));
        if seen_firing.is_some() && good_long_enough {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "after 180s: pending {seen_pending:?}, firing {seen_firing:?}, good compliant since {good_since:?}; alerts {alerts:?}; log in {}",
            dir.display()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let (pending, firing) = (
        seen_pending.expect("pending seen before firing"),
        seen_firing.expect("firing"),
    );
    assert!(pending < firing, "pending before firing");

    // The operational metrics are scraped, and the operational alerts stay silent for
    // two healthy auditors.
    for expr in [
        r#"kopf_audit_api_responses_total{code="200"}"#,
        r#"kopf_audit_api_responses_total{verb="create",resource="events",code="403"}"#,
        r#"kopf_audit_api_request_duration_seconds_count{verb="create",resource="subjectaccessreviews"}"#,
        "kopf_audit_audits_running",
        "kopf_audit_audits_queued",
        "kopf_audit_max_concurrent_audits == 8",
        "kopf_audit_leader == 1",
        "kopf_audit_build_info == 1",
        "kopf_audit_interval_seconds",
        "process_resident_memory_bytes > 0",
        "process_open_fds > 0",
        r#"up{job="kopf-audit-metrics"} == 1"#,
    ] {
        assert!(
            !query(&prom, expr).is_empty(),
            "`{expr}` returned no series"
        );
    }
    let silent = query(
        &prom,
        r#"ALERTS{alertname=~"KopfAuditDown|KopfAuditAbsent|KopfAuditAuditsOverdue|KopfAuditAPIErrors"}"#,
    );
    assert!(
        silent.is_empty(),
        "operational alerts for healthy auditors: {silent:?}"
    );
    say(
        "API answers by code (the provoked 403 included), running audits, leader, build_info and process_* scraped; operational alerts silent",
    );

    // Every dashboard query returns series, unless none of the auditors exports a
    // metric it reads (say, no audit failed): then promtool's check above is its test.
    let exported = format!(
        "{}{}",
        support::http_get(&bad_auditor.http, "/metrics")
            .map(|r| r.1)
            .unwrap_or_default(),
        support::http_get(&good_auditor.http, "/metrics")
            .map(|r| r.1)
            .unwrap_or_default()
    );
    let exports = |metric: &str| {
        exported.lines().any(|l| {
            l.strip_prefix(metric)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
    };
    let mut live = 0;
    for (title, expr) in dashboard_exprs(&dashboard()) {
        let metrics: Vec<&str> = expr
            .match_indices("kopf_audit_")
            .map(|(at, _)| {
                let rest = &expr[at..];
                &rest[..rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len())]
            })
            .collect();
        let missing: Vec<&&str> = metrics.iter().filter(|m| !exports(m)).collect();
        if !missing.is_empty() && !expr.contains(" or vector(0)") {
            say(format!(
                "dashboard `{title}`: {missing:?} not exported in this run; promtool-checked only"
            ));
            continue;
        }
        let substituted = grafana_substituted(&expr);
        let result = query(&prom, &substituted);
        assert!(
            !result.is_empty(),
            "dashboard `{title}`: `{substituted}` returned no series"
        );
        live += 1;
    }
    say(format!(
        "{live} dashboard queries returned series from the test Prometheus"
    ));
    assert!(live >= 12, "most dashboard queries are evaluated live");
    let _ = std::fs::remove_dir_all(&dir);
}

/// kube-state-metrics as `hack/build-kube-state-metrics.sh` builds it, or a panic
/// saying how to build it.
fn kube_state_metrics() -> PathBuf {
    let script = support::repo().join("hack/build-kube-state-metrics.sh");
    let text = std::fs::read_to_string(&script).expect("the build script");
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("KSM_VERSION="))
        .expect("KSM_VERSION= in the build script")
        .trim()
        .to_string();
    let path = support::cache_dir().join(format!(
        "bin-kube-state-metrics-{version}/kube-state-metrics"
    ));
    assert!(
        path.is_file(),
        "kube-state-metrics {version} is not built at {}: run `hack/build-kube-state-metrics.sh` (from its Go module, once; hack/test.sh does it)",
        path.display()
    );
    path
}

#[tokio::test]
async fn kube_state_metrics_exports_kopfaudit_conditions_with_the_charts_config() {
    let ksm = kube_state_metrics();
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let ns = TestNamespace::create(&admin, "ksm").await;
    let _kopf = Fixture::start("bad-resources", &ns.name, None);
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    let target = fixture_deployment(&admin, &ns.name).await.name_any();
    create_audit(&admin, &ns.name, audit_for("audit", &target, "30s"))
        .await
        .expect("creating KopfAudit audit");
    audited(
        &admin,
        "bad-resources",
        &ns.name,
        "audit",
        Duration::from_secs(180),
    )
    .await;

    let config = support::repo().join("charts/kopf-audit/monitoring/kube-state-metrics.yaml");
    let port = support::free_port();
    let telemetry = support::free_port();
    let dir = scratch(&format!("ksm-{}", ns.name));
    let log = std::fs::File::create(dir.join("kube-state-metrics.log")).expect("log");
    let _ksm = Process(
        Command::new(&ksm)
            .arg(format!(
                "--kubeconfig={}",
                support::kubeconfig_path().display()
            ))
            .arg(format!(
                "--custom-resource-state-config-file={}",
                config.display()
            ))
            .arg("--custom-resource-state-only=true")
            .arg(format!("--namespaces={}", ns.name))
            .args(["--host=127.0.0.1", &format!("--port={port}")])
            .args([
                "--telemetry-host=127.0.0.1",
                &format!("--telemetry-port={telemetry}"),
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting kube-state-metrics"),
        "kube-state-metrics",
    );
    let addr = format!("127.0.0.1:{port}");
    // kube-state-metrics sorts the labels.
    let labels = |condition: &str, status: &str| {
        format!(
            r#"{{condition="{condition}",customresource_group="kopfaudit.dev",customresource_kind="KopfAudit",customresource_version="v1alpha1",name="audit",namespace="{}",status="{status}"}}"#,
            ns.name
        )
    };
    let want = format!(
        "kopfaudit_status_condition{} 1",
        labels("Compliant", "False")
    );
    let metrics = wait_for(
        "kube-state-metrics to export the KopfAudit's conditions",
        Duration::from_secs(60),
        || {
            let (addr, want) = (addr.clone(), want.clone());
            async move {
                support::http_get(&addr, "/metrics")
                    .map(|r| r.1)
                    .filter(|m| m.contains(&want))
            }
        },
    )
    .await;
    let ready_true = format!("kopfaudit_status_condition{} 1", labels("Ready", "True"));
    assert!(metrics.contains(&ready_true), "{ready_true} in\n{metrics}");
    // status.summary's counts, labelled by the field's name: `severity` is reserved
    // for error, warning and info, as the auditor's own metrics spell it.
    assert!(
        !metrics
            .lines()
            .any(|l| l.starts_with("kopfaudit_") && l.contains("severity=")),
        "no severity label in another vocabulary:\n{metrics}"
    );
    let errors = metrics
        .lines()
        .find(|l| l.starts_with("kopfaudit_status_summary{") && l.contains(r#"field="errors""#))
        .unwrap_or_else(|| panic!("error findings count in\n{metrics}"));
    let count: f64 = errors
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a value");
    assert!(count >= 1.0, "bad-resources has error findings: {errors}");
    assert!(
        metrics.contains("kopfaudit_status_last_audit_time_seconds{"),
        "{metrics}"
    );
    // A real Prometheus scrapes it (it negotiates OpenMetrics, where the state set
    // type is defined) and answers the alert's kind of query.
    let config = serde_json::json!({
        "global": {"scrape_interval": "2s", "scrape_timeout": "2s"},
        "scrape_configs": [{
            "job_name": "kube-state-metrics",
            "honor_labels": true,
            "static_configs": [{"targets": [addr]}]
        }]
    });
    std::fs::write(
        dir.join("prometheus.yml"),
        serde_yaml_ng::to_string(&config).expect("yaml"),
    )
    .expect("config");
    let (_prometheus, prom) = start_prometheus(&dir).await;
    let expr = format!(
        r#"kopfaudit_status_condition{{namespace="{}",name="audit",condition="Compliant",status="False"}} == 1"#,
        ns.name
    );
    wait_for(
        "Prometheus to have scraped the KopfAudit's Compliant=False from kube-state-metrics",
        Duration::from_secs(60),
        || {
            let (prom, expr) = (prom.clone(), expr.clone());
            async move { (!query(&prom, &expr).is_empty()).then_some(()) }
        },
    )
    .await;
    assert!(
        !query(&prom, r#"up{job="kube-state-metrics"} == 1"#).is_empty(),
        "the scrape is up"
    );
    say(format!("kube-state-metrics: {want}; {errors}"));
    let _ = std::fs::remove_dir_all(&dir);
}

//! The kubectl plugin: the `kubectl-kopf_audit` binary on PATH makes `kubectl
//! kopf-audit check ...` and `kubectl kopf-audit report -A` work through the real
//! kubectl (the one built with the cluster), which finds the plugin by name and passes
//! it the arguments after `kopf-audit`; the kubeconfig comes from KUBECONFIG, as for
//! every kubectl plugin.

use crate::image::audited;
use crate::operator::{
    audit_for, condition, create_audit, ensure_crd, fixture_deployment, wait_status,
};
use crate::support::{self, Auditor, Fixture, TestNamespace, expectations, say};
use kube::ResourceExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A PATH directory holding only the plugin (a symlink to the built binary), one per
/// call: tests run at once, and one re-creating a shared directory would take the
/// plugin away from the other mid-test ("unknown command").
fn plugin_dir() -> PathBuf {
    support::bin_dir(
        "kubectl-plugins",
        &[(
            "kubectl-kopf_audit",
            PathBuf::from(env!("CARGO_BIN_EXE_kubectl-kopf_audit")),
        )],
    )
}

/// Runs the cluster's kubectl with the plugin on PATH; (exit code, stdout, stderr).
fn kubectl(plugins: &Path, args: &[&str]) -> (i32, String, String) {
    let path = format!(
        "{}:{}",
        plugins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(support::kubectl())
        .args(args)
        .env("PATH", path)
        .env("KUBECONFIG", support::kubeconfig_path())
        .env("KUBECACHEDIR", support::workdir().join("kube-cache"))
        .output()
        .expect("kubectl");
    say(format!(
        "$ kubectl {} -> exit {:?}",
        args.join(" "),
        out.status.code()
    ));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn kubectl_kopf_audit_check_and_report_work_as_a_kubectl_plugin() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let plugins = plugin_dir();

    let (code, out, err) = kubectl(&plugins, &["plugin", "list"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("kubectl-kopf_audit"),
        "kubectl finds the plugin: {out}{err}"
    );

    let ns = TestNamespace::create(&admin, "plugin").await;
    let _kopf = Fixture::start("bad-resources", &ns.name, None);
    let deployment = fixture_deployment(&admin, &ns.name).await.name_any();

    // check: one audit, exit 1 at error findings (--fail-on error, the default).
    let (code, out, err) = kubectl(
        &plugins,
        &[
            "kopf-audit",
            "check",
            "-n",
            &ns.name,
            "--deployment",
            &deployment,
            "--output",
            "json",
        ],
    );
    assert_eq!(code, 1, "bad-resources has error findings: {out}{err}");
    let status: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("JSON ({e}): {out}{err}"));
    let found: Vec<&str> = status["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["check"].as_str())
        .collect();
    for id in expectations("bad-resources").must {
        assert!(found.contains(&id.as_str()), "{id} in {found:?}");
    }
    let (code, out, err) = kubectl(
        &plugins,
        &[
            "kopf-audit",
            "check",
            "-n",
            &ns.name,
            "--deployment",
            &deployment,
            "--fail-on",
            "never",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("workload."),
        "the table names the checks: {out}"
    );

    // report -A: the stored results of the KopfAudits the operator wrote.
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&admin, &ns.name, audit_for("audit", &deployment, "30s"))
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
    let (code, out, err) = kubectl(&plugins, &["kopf-audit", "report", "-A"]);
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains(&ns.name) && l.contains("audit"))
        .unwrap_or_else(|| panic!("the report lists {}/audit:\n{out}", ns.name));
    say(format!("report -A: {line}"));

    // The shared output flags: report of one namespace as HTML fails at --fail-on error
    // (bad-resources has error findings), and the page names the KopfAudit, its
    // conditions and a finding's check ID with its fix.
    let (code, page, err) = kubectl(
        &plugins,
        &[
            "kopf-audit",
            "report",
            "-n",
            &ns.name,
            "-o",
            "html",
            "--fail-on",
            "error",
        ],
    );
    assert_eq!(code, 1, "report --fail-on error with error findings: {err}");
    let must = expectations("bad-resources").must;
    let shown = must
        .iter()
        .find(|id| page.contains(&format!("<code>{id}</code>")));
    assert!(
        page.contains(&format!("<h2>{}/audit</h2>", ns.name))
            && page.contains("<h3>Conditions</h3>")
            && page.contains("<td>Ready</td>")
            && page.contains("class=\"fix\"")
            && shown.is_some()
            && !page.contains("<script"),
        "the HTML report of {}/audit shows its conditions, findings and a fix:\n{page}",
        ns.name
    );
    // Rendered by Chromium: the KopfAudit, its Ready condition and a check, as text.
    let artifacts = crate::browser::artifacts();
    let html = artifacts.join("report-live.html");
    std::fs::write(&html, &page).expect("writing the page");
    let (_, text) = crate::browser::render(&html, &artifacts.join("report-live.png"));
    let id = shown.expect("a check shown");
    assert!(
        text.contains(&format!("{}/audit", ns.name))
            && text.contains("Ready True")
            && text.contains(&format!("{id} on ")),
        "the rendered report shows the KopfAudit, Ready and {id}:\n{text}"
    );
    say(format!("report -o html: {}", html.display()));
    let (code, yaml, err) = kubectl(
        &plugins,
        &["kopf-audit", "report", "-n", &ns.name, "-o", "yaml"],
    );
    assert_eq!(code, 0, "report fails only with --fail-on: {err}");
    assert!(
        yaml.contains("name: audit") && yaml.contains("findings:"),
        "{yaml}"
    );
    let (code, out, _) = kubectl(&plugins, &["kopf-audit", "--version"]);
    assert_eq!(code, 0);
    assert!(out.contains(env!("CARGO_PKG_VERSION")), "{out}");
    let _ = std::fs::remove_dir_all(&plugins);
}

/// `kubectl explain` shows the CRD's own descriptions, the `kopfaudit` category lists
/// KopfAudits, and `kubectl get ka` says in READY and REASON why an audit is stalled.
#[tokio::test]
async fn kubectl_explains_kopfaudits_and_lists_why_one_is_stalled() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;

    let (ok, kind, err) = support::kubectl_run(&["explain", "kopfaudit"], None);
    assert!(ok, "{err}");
    assert!(
        kind.contains("KopfAudit audits one Python operator written with kopf")
            && !kind.contains("Auto-generated"),
        "{kind}"
    );
    let (ok, spec, err) = support::kubectl_run(&["explain", "kopfaudit.spec"], None);
    assert!(ok, "{err}");
    assert!(
        spec.contains("Desired audit: which kopf operator to audit, how often and how strictly")
            && spec.contains("interval"),
        "{spec}"
    );
    let (ok, listed, err) = support::kubectl_run(
        &["api-resources", "--categories=kopfaudit", "-o", "name"],
        None,
    );
    assert!(ok, "{err}");
    assert_eq!(listed.trim(), "kopfaudits.kopfaudit.dev");

    let ns = TestNamespace::create(&admin, "columns").await;
    create_audit(
        &admin,
        &ns.name,
        audit_for("missing", "no-such-deployment", "30s"),
    )
    .await
    .expect("create the KopfAudit");
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    wait_status(
        &admin,
        &ns.name,
        "missing",
        "Ready=False, reason TargetNotFound",
        Duration::from_secs(60),
        |s| condition(s, "Ready") == Some(("False", "TargetNotFound")),
    )
    .await;
    let (ok, table, err) = support::kubectl_run(&["get", "ka", "-n", &ns.name], None);
    assert!(ok, "{err}");
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header[..4],
        ["NAME", "READY", "REASON", "COMPLIANT"],
        "{table}"
    );
    assert_eq!(
        row[..4],
        ["missing", "False", "TargetNotFound", "Unknown"],
        "{table}"
    );
    say(format!("kubectl get ka:\n{table}"));
}

/// The auditor's `kopf_audit_audits_total` for one KopfAudit.
fn audits_run(auditor: &Auditor, ns: &str, name: &str) -> u64 {
    let metrics = auditor.http_get("/metrics");
    let series = format!("kopf_audit_audits_total{{namespace=\"{ns}\",name=\"{name}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&series))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `kubectl kopf-audit audit-now` sets `kopfaudit.dev/requested-at`; the operator runs
/// exactly one audit for it (its interval is an hour) and echoes the value in
/// `status.lastHandledRequestedAt`.
#[tokio::test]
async fn audit_now_triggers_exactly_one_audit_and_is_echoed_in_status() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let plugins = plugin_dir();
    let ns = TestNamespace::create(&admin, "audit-now").await;
    let _kopf = Fixture::start("good", &ns.name, None);
    let deployment = fixture_deployment(&admin, &ns.name).await.name_any();
    let auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    create_audit(&admin, &ns.name, audit_for("now", &deployment, "1h"))
        .await
        .expect("create");
    wait_status(
        &admin,
        &ns.name,
        "now",
        "the first audit",
        Duration::from_secs(180),
        |s| condition(s, "Ready").is_some_and(|(status, _)| status == "True"),
    )
    .await;
    // Settled: no audit is due for an hour.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = audits_run(&auditor, &ns.name, "now");
    assert!(before >= 1, "the first audit is counted");

    let (code, out, err) = kubectl(
        &plugins,
        &[
            "kopf-audit",
            "audit-now",
            "now",
            "-n",
            &ns.name,
            "--timeout",
            "2m",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let audit = wait_status(
        &admin,
        &ns.name,
        "now",
        "the requested audit echoed",
        Duration::from_secs(10),
        |s| s.last_handled_requested_at.is_some(),
    )
    .await;
    let requested = audit
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(kopf_audit::catalog::REQUESTED_AT_ANNOTATION))
        .cloned();
    assert_eq!(
        audit
            .status
            .as_ref()
            .and_then(|s| s.last_handled_requested_at.clone()),
        requested,
        "the status echoes the annotation"
    );
    // Exactly one more audit, and no more after it settles.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = audits_run(&auditor, &ns.name, "now");
    assert_eq!(
        after,
        before + 1,
        "one requested audit: {before} -> {after}"
    );
    say(format!(
        "audit-now: audits {before} -> {after}, echoed {requested:?}"
    ));
    let _ = std::fs::remove_dir_all(&plugins);
}

/// A tenant who writes a new `kopfaudit.dev/requested-at` every second for a minute
/// gets at most one audit per `--audit-now-min-interval` (20 s here: the first at
/// once, then one per gap, five with the wait after the minute), the wait echoed in
/// `status.requestDeferredUntil`, and the last request still answered.
#[tokio::test]
async fn a_minute_of_audit_now_requests_runs_one_audit_per_gap() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let ns = TestNamespace::create(&admin, "audit-burst").await;
    let _kopf = Fixture::start("good", &ns.name, None);
    let deployment = fixture_deployment(&admin, &ns.name).await.name_any();
    let auditor = Auditor::start(
        &support::kubeconfig_path(),
        &ns.name,
        &["--audit-now-min-interval", "20"],
    );
    create_audit(&admin, &ns.name, audit_for("burst", &deployment, "1h"))
        .await
        .expect("create");
    wait_status(
        &admin,
        &ns.name,
        "burst",
        "the first audit",
        Duration::from_secs(180),
        |s| condition(s, "Ready").is_some_and(|(status, _)| status == "True"),
    )
    .await;
    // Past the gap of the first audit, so that the burst starts with one audit.
    tokio::time::sleep(Duration::from_secs(21)).await;
    let before = audits_run(&auditor, &ns.name, "burst");
    let api: kube::Api<kopf_audit::api::KopfAudit> = kube::Api::namespaced(admin.clone(), &ns.name);
    let mut deferred_seen = false;
    let mut last = String::new();
    for n in 0..60 {
        last = format!("burst-{n}");
        let patch = serde_json::json!({"metadata": {"annotations": {
            kopf_audit::catalog::REQUESTED_AT_ANNOTATION: last.clone()
        }}});
        let patched = api
            .patch(
                "burst",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .expect("the annotation is written");
        deferred_seen |= patched
            .status
            .as_ref()
            .is_some_and(|s| s.request_deferred_until.is_some());
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let answered = wait_status(
        &admin,
        &ns.name,
        "burst",
        "the last request answered",
        Duration::from_secs(60),
        |s| s.last_handled_requested_at.as_deref() == Some(last.as_str()),
    )
    .await;
    let after = audits_run(&auditor, &ns.name, "burst");
    say(format!(
        "audit-now burst: 60 requests in a minute ran {} audits (gap 20 s), deferral echoed: {deferred_seen}",
        after - before
    ));
    assert!(
        after - before <= 5,
        "at most one audit per gap: {before} -> {after}"
    );
    assert!(after > before, "the requests were answered");
    assert!(
        deferred_seen,
        "the wait is echoed in status.requestDeferredUntil"
    );
    assert!(
        answered
            .status
            .as_ref()
            .is_some_and(|s| s.request_deferred_until.is_none()),
        "the echo is gone once the deferred audit ran"
    );
}

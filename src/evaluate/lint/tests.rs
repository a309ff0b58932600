use super::*;
use crate::gather::files::{FilesInput, read};
use std::collections::BTreeSet;

/// Writes a small operator repository and lints it.
fn lint_repo(files: &[(&str, &str)]) -> LintReport {
    lint_repo_with(files, &Policy::default())
}

/// Writes a small operator repository and lints it under `policy`.
fn lint_repo_with(files: &[(&str, &str)], policy: &Policy) -> LintReport {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kopf-audit-lint-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    }
    let linted = read(&FilesInput {
        path: Some(dir.clone()),
        namespace: "ops".into(),
        ..FilesInput::default()
    })
    .expect("reads");
    let report = lint(&linted, policy);
    let _ = std::fs::remove_dir_all(&dir);
    report
}

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      serviceAccountName: op\n      containers:\n      - name: op\n        image: op:1\n        command: [python, /app/main.py]\n";

const MAIN: &str = "import kopf\nimport time\n\n@kopf.on.create('pods')\nasync def created(**kwargs):\n    time.sleep(1)  # kopf-audit: ignore[source.blocking-call] measured: 1 ms in tests\n\n@kopf.on.update('pods', labels={'a': 'b'})\ndef updated(spec):\n    pass\n\nkopf.run(clusterwide=True)\n";

#[test]
fn kopf_run_from_python_is_recognised_and_both_sources_of_findings_are_located() {
    let report = lint_repo(&[("deploy/op.yaml", DEPLOYMENT), ("app/main.py", MAIN)]);
    assert_eq!(report.targets.len(), 1);
    assert!(report.targets[0].kopf, "{:?}", report.targets[0]);
    let ids: Vec<&str> = report
        .findings
        .iter()
        .map(|f| f.finding.check.as_str())
        .collect();
    assert!(!ids.contains(&"workload.not-kopf"), "{ids:?}");
    assert!(ids.contains(&"workload.memory-limit"), "{ids:?}");
    // No RBAC at all in the files: kopf's needs are all missing.
    assert!(ids.contains(&"rbac.crd-scan"), "{ids:?}");
    assert!(ids.contains(&"rbac.handled-resources"), "{ids:?}");
    let kwargs = report
        .findings
        .iter()
        .find(|f| f.finding.check == CheckId::SourceHandlerKwargs)
        .expect("updated() has no **kwargs");
    assert_eq!(kwargs.location, Some(Location::new("app/main.py", 8)));
    let memory = report
        .findings
        .iter()
        .find(|f| f.finding.check == CheckId::WorkloadMemoryLimit)
        .expect("memory limit");
    // No resources written: the kopf container's own line.
    assert_eq!(memory.location, Some(Location::new("deploy/op.yaml", 11)));
    // The comment with a reason exempts the blocking call; it is listed as skipped.
    assert!(!ids.contains(&"source.blocking-call"), "{ids:?}");
    assert!(
        report
            .skipped
            .iter()
            .any(|s| s.check == CheckId::SourceBlockingCall && s.honoured)
    );
    // The areas only a cluster shows are listed as undecided, not as compliant.
    let undecided: BTreeSet<Area> = report.undecided.iter().map(|u| u.area).collect();
    assert_eq!(
        undecided,
        BTreeSet::from([
            Area::Workload,
            Area::Events,
            Area::Persistence,
            Area::Runtime
        ])
    );
    // The checks that read cluster objects are undecided, not exempted.
    assert!(
        report
            .skipped
            .iter()
            .all(|s| s.check.area() == Area::Source),
        "{:?}",
        report.skipped
    );
}

#[test]
fn an_ignore_comment_without_a_reason_is_refused() {
    let main = MAIN.replace(" measured: 1 ms in tests", "");
    let report = lint_repo(&[("main.py", &main)]);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.finding.check == CheckId::SourceBlockingCall)
    );
    assert!(
        report
            .skipped
            .iter()
            .any(|s| s.check == CheckId::SourceBlockingCall && !s.honoured)
    );
    assert!(
        report.notes.iter().any(|n| n.contains("No Deployment")),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_deployment_that_runs_no_kopf_is_told_where_lint_looked() {
    let plain = DEPLOYMENT.replace("command: [python, /app/main.py]", "command: [nginx]");
    let report = lint_repo(&[("deploy/op.yaml", &plain)]);
    let not_kopf = report
        .findings
        .iter()
        .find(|f| f.finding.check == CheckId::WorkloadNotKopf)
        .expect("not kopf");
    assert!(
        not_kopf.finding.message.contains("Dockerfile"),
        "{}",
        not_kopf.finding.message
    );
    assert!(
        !not_kopf.finding.message.contains("its log"),
        "{}",
        not_kopf.finding.message
    );
}

/// `MAIN` with its `ignore[source.blocking-call]` comment's text `text`.
fn main_ignoring(text: &str) -> String {
    MAIN.replace(
        "# kopf-audit: ignore[source.blocking-call] measured: 1 ms in tests",
        &format!("# kopf-audit: ignore[source.blocking-call] {text}"),
    )
}

/// What lint says of `source.blocking-call`'s exemption, and whether it still found it.
fn blocking_call_exemption(report: &LintReport) -> (SkippedCheck, bool) {
    let skipped = report
        .skipped
        .iter()
        .find(|s| s.check == CheckId::SourceBlockingCall)
        .expect("reported")
        .clone();
    let found = report
        .findings
        .iter()
        .any(|f| f.finding.check == CheckId::SourceBlockingCall);
    (skipped, found)
}

/// A `# kopf-audit: ignore[...]` comment with a past date no longer exempts, and lint
/// says it lapsed in the words status uses for an annotation or a disabled check
/// (`evaluate::tests::exemptions_lapse_after_their_date_in_each_form`); one with a
/// future date does.
#[test]
fn an_ignore_comment_lapses_after_its_date() {
    let lapsed = lint_repo(&[
        ("deploy.yaml", DEPLOYMENT),
        (
            "app/main.py",
            &main_ignoring("until 1969-12-31: probed by the mesh"),
        ),
    ]);
    let (skipped, found) = blocking_call_exemption(&lapsed);
    assert!(found);
    assert!(!skipped.honoured);
    assert_eq!(
        skipped.reason,
        "lapsed on 1969-12-31: the check runs again; renew the date, or fix what it finds (given: \"probed by the mesh\")"
    );
    let holds = lint_repo(&[
        ("deploy.yaml", DEPLOYMENT),
        ("app/main.py", &main_ignoring("until 2999-12-31: measured")),
    ]);
    let (skipped, found) = blocking_call_exemption(&holds);
    assert!(!found);
    assert!(skipped.honoured);
}

/// Under `--require-exemption-expiry`, an undated comment is refused in the words status
/// uses for an annotation (`evaluate::tests::a_policy_requiring_an_end_date_...`), and
/// its check is reported; a dated one holds.
#[test]
fn a_policy_requiring_an_end_date_refuses_an_undated_comment() {
    let strict = Policy {
        require_exemption_expiry: true,
        ..Policy::default()
    };
    let undated = lint_repo_with(
        &[
            ("deploy.yaml", DEPLOYMENT),
            ("app/main.py", &main_ignoring("probed by the mesh")),
        ],
        &strict,
    );
    let (skipped, found) = blocking_call_exemption(&undated);
    assert!(found);
    assert!(!skipped.honoured);
    assert_eq!(
        skipped.reason,
        "refused: the auditor accepts only exemptions with an end date; give one as `until YYYY-MM-DD: reason` (given: \"probed by the mesh\")"
    );
    let dated = lint_repo_with(
        &[
            ("deploy.yaml", DEPLOYMENT),
            (
                "app/main.py",
                &main_ignoring("until 2999-12-31: probed by the mesh"),
            ),
        ],
        &strict,
    );
    let (skipped, found) = blocking_call_exemption(&dated);
    assert!(!found);
    assert!(skipped.honoured);
}

/// A blocking call in a helper that an async handler calls, in the same module or in
/// another module of the repository, through another helper too, is found at the call
/// site; a helper that blocks, called from a plain `def` handler, or an async helper
/// that awaits, is not.
#[test]
fn blocking_calls_are_followed_into_the_repositorys_helpers() {
    let handlers = "import kopf\nfrom .k8s import read_config\n\ndef local_wait():\n    time.sleep(2)\n\n@kopf.on.create('pods')\nasync def created(**kwargs):\n    local_wait()\n    await fine()\n    read_config()\n\n@kopf.on.update('pods')\ndef updated(**kwargs):\n    local_wait()\n\nasync def fine():\n    await asyncio.sleep(1)\n\nkopf.run(clusterwide=True)\n";
    let k8s = "import kubernetes\n\ndef read_config():\n    return _load()\n\ndef _load():\n    return kubernetes.client.CoreV1Api().read_namespaced_config_map('x', 'y')\n";
    let report = lint_repo(&[
        ("deploy.yaml", DEPLOYMENT),
        ("app/main.py", handlers),
        ("app/k8s.py", k8s),
    ]);
    let blocking: Vec<(String, u32, String)> = report
        .findings
        .iter()
        .filter(|f| f.finding.check == CheckId::SourceBlockingCall)
        .map(|f| {
            let at = f.location.clone().expect("located");
            (at.file, at.line, f.finding.message.clone())
        })
        .collect();
    assert_eq!(blocking.len(), 2, "{blocking:#?}");
    assert_eq!((blocking[0].0.as_str(), blocking[0].1), ("app/main.py", 9));
    assert!(
        blocking[0]
            .2
            .contains("calls local_wait() (defined at app/main.py:4), which calls time.sleep()"),
        "{}",
        blocking[0].2
    );
    assert_eq!((blocking[1].0.as_str(), blocking[1].1), ("app/main.py", 11));
    assert!(
        blocking[1].2.contains("read_config() (defined at app/k8s.py:3), which calls _load() (defined at app/k8s.py:6), which calls kubernetes.client.CoreV1Api()"),
        "{}",
        blocking[1].2
    );
}

/// One multi-document manifest: each workload and RBAC finding points at its field.
const FIELDS: &str = "\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: op
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: op
rules:
- apiGroups: [\"\"]
  resources: [pods]
  verbs: [get, list, watch, patch]
- apiGroups: [apps]
  resources: [\"*\"]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: op
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: op
spec:
  replicas: 2
  strategy:
    type: RollingUpdate
  selector: {matchLabels: {app: op}}
  template:
    metadata: {labels: {app: op}}
    spec:
      serviceAccountName: op
      containers:
      - name: sidecar
        image: busybox
      - name: op
        image: op:1
        command: [kopf, run, --standalone, --verbose, op.py]
        resources:
          requests:
            memory: 64Mi
          limits:
            memory: 128Mi
            cpu: 500m
";

#[test]
fn each_workload_and_rbac_finding_points_at_its_field() {
    let report = lint_repo(&[("deploy/all.yaml", FIELDS)]);
    let expected: BTreeMap<&str, u32> = BTreeMap::from([
        ("workload.memory-request", 46),
        ("workload.memory-limit", 48),
        ("workload.cpu-limit", 49),
        ("workload.cpu-request", 45),
        ("workload.liveness", 41),
        ("workload.no-scope-flag", 43),
        ("workload.debug-logging", 43),
        ("workload.standalone-replicas", 30),
        // `type: RollingUpdate` under `strategy:`, the field the fix changes.
        ("workload.rollout-overlap", 32),
        ("workload.default-service-account", 37),
        ("rbac.crd-scan", 10),
        ("rbac.events", 10),
        ("rbac.namespaces", 10),
        ("rbac.peering", 10),
        ("rbac.handled-resources", 10),
        // The rule item that grants `*`, the one to narrow.
        ("rbac.over-privileged", 14),
        ("rbac.events-patch", 10),
    ]);
    let mut seen = BTreeSet::new();
    for f in &report.findings {
        let check = f.finding.check.as_str();
        if !matches!(f.finding.check.area(), Area::Workload | Area::Rbac) {
            continue;
        }
        let line = expected
            .get(check)
            .unwrap_or_else(|| panic!("unexpected {check}"));
        assert_eq!(
            f.location,
            Some(Location::new("deploy/all.yaml", *line)),
            "{check}: {}",
            f.finding.message
        );
        seen.insert(check);
    }
    for must in [
        "workload.memory-request",
        "workload.memory-limit",
        "workload.cpu-limit",
        "workload.cpu-request",
        "workload.liveness",
        "workload.no-scope-flag",
        "workload.debug-logging",
        "workload.standalone-replicas",
        "rbac.crd-scan",
        "rbac.events",
        "rbac.over-privileged",
    ] {
        assert!(seen.contains(must), "{must} missing: {seen:?}");
    }
}

/// A binding to cluster-admin points at its `roleRef`, the line that grants it all.
#[test]
fn a_cluster_admin_binding_points_at_its_role_ref() {
    let manifest = FIELDS.replace(
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op}",
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}",
    );
    let role_ref = manifest
        .lines()
        .position(|l| l.contains("name: cluster-admin"))
        .map(|n| u32::try_from(n + 1).expect("small"))
        .expect("the roleRef line");
    let report = lint_repo(&[("deploy/all.yaml", manifest.as_str())]);
    let over: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.finding.check == CheckId::RbacOverPrivileged)
        .collect();
    assert_eq!(over.len(), 1, "{over:#?}");
    assert_eq!(
        over[0].location,
        Some(Location::new("deploy/all.yaml", role_ref)),
        "{}",
        over[0].finding.message
    );
}

/// A handler whose only logging is a helper's module-level logger, in another module.
const LOGS_IN_HELPER: &str = "import kopf\nfrom util import sync\n\n@kopf.on.create('widgets')\ndef created(spec, **kwargs):\n    sync(spec)\n";

/// The helper's module: its records go through `log`, a module-level logger.
const UTIL: &str = "import logging\n\nlog = logging.getLogger(__name__)\n\ndef sync(spec):\n    log.info('syncing')\n";

#[test]
fn a_helpers_module_logger_counts_for_a_handler_that_logs_no_other_way() {
    let files = |op: &str, util: &str| {
        lint_repo(&[
            ("op.py", op),
            ("util.py", util),
            ("requirements.txt", "kopf==1.44.6\n"),
        ])
        .findings
        .into_iter()
        .filter(|f| f.finding.check == CheckId::SourceModuleLogger)
        .collect::<Vec<_>>()
    };
    let found = files(LOGS_IN_HELPER, UTIL);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].location, Some(Location::new("op.py", 6)));
    assert!(
        found[0].finding.message.contains(
            "logs only through sync() (defined at util.py:5), which logs with the module-level logger `log` at util.py:6"
        ),
        "{}",
        found[0].finding.message
    );
    // The helper logs with the logger the handler passes: kopf's.
    let passed = files(
        &LOGS_IN_HELPER
            .replace(
                "def created(spec, **kwargs)",
                "def created(spec, logger, **kwargs)",
            )
            .replace("sync(spec)", "sync(spec, logger)"),
        &UTIL.replace("def sync(spec)", "def sync(spec, log)"),
    );
    assert!(passed.is_empty(), "{passed:#?}");
    // The handler logs with kopf's logger as well: its own records are posted.
    let own = files(
        &LOGS_IN_HELPER
            .replace(
                "def created(spec, **kwargs)",
                "def created(spec, logger, **kwargs)",
            )
            .replace(
                "    sync(spec)\n",
                "    logger.info('creating')\n    sync(spec)\n",
            ),
        UTIL,
    );
    assert!(own.is_empty(), "{own:#?}");
}

/// A handler that logs only through the root logger and structlog, and whose kopf
/// error is raised two calls down, in another module of the repository.
const FAR_RAISE: &str = "import kopf\nimport logging\nimport structlog\nfrom checks import helper\n\nlog = structlog.get_logger()\n\n@kopf.on.create('widgets')\ndef created(spec, **kwargs):\n    logging.info('creating')\n    log.info('creating too')\n    helper(spec)\n";

/// The other module: `helper()` calls `check()`, which raises.
const CHECKS: &str = "import kopf\n\ndef check(spec):\n    if not spec:\n        raise kopf.TemporaryError('not yet', delay=10)\n\ndef helper(spec):\n    check(spec)\n";

#[test]
fn root_loggers_and_errors_raised_in_helpers_are_followed() {
    let report = lint_repo(&[
        ("op.py", FAR_RAISE),
        ("checks.py", CHECKS),
        ("requirements.txt", "kopf==1.44.6\n"),
    ]);
    let of = |id: CheckId| report.findings.iter().find(|f| f.finding.check == id);
    let logger = of(CheckId::SourceModuleLogger).expect("the root logger counts");
    assert!(
        logger.finding.message.contains("root logger"),
        "{}",
        logger.finding.message
    );
    assert!(
        logger.finding.message.contains("2 time(s)"),
        "structlog counts too"
    );
    let silent = of(CheckId::SourceSilentFailure).expect("a helper's raise counts");
    assert_eq!(silent.location, Some(Location::new("op.py", 12)));
    assert!(
        silent.finding.message.contains("through helper() (defined at checks.py:7), which calls check() (defined at checks.py:3), at checks.py:5"),
        "{}",
        silent.finding.message
    );
    // The twin: the helper posts before raising, and the handler logs with kopf's logger.
    let posting = CHECKS.replace(
        "    if not spec:\n",
        "    if not spec:\n        kopf.warn({}, reason='NotYet', message='not yet')\n",
    );
    let own_logger = FAR_RAISE
        .replace("logging.info('creating')", "logger.info('creating')")
        .replace("log.info('creating too')", "logger.info('creating too')")
        .replace(
            "def created(spec, **kwargs)",
            "def created(spec, logger, **kwargs)",
        );
    let twin = lint_repo(&[
        ("op.py", own_logger.as_str()),
        ("checks.py", posting.as_str()),
        ("requirements.txt", "kopf==1.44.6\n"),
    ]);
    let ids: Vec<CheckId> = twin.findings.iter().map(|f| f.finding.check).collect();
    assert!(!ids.contains(&CheckId::SourceModuleLogger), "{ids:?}");
    assert!(!ids.contains(&CheckId::SourceSilentFailure), "{ids:?}");
}

/// A daemon that calls a helper which shells out with `subprocess.Popen` and
/// `os.system`: both block the event loop.
#[test]
fn popen_and_os_system_in_a_helper_of_an_async_daemon_block() {
    let op = "import asyncio\nimport os\nimport subprocess\nimport kopf\n\ndef status(name):\n    p = subprocess.Popen(['helm', 'status', name], stdout=subprocess.PIPE)\n    out, _ = p.communicate()\n    return out\n\ndef reinstall(name):\n    os.system('helm upgrade --install ' + name)\n\n@kopf.daemon('widgets')\nasync def monitor(name, stopped, **kwargs):\n    while not stopped:\n        status(name)\n        reinstall(name)\n        await stopped.wait(3)\n";
    let report = lint_repo(&[("op.py", op)]);
    let blocking: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.finding.check == CheckId::SourceBlockingCall)
        .map(|f| f.finding.message.as_str())
        .collect();
    assert_eq!(blocking.len(), 2, "{blocking:?}");
    assert!(blocking[0].contains("subprocess.Popen()"), "{blocking:?}");
    assert!(blocking[1].contains("os.system()"), "{blocking:?}");
}

/// Helpers that each call the next a few hundred times, and handlers that call the
/// first on as many lines: every helper is searched once per depth, so this finishes
/// at once (without that, about 256^4 lookups per check) and still finds what the
/// last helper does, at each call site.
#[test]
fn a_fan_of_repeated_calls_is_followed_once_per_helper() {
    let mut src = String::from("import kopf\nimport time\n\n");
    for (name, next) in [("a", "b"), ("b", "c"), ("c", "d")] {
        src.push_str(&format!("def {name}():\n"));
        for _ in 0..255 {
            src.push_str(&format!("    {next}()\n"));
        }
        src.push('\n');
    }
    src.push_str("def d():\n    e()\n\ndef e():\n    time.sleep(1)\n\n");
    src.push_str("@kopf.on.create('pods')\nasync def created(**kwargs):\n");
    for _ in 0..255 {
        src.push_str("    a()\n");
    }
    src.push_str("\n@kopf.on.update('pods')\nasync def updated(**kwargs):\n");
    for _ in 0..255 {
        src.push_str("    b()\n");
    }
    let report = lint_repo(&[("deploy.yaml", DEPLOYMENT), ("op.py", &src)]);
    let blocking: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.finding.check == CheckId::SourceBlockingCall)
        .map(|f| f.finding.message.as_str())
        .collect();
    // From a(), time.sleep() is in the fifth helper, past the four followed; from b()
    // in the fourth.
    assert_eq!(blocking.len(), 255, "{:?}", blocking.first());
    assert!(
        blocking.iter().all(|m| m.contains(
            "async handler updated() calls b() (defined at op.py:261), which calls c() (defined at op.py:518), which calls d() (defined at op.py:775), which calls e() (defined at op.py:778), which calls time.sleep()"
        )),
        "{:?}",
        blocking.first()
    );
}

/// A call through a module of the repository (`k8s.read_config()`) is followed into
/// that module's function; a call through a module the repository does not hold, or
/// on a name no module of it is called, is not.
#[test]
fn calls_through_the_repository_s_modules_are_followed() {
    let handlers = "import json\nimport kopf\nfrom . import k8s\n\n@kopf.on.create('pods')\nasync def created(**kwargs):\n    k8s.read_config()\n    json.dumps({})\n    other.read_config()\n\nkopf.run(clusterwide=True)\n";
    let k8s = "import time\n\ndef read_config():\n    time.sleep(1)\n\ndef dumps(x):\n    time.sleep(1)\n";
    let report = lint_repo(&[
        ("deploy.yaml", DEPLOYMENT),
        ("app/main.py", handlers),
        ("app/k8s/__init__.py", k8s),
    ]);
    let blocking: Vec<(u32, &str)> = report
        .findings
        .iter()
        .filter(|f| f.finding.check == CheckId::SourceBlockingCall)
        .map(|f| {
            (
                f.location.as_ref().expect("located").line,
                f.finding.message.as_str(),
            )
        })
        .collect();
    assert_eq!(blocking.len(), 1, "{blocking:#?}");
    assert_eq!(blocking[0].0, 7);
    assert!(
        blocking[0].1.contains(
            "calls read_config() (defined at app/k8s/__init__.py:3), which calls time.sleep()"
        ),
        "{}",
        blocking[0].1
    );
}

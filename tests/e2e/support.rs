//! Test support for the end-to-end tests: the running local cluster (hack/cluster.sh),
//! a unique namespace per test, kopf fixtures run by hack/fixture.py, and the auditor
//! itself as a local process. Everything prints what it is doing to stderr.
//!
//! No cluster means a FAILED test with the reason, never a skipped one.

#![allow(dead_code)]

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Prints a progress line for a test run.
pub fn say(what: impl AsRef<str>) {
    let now = jiff::Zoned::now().strftime("%H:%M:%S");
    eprintln!("[e2e {now}] {}", what.as_ref());
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The work directory hack/cluster.sh uses.
pub fn workdir() -> PathBuf {
    std::env::var_os("KOPF_AUDIT_WORKDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".e2e"))
}

/// A fresh directory under the work dir, unique to this process and call, holding a
/// symlink per `(name, target)`: programs a test puts first on PATH (two tests never
/// share one, so neither removes the other's while it runs).
pub fn bin_dir(tag: &str, links: &[(&str, PathBuf)]) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = workdir().join(format!("{tag}-{}-{call}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("bin dir");
    for (name, target) in links {
        std::os::unix::fs::symlink(target, dir.join(name)).expect("symlink");
    }
    dir
}

/// The admin kubeconfig of the running cluster, or a panic saying how to start one.
pub fn kubeconfig_path() -> PathBuf {
    if let Some(p) = std::env::var_os("KOPF_AUDIT_KUBECONFIG") {
        return PathBuf::from(p);
    }
    let status = Command::new("bash")
        .arg(repo().join("hack/cluster.sh"))
        .arg("status")
        .output();
    match status {
        Ok(out) if out.status.success() => workdir().join("kubeconfig"),
        Ok(out) => panic!(
            "the local cluster is not running ({}): start it with `hack/cluster.sh up`, or run everything with `hack/test.sh`",
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        Err(e) => panic!("cannot run hack/cluster.sh status: {e}"),
    }
}

/// An admin client for the local cluster.
pub async fn admin_client() -> Client {
    client_for(&kubeconfig_path()).await
}

/// A client from a kubeconfig file.
pub async fn client_for(path: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("cannot read kubeconfig {}: {e}", path.display()));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("bad kubeconfig {}: {e}", path.display()));
    Client::try_from(config).unwrap_or_else(|e| panic!("cannot build a client: {e}"))
}

/// The kubectl built with the cluster.
pub fn kubectl() -> PathBuf {
    workdir().join("bin/kubectl")
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A namespace that exists for one test and is deleted when dropped.
pub struct TestNamespace {
    /// Its name.
    pub name: String,
}

impl TestNamespace {
    /// Creates `e2e-<prefix>-<unique>`.
    pub async fn create(client: &Client, prefix: &str) -> TestNamespace {
        let unique = format!(
            "{}{}",
            std::process::id() % 10000,
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        TestNamespace::named(client, &format!("e2e-{prefix}-{unique}")).await
    }

    /// Creates a namespace with exactly this name (e.g. one a kopf pattern must match).
    pub async fn named(client: &Client, name: &str) -> TestNamespace {
        let name = name.to_string();
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
        }))
        .expect("namespace object");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
        say(format!("namespace {name} created"));
        TestNamespace { name }
    }

    /// Deletes it now (also done on drop, without waiting).
    pub async fn delete(&self, client: &Client) {
        let _ = Api::<Namespace>::all(client.clone())
            .delete(&self.name, &DeleteParams::background())
            .await;
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let _ = Command::new(kubectl())
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args([
                "delete",
                "namespace",
                &self.name,
                "--wait=false",
                "--ignore-not-found",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Sends SIGTERM to a child and waits up to `grace` before killing it.
fn terminate(child: &mut Child, grace: Duration) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A kopf operator fixture running under hack/fixture.py; stopped when dropped.
pub struct Fixture {
    child: Child,
    /// The fixture's name (its folder under tests/fixtures/kopf).
    pub name: String,
    /// The first pod's name.
    pub pod: String,
    /// The first run's CRI log file.
    pub log: PathBuf,
}

impl Fixture {
    /// Deploys a fixture into `namespace` and waits for `FIXTURE READY`.
    pub fn start(name: &str, namespace: &str, log_format: Option<&str>) -> Fixture {
        Fixture::start_with(name, namespace, log_format, &[])
    }

    /// The same, with more hack/fixture.py options (e.g. `--write-command`).
    pub fn start_with(
        name: &str,
        namespace: &str,
        log_format: Option<&str>,
        options: &[&str],
    ) -> Fixture {
        say(format!(
            "starting kopf fixture {name} in {namespace} {options:?}"
        ));
        let mut cmd = Command::new("python3");
        cmd.arg(repo().join("hack/fixture.py"))
            .args(["run", "--kubeconfig"])
            .arg(kubeconfig_path())
            .args(["--fixture", name, "--namespace", namespace])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(f) = log_format {
            cmd.args(["--log-format", f]);
        }
        cmd.args(options);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start hack/fixture.py: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let (pod, log) = loop {
            match lines.next() {
                Some(Ok(line)) if line.starts_with("FIXTURE READY") => {
                    let field = |key: &str| {
                        line.split_whitespace()
                            .find_map(|w| w.strip_prefix(key))
                            .unwrap_or_default()
                            .to_string()
                    };
                    break (field("pod="), PathBuf::from(field("log=")));
                }
                Some(Ok(line)) if line.starts_with("FIXTURE FAILED") => {
                    terminate(&mut child, Duration::from_secs(5));
                    panic!("fixture {name} failed to start: {line}");
                }
                Some(Ok(_)) => continue,
                _ => {
                    terminate(&mut child, Duration::from_secs(5));
                    panic!("fixture {name} exited before it was ready");
                }
            }
        };
        // Keep draining stdout so the supervisor never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        say(format!("fixture {name} ready: pod {pod}"));
        Fixture {
            child,
            name: name.to_string(),
            pod,
            log,
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        say(format!("stopping fixture {}", self.name));
        terminate(&mut self.child, Duration::from_secs(15));
    }
}

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// The auditor binary: this build's, or `KOPF_AUDIT_AUDITOR_BIN` (to show that a test
/// fails on an older build).
pub fn auditor_binary() -> PathBuf {
    std::env::var_os("KOPF_AUDIT_AUDITOR_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kopf-audit")))
}

/// The auditor (`kopf-audit run`) as a local process; stopped when dropped.
pub struct Auditor {
    child: Child,
    /// Where its /metrics, /healthz and /readyz are served.
    pub http: String,
    /// Its log file.
    pub log: PathBuf,
}

impl Auditor {
    /// Starts the auditor watching one namespace, with the given kubeconfig and flags.
    pub fn start(kubeconfig: &Path, namespace: &str, extra: &[&str]) -> Auditor {
        let mut args = vec!["--watch-namespace", namespace];
        args.extend_from_slice(extra);
        Auditor::spawn(kubeconfig, namespace, &args)
    }

    /// Starts the auditor watching every namespace, as the chart's default install
    /// does; `label` names its log. It audits every KopfAudit of the cluster, those of
    /// the tests running beside it too: give it a kubeconfig that may write only in the
    /// test's own namespaces.
    pub fn start_cluster_wide(kubeconfig: &Path, label: &str, extra: &[&str]) -> Auditor {
        Auditor::spawn(kubeconfig, label, extra)
    }

    /// Runs `kopf-audit run` with `args`, its log named after `label`.
    fn spawn(kubeconfig: &Path, label: &str, args: &[&str]) -> Auditor {
        let port = free_port();
        let http = format!("127.0.0.1:{port}");
        let log = workdir().join(format!("auditor-{label}-{port}.log"));
        let file = std::fs::File::create(&log).expect("auditor log file");
        say(format!(
            "starting kopf-audit for {label} (log {})",
            log.display()
        ));
        let child = Command::new(auditor_binary())
            .args([
                "run",
                "--log-format",
                "text",
                "--log-level",
                "info,kopf_audit=debug",
            ])
            .args(["--http-addr", &http])
            .args(["--instance", &format!("e2e-{port}")])
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start kopf-audit: {e}"));
        Auditor { child, http, log }
    }

    /// GETs a path of its HTTP endpoint (plain HTTP/1.0 over loopback) and returns the body.
    pub fn http_get(&self, path: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&self.http)
            .unwrap_or_else(|e| panic!("connecting to the auditor at {}: {e}", self.http));
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").expect("request");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    }

    /// Its peak resident memory so far (VmHWM), in KiB, as `/proc` tells it.
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_else(|e| panic!("reading the auditor's /proc status: {e}"));
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmHWM in the auditor's /proc status: {status}"))
    }

    /// The auditor's log so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops it with SIGTERM (a graceful shutdown).
    pub fn stop(&mut self) {
        terminate(&mut self.child, Duration::from_secs(10));
    }

    /// Whether the process is still running (it has not exited, crashed or panicked
    /// out).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills it with SIGKILL, as a crash would: nothing is released.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits until its log contains `text`.
    pub async fn wait_log(&self, text: &str, timeout: Duration) {
        let log = self.log.clone();
        wait_for(&format!("`{text}` in {}", log.display()), timeout, || {
            let log = log.clone();
            async move {
                std::fs::read_to_string(&log)
                    .ok()
                    .filter(|l| l.contains(text))
                    .map(|_| ())
            }
        })
        .await;
    }
}

impl Drop for Auditor {
    fn drop(&mut self) {
        terminate(&mut self.child, Duration::from_secs(10));
    }
}

/// Polls `probe` every second until it returns `Some`, or panics after `timeout` with
/// `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    say(format!("waiting for {what} (up to {}s)", timeout.as_secs()));
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {}s waiting for {what}", timeout.as_secs());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Runs kubectl against the cluster as admin and returns (success, stdout, stderr).
pub fn kubectl_run(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    use std::io::Write;
    let mut child = Command::new(kubectl())
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run kubectl: {e}"));
    if let Some(input) = stdin
        && let Some(mut pipe) = child.stdin.take()
    {
        let _ = pipe.write_all(input.as_bytes());
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("kubectl output");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Check IDs a fixture declares it must and must not trigger (tests/fixtures/kopf/NAME/expect.yaml).
pub struct Expectations {
    /// IDs that must be reported.
    pub must: Vec<String>,
    /// IDs that must not be reported.
    pub must_not: Vec<String>,
}

/// Reads a fixture's expectations.
pub fn expectations(fixture: &str) -> Expectations {
    let path = repo().join(format!("tests/fixtures/kopf/{fixture}/expect.yaml"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("bad {}: {e}", path.display()));
    let list = |key: &str| -> Vec<String> {
        value
            .get(key)
            .and_then(|v| v.as_sequence())
            .map(|s| {
                s.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    Expectations {
        must: list("must"),
        must_not: list("must_not"),
    }
}

/// The cache outside the clone that the hack/ scripts share (`KOPF_AUDIT_CACHE`).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("KOPF_AUDIT_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("kopf-audit")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/kopf-audit")))
        .expect("KOPF_AUDIT_CACHE, XDG_CACHE_HOME or HOME")
}

/// A token of ServiceAccount `account` in `ns` (TokenRequest, as the kubelet mounts one).
pub async fn service_account_token(admin: &Client, ns: &str, account: &str) -> String {
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}
        }))
        .expect("token request");
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), ns)
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("TokenRequest for {ns}/{account}: {e}"))
        .status
        .and_then(|s| s.token)
        .expect("a token")
}

/// The API server's URL and its CA certificate (PEM), from the admin kubeconfig.
pub fn api_server() -> (String, Vec<u8>) {
    let path = kubeconfig_path();
    let config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&path).expect("admin kubeconfig"))
            .expect("admin kubeconfig YAML");
    let current = config["current-context"].as_str().unwrap_or_default();
    let cluster_name = config["contexts"]
        .as_sequence()
        .and_then(|s| s.iter().find(|c| c["name"].as_str() == Some(current)))
        .and_then(|c| c["context"]["cluster"].as_str())
        .expect("the current context's cluster")
        .to_string();
    let cluster = &config["clusters"]
        .as_sequence()
        .and_then(|s| {
            s.iter()
                .find(|c| c["name"].as_str() == Some(cluster_name.as_str()))
        })
        .expect("the current cluster")["cluster"];
    let server = cluster["server"].as_str().expect("server").to_string();
    let ca = if let Some(file) = cluster["certificate-authority"].as_str() {
        std::fs::read(file).unwrap_or_else(|e| panic!("reading the CA {file}: {e}"))
    } else {
        base64_decode(
            cluster["certificate-authority-data"]
                .as_str()
                .expect("certificate-authority or certificate-authority-data"),
        )
    };
    (server, ca)
}

/// Decodes standard base64 (the kubeconfig's `*-data` fields).
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits: Vec<u32> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, d)| acc | (d << (18 - 6 * i)));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

/// GETs `path` from `addr` (plain HTTP/1.0); (status code, body), or None when nothing
/// answers.
pub fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    http_get_as(addr, path, None)
}

/// GETs `path` from `addr` with `Authorization: Bearer <token>` when a token is given;
/// (status code, body), or None when nothing answers.
pub fn http_get_as(addr: &str, path: &str, token: Option<&str>) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: localhost\r\n{authorization}\r\n"
    )
    .ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let (head, body) = response.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// Log lines that show the auditor was refused something: a 403 (as a number of its
/// own, not digits of a timestamp) or Forbidden.
pub fn refused_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            let b = l.as_bytes();
            let code = l.match_indices("403").any(|(at, _)| {
                let before = at.checked_sub(1).and_then(|i| b.get(i));
                !before.is_some_and(u8::is_ascii_digit)
                    && !b.get(at + 3).is_some_and(u8::is_ascii_digit)
            });
            code || l.contains("Forbidden") || l.contains("forbidden")
        })
        .collect()
}

/// A kubeconfig acting as a ServiceAccount (a TokenRequest token, the admin's cluster),
/// so that the auditor or a test runs with exactly the RBAC it is granted.
pub async fn token_kubeconfig(admin: &Client, ns: &str, account: &str) -> PathBuf {
    let token = service_account_token(admin, ns, account).await;
    let admin_path = kubeconfig_path();
    let admin_config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&admin_path).expect("admin kubeconfig"))
            .expect("admin kubeconfig YAML");
    let current = admin_config["current-context"].as_str().unwrap_or_default();
    let context = admin_config["contexts"]
        .as_sequence()
        .and_then(|s| s.iter().find(|c| c["name"].as_str() == Some(current)))
        .expect("the current context");
    let cluster_name = context["context"]["cluster"].as_str().unwrap_or_default();
    let cluster = admin_config["clusters"]
        .as_sequence()
        .and_then(|s| s.iter().find(|c| c["name"].as_str() == Some(cluster_name)))
        .expect("the current cluster")["cluster"]
        .clone();
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": account, "context": {"cluster": "cluster", "user": account, "namespace": ns}}],
        "current-context": account,
    });
    let path = workdir().join(format!("kubeconfig-{ns}-{account}"));
    std::fs::write(&path, serde_yaml_ng::to_string(&kubeconfig).expect("yaml"))
        .expect("write kubeconfig");
    path
}

/// The custom resource (group, plural) of a fixture's CRD.
pub fn fixture_crd(fixture: &str) -> (String, String) {
    let path = repo().join(format!("tests/fixtures/kopf/{fixture}/manifests.yaml"));
    let text = std::fs::read_to_string(&path).expect("manifests");
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|doc| <serde_yaml_ng::Value as serde::Deserialize>::deserialize(doc).ok())
        .find(|v| v["kind"].as_str() == Some("CustomResourceDefinition"))
        .map(|crd| {
            let field = |v: &serde_yaml_ng::Value| v.as_str().unwrap_or_default().to_string();
            (
                field(&crd["spec"]["group"]),
                field(&crd["spec"]["names"]["plural"]),
            )
        })
        .unwrap_or_else(|| panic!("fixture {fixture} has no CRD"))
}

/// The auditor's ServiceAccount `kopf-audit` in a namespace of the test's: it may read
/// everything and ask SubjectAccessReviews cluster-wide, but write (KopfAudit status,
/// PolicyReports, Events) only in the namespaces it is granted, through two
/// RoleBindings each (`kopf-audit-status`, `kopf-audit-events`), so that a test can
/// revoke one. Its cluster-scoped objects are deleted when this is dropped.
pub struct ScopedAuditor {
    /// The prefix of its ClusterRoles and ClusterRoleBinding.
    name: String,
    /// The namespace of its ServiceAccount.
    home: String,
    /// A kubeconfig acting as it.
    pub kubeconfig: PathBuf,
}

impl ScopedAuditor {
    /// Creates the ServiceAccount in `home` and its RBAC, writable in `writable`.
    pub async fn create(admin: &Client, home: &str, writable: &[&str]) -> ScopedAuditor {
        let name = format!("kopf-audit-scoped-{home}");
        let manifests = format!(
            r#"
apiVersion: v1
kind: ServiceAccount
metadata: {{name: kopf-audit, namespace: {home}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}-read}}
rules:
- {{apiGroups: ["*"], resources: ["*"], verbs: [get, list, watch]}}
- {{apiGroups: [authorization.k8s.io], resources: [subjectaccessreviews], verbs: [create]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}-read}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}-read}}
subjects: [{{kind: ServiceAccount, name: kopf-audit, namespace: {home}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}-status}}
rules:
- {{apiGroups: [kopfaudit.dev], resources: [kopfaudits, kopfaudits/status], verbs: [patch, update]}}
- {{apiGroups: [wgpolicyk8s.io], resources: [policyreports], verbs: [create, patch]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}-events}}
rules:
- {{apiGroups: ["", events.k8s.io], resources: [events], verbs: [create, patch]}}
"#
        );
        let (ok, _, err) = kubectl_run(&["apply", "-f", "-"], Some(&manifests));
        assert!(ok, "applying the scoped auditor's RBAC: {err}");
        let mut auditor = ScopedAuditor {
            name,
            home: home.to_string(),
            kubeconfig: PathBuf::new(),
        };
        for ns in writable {
            auditor.grant(ns, "status");
            auditor.grant(ns, "events");
        }
        auditor.kubeconfig = token_kubeconfig(admin, home, "kopf-audit").await;
        auditor
    }

    /// The RoleBinding in `ns` of its ClusterRole `role` (`status` or `events`).
    fn binding(&self, ns: &str, role: &str) -> String {
        format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: kopf-audit-{role}, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}-{role}}}
subjects: [{{kind: ServiceAccount, name: kopf-audit, namespace: {home}}}]
"#,
            name = self.name,
            home = self.home
        )
    }

    /// Grants it `role` (`status` or `events`) in `ns`.
    pub fn grant(&self, ns: &str, role: &str) {
        let (ok, _, err) = kubectl_run(&["apply", "-f", "-"], Some(&self.binding(ns, role)));
        assert!(ok, "granting {role} in {ns}: {err}");
        say(format!("auditor granted {role} in {ns}"));
    }

    /// Revokes `role` (`status` or `events`) in `ns`.
    pub fn revoke(&self, ns: &str, role: &str) {
        let binding = format!("kopf-audit-{role}");
        let (ok, _, err) = kubectl_run(&["delete", "rolebinding", &binding, "-n", ns], None);
        assert!(ok, "revoking {role} in {ns}: {err}");
        say(format!("auditor's {role} revoked in {ns}"));
    }
}

impl Drop for ScopedAuditor {
    fn drop(&mut self) {
        let roles = ["read", "status", "events"].map(|r| format!("{}-{r}", self.name));
        let _ = kubectl_run(
            &[
                "delete",
                "clusterrole",
                &roles[0],
                &roles[1],
                &roles[2],
                "--ignore-not-found",
            ],
            None,
        );
        let _ = kubectl_run(
            &[
                "delete",
                "clusterrolebinding",
                &roles[0],
                "--ignore-not-found",
            ],
            None,
        );
    }
}

/// `kopf_audit_audits_total` of one audit in a /metrics text, summed over its series.
pub fn audits_total(metrics: &str, namespace: &str, name: &str) -> f64 {
    let labels = format!("namespace=\"{namespace}\",name=\"{name}\"");
    metrics
        .lines()
        .filter(|l| l.starts_with("kopf_audit_audits_total{") && l.contains(&labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A Deployment of no pods whose container `operator` runs `kopf run ARGS`, with these
/// annotations: a kopf operator as its spec shows it, for tests that need no process.
pub async fn idle_kopf_deployment(
    client: &Client,
    ns: &str,
    name: &str,
    args: &[&str],
    annotations: serde_json::Value,
) {
    let d: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "operator", "image": "tenant/op:1",
                    "command": ["kopf", "run"], "args": args
                }]}
            }
        }
    }))
    .expect("Deployment JSON");
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &d)
        .await
        .unwrap_or_else(|e| panic!("creating Deployment {ns}/{name}: {e}"));
}

/// Scales a Deployment to 0 replicas: its pods go, and with them its logs.
pub async fn scale_to_zero(client: &Client, ns: &str, deployment: &str) {
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), ns)
        .patch(
            deployment,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 0}})),
        )
        .await
        .unwrap_or_else(|e| panic!("scaling {ns}/{deployment} to 0: {e}"));
}

/// Strips the finalizers from a fixture's objects when dropped, after the fixture has
/// stopped (declared before it): no operator is left to remove them, and the namespace
/// would stay Terminating.
pub struct Unfinalize {
    ns: String,
    resource: String,
}

impl Unfinalize {
    pub fn of(fixture: &str, ns: &str) -> Unfinalize {
        let (group, plural) = fixture_crd(fixture);
        Unfinalize {
            ns: ns.to_string(),
            resource: format!("{plural}.{group}"),
        }
    }
}

impl Drop for Unfinalize {
    fn drop(&mut self) {
        let (_, names, _) =
            kubectl_run(&["get", &self.resource, "-n", &self.ns, "-o", "name"], None);
        for name in names.lines().filter(|l| !l.is_empty()) {
            let _ = kubectl_run(
                &[
                    "patch",
                    name,
                    "-n",
                    &self.ns,
                    "--type=merge",
                    "-p",
                    r#"{"metadata":{"finalizers":null}}"#,
                ],
                None,
            );
        }
    }
}

/// Creates the ClusterKopfAudit `name` that selects exactly the `namespaces` (other
/// tests run at once: it must select no one else's) with `defaults` for the KopfAudits
/// it generates (e.g. `{"interval": "30s"}`): the one place the tests write one.
pub async fn create_cluster_audit(
    client: &Client,
    name: &str,
    namespaces: &[&str],
    defaults: serde_json::Value,
) -> kopf_audit::api::ClusterKopfAudit {
    let cka: kopf_audit::api::ClusterKopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "ClusterKopfAudit",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces
            }]},
            "defaults": defaults
        }
    }))
    .expect("ClusterKopfAudit JSON");
    Api::<kopf_audit::api::ClusterKopfAudit>::all(client.clone())
        .create(&PostParams::default(), &cka)
        .await
        .expect("creating the ClusterKopfAudit")
}

//! The operator image (hack/image.sh: the Dockerfile's `runtime` stage, FROM scratch,
//! around the static binary), run by podman exactly as the chart runs it: the chart's
//! user, read-only root filesystem, capabilities, no-new-privileges, memory limit and
//! args, and a token of the chart's ServiceAccount mounted where a pod gets it, with the
//! in-cluster environment. It must serve /healthz and /readyz, audit a broken kopf
//! fixture to Ready with the fixture's findings, be refused nothing, write nothing to
//! its filesystem, pass the chart's `helm test` hook (its busybox wget command, run for
//! real against it), and stop on SIGTERM well within the chart's grace period.
//!
//! podman runs with runc (crun does not work in this sandbox), explicit ulimits and a
//! private vfs storage under the work dir; host network reaches the local API server.

use crate::operator::{audit_for, create_audit, ensure_crd, fixture_deployment};
use crate::support::{self, Fixture, TestNamespace, expectations, say, wait_for};
use kopf_audit::api::KopfAudit;
use kube::ResourceExt;
use kube::api::Api;
use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// podman with its own storage under the work dir.
pub struct Podman {
    root: PathBuf,
}

impl Podman {
    /// podman with storage in `<workdir>/podman`.
    pub fn new() -> Podman {
        let root = support::workdir().join("podman");
        std::fs::create_dir_all(&root).expect("podman dir");
        Podman { root }
    }

    /// A podman command with the global flags.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new("podman");
        cmd.arg("--root")
            .arg(self.root.join("root"))
            .arg("--runroot")
            .arg(self.root.join("runroot"))
            .arg("--tmpdir")
            .arg(self.root.join("tmp"))
            .args([
                "--storage-driver",
                "vfs",
                "--runtime",
                "runc",
                "--cgroup-manager",
                "cgroupfs",
                "--events-backend",
                "file",
            ]);
        cmd
    }

    /// Runs podman; (success, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run podman ({e}): apt-get install -y podman runc (hack/test.sh does it)"
                )
            });
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs podman and returns its stdout; panics with its stderr on failure.
    pub fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "podman {} failed: {err}{out}", args.join(" "));
        out
    }

    /// Loads the image archive hack/image.sh saves and returns its reference.
    pub fn load_image(&self) -> String {
        let archive = image_archive();
        let out = self.ok(&["load", "-i", archive.to_str().expect("utf-8 path")]);
        let reference = out
            .lines()
            .find_map(|l| l.strip_prefix("Loaded image: "))
            .or_else(|| {
                out.lines()
                    .find_map(|l| l.strip_prefix("Loaded image(s): "))
            })
            .unwrap_or_else(|| panic!("podman load said no image name: {out}"))
            .trim()
            .to_string();
        say(format!("loaded {reference} from {}", archive.display()));
        reference
    }
}

/// The OCI archive of the image: `KOPF_AUDIT_IMAGE`, or what `hack/image.sh` prints
/// (seconds when cached; it builds the release binary otherwise, printing progress).
pub fn image_archive() -> PathBuf {
    if let Some(p) = std::env::var_os("KOPF_AUDIT_IMAGE") {
        return PathBuf::from(p);
    }
    say("KOPF_AUDIT_IMAGE is not set: running hack/image.sh (cached, or a release build)");
    let out = Command::new("bash")
        .arg(support::repo().join("hack/image.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("running hack/image.sh");
    assert!(out.status.success(), "hack/image.sh failed (see above)");
    let path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    PathBuf::from(path)
}

/// A running container, removed when dropped.
pub struct Container<'a> {
    podman: &'a Podman,
    /// Its name.
    pub name: String,
}

impl Drop for Container<'_> {
    fn drop(&mut self) {
        let _ = self.podman.run(&["rm", "-f", "-t", "0", &self.name]);
    }
}

impl Container<'_> {
    /// Its log so far (stdout and stderr).
    pub fn logs(&self) -> String {
        let (_, out, err) = self.podman.run(&["logs", &self.name]);
        format!("{out}{err}")
    }

    /// A field of `podman inspect`.
    pub fn inspect(&self, format: &str) -> String {
        self.podman
            .ok(&["inspect", "--format", format, &self.name])
            .trim()
            .to_string()
    }
}

/// The chart's pod, as podman flags: the rendered Deployment's security context,
/// memory limit, args and env, with a ServiceAccount token mounted where a pod has it.
pub struct PodSpec {
    /// `podman run` flags before the image.
    pub flags: Vec<String>,
    /// The container's args (after the image's entrypoint).
    pub args: Vec<String>,
    /// terminationGracePeriodSeconds.
    pub grace: Duration,
    /// The memory limit in bytes.
    pub memory_limit: u64,
}

fn quantity_bytes(q: &str) -> u64 {
    let (number, unit) = q.split_at(q.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(q.len()));
    let n: u64 = number.parse().unwrap_or_else(|_| panic!("quantity {q}"));
    n * match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "k" => 1000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        other => panic!("unit {other} in {q}"),
    }
}

/// Builds the podman flags of the chart's pod from a rendered Deployment. `secrets`
/// holds token, ca.crt and namespace; `pod` is the pod's name (POD_NAME).
pub fn pod_spec(deployment: &Value, secrets: &Path, pod: &str, namespace: &str) -> PodSpec {
    let spec = &deployment["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    let sc = &container["securityContext"];
    let mut flags: Vec<String> = Vec::new();
    let user = sc["runAsUser"]
        .as_i64()
        .or(spec["securityContext"]["runAsUser"].as_i64())
        .expect("runAsUser");
    let group = sc["runAsGroup"]
        .as_i64()
        .or(spec["securityContext"]["runAsGroup"].as_i64())
        .expect("runAsGroup");
    assert_eq!(sc["runAsNonRoot"].as_bool(), Some(true));
    assert_ne!(user, 0, "runAsNonRoot");
    flags.push(format!("--user={user}:{group}"));
    // As the kubelet: no /etc/passwd entry added for that user (podman would write one).
    flags.push("--passwd=false".into());
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    // As Kubernetes: no tmpfs on /tmp, /run, /var/tmp.
    flags.extend(["--read-only".into(), "--read-only-tmpfs=false".into()]);
    assert_eq!(sc["capabilities"]["drop"][0].as_str(), Some("ALL"));
    assert!(sc["capabilities"]["add"].is_null(), "no capability added");
    flags.push("--cap-drop=all".into());
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    flags.push("--security-opt=no-new-privileges".into());
    assert_eq!(sc["privileged"].as_bool(), Some(false));
    // seccomp RuntimeDefault: podman's default profile, which it applies unless told
    // otherwise (the test checks it is enabled).
    assert_eq!(
        sc["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault")
    );
    let memory = container["resources"]["limits"]["memory"]
        .as_str()
        .expect("a memory limit");
    let memory_limit = quantity_bytes(memory);
    flags.push(format!("--memory={memory_limit}"));
    // The hard nofile limit of this sandbox is 20000; nproc as a kubelet's node.
    flags.extend([
        "--ulimit=nofile=16384:16384".into(),
        "--ulimit=nproc=4096:4096".into(),
    ]);
    flags.push("--network=host".into());
    for env in container["env"].as_sequence().into_iter().flatten() {
        let name = env["name"].as_str().expect("env name");
        let value = match env["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            Some("metadata.name") => pod.to_string(),
            Some("metadata.namespace") => namespace.to_string(),
            Some(other) => panic!("env {name} from {other}: not emulated"),
            None => env["value"].as_str().unwrap_or_default().to_string(),
        };
        flags.push(format!("--env={name}={value}"));
    }
    // What the kubelet gives every container (enableServiceLinks=false keeps these).
    let (server, _) = support::api_server();
    let hostport = server.trim_start_matches("https://");
    let (host, port) = hostport.rsplit_once(':').expect("host:port");
    flags.push(format!("--env=KUBERNETES_SERVICE_HOST={host}"));
    flags.push(format!("--env=KUBERNETES_SERVICE_PORT={port}"));
    flags.push(format!(
        "--volume={}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
        secrets.display()
    ));
    let args = container["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("arg").to_string())
        .collect();
    let grace = Duration::from_secs(
        spec["terminationGracePeriodSeconds"]
            .as_u64()
            .expect("terminationGracePeriodSeconds"),
    );
    PodSpec {
        flags,
        args,
        grace,
        memory_limit,
    }
}

/// Writes token, ca.crt and namespace as the kubelet's projected volume does (files
/// readable by the pod's user) into a fresh directory.
pub async fn service_account_volume(
    admin: &kube::Client,
    namespace: &str,
    account: &str,
    dir: &Path,
) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("secrets dir");
    let token = support::service_account_token(admin, namespace, account).await;
    let (_, ca) = support::api_server();
    for (file, content) in [
        ("token", token.into_bytes()),
        ("ca.crt", ca),
        ("namespace", namespace.as_bytes().to_vec()),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, content).expect("secret file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `helm template` of the chart with `--set` values; the rendered objects.
pub fn render(release: &str, namespace: &str, sets: &[String]) -> Vec<Value> {
    let chart = support::repo().join("charts/kopf-audit");
    let mut cmd = Command::new(crate::chart::helm());
    cmd.args(["template", release])
        .arg(&chart)
        .args(["--namespace", namespace]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("running helm template");
    assert!(
        out.status.success(),
        "helm template failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|doc| <Value as serde::Deserialize>::deserialize(doc).ok())
        .filter(|v| v.is_mapping())
        .collect()
}

fn kind(o: &Value) -> &str {
    o["kind"].as_str().unwrap_or_default()
}

fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap_or_default()
}

/// Cluster-scoped objects, deleted when dropped.
pub struct ClusterObjects(pub Vec<(String, String)>);

impl Drop for ClusterObjects {
    fn drop(&mut self) {
        for (kind, name) in &self.0 {
            let _ = support::kubectl_run(
                &["delete", kind, name, "--ignore-not-found", "--wait=false"],
                None,
            );
        }
    }
}

/// Applies the chart's ServiceAccount and RBAC (not its Deployment: kwok would only
/// fake its pod, and podman runs it here); returns the cleanup of cluster-scoped ones.
pub fn apply_rbac(objects: &[Value]) -> ClusterObjects {
    let rbac: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            matches!(
                kind(o),
                "ServiceAccount" | "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding"
            )
        })
        .collect();
    let cleanup = ClusterObjects(
        rbac.iter()
            .filter(|o| matches!(kind(o), "ClusterRole" | "ClusterRoleBinding"))
            .map(|o| (kind(o).to_string(), name(o).to_string()))
            .collect(),
    );
    let text: String = rbac
        .iter()
        .map(|o| format!("---\n{}", serde_yaml_ng::to_string(o).expect("yaml")))
        .collect();
    let (ok, out, err) = support::kubectl_run(
        &[
            "apply",
            "--server-side",
            "--field-manager=kopf-audit-e2e-image",
            "-f",
            "-",
        ],
        Some(&text),
    );
    assert!(ok, "applying the chart's RBAC failed: {err}\n{out}");
    cleanup
}

/// Waits until KopfAudit `ns/name` is Ready=True with at least the fixture's `must`
/// findings; returns the check IDs found.
pub async fn audited(
    client: &kube::Client,
    fixture: &str,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> BTreeSet<String> {
    let expect = expectations(fixture);
    let must: BTreeSet<String> = expect.must.iter().cloned().collect();
    let api: Api<KopfAudit> = Api::namespaced(client.clone(), ns);
    let found = wait_for(
        &format!("{ns}/{name}: Ready=True with findings {must:?}"),
        timeout,
        || {
            let (api, must) = (api.clone(), must.clone());
            async move {
                let status = api.get(name).await.ok()?.status?;
                let ready = status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                let found: BTreeSet<String> = status
                    .findings
                    .iter()
                    .map(|f| f.check.as_str().to_string())
                    .collect();
                (ready && must.is_subset(&found)).then_some(found)
            }
        },
    )
    .await;
    for id in &expect.must_not {
        assert!(
            !found.contains(id),
            "{fixture}: {id} must not be reported: {found:?}"
        );
    }
    found
}

/// Resident memory of a process in bytes (VmRSS).
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("no VmRSS for pid {pid}"))
}

#[tokio::test]
async fn the_image_runs_hardened_as_the_chart_runs_it_and_audits_a_broken_fixture() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let podman = Podman::new();
    let (_, seccomp, _) = podman.run(&["info", "--format", "{{.Host.Security.SECCOMPEnabled}}"]);
    assert_eq!(
        seccomp.trim(),
        "true",
        "podman applies its default seccomp profile"
    );
    let image = podman.load_image();

    // The image as built: the binary alone, numeric non-root user, `run` entrypoint.
    let config = podman.ok(&[
        "image",
        "inspect",
        "--format",
        "{{.Config.User}} {{json .Config.Entrypoint}} {{.Size}}",
        &image,
    ]);
    let mut parts = config.split_whitespace();
    assert_eq!(parts.next(), Some("65532:65532"), "{config}");
    assert_eq!(parts.next(), Some(r#"["/kopf-audit","run"]"#), "{config}");
    let image_size: u64 = parts.next().and_then(|s| s.parse().ok()).expect("size");
    say(format!(
        "image {image}: {image_size} bytes ({:.1} MiB)",
        image_size as f64 / 1048576.0
    ));

    let release_ns = TestNamespace::create(&admin, "image").await;
    let fixture_ns = TestNamespace::create(&admin, "bad-resources").await;
    let _kopf = Fixture::start("bad-resources", &fixture_ns.name, None);
    let release = format!("r{}", release_ns.name.trim_start_matches("e2e-image-"));
    let fullname = format!("{release}-kopf-audit");
    let port = support::free_port();
    let (group, plural) = support::fixture_crd("bad-resources");
    // Values a user would set: the namespace to watch (so that this auditor audits
    // only this test's KopfAudit), the handled resources, and a free port (host network).
    let objects = render(
        &release,
        &release_ns.name,
        &[
            format!("watchNamespace={}", fixture_ns.name),
            format!("httpPort={port}"),
            // The auditor's own debug lines, for the log shown when something fails.
            "logLevel=info\\,kopf_audit=debug\\,kube_runtime=debug\\,kube_client=debug".to_string(),
            format!("rbac.handledResources[0].apiGroups[0]={group}"),
            format!("rbac.handledResources[0].resources[0]={plural}"),
        ],
    );
    let _cleanup = apply_rbac(&objects);
    let deployment = objects
        .iter()
        .find(|o| kind(o) == "Deployment")
        .expect("the chart's Deployment");
    let secrets = support::workdir().join(format!("image-secrets-{}", release_ns.name));
    service_account_volume(&admin, &release_ns.name, &fullname, &secrets).await;
    let _remove_secrets = RemoveOnDrop(secrets.clone());
    let pod = format!("{fullname}-0");
    let spec = pod_spec(deployment, &secrets, &pod, &release_ns.name);
    assert!(
        spec.args
            .contains(&format!("--watch-namespace={}", fixture_ns.name))
    );

    let name = format!("kopf-audit-e2e-{}", release_ns.name);
    let mut run: Vec<String> = vec!["run".into(), "--detach".into(), format!("--name={name}")];
    run.extend(spec.flags.iter().cloned());
    run.push(image.clone());
    run.extend(spec.args.iter().cloned());
    say(format!("podman {}", run.join(" ")));
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    let _ = podman.run(&["rm", "-f", "-t", "0", &name]);
    podman.ok(&run);
    let container = Container {
        podman: &podman,
        name: name.clone(),
    };

    let http = format!("127.0.0.1:{port}");
    for path in ["/healthz", "/readyz"] {
        say(format!(
            "waiting for {path} 200 from the container (up to 120s)"
        ));
        let started = Instant::now();
        let body = loop {
            if let Some((200, body)) = support::http_get(&http, path) {
                break body;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "no 200 from {path} after 120s; the container's log:\n{}",
                container.logs()
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        say(format!(
            "{path}: 200 {} after {:.1}s",
            body.trim(),
            started.elapsed().as_secs_f64()
        ));
    }

    let target = fixture_deployment(&admin, &fixture_ns.name)
        .await
        .name_any();
    create_audit(&admin, &fixture_ns.name, audit_for("audit", &target, "30s"))
        .await
        .expect("creating KopfAudit audit");
    let found = audited(
        &admin,
        "bad-resources",
        &fixture_ns.name,
        "audit",
        Duration::from_secs(180),
    )
    .await;
    say(format!("bad-resources audited by the image: {found:?}"));
    // The metrics follow the status write.
    let line = format!(
        r#"kopf_audit_condition{{namespace="{}",name="audit",condition="Compliant",status="False"}} 1"#,
        fixture_ns.name
    );
    wait_for(
        "the broken fixture not compliant in /metrics",
        Duration::from_secs(30),
        || {
            let (http, line) = (http.clone(), line.clone());
            async move {
                support::http_get(&http, "/metrics")
                    .filter(|(_, body)| body.contains(&line))
                    .map(|_| ())
            }
        },
    )
    .await;

    // Resting: one more audit interval (30s) with nothing changing.
    tokio::time::sleep(Duration::from_secs(35)).await;
    let pid: u32 = container.inspect("{{.State.Pid}}").parse().expect("pid");
    let rss = rss_bytes(pid);
    say(format!(
        "resting RSS of the container's process: {rss} bytes ({:.1} MiB); the chart's limit {:.0} MiB",
        rss as f64 / 1048576.0,
        spec.memory_limit as f64 / 1048576.0
    ));
    assert!(
        rss < spec.memory_limit / 2,
        "RSS {rss} near the chart's limit"
    );

    let log = container.logs();
    let refused = support::refused_lines(&log);
    assert!(
        refused.is_empty(),
        "the image was refused something:\n{}",
        refused.join("\n")
    );
    for bad in ["Read-only file system", "Permission denied", "panicked"] {
        assert!(!log.contains(bad), "`{bad}` in the container's log:\n{log}");
    }
    // Nothing written outside the mounts: the container's layer holds at most the
    // mount points the runtime made (the ServiceAccount volume's, /proc, /etc/hosts...).
    let mounts = mount_destinations(&container);
    assert!(
        mounts
            .iter()
            .any(|m| m == "/var/run/secrets/kubernetes.io/serviceaccount"),
        "{mounts:?}"
    );
    let diff = podman.ok(&["diff", &name]);
    let changed: Vec<&str> = diff
        .lines()
        .filter(|l| {
            let path = l.split_whitespace().nth(1).unwrap_or_default();
            !mounts
                .iter()
                .any(|m| m == path || m.starts_with(&format!("{path}/")))
        })
        .collect();
    assert!(
        changed.is_empty(),
        "the container wrote to its filesystem:\n{}",
        changed.join("\n")
    );
    say(format!(
        "podman diff: {} mount points, nothing else",
        diff.lines().count()
    ));

    // The chart's `helm test` hook, its command run for real (kwok only fakes the hook's
    // pod): busybox's wget through the metrics Service, here emulated by mapping the
    // Service's name and port to the container's port on the host network.
    let hook = HelmTestHook::from(&objects, port);
    let busybox = busybox_image(&podman);
    let (code, out) = hook.run(&podman, &busybox);
    assert_eq!(
        code, 0,
        "the helm test hook fails against a ready operator: {out}"
    );
    assert!(out.contains("ready"), "{out}");
    say(format!("the helm test hook's wget: exit 0, {}", out.trim()));

    // SIGTERM: a graceful stop (exit 0), well within terminationGracePeriodSeconds.
    let started = Instant::now();
    podman.ok(&["kill", "--signal", "TERM", &name]);
    loop {
        if container.inspect("{{.State.Running}}") == "false" {
            break;
        }
        assert!(
            started.elapsed() < spec.grace,
            "still running {}s after SIGTERM (the chart's grace period)",
            spec.grace.as_secs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let stopped = started.elapsed();
    let code = container.inspect("{{.State.ExitCode}}");
    say(format!(
        "SIGTERM: exited {code} after {} ms",
        stopped.as_millis()
    ));
    assert_eq!(code, "0", "a graceful stop:\n{}", container.logs());
    assert!(container.logs().contains("kopf-audit stopped"));
    let (code, out) = hook.run(&podman, &busybox);
    assert_ne!(
        code, 0,
        "the helm test hook passes with the operator stopped: {out}"
    );
    say(format!(
        "the helm test hook's wget with the operator stopped: exit {code}"
    ));
}

/// A directory removed when dropped (the token volume: also when the test fails).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The chart's `helm test` Job, to be run with podman against an operator on the host
/// network.
struct HelmTestHook {
    flags: Vec<String>,
    command: Vec<String>,
}

impl HelmTestHook {
    /// The rendered test hook, its Service URL pointed at `127.0.0.1:port`.
    fn from(objects: &[Value], port: u16) -> HelmTestHook {
        let job = objects
            .iter()
            .find(|o| {
                kind(o) == "Job"
                    && o["metadata"]["annotations"]["helm.sh/hook"].as_str() == Some("test")
            })
            .expect("the chart's helm test Job");
        let service = objects
            .iter()
            .find(|o| kind(o) == "Service")
            .expect("the metrics Service");
        let authority = format!(
            "{}.{}.svc:{}",
            name(service),
            service["metadata"]["namespace"]
                .as_str()
                .expect("namespace"),
            service["spec"]["ports"][0]["port"].as_i64().expect("port")
        );
        let spec = &job["spec"]["template"]["spec"];
        let container = &spec["containers"][0];
        let command: Vec<String> = container["command"]
            .as_sequence()
            .expect("command")
            .iter()
            .map(|a| a.as_str().expect("arg").to_string())
            .collect();
        assert!(
            command
                .iter()
                .any(|a| a.contains(&format!("http://{authority}/readyz"))),
            "the hook GETs /readyz of the Service {authority}: {command:?}"
        );
        let command = command
            .iter()
            .map(|a| a.replace(&authority, &format!("127.0.0.1:{port}")))
            .collect();
        let sc = &container["securityContext"];
        assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
        assert_eq!(sc["capabilities"]["drop"][0].as_str(), Some("ALL"));
        let flags = vec![
            format!(
                "--user={}:{}",
                sc["runAsUser"].as_i64().expect("runAsUser"),
                sc["runAsGroup"].as_i64().expect("runAsGroup")
            ),
            "--passwd=false".into(),
            "--read-only".into(),
            "--read-only-tmpfs=false".into(),
            "--cap-drop=all".into(),
            "--security-opt=no-new-privileges".into(),
            "--ulimit=nofile=1024:1024".into(),
            "--ulimit=nproc=4096:4096".into(),
            "--network=host".into(),
        ];
        HelmTestHook { flags, command }
    }

    /// Runs the hook's command; (exit code, output).
    fn run(&self, podman: &Podman, image: &str) -> (i32, String) {
        let out = podman
            .command()
            .args(["run", "--rm"])
            .args(&self.flags)
            .arg(image)
            .args(&self.command)
            .output()
            .expect("podman run");
        (
            out.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }
}

/// A busybox image (`wget` and `sh`) made from Debian's static busybox
/// (`apt-get install busybox-static`; hack/test.sh installs it), for the test hook.
fn busybox_image(podman: &Podman) -> String {
    let busybox = Path::new("/bin/busybox");
    assert!(
        busybox.is_file(),
        "no /bin/busybox: apt-get install -y busybox-static (hack/test.sh does it)"
    );
    let reference = "localhost/busybox-e2e:static".to_string();
    if podman.run(&["image", "exists", &reference]).0 {
        return reference;
    }
    let ctx = support::workdir().join(format!("busybox-context-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&ctx);
    std::fs::create_dir_all(ctx.join("bin")).expect("context");
    for applet in ["busybox", "wget", "sh"] {
        std::fs::copy(busybox, ctx.join("bin").join(applet)).expect("copy busybox");
    }
    std::fs::write(ctx.join("Containerfile"), "FROM scratch\nCOPY bin /bin\n")
        .expect("Containerfile");
    podman.ok(&[
        "build",
        "--quiet",
        "--network=none",
        "--pull=never",
        "-t",
        &reference,
        ctx.to_str().expect("utf-8 path"),
    ]);
    let _ = std::fs::remove_dir_all(&ctx);
    reference
}

/// Where the runtime mounts something into the container (its OCI config): the
/// volumes and the runtime's own (/proc, /dev, /sys, /etc/hosts, ...).
fn mount_destinations(container: &Container<'_>) -> Vec<String> {
    let path = container.inspect("{{.OCIConfigPath}}");
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}")),
    )
    .expect("OCI config JSON");
    config["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .filter_map(|m| m["destination"].as_str().map(str::to_string))
        .collect()
}

use super::*;
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;

/// A scratch directory for one test, removed when dropped.
pub(in crate::gather::files) fn dir() -> Scratch {
    Scratch::new().expect("a test directory")
}

/// `text` written at `dir/rel`, its parents made.
pub(in crate::gather::files) fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().expect("a parent")).expect("parents");
    fs::write(path, text).expect("written");
}

/// A minimal chart in `dir/chart-src`.
fn chart(dir: &Scratch) -> PathBuf {
    let chart = dir.root.join("chart-src");
    write(
        &chart,
        "Chart.yaml",
        "apiVersion: v2\nname: op\nversion: 0.1.0\n",
    );
    write(&chart, "templates/cm.yaml", "kind: ConfigMap\n");
    chart
}

/// An executable `helm` shell script in `dir/bin` with `body` ([`fake_program`]).
fn fake_helm(dir: &Scratch, body: &str) -> PathBuf {
    fake_program(dir, "helm", body)
}

/// An executable shell script `name` in `dir/bin` with `body`; it answers `probe` at
/// once, which is run until it succeeds: another test's fork may still hold the file
/// open for writing for a moment (ETXTBSY).
pub(in crate::gather::files) fn fake_program(dir: &Scratch, name: &str, body: &str) -> PathBuf {
    let bin = dir.root.join("bin");
    fs::create_dir_all(&bin).expect("bin");
    let program = bin.join(name);
    let script = format!("#!/bin/sh\n[ \"$1\" = probe ] && exit 0\n{body}\n");
    fs::write(&program, script).expect("script");
    fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).expect("mode");
    for _ in 0..200 {
        match Command::new(&program).arg("probe").status() {
            Ok(_) => return program,
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!("probing the fake {name}: {e}"),
        }
    }
    panic!("the fake {name} stayed busy");
}

/// `chart` rendered by the program `helm` within `limits`, with `helm`'s directory
/// first on a PATH that then has this process's (for the shell's tools).
fn render_with(
    helm: &Path,
    chart: &Path,
    values: &[PathBuf],
    limits: &RenderLimits,
) -> Result<Rendered, RenderError> {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let dirs = helm
        .parent()
        .into_iter()
        .map(Path::to_path_buf)
        .chain(std::env::split_paths(&inherited));
    let path_var = std::env::join_paths(dirs).expect("PATH");
    let job = Job {
        helm,
        path_var: Some(&path_var),
        release: "rel",
        namespace: "ops",
        values,
        set: &[],
        global: false,
        limits,
    };
    render(&job, chart)
}

/// The chart copied with `limits` into `dir/copy`.
fn copy(dir: &Scratch, chart: &Path, limits: &RenderLimits) -> Result<Copied, CopyError> {
    copy_chart(chart, &dir.root.join("copy"), limits)
}

/// Sorted, for comparing.
fn sorted(mut list: Vec<String>) -> Vec<String> {
    list.sort();
    list
}

#[test]
fn links_leaving_the_chart_are_dropped_and_listed() {
    let dir = dir();
    let chart = chart(&dir);
    write(&dir.root, "outside.txt", "secret");
    symlink("/proc/self/environ", chart.join("files_env")).expect("link");
    symlink("/etc", chart.join("etc")).expect("link");
    symlink("/etc/passwd", chart.join("templates/passwd")).expect("link");
    symlink("../outside.txt", chart.join("up")).expect("link");
    symlink("missing", chart.join("dangling")).expect("link");
    symlink("/dev/zero", chart.join("zero")).expect("link");
    let copied = copy(&dir, &chart, &RenderLimits::default()).expect("copied");
    assert_eq!(
        sorted(copied.dropped_links),
        [
            "dangling",
            "etc",
            "files_env",
            "templates/passwd",
            "up",
            "zero"
        ]
    );
    let to = dir.root.join("copy");
    for gone in [
        "files_env",
        "etc",
        "templates/passwd",
        "up",
        "dangling",
        "zero",
    ] {
        assert!(
            fs::symlink_metadata(to.join(gone)).is_err(),
            "{gone} copied"
        );
    }
    assert_eq!(
        fs::read_to_string(to.join("templates/cm.yaml")).expect("kept"),
        "kind: ConfigMap\n"
    );
}

#[test]
fn links_inside_the_chart_are_copied_as_what_they_point_to() {
    let dir = dir();
    let chart = chart(&dir);
    write(&chart, "files/real.conf", "a: 1\n");
    symlink("files/real.conf", chart.join("alias.conf")).expect("link");
    symlink("files", chart.join("more")).expect("link");
    symlink(chart.join("files/real.conf"), chart.join("absolute.conf")).expect("link");
    let copied = copy(&dir, &chart, &RenderLimits::default()).expect("copied");
    assert!(
        copied.dropped_links.is_empty(),
        "{:?}",
        copied.dropped_links
    );
    let to = dir.root.join("copy");
    for rel in ["alias.conf", "more/real.conf", "absolute.conf"] {
        let meta = fs::symlink_metadata(to.join(rel)).expect(rel);
        assert!(meta.is_file(), "{rel} is not a plain file");
        assert_eq!(fs::read_to_string(to.join(rel)).expect(rel), "a: 1\n");
    }
    assert!(fs::symlink_metadata(to.join("more")).expect("dir").is_dir());
}

#[test]
fn link_loops_are_dropped_not_followed() {
    let dir = dir();
    let chart = chart(&dir);
    symlink(".", chart.join("self")).expect("link");
    symlink("..", chart.join("templates/up")).expect("link");
    fs::create_dir(chart.join("a")).expect("a");
    symlink("../b", chart.join("a/to-b")).expect("link");
    fs::create_dir(chart.join("b")).expect("b");
    symlink("../a", chart.join("b/to-a")).expect("link");
    let copied = copy(&dir, &chart, &RenderLimits::default()).expect("copied");
    assert_eq!(
        sorted(copied.dropped_links),
        ["a/to-b/to-a", "b/to-a/to-b", "self", "templates/up"]
    );
}

#[test]
fn special_files_and_git_are_skipped_without_hanging() {
    let dir = dir();
    let chart = chart(&dir);
    let status = Command::new("mkfifo")
        .arg(chart.join("templates/fifo.yaml"))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    symlink("templates/fifo.yaml", chart.join("to-fifo")).expect("link");
    let _socket = UnixListener::bind(chart.join("sock")).expect("socket");
    write(&chart, ".git/config", "[core]\n");
    let copied = copy(&dir, &chart, &RenderLimits::default()).expect("copied");
    assert_eq!(
        sorted(copied.skipped_special),
        ["sock", "templates/fifo.yaml", "to-fifo"]
    );
    assert!(copied.dropped_links.is_empty());
    let to = dir.root.join("copy");
    for gone in [".git", "sock", "templates/fifo.yaml", "to-fifo"] {
        assert!(
            fs::symlink_metadata(to.join(gone)).is_err(),
            "{gone} copied"
        );
    }
}

#[test]
fn copy_bounds_are_enforced_and_named() {
    let dir = dir();
    let chart = chart(&dir);
    write(&chart, "files/big", &"x".repeat(10_000));
    let bytes = RenderLimits {
        max_copy_bytes: 5_000,
        ..RenderLimits::default()
    };
    let err = copy(&dir, &chart, &bytes).expect_err("too big");
    assert!(
        matches!(err, CopyError::TooManyBytes { limit: 5_000 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("5000 bytes"), "{err}");

    let dir = self::dir();
    let chart = self::chart(&dir);
    for n in 0..20 {
        write(&chart, &format!("files/{n}"), "x");
    }
    let files = RenderLimits {
        max_copy_files: 10,
        ..RenderLimits::default()
    };
    let err = copy(&dir, &chart, &files).expect_err("too many");
    assert!(
        matches!(err, CopyError::TooManyFiles { limit: 10 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("more than 10 files"), "{err}");

    let dir = self::dir();
    let chart = self::chart(&dir);
    write(&chart, "a/b/c/d/e/f", "x");
    let depth = RenderLimits {
        max_copy_depth: 3,
        ..RenderLimits::default()
    };
    let err = copy(&dir, &chart, &depth).expect_err("too deep");
    assert!(matches!(err, CopyError::TooDeep { limit: 3 }), "{err:?}");
    let err = RenderError::from(err);
    assert!(err.to_string().contains("more than 3 deep"), "{err}");
}

#[test]
fn links_multiplying_a_directory_stay_within_the_bytes_bound() {
    let dir = dir();
    let chart = chart(&dir);
    write(&chart, "files/big", &"x".repeat(1_000));
    for n in 0..20 {
        symlink("files", chart.join(format!("copy{n}"))).expect("link");
    }
    let limits = RenderLimits {
        max_copy_bytes: 10_000,
        ..RenderLimits::default()
    };
    let err = copy(&dir, &chart, &limits).expect_err("too big");
    assert!(matches!(err, CopyError::TooManyBytes { .. }), "{err:?}");
}

#[test]
fn helm_gets_the_copy_and_arguments_and_the_scratch_is_removed() {
    let dir = dir();
    let chart = chart(&dir);
    symlink("/proc/self/environ", chart.join("files_env")).expect("link");
    let helm = fake_helm(&dir, "echo \"$@\"; pwd; ls \"$3\"");
    let values = vec![PathBuf::from("/abs/values.yaml")];
    let rendered = render_with(&helm, &chart, &values, &RenderLimits::default()).expect("rendered");
    let mut lines = rendered.text.lines();
    let args = lines.next().expect("args");
    let cwd = lines.next().expect("cwd");
    let listed: Vec<&str> = lines.collect();
    assert_eq!(
        args,
        format!(
            "template rel {cwd}/chart --include-crds --namespace=ops --values=/abs/values.yaml"
        )
    );
    assert!(cwd.contains("kopf-audit-render-"), "{cwd}");
    assert_eq!(listed, ["Chart.yaml", "templates"]);
    assert_eq!(rendered.dropped_links, ["files_env"]);
    assert!(
        !Path::new(cwd).exists(),
        "the scratch directory was left behind"
    );
}

#[test]
fn relative_values_files_are_made_absolute() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(&dir, "echo \"$6\"");
    let values = vec![PathBuf::from("values/dev.yaml")];
    let rendered = render_with(&helm, &chart, &values, &RenderLimits::default()).expect("rendered");
    let expected = std::env::current_dir()
        .expect("cwd")
        .join("values/dev.yaml");
    assert_eq!(
        rendered.text.trim(),
        format!("--values={}", expected.display())
    );
}

#[test]
fn helm_sees_no_variable_of_the_parent_and_the_failure_says_none() {
    let dir = dir();
    let chart = chart(&dir);
    let seen = dir.root.join("seen-env");
    let body = format!(
        "env > '{}'\nprintf 'Error: ' >&2\nenv | tr '\\n' ' ' >&2\nhead -c 20000 /dev/zero | tr '\\0' x >&2\necho >&2\necho 'a later line' >&2\nexit 1",
        seen.display()
    );
    let helm = fake_helm(&dir, &body);
    let err = render_with(&helm, &chart, &[], &RenderLimits::default()).expect_err("failed");
    let RenderError::Failed { message } = &err else {
        panic!("not Failed: {err:?}");
    };
    let seen = fs::read_to_string(seen).expect("helm's environment");
    let names: Vec<&str> = seen
        .lines()
        .filter_map(|l| l.split_once('=').map(|(name, _)| name))
        .collect();
    let allowed = [
        "PATH",
        "HOME",
        "HELM_CACHE_HOME",
        "HELM_CONFIG_HOME",
        "HELM_DATA_HOME",
        // Set by the shell itself.
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    ];
    for name in &names {
        assert!(allowed.contains(name), "helm saw {name}");
    }
    let canaries: Vec<String> = std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| !allowed.contains(&name.as_str()))
        .collect();
    assert!(
        !canaries.is_empty(),
        "no variable of the parent to look for"
    );
    for name in &canaries {
        assert!(
            !message.contains(&format!("{name}=")),
            "{name} in {message}"
        );
    }
    assert!(message.contains("HOME=<temp>/home "), "{message}");
    assert!(
        message.len() <= MAX_FAILED_MESSAGE_BYTES,
        "{}",
        message.len()
    );
    assert!(
        !message.contains('\n') && !message.contains('\r'),
        "{message}"
    );
}

#[test]
fn the_environ_attack_finds_nothing_to_print() {
    let dir = dir();
    let chart = chart(&dir);
    symlink("/proc/self/environ", chart.join("files_env")).expect("link");
    // What helm's `fail (.Files.Get "files_env")` does: print the file in the error.
    let helm = fake_helm(
        &dir,
        "printf 'Error: execution error at (op/templates/x.yaml:1:3): %s\\n' \"$(tr '\\0' ' ' < \"$3/files_env\" 2>&1)\" >&2; exit 1",
    );
    let err = render_with(&helm, &chart, &[], &RenderLimits::default()).expect_err("failed");
    let RenderError::Failed { message } = &err else {
        panic!("not Failed: {err:?}");
    };
    assert!(
        message.starts_with("execution error at (op/templates/x.yaml:1:3): "),
        "{message}"
    );
    for (name, _) in std::env::vars() {
        assert!(
            !message.contains(&format!("{name}=")),
            "{name} in {message}"
        );
    }
}

#[test]
fn the_chart_path_replaces_the_copy_in_messages() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(
        &dir,
        "echo 'walk.go:75: found symbolic link in path' >&2; echo \"Error: open $3/values.yaml: permission denied\" >&2; exit 1",
    );
    let err = render_with(&helm, &chart, &[], &RenderLimits::default()).expect_err("failed");
    let RenderError::Failed { message } = &err else {
        panic!("not Failed: {err:?}");
    };
    assert_eq!(
        message,
        &format!("open {}/values.yaml: permission denied", chart.display())
    );
    let shown = err.to_string();
    assert!(shown.starts_with("helm template failed: open "), "{shown}");
    assert!(shown.ends_with("lint the output with `-f -`"), "{shown}");
}

#[test]
fn a_silent_failure_gives_the_exit_status() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(&dir, "exit 3");
    let err = render_with(&helm, &chart, &[], &RenderLimits::default()).expect_err("failed");
    let RenderError::Failed { message } = &err else {
        panic!("not Failed: {err:?}");
    };
    assert_eq!(message, "helm gave no reason (exit status: 3)");
}

#[test]
fn a_helm_running_too_long_is_killed_promptly() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(&dir, "echo started; sleep 60");
    let limits = RenderLimits {
        timeout: Duration::from_secs(1),
        ..RenderLimits::default()
    };
    let start = Instant::now();
    let err = render_with(&helm, &chart, &[], &limits).expect_err("timed out");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        matches!(err, RenderError::TimedOut { limit } if limit == Duration::from_secs(1)),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("helm template did not finish within 1 s"),
        "{err}"
    );
}

#[test]
fn a_helm_leaving_a_child_holding_its_output_is_bounded_too() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(&dir, "sleep 60 &\nexit 0");
    let limits = RenderLimits {
        timeout: Duration::from_secs(1),
        ..RenderLimits::default()
    };
    let start = Instant::now();
    let err = render_with(&helm, &chart, &[], &limits).expect_err("timed out");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(err, RenderError::TimedOut { .. }), "{err:?}");
}

#[test]
fn a_helm_printing_forever_is_stopped() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(&dir, "yes 'kind: ConfigMap'");
    let limits = RenderLimits {
        max_output_bytes: 64 * 1024,
        ..RenderLimits::default()
    };
    let start = Instant::now();
    let err = render_with(&helm, &chart, &[], &limits).expect_err("too large");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        matches!(err, RenderError::OutputTooLarge { limit: 65_536 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("more than 65536 bytes"), "{err}");
}

#[test]
fn a_helm_flooding_stderr_does_not_block() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(
        &dir,
        "echo 'Error: first' >&2; head -c 10000000 /dev/zero >&2; echo done; exit 0",
    );
    let limits = RenderLimits {
        timeout: Duration::from_secs(20),
        ..RenderLimits::default()
    };
    let rendered = render_with(&helm, &chart, &[], &limits).expect("rendered");
    assert_eq!(rendered.text, "done\n");
}

#[test]
fn no_helm_is_not_found() {
    let dir = dir();
    let empty = dir.root.join("empty");
    fs::create_dir(&empty).expect("empty");
    assert_eq!(find_helm(Some(empty.as_os_str())), None);
    assert_eq!(find_helm(None), None);
    let chart = chart(&dir);
    let err = render_with(&empty.join("helm"), &chart, &[], &RenderLimits::default())
        .expect_err("not found");
    assert!(matches!(err, RenderError::NotFound), "{err:?}");
    assert!(err.to_string().contains("--no-render"), "{err}");
}

#[test]
fn helm_is_found_only_executable_and_in_absolute_directories() {
    let dir = dir();
    let helm = fake_helm(&dir, "exit 0");
    let bin = helm.parent().expect("bin");
    let plain = dir.root.join("plain");
    write(&plain, "helm", "not a program");
    let path = std::env::join_paths([plain.as_path(), bin]).expect("PATH");
    assert_eq!(find_helm(Some(&path)), Some(helm.clone()));
    // A relative entry (here `.` would be this directory) is never searched.
    let relative = std::env::join_paths([Path::new("."), Path::new("")]).expect("PATH");
    assert_eq!(find_helm(Some(&relative)), None);
}

#[test]
fn the_chart_words_of_a_failure_are_cut_and_quoted() {
    let long = "y".repeat(1_000);
    let line = format!("execution error at (op/templates/x.yaml:3:4): {long}");
    let shown = shorten_chart_words(&line);
    assert!(
        shown.starts_with(
            "execution error at (op/templates/x.yaml:3:4): the chart's message: \"yyy"
        ),
        "{shown}"
    );
    assert!(shown.len() < 250, "{}", shown.len());
    assert_eq!(shorten_chart_words("nothing to cut"), "nothing to cut");
}

#[test]
fn the_error_line_is_helms_error_else_the_first() {
    let text = "walk.go:75: found symbolic link\nError: INSTALLATION FAILED: x\nError: later\n";
    assert_eq!(error_line(text), Some("INSTALLATION FAILED: x"));
    assert_eq!(
        error_line("a\ncould not render: error\n"),
        Some("could not render: error")
    );
    assert_eq!(error_line("\n  just this\n"), Some("just this"));
    assert_eq!(error_line("\n \n"), None);
    // kubectl kustomize: deprecation warnings first, then klog's error line.
    let kustomize = "# Warning: 'bases' is deprecated. Please use 'resources' instead.\nE1207 22:46:35.011860   10333 run.go:72] \"command failed\" err=\"accumulating resources: lstat ./crd.yaml: no such file or directory\"\n";
    assert_eq!(
        error_line(kustomize),
        Some("accumulating resources: lstat ./crd.yaml: no such file or directory")
    );
    assert_eq!(
        error_line("# Warning: old field\nsomething else broke\n"),
        Some("something else broke")
    );
    let text = "Error: found in Chart.yaml, but missing in charts/ directory: postgresql\n";
    assert_eq!(
        error_line(text),
        Some("found in Chart.yaml, but missing in charts/ directory: postgresql")
    );
}

#[test]
fn secrets_in_a_failure_are_masked() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(
        &dir,
        "echo 'Error: execution error at (op/templates/x.yaml:1:1): token ghp_0123456789abcdefghijABCDEFGHIJ012345' >&2; exit 1",
    );
    let err = render_with(&helm, &chart, &[], &RenderLimits::default()).expect_err("failed");
    let RenderError::Failed { message } = &err else {
        panic!("not Failed: {err:?}");
    };
    assert!(!message.contains("ghp_0123456789"), "{message}");
}

#[test]
fn the_bounds_read_well() {
    assert_eq!(size(16 * 1024 * 1024), "16 MiB");
    assert_eq!(size(1_000), "1000 bytes");
    let err = RenderError::TimedOut {
        limit: Duration::from_secs(30),
    };
    assert!(
        err.to_string()
            .starts_with("helm template did not finish within 30 s:"),
        "{err}"
    );
    let err = RenderError::OutputTooLarge {
        limit: 16 * 1024 * 1024,
    };
    assert!(err.to_string().contains("more than 16 MiB"), "{err}");
}

/// PATH with `helm`'s directory first, then this process's.
fn path_with(helm: &Path) -> std::ffi::OsString {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(
        helm.parent()
            .into_iter()
            .map(Path::to_path_buf)
            .chain(std::env::split_paths(&inherited)),
    )
    .expect("PATH")
}

/// `chart` rendered by `helm` with no values, in the namespace `namespace`.
fn render_in(helm: &Path, chart: &Path, namespace: &str) -> Result<Rendered, RenderError> {
    let path_var = path_with(helm);
    let limits = RenderLimits::default();
    let job = Job {
        helm,
        path_var: Some(&path_var),
        release: "rel",
        namespace,
        values: &[],
        set: &[],
        global: false,
        limits: &limits,
    };
    render(&job, chart)
}

/// A template that refuses the default namespace (`fail` unless `-n` names one)
/// renders as an install would: in a namespace of its own, with a `global` section.
#[test]
fn a_chart_refusing_the_default_namespace_renders_as_installed() {
    let dir = dir();
    let chart = chart(&dir);
    let helm = fake_helm(
        &dir,
        r#"case "$*" in *--namespace=default*) echo "Error: execution error at (op/templates/a.yaml:1:3): set a namespace with -n" >&2; exit 1;; esac; echo "$@""#,
    );
    let rendered = render_in(&helm, &chart, "default").expect("rendered");
    assert_eq!(rendered.fallback, Some(Fallback::AsInstalled));
    assert_eq!(rendered.namespace, LINT_NAMESPACE);
    assert!(
        rendered
            .text
            .contains("--namespace=kopf-audit-lint --set-json=global={}"),
        "{}",
        rendered.text
    );
    // A namespace given is kept.
    let rendered = render_in(&helm, &chart, "ops").expect("rendered");
    assert_eq!(rendered.fallback, None);
    assert_eq!(rendered.namespace, "ops");
}

/// A chart that needs values its defaults leave unset renders with chart-testing's
/// `ci/*-values.yaml`, the first in name order that works.
#[test]
fn ci_values_are_tried_when_the_defaults_fail() {
    let dir = dir();
    let chart = chart(&dir);
    write(&chart, "ci/b-values.yaml", "x: 1\n");
    write(&chart, "ci/a-values.yaml", "x: 1\n");
    write(&chart, "ci/notes.txt", "not values\n");
    let helm = fake_helm(
        &dir,
        r#"case "$*" in *--values=*) echo "$@";; *) echo "Error: nil pointer evaluating interface {}.x" >&2; exit 1;; esac"#,
    );
    let rendered = render_in(&helm, &chart, "default").expect("rendered");
    assert_eq!(
        rendered.fallback,
        Some(Fallback::CiValues("ci/a-values.yaml".into()))
    );
    assert!(
        rendered.text.contains("/ci/a-values.yaml"),
        "{}",
        rendered.text
    );
}

/// Each attempt is one helm run: one when values are given, else as asked, as
/// installed, and one per ci values file (at most two); the first failure is reported.
#[test]
fn values_given_are_the_only_attempt_and_the_first_failure_is_reported() {
    let dir = dir();
    let chart = chart(&dir);
    for name in ["a", "b", "c"] {
        write(&chart, &format!("ci/{name}-values.yaml"), "x: 1\n");
    }
    let count = dir.root.join("runs");
    let helm = fake_helm(
        &dir,
        &format!(
            r#"echo run >> {}; case "$*" in *global*) echo "Error: second" >&2;; *) echo "Error: first" >&2;; esac; exit 1"#,
            count.display()
        ),
    );
    let runs = || {
        fs::read_to_string(&count)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let err = render_with(
        &helm,
        &chart,
        &[PathBuf::from("/abs/v.yaml")],
        &RenderLimits::default(),
    )
    .expect_err("fails");
    assert_eq!(runs(), 1);
    assert!(err.to_string().contains("first"), "{err}");
    fs::remove_file(&count).expect("reset");
    let err = render_in(&helm, &chart, "default").expect_err("fails");
    assert_eq!(runs(), 4, "as asked, as installed, two ci values files");
    assert!(err.to_string().contains("failed: first"), "{err}");
}

/// Dependencies not vendored under charts/ are left out of the copy's Chart.yaml (and
/// its Chart.lock dropped), a vendored one kept, and the render names them.
#[test]
fn unvendored_dependencies_are_left_out_and_named() {
    let dir = dir();
    let chart = chart(&dir);
    write(
        &chart,
        "Chart.yaml",
        "apiVersion: v2\nname: op\nversion: 0.1.0\ndependencies:\n- name: common\n  version: 2.x\n  repository: oci://registry.example.com/charts\n- name: redis\n  version: 1.0.0\n  repository: https://charts.example.com\n- name: local\n  version: 0.1.0\n  repository: file://../local\n",
    );
    write(&chart, "Chart.lock", "dependencies: []\n");
    write(&chart, "charts/redis-1.0.0.tgz", "not really a tarball");
    write(
        &chart,
        "charts/local/Chart.yaml",
        "apiVersion: v2\nname: local\nversion: 0.1.0\n",
    );
    let helm = fake_helm(&dir, r#"cat "$3/Chart.yaml"; ls "$3""#);
    let rendered = render_in(&helm, &chart, "ops").expect("rendered");
    assert_eq!(rendered.unvendored, ["common"]);
    assert!(!rendered.text.contains("common"), "{}", rendered.text);
    assert!(rendered.text.contains("name: redis"), "{}", rendered.text);
    assert!(rendered.text.contains("name: local"), "{}", rendered.text);
    assert!(!rendered.text.contains("Chart.lock"), "{}", rendered.text);

    let failing = fake_helm(
        &dir,
        r#"echo "Error: template: op/templates/a.yaml:1:3: no template \"common.names.fullname\"" >&2; exit 1"#,
    );
    let err = render_in(&failing, &chart, "ops").expect_err("fails");
    let RenderError::FailedUnvendored { missing, .. } = &err else {
        panic!("not named: {err:?}");
    };
    assert_eq!(missing, &["common"]);
    assert!(
        err.to_string()
            .contains("run `helm dependency build` before lint"),
        "{err}"
    );
}

/// `--set` values reach helm after the values files, one argument each, and a render
/// given them is the one asked for: no fallback is tried when it fails.
#[test]
fn set_values_reach_helm_and_leave_no_fallback() {
    let dir = dir();
    let chart = chart(&dir);
    write(&chart, "ci/a-values.yaml", "x: 1\n");
    let helm = fake_helm(
        &dir,
        r#"case "$*" in *--set=image.tag=1.2*) echo "$@";; *) echo "Error: nil pointer evaluating interface {}.tag" >&2; exit 1;; esac"#,
    );
    let path_var = path_with(&helm);
    let limits = RenderLimits::default();
    let values = [dir.root.join("mine.yaml")];
    std::fs::write(&values[0], "y: 2\n").expect("write");
    let set = ["image.tag=1.2".to_string(), "name=a b".to_string()];
    let job = |set| Job {
        helm: &helm,
        path_var: Some(&path_var),
        release: "rel",
        namespace: "default",
        values: &values,
        set,
        global: false,
        limits: &limits,
    };
    let rendered = render(&job(&set), &chart).expect("rendered");
    assert_eq!(rendered.fallback, None);
    let text = rendered.text;
    let (files_at, set_at) = (
        text.find("--values=").expect("the values file"),
        text.find("--set=image.tag=1.2 --set=name=a b")
            .expect("both --set"),
    );
    assert!(files_at < set_at, "{text}");

    let wrong = ["image.tag=9".to_string()];
    let failed = render(&job(&wrong), &chart).expect_err("as asked, and only that");
    assert!(matches!(failed, RenderError::Failed { .. }), "{failed:?}");
}

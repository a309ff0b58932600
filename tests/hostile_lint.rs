//! `kopf-audit lint` on repositories a hostile contributor wrote, through the real
//! binary: lint runs in CI on pull requests from forks, so every byte it reads is the
//! contributor's. Each test builds its repository, runs lint in every output format
//! with a canary variable in its environment, and asserts the exit code, that the
//! canary appears in no output, that no output line is one a CI runner reads as a
//! command or carries a control character, and that every machine format is
//! well-formed. The charts need helm: those tests run with the `e2e` feature, which
//! `hack/test.sh` turns on with `KOPF_AUDIT_HELM` set, and fail without it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A value no output may contain: it stands for the CI job's secrets.
const CANARY: &str = "kopfauditcanary7f3a9e1d";

/// Every `-o` format.
const FORMATS: [&str; 7] = [
    "table",
    "json",
    "yaml",
    "sarif",
    "junit",
    "codeclimate",
    "html",
];

/// A fresh directory for one test's repository.
fn repo(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("kopf-audit-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Writes `files` (path, content) under `dir`.
fn write(dir: &Path, files: &[(&str, &[u8])]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
        std::fs::write(path, text).expect("write");
    }
}

/// lint of `dir` in `format`, with `args`, the canary in its environment and `path` as
/// its PATH (`None`: this process's).
fn lint(
    dir: &Path,
    format: &str,
    args: &[&str],
    path: Option<&str>,
    stdin: Option<&str>,
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kopf-audit"));
    command
        .arg("lint")
        .arg(dir)
        .args(["-o", format, "--fail-on", "none"])
        .args(args)
        .env("KOPF_AUDIT_TEST_SECRET", CANARY)
        .env_remove("NO_COLOR")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = path {
        command.env("PATH", path);
    }
    let mut child = command.spawn().expect("kopf-audit runs");
    if let Some(text) = stdin {
        use std::io::Write as _;
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(text.as_bytes()).expect("stdin written");
    }
    child.wait_with_output().expect("kopf-audit finishes")
}

/// lint in every format: each run's exit code is `code`, and each output is clean and
/// well-formed. Returns the JSON output, parsed.
fn lint_every_format(
    dir: &Path,
    args: &[&str],
    path: Option<&str>,
    stdin: Option<&str>,
    code: i32,
) -> serde_json::Value {
    let mut json = serde_json::Value::Null;
    for format in FORMATS {
        let out = lint(dir, format, args, path, stdin);
        let stdout = String::from_utf8(out.stdout.clone()).expect("lint prints UTF-8");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(code),
            "-o {format}: exit {:?} (a signal when None)\nstderr: {stderr}\nstdout: {}",
            out.status,
            head(&stdout)
        );
        for (stream, text) in [("stdout", stdout.as_str()), ("stderr", &*stderr)] {
            assert!(
                !text.contains(CANARY),
                "-o {format}: the canary reached {stream}"
            );
            assert_inert(format, stream, text);
        }
        assert_well_formed(format, &stdout);
        if format == "json" {
            json = serde_json::from_str(&stdout).expect("JSON");
        }
    }
    json
}

/// The first 2,000 characters, for a failure message.
fn head(text: &str) -> String {
    text.chars().take(2000).collect()
}

/// No line a CI runner reads as a command (GitHub Actions `::`, Azure Pipelines
/// `##vso[` and `##[`, after leading whitespace, which the runners trim), and no
/// control or invisible character but line feed and tab.
fn assert_inert(format: &str, stream: &str, text: &str) {
    for line in text.lines() {
        let start = line.trim_start();
        assert!(
            !(start.starts_with("::") || start.starts_with("##vso[") || start.starts_with("##[")),
            "-o {format} {stream}: a runner command: {line:?}"
        );
    }
    let bad = text.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}' | '\u{feff}')
    });
    assert_eq!(
        bad, None,
        "-o {format} {stream}: a control or invisible character"
    );
}

/// Each machine format parses as what it claims: JSON, SARIF 2.1.0 by its schema, YAML,
/// XML (well-formed, only characters XML 1.0 allows), HTML as text.
fn assert_well_formed(format: &str, text: &str) {
    match format {
        "json" | "codeclimate" => {
            serde_json::from_str::<serde_json::Value>(text).expect("valid JSON");
        }
        "sarif" => {
            let sarif: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
            let mut schema: serde_json::Value =
                serde_json::from_str(include_str!("data/sarif-schema-2.1.0.json")).expect("schema");
            // The published schema's `language` pattern has a stray `]` that the
            // meta-schema's regex format refuses; its intent is restored (lint never
            // writes `language`).
            for definition in ["run", "toolComponent"] {
                schema["definitions"][definition]["properties"]["language"]["pattern"] =
                    serde_json::json!("^[a-zA-Z]{2}(-[a-zA-Z]{2})?$");
            }
            let validator = jsonschema::validator_for(&schema).expect("schema compiles");
            let errors: Vec<String> = validator
                .iter_errors(&sarif)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "SARIF invalid: {errors:?}");
            assert_uris_inside(&sarif);
        }
        "yaml" => {
            serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text).expect("valid YAML");
        }
        "junit" => assert_xml(text),
        _ => {}
    }
}

/// Every SARIF artifact URI is relative, percent-encoded and stays inside the linted
/// root.
fn assert_uris_inside(value: &serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::String(uri)) = map.get("uri") {
                assert!(
                    !uri.starts_with('/') && !uri.contains(':'),
                    "an absolute URI: {uri}"
                );
                assert!(
                    !uri.split('/')
                        .any(|s| s == ".." || s == "%2E%2E" || s == "%2e%2e"),
                    "a URI out of the root: {uri}"
                );
                assert!(
                    uri.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-._~/%".contains(&b)),
                    "a URI not percent-encoded: {uri}"
                );
            }
            map.values().for_each(assert_uris_inside);
        }
        serde_json::Value::Array(items) => items.iter().for_each(assert_uris_inside),
        _ => {}
    }
}

/// A well-formedness check of XML 1.0, enough for JUnit: allowed characters only,
/// entity references known, tags balanced, attribute values quoted.
fn assert_xml(text: &str) {
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
    assert!(
        text.chars().all(allowed),
        "a character XML 1.0 does not allow"
    );
    let mut open: Vec<String> = Vec::new();
    let mut rest = text
        .strip_prefix("<?xml")
        .and_then(|r| r.split_once("?>"))
        .map_or(text, |(_, r)| r);
    while let Some(at) = rest.find(['<', '&']) {
        let (_, from) = rest.split_at(at);
        if let Some(entity) = from.strip_prefix('&') {
            let end = entity.find(';').expect("an entity ends in ;");
            let name = &entity[..end];
            assert!(
                ["amp", "lt", "gt", "quot", "apos"].contains(&name) || name.starts_with('#'),
                "an unknown entity &{name};"
            );
            rest = &entity[end + 1..];
            continue;
        }
        let end = from.find('>').expect("a tag ends");
        let tag = &from[1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name.trim()), "tags balanced");
        } else if !tag.starts_with('!') {
            let name: String = tag
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '/')
                .collect();
            assert!(!name.is_empty(), "a tag has a name");
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "attribute values quoted: {tag}"
            );
            assert!(!tag.contains('<'), "no < in a tag");
            if !tag.ends_with('/') {
                open.push(name);
            }
        }
        rest = &from[end + 1..];
    }
    assert!(open.is_empty(), "unclosed tags: {open:?}");
}

/// The unread inputs of lint's JSON output, as (path, why).
fn unread(json: &serde_json::Value) -> Vec<(String, String)> {
    json["unread"]
        .as_array()
        .expect("an unread list")
        .iter()
        .map(|u| {
            (
                u["path"].as_str().unwrap_or_default().to_string(),
                u["why"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A kopf operator's files that lint reads whole: its Deployment, RBAC and handler.
const OPERATOR: [(&str, &[u8]); 2] = [
    (
        "deploy/operator.yaml",
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op, namespace: ops}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers:\n      - name: op\n        image: op\n        command: [kopf, run, -A, /src/op.py]\n",
    ),
    (
        "op.py",
        b"import kopf\n\n@kopf.on.create('kopfexamples')\ndef create_fn(**_):\n    pass\n",
    ),
];

#[test]
fn python_nested_beyond_the_bounds_is_named_never_a_crash() {
    let dir = repo("deep-python");
    write(&dir, &OPERATOR);
    let deep: Vec<(String, String)> = vec![
        (
            "attributes.py".into(),
            format!("x = a{}\n", ".a".repeat(100_000)),
        ),
        ("sums.py".into(), format!("x = 1{}\n", "+1".repeat(100_000))),
        ("unary.py".into(), format!("x = {}1\n", "-".repeat(100_000))),
        (
            "calls.py".into(),
            format!("x = f{}\n", "()".repeat(100_000)),
        ),
        (
            "ternary.py".into(),
            format!("x = {}0\n", "1 if y else ".repeat(100_000)),
        ),
        (
            "parentheses.py".into(),
            format!("x = {}1{}\n", "(".repeat(500_000), ")".repeat(500_000)),
        ),
        ("big.py".into(), format!("# {}\n", "x".repeat(2 << 20))),
    ];
    for (name, text) in &deep {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let json = lint_every_format(&dir, &[], None, None, 2);
    let unread = unread(&json);
    for (name, _) in &deep {
        let found = unread.iter().find(|(path, _)| path == name);
        let (_, why) = found.unwrap_or_else(|| panic!("{name} is not named as unread: {unread:?}"));
        assert!(why.contains("bound"), "{name}: the bound is named: {why}");
    }
    assert!(
        unread
            .iter()
            .any(|(p, w)| p == "big.py" && w.contains("1024 KiB")),
        "the size bound is named: {unread:?}"
    );
    // The operator beside them is still linted.
    assert!(
        json["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "{json}"
    );
    // Allowed, the same run passes or fails by its findings.
    let out = lint(&dir, "table", &["--allow-unrendered"], None, None);
    assert_eq!(out.status.code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn yaml_nested_beyond_the_bounds_is_named_never_a_hang() {
    let dir = repo("deep-yaml");
    write(&dir, &OPERATOR);
    let flow = format!(
        "apiVersion: v1\nkind: ConfigMap\ndata: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let block = format!(
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  {}x\n",
        "- ".repeat(100_000)
    );
    std::fs::write(dir.join("flow.yaml"), flow).expect("write");
    std::fs::write(dir.join("block.yaml"), block).expect("write");
    let json = lint_every_format(&dir, &[], None, None, 2);
    let unread = unread(&json);
    for name in ["flow.yaml", "block.yaml"] {
        assert!(
            unread.iter().any(|(p, w)| p == name && w.contains("bound")),
            "{name}: {unread:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a hostile string would do: end the line, write a workflow command, retitle and
/// clear the terminal, turn the text around, and a next-line and a NUL.
const HOSTILE: &str = "web\n::error file=README.md,line=1::All checks passed\n  ::warning::x\n##vso[task.setvariable variable=x]y\n\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{202e}\u{85}::error::nel\u{0}\u{ffff}";

/// [`HOSTILE`] as a YAML double-quoted scalar.
fn yaml_quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || (c as u32) >= 0x80 => {
                out.push_str(&format!("\\U{:08x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[test]
fn names_literals_file_names_and_reasons_cannot_write_to_the_log() {
    let dir = repo("names");
    let name = yaml_quoted(HOSTILE);
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {name}}}\nspec:\n  selector: {{matchLabels: {{app: op}}}}\n  template:\n    metadata: {{labels: {{app: op}}}}\n    spec:\n      serviceAccountName: {name}\n      containers:\n      - name: op\n        image: op\n        command: [kopf, run, -A, {name}]\n"
    );
    let python_literal = HOSTILE.replace('\n', "\\n").replace('\u{0}', "\\x00");
    let handler = format!(
        "import kopf, time\n\n@kopf.on.create('{python_literal}')\nasync def create_fn(**_):\n    time.sleep(1)  # kopf-audit: ignore[source.blocking-call] \u{1b}[2J ::error::reason \u{85}::error::x\n"
    );
    write(
        &dir,
        &[
            ("deploy.yaml", deployment.as_bytes()),
            ("op.py", handler.as_bytes()),
        ],
    );
    // A file whose name starts a line with a workflow command.
    write(&dir, &[("x\n::error::file name\u{1b}[2J.py", b"import kopf\n\n@kopf.on.create('things')\nasync def f(**_):\n    import time\n    time.sleep(1)\n")]);
    let json = lint_every_format(&dir, &[], None, None, 0);
    assert!(
        json["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "{json}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_source_comment_cannot_point_outside_the_repository() {
    let dir = repo("source");
    let rendered = "---\n# Source: ../../../../etc/passwd\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op, command: [kopf, run, -A, op.py]}]\n---\n# Source: /etc/shadow\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: op}\n";
    let json = lint_every_format(&dir, &["-f", "-"], None, Some(rendered), 0);
    for finding in json["findings"].as_array().expect("findings") {
        let file = finding["file"].as_str().unwrap_or(".");
        assert!(!file.contains("..") && !file.starts_with('/'), "{finding}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chart lint must render: a Deployment that runs kopf.
fn chart(dir: &Path) {
    write(
        dir,
        &[
            ("chart/Chart.yaml", b"apiVersion: v2\nname: op\nversion: 0.1.0\n"),
            (
                "chart/templates/deployment.yaml",
                b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op, command: [kopf, run, -A, op.py]}]\n",
            ),
        ],
    );
}

#[test]
fn without_helm_a_chart_is_unread_and_the_run_no_pass() {
    let dir = repo("no-helm");
    chart(&dir);
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).expect("dir");
    let path = empty.to_string_lossy().into_owned();
    let json = lint_every_format(&dir, &[], Some(&path), None, 2);
    let unread = unread(&json);
    assert!(
        unread
            .iter()
            .any(|(p, w)| p == "chart" && w.contains("helm")),
        "{unread:?}"
    );
    let table = lint(&dir, "table", &[], Some(&path), None);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(!text.contains("No findings."), "{text}");
    let sarif = lint(&dir, "sarif", &[], Some(&path), None);
    let sarif: serde_json::Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false, "{invocation}");
    assert_eq!(
        invocation["toolExecutionNotifications"][0]["level"], "error",
        "{invocation}"
    );
    // Asked, lint passes by its findings; --no-render runs no helm and says so.
    assert_eq!(
        lint(&dir, "table", &["--allow-unrendered"], Some(&path), None)
            .status
            .code(),
        Some(0)
    );
    let skipped = lint(&dir, "json", &["--no-render"], Some(&path), None);
    assert_eq!(
        skipped.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&skipped.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The PATH that holds the helm `hack/test.sh` built (`KOPF_AUDIT_HELM`).
#[cfg(feature = "e2e")]
fn helm_path() -> String {
    let helm = std::env::var("KOPF_AUDIT_HELM").expect(
        "KOPF_AUDIT_HELM names the helm binary (hack/test.sh sets it): the chart tests need helm",
    );
    let dir = Path::new(&helm)
        .parent()
        .expect("helm's directory")
        .to_string_lossy()
        .into_owned();
    format!("{dir}:/usr/bin:/bin")
}

#[cfg(feature = "e2e")]
#[test]
fn a_chart_cannot_read_the_environment_or_files_outside_it() {
    let dir = repo("symlinks");
    chart(&dir);
    std::os::unix::fs::symlink("/proc/self/environ", dir.join("chart/files_env")).expect("symlink");
    std::os::unix::fs::symlink("/etc", dir.join("chart/etc")).expect("symlink");
    write(
        &dir,
        &[(
            "chart/templates/leak.yaml",
            b"{{ fail (printf \"%s %s\" (.Files.Get \"files_env\") (.Files.Get \"etc/passwd\")) }}\n",
        )],
    );
    let path = helm_path();
    let json = lint_every_format(&dir, &[], Some(&path), None, 2);
    let unread = unread(&json);
    assert!(unread.iter().any(|(p, _)| p == "chart"), "{unread:?}");
    for (_, why) in &unread {
        assert!(
            !why.contains("root:"),
            "a file outside the chart was read: {why}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "e2e")]
#[test]
fn a_chart_that_does_not_render_is_no_pass() {
    let dir = repo("unrendered");
    chart(&dir);
    write(
        &dir,
        &[
            (
                "chart/Chart.yaml",
                b"apiVersion: v2\nname: op\nversion: 0.1.0\ndependencies:\n- {name: postgresql, version: 1.0.0, repository: https://charts.example.com}\n",
            ),
            ("other/Chart.yaml", b"apiVersion: v2\nname: other\nversion: 0.1.0\n"),
            ("other/templates/x.yaml", b"{{ required \"a value of ours\" .Values.needed }}\n"),
        ],
    );
    let path = helm_path();
    let json = lint_every_format(&dir, &[], Some(&path), None, 2);
    let unread = unread(&json);
    // Rendered without its dependency, which is named as unread.
    assert!(
        unread
            .iter()
            .any(|(p, why)| p == "chart/charts/postgresql" && why.contains("helm dependency build")),
        "{unread:?}"
    );
    assert!(unread.iter().any(|(p, _)| p == "other"), "{unread:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "e2e")]
#[test]
fn a_link_inside_the_chart_still_renders() {
    let dir = repo("inside-link");
    chart(&dir);
    write(&dir, &[("chart/files/real", b"the chart's own words")]);
    std::os::unix::fs::symlink("files/real", dir.join("chart/alias")).expect("symlink");
    write(
        &dir,
        &[(
            "chart/templates/config.yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: words}\ndata: {words: {{ .Files.Get \"alias\" | quote }}}\n",
        )],
    );
    let path = helm_path();
    let json = lint_every_format(&dir, &[], Some(&path), None, 0);
    assert!(unread(&json).is_empty(), "{json}");
    assert!(
        json["targets"].as_array().is_some_and(|t| !t.is_empty()),
        "the chart's Deployment is read: {json}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chart that renders only as its CI installs it (a namespace of its own, refusing
/// `default`; a value its defaults leave unset, given by chart-testing's
/// `ci/*-values.yaml`) is rendered that way and its Deployment read, with a note
/// saying how; the run passes as any other.
#[cfg(feature = "e2e")]
#[test]
fn a_chart_renders_as_its_ci_would() {
    let dir = repo("as-ci");
    write(
        &dir,
        &[
            ("chart/Chart.yaml", b"apiVersion: v2\nname: op\nversion: 0.1.0\n"),
            (
                "chart/templates/deployment.yaml",
                b"{{- if eq .Release.Namespace \"default\" }}{{ fail \"install it with -n\" }}{{ end }}\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: \"op:{{ .Values.image.tag }}\", command: [kopf, run, -A, op.py]}]\n",
            ),
            ("chart/ci/test-values.yaml", b"image: {tag: \"1\"}\n"),
        ],
    );
    let path = helm_path();
    let json = lint_every_format(&dir, &[], Some(&path), None, 0);
    assert!(unread(&json).is_empty(), "{json}");
    let notes = json["notes"].to_string();
    assert!(
        notes.contains("rendered with its ci/test-values.yaml (chart-testing's values), in namespace kopf-audit-lint"),
        "{notes}"
    );
    let checks: Vec<&str> = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["check"].as_str())
        .collect();
    assert!(checks.contains(&"workload.liveness"), "{checks:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The PATH that holds the kubectl `hack/test.sh` names (`KOPF_AUDIT_KUBECTL`).
#[cfg(feature = "e2e")]
fn kubectl_path() -> String {
    let kubectl = std::env::var("KOPF_AUDIT_KUBECTL").expect(
        "KOPF_AUDIT_KUBECTL names the kubectl binary (hack/test.sh sets it): the kustomize tests need kubectl",
    );
    let dir = Path::new(&kubectl)
        .parent()
        .expect("kubectl's directory")
        .to_string_lossy()
        .into_owned();
    format!("{dir}:/usr/bin:/bin")
}

/// A repository that deploys with kustomize: an overlay over a base, as a reviewer
/// would build it. lint builds the overlay once (not the base again), reads its
/// Deployment, and places each finding in the base file the object came from. A second
/// overlay that names a remote base, and a third that reads the job's environment
/// through a link, are not built, and say why: nothing is fetched, nothing leaks.
#[cfg(feature = "e2e")]
#[test]
fn a_kustomization_is_built_as_a_reviewer_would() {
    let dir = repo("kustomize");
    write(
        &dir,
        &[
            (
                "deploy/base/kustomization.yaml",
                b"resources:\n- deployment.yaml\n- sa.yaml\n",
            ),
            (
                "deploy/base/deployment.yaml",
                b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      serviceAccountName: op\n      containers:\n      - name: op\n        image: op:1\n        command: [kopf, run, -A, /app/op.py]\n",
            ),
            ("deploy/base/sa.yaml", b"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: op}\n"),
            (
                "deploy/overlays/prod/kustomization.yaml",
                b"namespace: ops\nnamePrefix: prod-\nresources:\n- ../../base\ncommonAnnotations:\n  team: /\n",
            ),
            (
                "remote/kustomization.yaml",
                b"resources:\n- https://raw.githubusercontent.com/example/op/main/deploy.yaml\n",
            ),
            (
                "leak/kustomization.yaml",
                b"configMapGenerator:\n- name: env\n  files:\n  - env\n",
            ),
        ],
    );
    std::os::unix::fs::symlink("/proc/self/environ", dir.join("leak/env")).expect("symlink");
    let path = kubectl_path();
    let json = lint_every_format(&dir, &[], Some(&path), None, 2);
    let targets: Vec<&str> = json["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(targets, ["prod-op"], "{json}");
    let memory = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == "workload.memory-limit")
        .expect("the base's Deployment has no memory limit");
    assert_eq!(memory["file"], "deploy/base/deployment.yaml", "{memory}");
    assert_eq!(
        memory["line"], 12,
        "the container's line in the base: {memory}"
    );
    let unread = unread(&json);
    assert!(
        unread
            .iter()
            .any(|(p, why)| p == "remote" && why.contains("remote resource")),
        "{unread:?}"
    );
    assert!(
        unread
            .iter()
            .any(|(p, why)| p == "leak" && why.contains("outside the repository")),
        "{unread:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without kubectl on PATH a kustomization is not built, and that is no silent pass:
/// it is named unread with the way to lint it, and the run exits 2.
#[test]
fn a_kustomization_without_kubectl_is_unread() {
    let dir = repo("kustomize-no-kubectl");
    write(
        &dir,
        &[
            ("deploy/kustomization.yaml", b"resources:\n- deployment.yaml\n"),
            (
                "deploy/deployment.yaml",
                b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers:\n      - name: op\n        image: op:1\n        command: [kopf, run, -A, /app/op.py]\n",
            ),
        ],
    );
    let json = lint_every_format(&dir, &[], Some("/nonexistent-bin"), None, 2);
    let unread = unread(&json);
    assert!(
        unread
            .iter()
            .any(|(p, why)| p == "deploy" && why.contains("kubectl is not on PATH")),
        "{unread:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! action.yml, run: its steps are executed in order with bash, as a GitHub runner runs a
//! composite action's steps (`bash --noprofile --norc -eo pipefail`, env from `inputs`,
//! `$RUNNER_TEMP`, `$GITHUB_PATH` prepended to the next steps' PATH, the first failure
//! ends the job), with the release download pointed at a local copy (`release-url:
//! file:///…`) made from the freshly built binary and its SHA256SUMS. The upload step
//! (github/codeql-action) cannot run here: what it would be given is recorded instead.
//! Needs bash, curl and sha256sum; no network.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fixture repository linted: one warning (workload.grace-period), two infos, no error.
const FIXTURE: &str = "tests/fixtures/lint/grace-period";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn action() -> serde_yaml_ng::Value {
    let text = std::fs::read_to_string(repo().join("action.yml")).expect("action.yml");
    serde_yaml_ng::from_str(&text).expect("action.yml is YAML")
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The runner's name for this machine's architecture, and the release's.
fn arch() -> (&'static str, &'static str) {
    match std::env::consts::ARCH {
        "x86_64" => ("X64", "amd64"),
        "aarch64" => ("ARM64", "arm64"),
        other => panic!("kopf-audit releases are not built for {other}"),
    }
}

/// A fresh directory under cargo's scratch space for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("action-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// `sha256sum NAME` in `dir`: one line of SHA256SUMS.
fn sha256_line(dir: &Path, name: &str) -> String {
    let out = Command::new("sha256sum")
        .arg(name)
        .current_dir(dir)
        .output()
        .expect("sha256sum runs");
    assert!(out.status.success(), "sha256sum {name}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// A release directory laid out as GitHub's downloads are (`<url>/vVERSION/NAME`): the
/// built binary under the release's name, another artifact, and SHA256SUMS over both.
/// Returns the `release-url` and the binary's path.
fn release(root: &Path) -> (String, PathBuf) {
    let dir = root.join("releases").join(format!("v{}", version()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let name = format!("kopf-audit-{}-linux-{}", version(), arch().1);
    std::fs::copy(env!("CARGO_BIN_EXE_kopf-audit"), dir.join(&name)).expect("copy the binary");
    std::fs::write(dir.join("kopf-audit.krew.yaml"), "kind: Plugin\n").expect("write");
    let sums = sha256_line(&dir, "kopf-audit.krew.yaml") + &sha256_line(&dir, &name);
    std::fs::write(dir.join("SHA256SUMS"), sums).expect("SHA256SUMS");
    let url = format!("file://{}", root.join("releases").display());
    (url, dir.join(name))
}

/// What became of one step.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Its `if:` was false.
    Skipped,
    /// A `run:` step that exited 0.
    Succeeded,
    /// A `run:` step that exited non-zero, with its code.
    Failed(i32),
    /// A `uses:` step, not runnable here: the action it names and its rendered `with:`.
    Uses(String, BTreeMap<String, String>),
    /// After a failure: the runner runs no more steps (none asks for `if: failure()`).
    NotRun,
}

/// One run of the action: the runner's directories and each step's outcome and output.
struct Run {
    workspace: PathBuf,
    runner_temp: PathBuf,
    github_path: PathBuf,
    outcomes: Vec<Outcome>,
    logs: Vec<String>,
}

impl Run {
    fn log(&self) -> String {
        self.logs.join("\n---\n")
    }
}

/// The value of `${{ inputs.NAME }}` with these inputs and action.yml's defaults.
fn input(action: &serde_yaml_ng::Value, inputs: &BTreeMap<&str, String>, name: &str) -> String {
    if let Some(given) = inputs.get(name) {
        return given.clone();
    }
    let declared = &action["inputs"][name];
    assert!(!declared.is_null(), "action.yml has no input {name}");
    declared["default"].as_str().unwrap_or_default().to_string()
}

/// Renders a value: a literal, or exactly one `${{ inputs.NAME }}` (all action.yml uses;
/// anything else fails the test so that this runner is kept honest).
fn render(action: &serde_yaml_ng::Value, inputs: &BTreeMap<&str, String>, value: &str) -> String {
    match value
        .trim()
        .strip_prefix("${{")
        .and_then(|v| v.strip_suffix("}}"))
    {
        Some(expr) => {
            let name = expr
                .trim()
                .strip_prefix("inputs.")
                .unwrap_or_else(|| panic!("an expression this test cannot evaluate: {value}"));
            input(action, inputs, name)
        }
        None => {
            assert!(
                !value.contains("${{"),
                "an expression inside a literal: {value}"
            );
            value.to_string()
        }
    }
}

/// A step's `if:`: absent, or `${{ inputs.NAME == 'literal' }}`.
fn condition(
    action: &serde_yaml_ng::Value,
    inputs: &BTreeMap<&str, String>,
    step: &serde_yaml_ng::Value,
) -> bool {
    let Some(cond) = step["if"].as_str() else {
        return true;
    };
    let expr = cond.trim().trim_start_matches("${{").trim_end_matches("}}");
    let (left, right) = expr
        .split_once("==")
        .unwrap_or_else(|| panic!("an if: this test cannot evaluate: {cond}"));
    let name = left
        .trim()
        .strip_prefix("inputs.")
        .expect("inputs.NAME == '…'");
    input(action, inputs, name) == right.trim().trim_matches('\'')
}

/// Runs action.yml's steps in order in a fresh runner at `root`.
fn run_action(root: &Path, inputs: &BTreeMap<&str, String>) -> Run {
    let action = action();
    let workspace = root.join("workspace");
    let runner_temp = root.join("runner-temp");
    copy_dir(&repo().join(FIXTURE), &workspace.join("operator"));
    std::fs::create_dir_all(&runner_temp).expect("mkdir");
    let github_path = root.join("github-path");
    let github_output = root.join("github-output");
    let github_env = root.join("github-env");
    for file in [&github_path, &github_output, &github_env] {
        std::fs::write(file, "").expect("runner file");
    }
    let (runner_arch, _) = arch();
    let mut run = Run {
        workspace,
        runner_temp,
        github_path,
        outcomes: Vec::new(),
        logs: Vec::new(),
    };
    let steps = action["runs"]["steps"]
        .as_sequence()
        .expect("steps")
        .clone();
    let mut failed = false;
    for (index, step) in steps.iter().enumerate() {
        if failed {
            run.outcomes.push(Outcome::NotRun);
            continue;
        }
        if !condition(&action, inputs, step) {
            run.outcomes.push(Outcome::Skipped);
            continue;
        }
        if let Some(uses) = step["uses"].as_str() {
            let with = step["with"]
                .as_mapping()
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let key = k.as_str().expect("a with: key").to_string();
                    (
                        key,
                        render(&action, inputs, v.as_str().expect("a with: string")),
                    )
                })
                .collect();
            run.outcomes.push(Outcome::Uses(uses.to_string(), with));
            continue;
        }
        let script = step["run"].as_str().expect("a run: or uses: step");
        assert_eq!(step["shell"], "bash", "step {index} runs in bash");
        let script_file = run.runner_temp.join(format!("step-{index}.sh"));
        std::fs::write(&script_file, script).expect("write the step");
        // $GITHUB_PATH lines, newest first, before the runner's own PATH.
        let added = std::fs::read_to_string(&run.github_path).expect("GITHUB_PATH");
        let mut path: Vec<&str> = added.lines().filter(|l| !l.is_empty()).collect();
        path.reverse();
        path.extend(["/usr/local/bin", "/usr/bin", "/bin"]);
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script_file)
            .current_dir(&run.workspace)
            .env_clear()
            .env("PATH", path.join(":"))
            .env("HOME", root)
            .env("CI", "true")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", &run.workspace)
            .env("GITHUB_OUTPUT", &github_output)
            .env("GITHUB_PATH", &run.github_path)
            .env("GITHUB_ENV", &github_env)
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", runner_arch)
            .env("RUNNER_TEMP", &run.runner_temp);
        for (key, value) in step["env"].as_mapping().into_iter().flatten() {
            let value = render(&action, inputs, value.as_str().expect("an env: string"));
            command.env(key.as_str().expect("an env: key"), value);
        }
        let out = command.output().expect("bash runs");
        run.logs.push(format!(
            "step {index} ({}): {}\nstdout:\n{}\nstderr:\n{}",
            step["name"].as_str().unwrap_or_default(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
        if out.status.success() {
            run.outcomes.push(Outcome::Succeeded);
        } else {
            failed = true;
            run.outcomes
                .push(Outcome::Failed(out.status.code().unwrap_or(-1)));
        }
    }
    run
}

fn inputs(release_url: &str, pairs: &[(&'static str, &str)]) -> BTreeMap<&'static str, String> {
    let mut inputs: BTreeMap<&str, String> =
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
    inputs.insert("version", version().to_string());
    inputs.insert("release-url", release_url.to_string());
    inputs
        .entry("path")
        .or_insert_with(|| "operator".to_string());
    inputs
}

/// The step indices of action.yml by what they do.
struct Steps {
    download: usize,
    lint: usize,
    upload: usize,
    fail: usize,
}

fn steps() -> Steps {
    let action = action();
    let steps = action["runs"]["steps"]
        .as_sequence()
        .expect("steps")
        .clone();
    let find = |f: &dyn Fn(&serde_yaml_ng::Value) -> bool, what: &str| {
        steps
            .iter()
            .position(f)
            .unwrap_or_else(|| panic!("action.yml has no step that {what}"))
    };
    let runs = |needle: &'static str| {
        move |s: &serde_yaml_ng::Value| s["run"].as_str().is_some_and(|r| r.contains(needle))
    };
    Steps {
        download: find(&runs("sha256sum --check"), "checks the download"),
        lint: find(&runs("-o sarif"), "writes SARIF"),
        upload: find(
            &|s| {
                s["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
            },
            "uploads SARIF",
        ),
        fail: find(&runs("--fail-on \"$FAIL_ON\""), "fails per fail-on"),
    }
}

/// A binary whose bytes are not the ones SHA256SUMS names: one that, if it ever ran,
/// would leave a mark.
fn tamper(binary: &Path, mark: &Path) {
    let script = format!(
        "#!/bin/sh\ntouch '{}'\necho 'kopf-audit {} (0000000)'\n",
        mark.display(),
        version()
    );
    std::fs::write(binary, script).expect("replace the binary");
    let mut perms = std::fs::metadata(binary).expect("metadata").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(binary, perms).expect("chmod");
}

/// Nothing was installed or put on PATH, and no step after the download ran.
fn assert_stopped_at_the_download(run: &Run, mark: &Path) {
    let steps = steps();
    assert!(
        matches!(run.outcomes[steps.download], Outcome::Failed(_)),
        "{}",
        run.log()
    );
    assert!(
        run.outcomes[steps.download + 1..]
            .iter()
            .all(|o| *o == Outcome::NotRun),
        "{:?}",
        run.outcomes
    );
    assert!(!mark.exists(), "the unverified binary ran");
    let installed = run
        .runner_temp
        .join(format!("kopf-audit-{}", version()))
        .join("kopf-audit");
    assert!(!installed.exists(), "an unverified binary was installed");
    assert_eq!(
        std::fs::read_to_string(&run.github_path).expect("GITHUB_PATH"),
        ""
    );
    assert!(!run.workspace.join("kopf-audit.sarif").exists());
}

#[test]
fn a_checksum_mismatch_fails_the_download_before_anything_runs() {
    let root = scratch("mismatch");
    let (url, binary) = release(&root);
    let mark = root.join("the-binary-ran");
    tamper(&binary, &mark);
    let run = run_action(&root, &inputs(&url, &[("fail-on", "none")]));
    assert_stopped_at_the_download(&run, &mark);
    assert!(
        run.log().contains("FAILED"),
        "sha256sum says why: {}",
        run.log()
    );
}

#[test]
fn a_release_without_a_checksum_line_for_the_binary_fails_the_download() {
    let root = scratch("no-line");
    let (url, binary) = release(&root);
    let sums = binary.with_file_name("SHA256SUMS");
    let name = binary
        .file_name()
        .expect("name")
        .to_string_lossy()
        .to_string();
    let kept: String = std::fs::read_to_string(&sums)
        .expect("SHA256SUMS")
        .lines()
        .filter(|l| !l.ends_with(&name))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&sums, kept).expect("SHA256SUMS");
    let mark = root.join("the-binary-ran");
    tamper(&binary, &mark);
    let run = run_action(&root, &inputs(&url, &[]));
    assert_stopped_at_the_download(&run, &mark);
    assert!(
        run.log().contains(&format!("no line for {name}")),
        "{}",
        run.log()
    );
}

#[test]
fn a_release_url_that_is_not_https_or_a_local_file_is_refused() {
    let root = scratch("http");
    let run = run_action(&root, &inputs("http://example.invalid/releases", &[]));
    assert_stopped_at_the_download(&run, &root.join("never"));
    assert!(
        run.log()
            .contains("release-url must be https:// or file:///"),
        "{}",
        run.log()
    );
}

/// The SARIF the lint step wrote, parsed, and the check IDs of its results.
fn sarif(run: &Run, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(run.workspace.join(file))
        .unwrap_or_else(|e| panic!("{file}: {e}\n{}", run.log()));
    let sarif: serde_json::Value = serde_json::from_str(&text).expect("the SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["tool"]["driver"]["name"], "kopf-audit");
    sarif["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["ruleId"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_verified_binary_lints_to_sarif_and_the_upload_is_given_that_file() {
    let steps = steps();
    let root = scratch("good");
    let (url, _) = release(&root);
    let run = run_action(&root, &inputs(&url, &[("sarif-file", "lint.sarif")]));
    for index in [steps.download, steps.lint, steps.fail] {
        assert_eq!(
            run.outcomes[index],
            Outcome::Succeeded,
            "step {index}: {}",
            run.log()
        );
    }
    let installed = run.runner_temp.join(format!("kopf-audit-{}", version()));
    assert_eq!(
        std::fs::read_to_string(&run.github_path)
            .expect("GITHUB_PATH")
            .trim(),
        installed.display().to_string()
    );
    let ids = sarif(&run, "lint.sarif");
    assert!(
        ids.iter().any(|id| id == "workload.grace-period"),
        "{ids:?}"
    );
    let Outcome::Uses(uses, with) = &run.outcomes[steps.upload] else {
        panic!("the upload step: {:?}", run.outcomes[steps.upload]);
    };
    assert!(
        uses.starts_with("github/codeql-action/upload-sarif@"),
        "{uses}"
    );
    assert_eq!(
        with.get("sarif_file").map(String::as_str),
        Some("lint.sarif"),
        "the file the lint step wrote"
    );
    assert_eq!(with.get("category").map(String::as_str), Some("kopf-audit"));
}

#[test]
fn fail_on_decides_the_exit_code() {
    let steps = steps();
    // grace-period: one warning, no error.
    for (fail_on, expected) in [
        ("error", Outcome::Succeeded),
        ("none", Outcome::Succeeded),
        ("warning", Outcome::Failed(1)),
    ] {
        let root = scratch(&format!("fail-on-{fail_on}"));
        let (url, _) = release(&root);
        let run = run_action(
            &root,
            &inputs(&url, &[("fail-on", fail_on), ("upload-sarif", "false")]),
        );
        assert_eq!(
            run.outcomes[steps.download],
            Outcome::Succeeded,
            "{}",
            run.log()
        );
        assert_eq!(
            run.outcomes[steps.lint],
            Outcome::Succeeded,
            "{}",
            run.log()
        );
        assert_eq!(
            run.outcomes[steps.upload],
            Outcome::Skipped,
            "upload-sarif: false"
        );
        assert_eq!(
            run.outcomes[steps.fail],
            expected,
            "fail-on {fail_on}: {}",
            run.log()
        );
        // The SARIF holds every finding whatever fail-on says.
        assert!(
            sarif(&run, "kopf-audit.sarif")
                .iter()
                .any(|id| id == "workload.grace-period")
        );
    }
}

#[test]
fn an_unreadable_path_fails_the_lint_step_with_exit_2() {
    let root = scratch("missing-path");
    let (url, _) = release(&root);
    let run = run_action(&root, &inputs(&url, &[("path", "no-such-dir")]));
    let steps = steps();
    assert_eq!(
        run.outcomes[steps.download],
        Outcome::Succeeded,
        "{}",
        run.log()
    );
    assert_eq!(
        run.outcomes[steps.lint],
        Outcome::Failed(2),
        "{}",
        run.log()
    );
    assert!(
        run.outcomes[steps.lint + 1..]
            .iter()
            .all(|o| *o == Outcome::NotRun)
    );
}

//! Lint and live agree. Every fixture operator in tests/fixtures/kopf has one
//! expectation file (`expect.yaml`) that the end-to-end suite asserts on the live audit
//! of the running operator. Here the same file is asserted on `kopf-audit lint` of the
//! fixture's own files (manifests, Python, Dockerfile): for every check lint can decide
//! from files, what live must report lint reports, and what live must not report lint
//! does not. So the two sources of evidence cannot drift apart. Needs no cluster.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The checks lint cannot decide from files: they read pods, logs, Events or objects.
const LIVE_ONLY: [&str; 4] = [
    "workload.oom-killed",
    "workload.crash-loop",
    "workload.webhook-blast-radius",
    "workload.debug-logging",
];

/// The live checks of other areas that lint decides from the fixtures' files: what
/// their handlers write shows the cause of a loop, and their CRDs' schemas what status
/// keeps.
const FROM_SOURCE: [&str; 2] = ["runtime.handler-loop", "persistence.status-schema"];

/// Whether lint decides a check from files: the workload and RBAC areas, but for the
/// checks that read pods or logs, and [`FROM_SOURCE`].
fn decided_by_lint(check: &str) -> bool {
    ((check.starts_with("workload.") || check.starts_with("rbac.")) && !LIVE_ONLY.contains(&check))
        || FROM_SOURCE.contains(&check)
}

#[derive(serde::Deserialize)]
struct Expect {
    #[serde(default)]
    must: Vec<String>,
    #[serde(default)]
    must_not: Vec<String>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kopf")
}

/// A copy of a fixture with `${NAMESPACE}` filled in, as the e2e harness applies it.
fn instantiate(fixture: &Path, into: &Path) {
    std::fs::create_dir_all(into).expect("temp dir");
    for entry in std::fs::read_dir(fixture).expect("fixture dir").flatten() {
        let path = entry.path();
        if path.is_file() {
            let text = std::fs::read_to_string(&path).expect("fixture file is text");
            let name = path.file_name().expect("file name");
            std::fs::write(
                into.join(name),
                text.replace("${NAMESPACE}", "lint-agreement"),
            )
            .expect("write");
        }
    }
}

/// The check IDs lint reports for a fixture directory.
fn lint(dir: &Path) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .args([
            "lint",
            "-o",
            "json",
            "--fail-on",
            "never",
            "-n",
            "lint-agreement",
        ])
        .arg(dir)
        .output()
        .expect("kopf-audit runs");
    assert!(
        out.status.success(),
        "lint failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["check"].as_str().map(str::to_string))
        .collect()
}

/// The `CMD` and `ENTRYPOINT` of a fixture's Dockerfile, as exec words.
fn dockerfile_words(text: &str, instruction: &str) -> Vec<String> {
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix(instruction))
        .map(|rest| serde_json::from_str(rest.trim()).expect("exec form"))
        .unwrap_or_default()
}

#[derive(serde::Deserialize)]
struct ImageConfig {
    #[serde(default)]
    entrypoint: Vec<String>,
    #[serde(default)]
    cmd: Vec<String>,
}

#[derive(serde::Deserialize)]
struct Images {
    images: std::collections::BTreeMap<String, ImageConfig>,
}

/// A fixture started by its image (`image.yaml`, which the e2e harness runs) has the
/// Dockerfile of that image, which lint reads: the two say the same.
#[test]
fn every_fixture_image_has_a_dockerfile_that_runs_the_same() {
    for entry in std::fs::read_dir(fixtures()).expect("fixtures").flatten() {
        let dir = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join("image.yaml")) else {
            continue;
        };
        let images: Images = serde_yaml_ng::from_str(&text).expect("image.yaml parses");
        let docker = std::fs::read_to_string(dir.join("Dockerfile"))
            .unwrap_or_else(|_| panic!("{} has image.yaml but no Dockerfile", dir.display()));
        for image in images.images.values() {
            assert_eq!(
                dockerfile_words(&docker, "CMD"),
                image.cmd,
                "{}",
                dir.display()
            );
            assert_eq!(
                dockerfile_words(&docker, "ENTRYPOINT"),
                image.entrypoint,
                "{}",
                dir.display()
            );
        }
    }
}

#[test]
fn lint_of_every_fixture_agrees_with_what_live_must_and_must_not_report() {
    let temp =
        std::env::temp_dir().join(format!("kopf-audit-lint-agreement-{}", std::process::id()));
    let mut disagreements = Vec::new();
    let mut compared = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expect.yaml").is_file())
        .collect();
    entries.sort();
    for fixture in entries {
        let name = fixture
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        let expect: Expect = serde_yaml_ng::from_str(
            &std::fs::read_to_string(fixture.join("expect.yaml")).expect("expect.yaml"),
        )
        .expect("expect.yaml parses");
        let dir = temp.join(&name);
        instantiate(&fixture, &dir);
        let found = lint(&dir);
        for check in expect.must.iter().filter(|c| decided_by_lint(c)) {
            compared += 1;
            if !found.contains(check) {
                disagreements.push(format!("{name}: live must report {check}; lint does not"));
            }
        }
        for check in expect.must_not.iter().filter(|c| decided_by_lint(c)) {
            compared += 1;
            if found.contains(check) {
                disagreements.push(format!("{name}: live must not report {check}; lint does"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&temp);
    assert!(compared > 100, "too few comparisons: {compared}");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

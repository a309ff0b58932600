//! Lint's own fixtures. Every directory of tests/fixtures/lint with an `expect.yaml` is
//! a small operator repository (Python, manifests, requirements) for the checks only
//! `kopf-audit lint` decides from source, each with a compliant twin: lint of it must
//! report every check its `must` lists and none its `must_not` lists. Needs no cluster.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(serde::Deserialize)]
struct Expect {
    #[serde(default)]
    must: Vec<String>,
    #[serde(default)]
    must_not: Vec<String>,
}

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("tests/fixtures/lint")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expect.yaml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The check IDs lint reports for a fixture directory, and the JSON report.
fn lint(dir: &Path) -> (BTreeSet<String>, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .args(["lint", "-o", "json", "--fail-on", "never"])
        .arg(dir)
        .output()
        .expect("kopf-audit runs");
    assert!(
        out.status.success(),
        "lint of {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let ids = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["check"].as_str().map(str::to_string))
        .collect();
    (ids, report)
}

#[test]
fn lint_of_every_lint_fixture_reports_what_it_must_and_nothing_it_must_not() {
    let mut wrong = Vec::new();
    let mut compared = 0;
    for dir in fixtures() {
        let name = dir.file_name().expect("name").to_string_lossy().to_string();
        let expect: Expect = serde_yaml_ng::from_str(
            &std::fs::read_to_string(dir.join("expect.yaml")).expect("expect.yaml"),
        )
        .expect("expect.yaml parses");
        let (found, _) = lint(&dir);
        for check in &expect.must {
            compared += 1;
            if !found.contains(check) {
                wrong.push(format!(
                    "{name}: must report {check}; lint does not ({found:?})"
                ));
            }
        }
        for check in &expect.must_not {
            compared += 1;
            if found.contains(check) {
                wrong.push(format!("{name}: must not report {check}; lint does"));
            }
        }
    }
    assert!(compared >= 32, "too few comparisons: {compared}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_fixture_that_must_report_a_check_has_a_twin_that_must_not() {
    let names: BTreeSet<String> = fixtures()
        .iter()
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().to_string()))
        .collect();
    for name in names.iter().filter(|n| !n.ends_with("-twin")) {
        let twin = format!("{name}-twin");
        assert!(names.contains(&twin), "{name} has no compliant twin");
        let read = |n: &str| -> Expect {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/lint")
                .join(n)
                .join("expect.yaml");
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).expect("expect.yaml"))
                .expect("parses")
        };
        let (one, other) = (read(name), read(&twin));
        assert!(!one.must.is_empty(), "{name} asserts no finding");
        for check in &one.must {
            assert!(
                other.must_not.contains(check),
                "{twin} does not assert the absence of {check}"
            );
        }
    }
}

/// Each finding of the new source checks points at a line of the fixture's Python,
/// and the workload one at its Deployment, naming the daemon's line as evidence.
#[test]
fn the_findings_point_at_the_file_and_line_of_their_cause() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint");
    let cases = [
        (
            "sync-daemon-pool",
            "source.sync-daemon-pool",
            "operator.py",
            17,
        ),
        (
            "daemon-ignores-stop",
            "source.daemon-ignores-stop",
            "operator.py",
            20,
        ),
        ("watch-timeouts", "source.watch-timeouts", "operator.py", 11),
        (
            "grace-period",
            "workload.grace-period",
            "manifests.yaml",
            86,
        ),
    ];
    for (fixture, check, file, line) in cases {
        let (_, report) = lint(&root.join(fixture));
        let finding = report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["check"] == check)
            .unwrap_or_else(|| panic!("{fixture}: no {check}"));
        assert_eq!(finding["file"], file, "{fixture}: {finding}");
        assert_eq!(finding["line"], line, "{fixture}: {finding}");
        assert!(
            finding["fix"].as_str().is_some_and(|f| !f.is_empty()),
            "{fixture}: a fix"
        );
    }
    let (_, report) = lint(&root.join("watch-timeouts"));
    let severity = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == "source.watch-timeouts")
        .map(|f| f["severity"].clone());
    assert_eq!(
        severity,
        Some(serde_json::json!("warning")),
        "kopf 1.43 has no bookmarks"
    );
    let (_, report) = lint(&root.join("grace-period"));
    let evidence = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == "workload.grace-period")
        .and_then(|f| f["evidence"].as_str().map(str::to_string));
    assert!(
        evidence.is_some_and(|e| e.starts_with("operator.py:17: monitor()")),
        "the evidence names the daemon's line"
    );
}

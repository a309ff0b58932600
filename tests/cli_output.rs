//! The output flags `check`, `report` and `lint` share, through the real binary on a
//! fixture (`lint` needs no cluster; tests/e2e/kubectl.rs runs `check` and `report`):
//! `--fail-on`'s exit codes, every `-o` format parsing as what it claims, and colour
//! only on a terminal (a pseudo-terminal from util-linux's `script`), never into a pipe
//! or with NO_COLOR set, unless `--color always`.

use std::process::{Command, Output};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/lint/html-report"
);

fn lint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .arg("lint")
        .arg(FIXTURE)
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("kopf-audit runs")
}

fn coloured(out: &[u8]) -> bool {
    out.windows(2).any(|w| w == b"\x1b[")
}

#[test]
fn fail_on_sets_the_exit_code_by_the_worst_finding() {
    // The fixture's worst finding is an error.
    for (fail_on, code) in [
        (None, 1),
        (Some("error"), 1),
        (Some("warning"), 1),
        (Some("info"), 1),
        (Some("none"), 0),
        (Some("never"), 0),
    ] {
        let args: Vec<&str> = fail_on.map_or_else(Vec::new, |f| vec!["--fail-on", f]);
        let out = lint(&args);
        assert_eq!(out.status.code(), Some(code), "--fail-on {fail_on:?}");
    }
    let out = lint(&["--fail-on", "sometimes"]);
    assert_eq!(out.status.code(), Some(2), "an unknown severity is refused");
}

#[test]
fn every_format_is_what_it_says() {
    let stdout = |format: &str| {
        let out = lint(&["-o", format, "--fail-on", "none"]);
        assert_eq!(out.status.code(), Some(0), "-o {format}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let json: serde_json::Value = serde_json::from_str(&stdout("json")).expect("JSON");
    let yaml: serde_json::Value = serde_yaml_ng::from_str(&stdout("yaml")).expect("YAML");
    assert_eq!(json, yaml, "json and yaml carry the same data");
    assert!(json["findings"].as_array().is_some_and(|f| !f.is_empty()));
    let sarif: serde_json::Value = serde_json::from_str(&stdout("sarif")).expect("SARIF");
    assert_eq!(sarif["version"], "2.1.0");
    let code_quality: serde_json::Value =
        serde_json::from_str(&stdout("codeclimate")).expect("Code Quality");
    assert_eq!(
        code_quality.as_array().map(Vec::len),
        json["findings"].as_array().map(Vec::len)
    );
    assert!(stdout("junit").starts_with("<?xml"));
    assert!(stdout("html").starts_with("<!DOCTYPE html>"));
    assert_eq!(stdout("table"), stdout("text"), "text is table's alias");
}

#[test]
fn colour_only_on_a_terminal_without_no_color_unless_always() {
    assert!(!coloured(&lint(&["--fail-on", "none"]).stdout), "a pipe");
    assert!(coloured(
        &lint(&["--fail-on", "none", "--color", "always"]).stdout
    ));
    let on_a_terminal = |no_color: Option<&str>, color: &str| {
        // `script` runs the command on a pseudo-terminal and copies what it writes.
        let mut command = Command::new("script");
        command
            .args(["-qec"])
            .arg(format!(
                "{} lint {FIXTURE} --fail-on none --color {color}",
                env!("CARGO_BIN_EXE_kopf-audit")
            ))
            .arg("/dev/null")
            .env_remove("NO_COLOR");
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        }
        let out = command
            .output()
            .expect("util-linux's script (Debian's bsdutils) runs");
        assert!(out.status.success(), "{out:?}");
        coloured(&out.stdout)
    };
    assert!(on_a_terminal(None, "auto"), "a terminal");
    assert!(!on_a_terminal(Some("1"), "auto"), "NO_COLOR");
    assert!(!on_a_terminal(None, "never"), "--color never");
    assert!(on_a_terminal(Some("1"), "always"), "--color always wins");
}

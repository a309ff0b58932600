//! `kopf-audit run --log-level` as a user types it: an unknown level is refused before
//! anything runs, and `warning` (Python's spelling) still logs the operator's errors.
//! tracing's EnvFilter alone would read `warning` as a target name and log nothing.

use std::process::{Command, Output};

/// `kopf-audit run` with `args`, with no cluster to reach: the run stops at once with
/// an error the log level decides whether to show.
fn run(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("kopf-audit-log-level-{}", std::process::id()));
    Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .arg("run")
        .args(args)
        .args(["--http-addr", "127.0.0.1:0"])
        .env("KUBECONFIG", dir.join("no-such-kubeconfig"))
        .env("HOME", &dir)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("KOPF_AUDIT_LOG_LEVEL")
        .output()
        .expect("kopf-audit runs")
}

#[test]
fn an_unknown_level_is_refused_with_the_levels() {
    let out = run(&["--log-level", "verbose"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid value 'verbose' for '--log-level <LOG_LEVEL>'")
            && stderr.contains("error, warn, warning, info, debug, trace, off"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("cannot build a Kubernetes client"),
        "refused before running: {stderr}"
    );
}

#[test]
fn warning_logs_the_operators_errors() {
    for level in ["warning", "warn"] {
        let out = run(&["--log-level", level, "--log-format", "json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{level}: {stderr}");
        assert!(
            stderr.lines().any(|l| l.contains(r#""level":"ERROR""#)
                && l.contains("cannot build a Kubernetes client")),
            "--log-level {level} shows the error: {stderr}"
        );
    }
}

#[test]
fn error_hides_what_is_below_it_and_off_hides_everything() {
    let out = run(&["--log-level", "off"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["--log-level", "error", "--log-format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().all(|l| l.contains(r#""level":"ERROR""#)) && !stderr.is_empty(),
        "{stderr}"
    );
}

//! `kopf-audit --version` names the source revision it was built from, as the release
//! artifacts and bug reports need.

use std::process::Command;

#[test]
fn version_names_the_package_version_and_the_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .arg("--version")
        .output()
        .expect("kopf-audit runs");
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let revision = std::env::var("KOPF_AUDIT_REVISION")
        .ok()
        .filter(|r| !r.is_empty())
        .or(head)
        .unwrap_or_else(|| "unknown".into());
    assert_eq!(
        printed,
        format!("kopf-audit {} ({revision})", env!("CARGO_PKG_VERSION"))
    );
}

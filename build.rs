//! Records the source revision the binary is built from, for `kopf-audit --version` and
//! the `kopf_audit_build_info` metric: `KOPF_AUDIT_REVISION` when the build sets it (an
//! image built without `.git`), else `git rev-parse --short=12 HEAD`, else `unknown`.

use std::path::Path;
use std::process::Command;

/// `git ARGS` in the crate's directory, trimmed, when git answers.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=KOPF_AUDIT_REVISION");
    let revision = std::env::var("KOPF_AUDIT_REVISION")
        .ok()
        .filter(|r| !r.is_empty())
        .or_else(|| {
            // Re-run when HEAD moves: HEAD itself (a checkout) and the refs it points
            // through (a commit); only files that exist, or cargo would re-run always.
            let dir = git(&["rev-parse", "--git-dir"])?;
            let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or(dir.clone());
            let watched = [
                format!("{dir}/HEAD"),
                format!("{common}/refs/heads"),
                format!("{common}/packed-refs"),
            ];
            for path in watched.iter().filter(|p| Path::new(p).exists()) {
                println!("cargo:rerun-if-changed={path}");
            }
            git(&["rev-parse", "--short=12", "HEAD"])
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=KOPF_AUDIT_REVISION={revision}");
}

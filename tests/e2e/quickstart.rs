//! The README's quick start, word for word: its shell blocks (each between
//! `quickstart:begin` and `quickstart:end` markers) run one after the other as one
//! script, with `NS` set to a namespace where a kopf operator runs whose Deployment
//! rolls out with a surge (`workload.rollout-overlap`), `kopf-audit`, its kubectl plugin
//! and the cluster's `kubectl` on PATH. The script must show that finding, apply its
//! fix, and end with the operator's KopfAudit ready and compliant.

use crate::support::{self, Fixture, TestNamespace, say};
use kopf_audit::api::KopfAudit;
use kube::Api;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The quick start's shell blocks, from the README, joined in order.
fn quick_start() -> String {
    let readme = std::fs::read_to_string(support::repo().join("README.md")).expect("README");
    let blocks: Vec<String> = readme
        .split("<!-- quickstart:begin -->")
        .skip(1)
        .map(|after| {
            let (block, _) = after
                .split_once("<!-- quickstart:end -->")
                .expect("each quick start block has its end marker");
            let block = block.trim();
            block
                .strip_prefix("```sh\n")
                .and_then(|b| b.strip_suffix("```"))
                .unwrap_or_else(|| panic!("a quick start block is one ```sh block:\n{block}"))
                .to_string()
        })
        .collect();
    assert!(
        blocks.len() >= 3,
        "the quick start installs, shows the findings and fixes one: {blocks:?}"
    );
    blocks.join("\n")
}

/// A directory holding `kopf-audit`, `kubectl-kopf_audit` and `kubectl`, for PATH.
fn tools() -> PathBuf {
    support::bin_dir(
        "quickstart-bin",
        &[
            ("kopf-audit", support::auditor_binary()),
            (
                "kubectl-kopf_audit",
                PathBuf::from(env!("CARGO_BIN_EXE_kubectl-kopf_audit")),
            ),
            ("kubectl", support::kubectl()),
        ],
    )
}

#[tokio::test]
async fn the_readme_quick_start_ends_with_a_compliant_audit() {
    let admin = support::admin_client().await;
    let ns = TestNamespace::create(&admin, "quickstart").await;
    let _kopf = Fixture::start("good", &ns.name, None);
    // As many operators are published: the Deployment's default rollout, with a surge
    // (the strategy is not part of the pod template: no rollout happens now).
    let (ok, _, err) = support::kubectl_run(
        &[
            "patch",
            "deployment",
            "good-operator",
            "-n",
            &ns.name,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}}"#,
        ],
        None,
    );
    assert!(ok, "the Deployment takes a rolling update: {err}");
    let script = quick_start();
    let bin = tools();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    say(format!("running the README's quick start in {}", ns.name));
    // Files, not pipes: the auditor the script starts in the background keeps its
    // stdout open, so reading a pipe to its end would wait for the auditor.
    let out_path = bin.join("stdout");
    let err_path = bin.join("stderr");
    let file = |p: &Path| std::fs::File::create(p).expect("an output file");
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .env("NS", &ns.name)
        .env("PATH", path)
        .env("KUBECONFIG", support::kubeconfig_path())
        .process_group(0)
        .stdout(file(&out_path))
        .stderr(file(&err_path))
        .spawn()
        .expect("bash");
    let group = child.id();
    let status = tokio::task::spawn_blocking(move || {
        let status = child.wait();
        // The auditor the script started in the background, and anything else of it.
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{group}")])
            .status();
        status
    })
    .await
    .expect("joined")
    .expect("the quick start's exit status");
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&bin);
    assert!(
        status.success(),
        "the quick start failed ({status}):\n{stdout}\n{stderr}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("warning workload.rollout-overlap: ")),
        "the findings block shows the surge finding:\n{stdout}"
    );
    let last_table: Vec<&str> = stdout
        .rsplit_once("NAME")
        .map(|(_, t)| t.lines().collect())
        .unwrap_or_default();
    assert_eq!(
        last_table.len(),
        2,
        "one KopfAudit, for the one operator:\n{stdout}"
    );
    let table = last_table;
    let audits: Api<KopfAudit> = Api::namespaced(admin.clone(), &ns.name);
    let audit = audits
        .list(&Default::default())
        .await
        .expect("list")
        .items
        .pop()
        .expect("the generated KopfAudit");
    let conditions = audit.status.map(|s| s.conditions).unwrap_or_default();
    let status_of = |t: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| c.status.clone())
    };
    assert_eq!(
        status_of("Ready").as_deref(),
        Some("True"),
        "{conditions:#?}"
    );
    assert_eq!(
        status_of("Compliant").as_deref(),
        Some("True"),
        "the operator is compliant once the fix is applied: {conditions:#?}"
    );
    say(format!("quick start: {}", table.join(" | ")));
}

//! .github/workflows/release.yml, read: it is YAML that runs on a version tag, asks for
//! the permissions publishing and keyless signing need and no others, pins every action
//! by commit, passes expressions to scripts only through env, publishes where the chart
//! and the docs say, and signs or attests everything it publishes, after publishing it
//! and before the release is created. `bash -n` checks its scripts parse. No network.

use std::path::Path;
use std::process::Command;

fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const WORKFLOW: &str = ".github/workflows/release.yml";

fn workflow() -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&read(WORKFLOW)).expect("the release workflow is YAML")
}

fn job(workflow: &serde_yaml_ng::Value) -> &serde_yaml_ng::Value {
    let jobs = workflow["jobs"].as_mapping().expect("jobs");
    assert_eq!(
        jobs.len(),
        1,
        "one job: the signatures' identity is its workflow"
    );
    jobs.values().next().expect("a job")
}

fn steps(workflow: &serde_yaml_ng::Value) -> Vec<serde_yaml_ng::Value> {
    job(workflow)["steps"].as_sequence().expect("steps").clone()
}

/// Each step's `run:` script, or an empty one for a `uses:` step.
fn scripts(workflow: &serde_yaml_ng::Value) -> Vec<String> {
    steps(workflow)
        .iter()
        .map(|s| s["run"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The index of the first step whose script contains `needle`.
fn step_running(workflow: &serde_yaml_ng::Value, needle: &str) -> usize {
    scripts(workflow)
        .iter()
        .position(|s| s.contains(needle))
        .unwrap_or_else(|| panic!("no step runs {needle:?}"))
}

#[test]
fn it_runs_on_a_version_tag_only() {
    let workflow = workflow();
    let on = workflow["on"].as_mapping().expect("on: a mapping");
    assert_eq!(on.len(), 1, "{on:?}");
    let push = &workflow["on"]["push"];
    assert!(push["branches"].is_null(), "tags only");
    let tags = push["tags"].as_sequence().expect("push.tags");
    assert!(
        tags.iter()
            .all(|t| t.as_str().is_some_and(|t| t.starts_with("v[0-9]"))),
        "{tags:?}"
    );
}

#[test]
fn it_has_the_permissions_it_needs_and_no_more() {
    let workflow = workflow();
    let top = workflow["permissions"]
        .as_mapping()
        .expect("top-level permissions");
    assert!(top.is_empty(), "nothing by default: {top:?}");
    let mut granted: Vec<(String, String)> = job(&workflow)["permissions"]
        .as_mapping()
        .expect("the job's permissions")
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().expect("key").into(),
                v.as_str().expect("value").into(),
            )
        })
        .collect();
    granted.sort();
    let write = |s: &str| (s.to_string(), "write".to_string());
    assert_eq!(
        granted,
        vec![
            write("attestations"), // actions/attest-build-provenance
            write("contents"),     // gh release create
            write("id-token"),     // cosign keyless, the provenance's signature
            write("packages"),     // the image and the chart on ghcr.io
        ]
    );
}

#[test]
fn every_action_is_pinned_by_commit_with_its_version_named() {
    let text = read(WORKFLOW);
    let mut pinned = 0;
    for line in text.lines() {
        let Some((_, rest)) = line.split_once("uses: ") else {
            continue;
        };
        let (reference, comment) = rest.split_once(" # ").unwrap_or((rest, ""));
        let (action, sha) = reference
            .trim()
            .split_once('@')
            .unwrap_or_else(|| panic!("{line}: no @"));
        assert!(action.contains('/') && !action.starts_with("./"), "{line}");
        assert!(
            sha.len() == 40
                && sha
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{line}: not pinned by full commit SHA"
        );
        assert!(
            comment.trim().starts_with('v'),
            "{line}: the version in a comment"
        );
        pinned += 1;
    }
    let uses = steps(&workflow())
        .iter()
        .filter(|s| s["uses"].is_string())
        .count();
    assert!(
        uses >= 3,
        "checkout, cosign-installer, attest-build-provenance"
    );
    assert_eq!(pinned, uses, "every uses: is on one line that was checked");
}

#[test]
fn scripts_take_expressions_through_env_only_and_parse() {
    let workflow = workflow();
    for (index, script) in scripts(&workflow).iter().enumerate() {
        assert!(
            !script.contains("${{"),
            "step {index} pastes an expression into its script"
        );
        if script.is_empty() {
            continue;
        }
        let out = Command::new("bash")
            .args(["-n", "-c", script])
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "step {index} does not parse: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let checkout = steps(&workflow)
        .into_iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout@"))
        })
        .expect("a checkout");
    assert_eq!(
        checkout["with"]["persist-credentials"], false,
        "no token left in .git"
    );
}

#[test]
fn it_publishes_where_the_chart_and_the_docs_say() {
    let workflow = workflow();
    let values = read("charts/kopf-audit/values.yaml");
    let image = workflow["env"]["IMAGE"].as_str().expect("env.IMAGE");
    assert!(
        values.contains(&format!("  repository: {image}\n")),
        "the chart's default image is {image}"
    );
    let charts = workflow["env"]["CHARTS"].as_str().expect("env.CHARTS");
    assert!(read("docs/installation/flux.md").contains(&format!("url: {charts}\n")));
    let install = format!("helm install kopf-audit {charts}/kopf-audit");
    assert!(
        read("docs/installation/helm.md").contains(&install),
        "{install}"
    );
    // What hack/release.sh builds is what is published.
    let build = step_running(&workflow, "bash hack/release.sh \"$VERSION\"");
    assert!(build < step_running(&workflow, "podman manifest push"));
}

#[test]
fn the_image_is_one_manifest_list_for_amd64_and_arm64() {
    let workflow = workflow();
    let push = &scripts(&workflow)[step_running(&workflow, "podman manifest push")];
    for needle in [
        "kopf-audit-$VERSION-image.oci.tar",
        "--platform linux/arm64",
        "kopf-audit-$VERSION-linux-arm64",
        "podman manifest create",
        "podman manifest push --all --digestfile",
        "IMAGE_DIGEST=",
    ] {
        assert!(push.contains(needle), "{needle}: {push}");
    }
    assert_eq!(push.matches("podman manifest add").count(), 2, "{push}");
}

#[test]
fn everything_published_is_signed_after_it_is_pushed_and_before_the_release() {
    let workflow = workflow();
    let all = scripts(&workflow);
    let image_pushed = step_running(&workflow, "podman manifest push");
    let chart_pushed = step_running(&workflow, "helm push");
    let signed = step_running(&workflow, "cosign sign --yes");
    let released = step_running(&workflow, "gh release create");
    let signing = &all[signed];
    for needle in [
        "cosign sign --yes \"$IMAGE@$IMAGE_DIGEST\"",
        "cosign attest --yes --type cyclonedx --predicate \"$dist/kopf-audit-$VERSION.cdx.json\" \"$IMAGE@$IMAGE_DIGEST\"",
        "cosign sign --yes \"${CHARTS#oci://}/kopf-audit@$CHART_DIGEST\"",
        "cosign sign-blob --yes --bundle \"$dist/SHA256SUMS.sigstore.json\" \"$dist/SHA256SUMS\"",
    ] {
        assert!(signing.contains(needle), "{needle}: {signing}");
    }
    assert!(!signing.contains("--key"), "keyless: no key in CI");
    let steps = steps(&workflow);
    let installer = steps
        .iter()
        .position(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("sigstore/cosign-installer@"))
        })
        .expect("cosign installed");
    let provenance: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/attest-build-provenance@"))
        })
        .map(|(i, _)| i)
        .collect();
    let image_provenance = provenance
        .iter()
        .find(|i| steps[**i]["with"]["subject-digest"] == "${{ env.IMAGE_DIGEST }}")
        .expect("provenance of the image by digest");
    assert_eq!(steps[*image_provenance]["with"]["push-to-registry"], true);
    let files_provenance = provenance
        .iter()
        .find(|i| steps[**i]["with"]["subject-checksums"] == "${{ runner.temp }}/dist/SHA256SUMS")
        .expect("provenance of every file SHA256SUMS lists");
    assert!(image_pushed < installer && chart_pushed < installer && installer < signed);
    assert!(signed < released && *image_provenance < released && *files_provenance < released);
    assert!(all[released].contains("sha256sum --check --strict SHA256SUMS"));
    // What SHA256SUMS lists and its bundle, not hack/release.sh's signed-locally/.
    assert!(all[released].contains("\"${files[@]}\" SHA256SUMS SHA256SUMS.sigstore.json"));
    assert!(!all[released].contains("./*"), "{}", all[released]);
}

#[test]
fn the_docs_say_how_to_verify_what_is_signed() {
    let docs = read("docs/security/releases.md");
    for needle in [
        "cosign verify ghcr.io/kopfaudit/kopf-audit",
        "cosign verify-attestation --type cyclonedx",
        "cosign verify-blob",
        "--bundle SHA256SUMS.sigstore.json",
        "gh attestation verify",
        "--certificate-identity-regexp",
        "--certificate-oidc-issuer https://token.actions.githubusercontent.com",
        ".github/workflows/release.yml@refs/tags/v",
    ] {
        assert!(docs.contains(needle), "docs/security/releases.md: {needle}");
    }
    assert!(
        read("docs/index.md").contains("(security/releases.md)"),
        "linked from the docs' index"
    );
}

/// hack/release.sh builds helm, cosign and crane with `GOTOOLCHAIN=local`: a Go at
/// least as new as every pinned module's `go` line is set up before it runs.
#[test]
fn go_is_set_up_for_the_pinned_modules_before_the_build() {
    let workflow = workflow();
    let all = steps(&workflow);
    let setup = all
        .iter()
        .position(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/setup-go@"))
        })
        .expect("a setup-go step");
    assert!(setup < step_running(&workflow, "hack/release.sh"));
    let file = all[setup]["with"]["go-version-file"]
        .as_str()
        .expect("go-version-file");
    let go_line = |path: &str| {
        read(path)
            .lines()
            .find_map(|l| l.strip_prefix("go ").map(str::to_string))
            .unwrap_or_else(|| panic!("{path} has a go line"))
    };
    let version = |v: &str| -> Vec<u32> { v.split('.').filter_map(|p| p.parse().ok()).collect() };
    let chosen = version(&go_line(file));
    for module in ["hack/helm/go.mod", "hack/cosign/go.mod"] {
        assert!(
            version(&go_line(module)) <= chosen,
            "{module} needs a newer Go than {file}"
        );
    }
}

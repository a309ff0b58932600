//! The build's pins agree: the Dockerfile's builder image is pinned by digest and is the
//! Rust release rust-toolchain.toml pins (CI builds with one, the image with the other),
//! every other stage is one of the file's own or `scratch`, and deny.toml admits crates
//! from crates.io only; action.yml runs the release binary it verifies, named as
//! hack/release.sh names it, and the pre-commit hooks run the same lint. Reads the files
//! as text; needs no network.

use std::path::Path;

fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The value of the first `key = "value"` line of a TOML file.
fn toml_string(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
    })
}

/// The Dockerfile's `ARG RUST_IMAGE=` default.
fn builder_image() -> String {
    read("Dockerfile")
        .lines()
        .find_map(|l| l.strip_prefix("ARG RUST_IMAGE="))
        .map(str::to_string)
        .expect("ARG RUST_IMAGE= in the Dockerfile")
}

#[test]
fn the_builder_image_is_pinned_by_digest_to_the_toolchains_release() {
    let image = builder_image();
    let (reference, digest) = image
        .split_once("@sha256:")
        .unwrap_or_else(|| panic!("{image}: no @sha256: digest"));
    assert!(
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{image}: the digest is 64 hex digits"
    );
    let tag = reference
        .strip_prefix("rust:")
        .unwrap_or_else(|| panic!("{image}: the official rust image"));
    let channel = toml_string(&read("rust-toolchain.toml"), "channel").expect("channel");
    assert!(
        tag.starts_with(&format!("{channel}-")),
        "the builder image {tag} is not rust {channel}, which rust-toolchain.toml pins"
    );
}

#[test]
fn every_stage_is_the_pinned_builder_a_stage_of_the_file_or_scratch() {
    let dockerfile = read("Dockerfile");
    let mut stages: Vec<String> = Vec::new();
    for line in dockerfile.lines().filter(|l| l.starts_with("FROM ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let base = words.get(1).copied().unwrap_or_default();
        assert!(
            base == "${RUST_IMAGE}" || base == "scratch" || stages.iter().any(|s| s == base),
            "{line}: an image that is not pinned"
        );
        if let [.., as_, name] = words.as_slice()
            && as_.eq_ignore_ascii_case("as")
        {
            stages.push(name.to_string());
        }
    }
    assert!(stages.iter().any(|s| s == "runtime"), "{stages:?}");
}

#[test]
fn dependencies_come_from_crates_io_only() {
    let deny = read("deny.toml");
    for (key, value) in [
        ("unknown-registry", "deny"),
        ("unknown-git", "deny"),
        (
            "allow-registry",
            "[\"https://github.com/rust-lang/crates.io-index\"]",
        ),
        ("allow-git", "[]"),
    ] {
        assert_eq!(
            toml_string(&deny, key).as_deref(),
            Some(value.trim_matches('"')),
            "deny.toml: {key}"
        );
    }
}

/// action.yml, parsed.
fn action() -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&read("action.yml")).expect("action.yml is YAML")
}

/// The `run:` scripts of action.yml's steps, joined.
fn action_scripts(action: &serde_yaml_ng::Value) -> String {
    action["runs"]["steps"]
        .as_sequence()
        .expect("action.yml's steps")
        .iter()
        .filter_map(|step| step["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_action_runs_the_release_binary_it_verifies() {
    let action = action();
    assert_eq!(action["runs"]["using"], "composite");
    let cargo_version = toml_string(&read("Cargo.toml"), "version").expect("Cargo.toml's version");
    assert_eq!(
        action["inputs"]["version"]["default"].as_str(),
        Some(cargo_version.as_str()),
        "the action's default release is this version"
    );
    let scripts = action_scripts(&action);
    // The names hack/release.sh gives the binaries and the checksum file.
    let release = read("hack/release.sh");
    for name in ["kopf-audit-$VERSION-linux-amd64", "SHA256SUMS"] {
        assert!(release.contains(name), "hack/release.sh writes {name}");
    }
    assert!(
        scripts.contains("name=\"kopf-audit-$VERSION-linux-$arch\""),
        "{scripts}"
    );
    assert_eq!(
        action["inputs"]["release-url"]["default"].as_str(),
        Some("https://github.com/kopfaudit/kopf-audit/releases/download"),
        "by default, the project's GitHub releases"
    );
    assert!(
        scripts.contains("base=\"${RELEASE_URL%/}/v$VERSION\""),
        "{scripts}"
    );
    assert!(
        scripts.contains("proto='=https'"),
        "https unless a local copy"
    );
    assert!(
        scripts.contains("sha256sum --check --strict"),
        "the binary is checked against SHA256SUMS before it runs"
    );
    let check = scripts.find("sha256sum --check").expect("the check");
    let first_run = scripts
        .find("./kopf-audit --version")
        .expect("the first run");
    assert!(check < first_run, "checked before it runs");
    assert!(scripts.contains("-o sarif --fail-on none"), "{scripts}");
    assert!(scripts.contains("--fail-on \"$FAIL_ON\""), "{scripts}");
    let uploads = action["runs"]["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        })
        .count();
    assert_eq!(uploads, 1, "the SARIF goes to code scanning");
    // Inputs reach the scripts through env, never pasted into them (script injection).
    assert!(!scripts.contains("${{"), "{scripts}");
}

#[test]
fn the_pre_commit_hooks_run_the_same_lint() {
    let hooks: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&read(".pre-commit-hooks.yaml")).expect(".pre-commit-hooks.yaml");
    let hooks = hooks.as_sequence().expect("a list of hooks");
    let by_language = |language: &str| {
        hooks
            .iter()
            .find(|h| h["language"] == language)
            .unwrap_or_else(|| panic!("a `language: {language}` hook"))
    };
    let (rust, system) = (by_language("rust"), by_language("system"));
    assert_ne!(rust["id"], system["id"]);
    for key in ["entry", "args", "files", "pass_filenames"] {
        assert_eq!(rust[key], system[key], "{key}");
    }
}

/// The version a `NAME=value` line of a shell script sets.
fn shell_var(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .map(str::to_string)
}

#[test]
fn the_signing_tools_are_the_versions_their_go_mod_pins() {
    let script = read("hack/build-cosign.sh");
    let go_mod = read("hack/cosign/go.mod");
    for (var, module) in [
        ("COSIGN_VERSION", "github.com/sigstore/cosign/v2"),
        ("CRANE_VERSION", "github.com/google/go-containerregistry"),
    ] {
        let version = shell_var(&script, var).unwrap_or_else(|| panic!("{var}= in the script"));
        assert!(
            go_mod.contains(&format!("\t{module} {version}\n")),
            "hack/cosign/go.mod requires {module} {version}"
        );
    }
    let tools = read("hack/cosign/tools.go");
    for package in [
        "github.com/sigstore/cosign/v2/cmd/cosign",
        "github.com/google/go-containerregistry/cmd/crane",
    ] {
        assert!(tools.contains(&format!("_ \"{package}\"")), "{package}");
    }
}

#[test]
fn the_release_script_verifies_what_it_signs_and_refuses_a_forgery() {
    let release = read("hack/release.sh");
    let sums = release
        .find("sha256sum -c --strict SHA256SUMS")
        .expect("the sums checked");
    let signed = release
        .find("\"$cosign\" sign-blob")
        .expect("SHA256SUMS signed");
    assert!(sums < signed, "signed once written and checked");
    for needle in [
        "--tlog-upload=false",
        "\"$cosign\" verify-blob \"${pub[@]}\"",
        "refused \"a tampered SHA256SUMS\"",
        "\"$crane\" registry serve --address 127.0.0.1:0",
        "\"$cosign\" sign \"${key[@]}\"",
        "--type cyclonedx --predicate \"$OUTDIR/$sbom_file\"",
        "--type slsaprovenance1 --predicate",
        "\"$cosign\" verify \"${pub[@]}\"",
        "verify-attestation \"${pub[@]}\" \"${insecure[@]}\" --type cyclonedx",
        "verify-attestation \"${pub[@]}\" \"${insecure[@]}\" --type slsaprovenance1",
        "refused \"the image under another key\"",
    ] {
        assert!(release.contains(needle), "hack/release.sh: {needle}");
    }
}

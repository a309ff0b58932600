//! The build's pins agree: the Dockerfile's builder image is pinned by digest and is the
//! Rust release rust-toolchain.toml pins (CI builds with one, the image with the other),
//! every other stage is one of the file's own or `scratch`, and deny.toml admits crates
//! from crates.io only. Reads the files as text; needs no network.

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

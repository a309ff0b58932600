use super::*;
use crate::gather::files::render::tests::{dir, fake_program, write};
use std::os::unix::fs::symlink;
use std::time::Duration;

/// A repository in `dir/repo` with a base and an overlay that includes it.
fn repo(dir: &Scratch) -> PathBuf {
    let repo = dir.root.join("repo");
    write(
        &repo,
        "deploy/base/kustomization.yaml",
        "resources:\n- deployment.yaml\ncommonLabels:\n  app: op\n",
    );
    write(&repo, "deploy/base/deployment.yaml", "kind: Deployment\n");
    write(
        &repo,
        "deploy/overlays/prod/kustomization.yaml",
        "resources:\n- ../../base\nnamespace: ops\ncommonAnnotations:\n  rewrite: /\n",
    );
    repo
}

/// An executable `kubectl` shell script in `dir/bin` with `body`.
fn fake_kubectl(dir: &Scratch, body: &str) -> PathBuf {
    fake_program(dir, "kubectl", body)
}

#[test]
fn an_overlay_is_built_and_its_base_is_not_built_again() {
    let dir = dir();
    let repo = repo(&dir);
    let found = vec![repo.join("deploy/base"), repo.join("deploy/overlays/prod")];
    assert_eq!(tops(&repo, &found), vec![repo.join("deploy/overlays/prod")]);
    let alone = vec![repo.join("deploy/base")];
    assert_eq!(tops(&repo, &alone), alone, "a base alone is built");
}

#[test]
fn kubectl_sees_the_tree_it_needs_no_environment_and_is_asked_for_origins() {
    let dir = dir();
    let repo = repo(&dir);
    // No PATH: only the shell's builtins. It prints what it saw as YAML comments.
    let kubectl = fake_kubectl(
        &dir,
        r##"for f in "$2"/../../base/*; do echo "# saw ${f##*/}"; done
while IFS= read -r line; do echo "# kust $line"; done < "$2/kustomization.yaml"
export -p | while IFS= read -r line; do echo "# env $line"; done
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n'"##,
    );
    let built = build(
        &kubectl,
        &repo,
        &repo.join("deploy/overlays/prod"),
        &RenderLimits::default(),
    )
    .expect("built");
    assert!(
        built.text.contains("# saw deployment.yaml"),
        "{}",
        built.text
    );
    assert!(
        built.text.contains("# kust - originAnnotations"),
        "{}",
        built.text
    );
    assert!(built.text.contains("HOME="), "{}", built.text);
    for line in built.text.lines().filter(|l| l.starts_with("# env ")) {
        assert!(
            line.contains("HOME=") || line.contains("KUBECONFIG=") || line.contains("PWD="),
            "kubectl saw {line}"
        );
    }
}

#[test]
fn a_remote_or_outside_resource_is_refused_before_kubectl_runs() {
    let dir = dir();
    let repo = dir.root.join("repo");
    let kubectl = fake_kubectl(
        &dir,
        "echo ran > \"$HOME/../../ran\"\necho 'kind: ConfigMap'",
    );
    let cases = [
        ("resources:\n- https://example.com/x.yaml\n", "remote"),
        (
            "resources:\n- github.com/org/repo/config?ref=v1\n",
            "remote",
        ),
        ("bases:\n- git@github.com:org/repo.git\n", "remote"),
        ("resources:\n- /etc\n", "outside"),
        (
            "resources:\n- ../../../../../../../../etc/passwd\n",
            "outside",
        ),
        (
            "configMapGenerator:\n- name: x\n  files:\n  - env=/proc/self/environ\n",
            "outside",
        ),
    ];
    for (text, why) in cases {
        write(&repo, "k/kustomization.yaml", text);
        let err =
            build(&kubectl, &repo, &repo.join("k"), &RenderLimits::default()).expect_err(text);
        match (why, &err) {
            ("remote", KustomizeError::Remote(_)) | ("outside", KustomizeError::Outside(_)) => {}
            _ => panic!("{text}: {err:?}"),
        }
        assert!(!dir.root.join("ran").exists(), "kubectl ran for {text}");
    }
    // A link in the tree to a file outside it is refused too.
    symlink("/etc/passwd", repo.join("k/passwd")).expect("symlink");
    write(&repo, "k/kustomization.yaml", "resources:\n- passwd\n");
    let err = build(&kubectl, &repo, &repo.join("k"), &RenderLimits::default());
    assert!(matches!(err, Err(KustomizeError::Outside(_))), "{err:?}");
}

#[test]
fn a_failure_is_one_clean_line_without_the_scratch_path() {
    let dir = dir();
    let repo = repo(&dir);
    let kubectl = fake_kubectl(
        &dir,
        "echo \"error: accumulating resources from $2/x: \x1b]0;PWNED\x07 evil\" >&2\nexit 1",
    );
    let err = build(
        &kubectl,
        &repo,
        &repo.join("deploy/overlays/prod"),
        &RenderLimits::default(),
    )
    .expect_err("failed");
    let message = err.to_string();
    assert!(
        message.contains("accumulating resources from ./overlays/prod/x"),
        "{message}"
    );
    assert!(
        !message.contains('\x1b') && !message.contains("kopf-audit-render"),
        "{message}"
    );
}

#[test]
fn a_kubectl_that_never_ends_is_stopped() {
    let dir = dir();
    let repo = repo(&dir);
    let kubectl = fake_kubectl(&dir, "while :; do :; done");
    let limits = RenderLimits {
        timeout: Duration::from_millis(300),
        ..RenderLimits::default()
    };
    let err = build(&kubectl, &repo, &repo.join("deploy/base"), &limits);
    assert!(matches!(err, Err(KustomizeError::Bounds { .. })), "{err:?}");
}

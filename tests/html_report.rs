//! `-o html` rendered by a real browser: `kopf-audit lint -o html` on a fixture
//! operator (tests/fixtures/lint/html-report), loaded by headless Chromium (Debian's
//! `chromium`, which hack/test.sh installs; `KOPF_AUDIT_CHROMIUM` names another), its
//! rendered DOM asserted on, and a screenshot kept in target/test-artifacts/report.png.
//!
//! Behind the `e2e` feature with the rest of what needs a system package; no cluster.
//! A missing Chromium fails the test with the reason: it is never skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where the page and its screenshot are kept after the test.
fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
        .join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("creating target/test-artifacts");
    dir
}

/// The Chromium binary, which must exist.
fn chromium() -> PathBuf {
    let path = std::env::var_os("KOPF_AUDIT_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "no Chromium at {}: install Debian's chromium (`apt-get install -y chromium`, as \
         hack/test.sh does) or set KOPF_AUDIT_CHROMIUM",
        path.display()
    );
    path
}

/// Runs headless Chromium on `page` with `args`, in a new empty profile, with
/// everything that would reach the network at startup turned off.
fn run_chromium(page: &Path, args: &[&str]) -> Output {
    let profile = tempdir("chromium-profile");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", chromium().display()));
    // A hung browser would hang the suite: give it up after two minutes.
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("waiting for chromium").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium {args:?} did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("chromium's output");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A new empty directory under target/tmp.
fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "html-report-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a temporary directory");
    dir
}

/// The text of an HTML document as a browser shows it, roughly: tags dropped (and the
/// head), the five entities Chromium writes decoded, whitespace collapsed.
fn text_of(dom: &str) -> String {
    let body = dom.split_once("<body").map_or(dom, |(_, b)| b);
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn lint_html_renders_in_chromium_with_findings_fixes_and_hostile_text_as_text() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/html-report");
    let out = Command::new(env!("CARGO_BIN_EXE_kopf-audit"))
        .args(["lint", "-o", "html", "--fail-on", "error"])
        .arg(&fixture)
        .output()
        .expect("kopf-audit runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the fixture has error findings and --fail-on error: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = String::from_utf8(out.stdout).expect("UTF-8");
    // Self-contained: nothing the page could load, and a policy that forbids loading.
    for loader in [
        "<script", "src=", "href=", "url(", "@import", "<link", "<img",
    ] {
        assert!(!html.contains(loader), "the page has {loader}");
    }
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));

    let dir = artifacts();
    let page = dir.join("report.html");
    std::fs::write(&page, &html).expect("writing the page");

    let dom = String::from_utf8(run_chromium(&page, &["--dump-dom"]).stdout).expect("UTF-8");
    assert!(
        dom.contains("<title>kopf-audit lint</title>"),
        "no script ran to change the title: {dom}"
    );
    assert!(
        !dom.contains("<script") && !dom.contains("<b>not bold</b>"),
        "hostile markup stayed text: {dom}"
    );
    let text = text_of(&dom);
    for shown in [
        // the operator, a check ID with its severity, area heading and fix
        "widget-operator",
        "error workload.memory-limit on widget-operator at manifests.yaml:",
        "workload",
        "Fix spec: template: spec: containers: - name: operator resources: limits: memory: 512Mi",
        // a finding lint located in the Python source
        "warning source.blocking-call on operator.py:create_fn at operator.py:16",
        // the hostile exemption reasons, shown as text
        "<script>alert('exempt')</script> probed by the mesh sidecar",
        "<script>document.title='pwned'</script><b>not bold</b>",
        "Exemptions and skipped checks",
        "Not decided from files",
    ] {
        assert!(text.contains(shown), "the page shows {shown:?}:\n{text}");
    }

    let screenshot = dir.join("report.png");
    let _ = std::fs::remove_file(&screenshot);
    run_chromium(
        &page,
        &[
            &format!("--screenshot={}", screenshot.display()),
            "--window-size=1280,4000",
        ],
    );
    let png = std::fs::read(&screenshot).expect("the screenshot was written");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000,
        "a PNG with something on it ({} bytes)",
        png.len()
    );
    println!("HTML report: {}", page.display());
    println!("screenshot: {}", screenshot.display());
}

//! Headless Chromium for the tests of `-o html` (tests/html_report.rs, and the live
//! report in tests/e2e/kubectl.rs): Debian's `chromium` (hack/test.sh installs it), or
//! the binary `KOPF_AUDIT_CHROMIUM` names. A missing Chromium fails the test with the
//! reason: it is never skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where the page and its screenshot are kept after the test.
pub fn artifacts() -> PathBuf {
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
pub fn run_chromium(page: &Path, args: &[&str]) -> Output {
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
pub fn text_of(dom: &str) -> String {
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
        .replace("&apos;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Loads `page` in Chromium: the DOM as parsed (no script runs: the page has none),
/// its text, and a screenshot written to `screenshot` and checked to be a PNG.
pub fn render(page: &Path, screenshot: &Path) -> (String, String) {
    let dom = String::from_utf8(run_chromium(page, &["--dump-dom"]).stdout).expect("UTF-8");
    let _ = std::fs::remove_file(screenshot);
    run_chromium(
        page,
        &[
            &format!("--screenshot={}", screenshot.display()),
            "--window-size=1280,4000",
        ],
    );
    let png = std::fs::read(screenshot).expect("the screenshot was written");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000,
        "a PNG with something on it ({} bytes)",
        png.len()
    );
    println!("screenshot: {}", screenshot.display());
    let text = text_of(&dom);
    (dom, text)
}

//! `-o html` rendered by a real browser: `kopf-audit lint -o html` on a fixture
//! operator (tests/fixtures/lint/html-report), loaded by headless Chromium (Debian's
//! `chromium`, which hack/test.sh installs; `KOPF_AUDIT_CHROMIUM` names another), its
//! rendered DOM asserted on, and a screenshot kept in target/test-artifacts/report.png.
//!
//! Behind the `e2e` feature with the rest of what needs a system package; no cluster.
//! A missing Chromium fails the test with the reason: it is never skipped.

mod browser;

use std::path::Path;
use std::process::Command;

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

    let dir = browser::artifacts();
    let page = dir.join("report.html");
    std::fs::write(&page, &html).expect("writing the page");

    let screenshot = dir.join("report.png");
    let (dom, text) = browser::render(&page, &screenshot);
    assert!(
        dom.contains("<title>kopf-audit lint</title>"),
        "no script ran to change the title: {dom}"
    );
    assert!(
        !dom.contains("<script") && !dom.contains("<b>not bold</b>"),
        "hostile markup stayed text: {dom}"
    );
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

    println!("HTML report: {}", page.display());
}

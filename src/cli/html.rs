//! `-o html`: the results as one self-contained page a person would rather read than
//! a terminal: per operator its conditions, its findings grouped by area (severity,
//! message, evidence, fix), the targets the auditor recognised and the exemptions.
//!
//! The page loads nothing: the style is inline, there is no script, no link to follow
//! and no image, and its Content-Security-Policy (`default-src 'none'`) forbids any
//! load should something slip in. Everything from the cluster or the linted files is
//! escaped, cleaned (secrets masked, invisible characters removed) and cut to the same
//! bounds as the status, and at most [`MAX_FINDINGS`] findings of an operator are shown.

use super::results::{Results, Subject};
use crate::api::{SkippedCheck, TargetStatus};
use crate::catalog::{Area, ConditionType, Severity};
use crate::evaluate::lint::LintFinding;
use crate::model::bounded::{
    MAX_CONDITION_MESSAGE_BYTES, MAX_EVIDENCE_BYTES, MAX_MESSAGE_BYTES, MAX_NAME_BYTES,
    MAX_REASON_BYTES, clean, clean_lines,
};
use crate::model::source::Unread;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::fmt::Write as _;

/// At most this many findings of one operator are shown (a live status holds at most
/// 50; lint of a large tree can find more), then how many more `-o json` has.
pub(crate) const MAX_FINDINGS: usize = 200;

/// The page's style: system fonts, a severity colour per finding, readable in print.
const STYLE: &str = "
:root{--err:#b42318;--warn:#b54708;--info:#175cd3;--ok:#067647;--line:#d0d5dd;--mute:#475467}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#101828;background:#f9fafb}
header{background:#101828;color:#fff;padding:16px 32px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#d0d5dd}
main{padding:16px 32px;max-width:1200px}
section.subject{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px 20px 16px;margin:16px 0}
h2{font-size:19px;margin:12px 0 4px;overflow-wrap:anywhere}
h3{font-size:16px;margin:18px 0 6px;border-bottom:1px solid var(--line);padding-bottom:2px}
h4{font-size:14px;margin:12px 0 4px;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid #eaecf0;overflow-wrap:break-word}
.conditions td:nth-child(-n+3),.exemptions td:nth-child(3){white-space:nowrap}
th{color:var(--mute);font-weight:600}
code,pre{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:13px}
pre{background:#f2f4f7;border-radius:4px;padding:6px 8px;margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere}
.finding{border-left:4px solid var(--line);padding:4px 10px;margin:8px 0}
.finding.error{border-color:var(--err)}.finding.warning{border-color:var(--warn)}.finding.info{border-color:var(--info)}
.finding p{margin:2px 0;white-space:pre-wrap;overflow-wrap:anywhere}
.sev{display:inline-block;min-width:64px;font-weight:700;text-transform:uppercase;font-size:12px}
.sev.error,.bad{color:var(--err)}.sev.warning{color:var(--warn)}.sev.info{color:var(--info)}.good{color:var(--ok)}
.where,.label{color:var(--mute);font-size:13px}
.counts span{margin-right:12px}
.none{color:var(--mute);font-style:italic}
";

/// `results` as one HTML page.
pub(crate) fn render(results: &Results) -> String {
    let command = results.source.command();
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>kopf-audit {command}</title>");
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(out, "<header><h1>kopf-audit {command}</h1>");
    let _ = writeln!(
        out,
        "<p>{} operator(s): {} · kopf-audit {} · {}</p></header>\n<main>",
        results.subjects.len(),
        counts_text(&results.subjects),
        esc(env!("CARGO_PKG_VERSION")),
        esc(&jiff::Timestamp::now()
            .strftime("%Y-%m-%d %H:%M:%S UTC")
            .to_string()),
    );
    if results.subjects.is_empty() {
        out.push_str("<p class=\"none\">No KopfAudits found.</p>\n");
    }
    for subject in &results.subjects {
        subject_html(&mut out, subject);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// `text` escaped for HTML text and attribute values (XML's escaping, which HTML5
/// reads alike; controls become spaces).
fn esc(text: &str) -> String {
    super::ci::xml(text)
}

/// A one-line text from the cluster or the files: cleaned, bounded, escaped.
fn line(text: &str, max_bytes: usize) -> String {
    esc(&clean(text, max_bytes))
}

/// A multi-line text (a message with an RBAC rule, a traceback, a patch): cleaned,
/// bounded and escaped, its line breaks kept.
fn lines(text: &str, max_bytes: usize) -> String {
    esc(&clean_lines(text, max_bytes))
}

/// "2 error, 1 warning, 0 info" over the subjects' findings.
fn counts_text(subjects: &[Subject]) -> String {
    let count = |s: Severity| {
        subjects
            .iter()
            .flat_map(|subject| &subject.report.findings)
            .filter(|f| f.finding.severity == s)
            .count()
    };
    format!(
        "{} error, {} warning, {} info",
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    )
}

fn subject_html(out: &mut String, subject: &Subject) {
    let _ = writeln!(
        out,
        "<section class=\"subject\">\n<h2>{}</h2>",
        line(&subject.name, 2 * MAX_NAME_BYTES)
    );
    if !subject.audited {
        out.push_str("<p class=\"none\">Not audited yet.</p>\n</section>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<p class=\"counts\">{}</p>",
        counts_text(std::slice::from_ref(subject))
    );
    unread_html(out, &subject.report.unread);
    conditions_html(out, &subject.conditions);
    findings_html(out, subject);
    targets_html(out, &subject.report.targets);
    exemptions_html(out, &subject.report.skipped);
    undecided_html(out, subject);
    out.push_str("</section>\n");
}

/// Whether a condition reads as healthy: `True` is good but for Reconciling and
/// Stalled (abnormal-true, as kstatus has them); `None` for Unknown or a type not ours.
fn healthy(c: &Condition) -> Option<bool> {
    let kind = ConditionType::ALL
        .into_iter()
        .find(|t| t.as_str() == c.type_)?;
    let abnormal = matches!(kind, ConditionType::Reconciling | ConditionType::Stalled);
    match c.status.as_str() {
        "True" => Some(!abnormal),
        "False" => Some(abnormal),
        _ => None,
    }
}

fn conditions_html(out: &mut String, conditions: &[Condition]) {
    if conditions.is_empty() {
        return;
    }
    out.push_str(
        "<h3>Conditions</h3>\n<table class=\"conditions\">\n<tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th></tr>\n",
    );
    for c in conditions {
        let class = match healthy(c) {
            Some(true) => "good",
            Some(false) => "bad",
            None => "",
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td></tr>",
            line(&c.type_, MAX_NAME_BYTES),
            line(&c.status, MAX_NAME_BYTES),
            line(&c.reason, MAX_NAME_BYTES),
            lines(&c.message, MAX_CONDITION_MESSAGE_BYTES),
        );
    }
    out.push_str("</table>\n");
}

fn findings_html(out: &mut String, subject: &Subject) {
    out.push_str("<h3>Findings</h3>\n");
    let findings = &subject.report.findings;
    if findings.is_empty() {
        match subject.report.unread.len() {
            0 => out.push_str("<p class=\"none\">No findings.</p>\n"),
            n => {
                let _ = writeln!(
                    out,
                    "<p class=\"bad\">No findings in what was read; {n} input(s) could not be read.</p>"
                );
            }
        }
        return;
    }
    let shown = &findings[..findings.len().min(MAX_FINDINGS)];
    for area in Area::ALL.into_iter().chain(Area::LINT_ONLY) {
        let mut in_area: Vec<&LintFinding> = shown
            .iter()
            .filter(|f| f.finding.check.area() == area)
            .collect();
        if in_area.is_empty() {
            continue;
        }
        in_area.sort_by_key(|f| std::cmp::Reverse(f.finding.severity));
        let _ = writeln!(out, "<h4>{}</h4>", area.prefix());
        for f in in_area {
            finding_html(out, f);
        }
    }
    let left_out = findings.len() - shown.len()
        + subject
            .summary
            .as_ref()
            .map_or(0, |s| usize::try_from(s.omitted).unwrap_or(usize::MAX));
    if left_out > 0 {
        let _ = writeln!(
            out,
            "<p class=\"none\">{left_out} more finding(s) not shown (see <code>-o json</code>).</p>"
        );
    }
}

fn finding_html(out: &mut String, f: &LintFinding) {
    let finding = &f.finding;
    let severity = finding.severity.as_str();
    let _ = write!(
        out,
        "<div class=\"finding {severity}\">\n<div><span class=\"sev {severity}\">{severity}</span> <code>{}</code> <span class=\"where\">on {}",
        esc(finding.check.as_str()),
        line(&finding.target, 2 * MAX_NAME_BYTES),
    );
    if let Some(at) = &f.location {
        let _ = write!(out, " at {}", line(&at.to_string(), 2 * MAX_NAME_BYTES));
    }
    if finding.stale {
        out.push_str(" · kept: its area could not be read this time");
    }
    if finding.absent_since.is_some() {
        out.push_str(" · resolving: no longer found");
    }
    out.push_str("</span></div>\n");
    let _ = writeln!(out, "<p>{}</p>", lines(&finding.message, MAX_MESSAGE_BYTES));
    if let Some(evidence) = &finding.evidence {
        let _ = writeln!(
            out,
            "<div class=\"label\">Evidence</div><pre class=\"evidence\">{}</pre>",
            lines(evidence, MAX_EVIDENCE_BYTES)
        );
    }
    if let Some(fix) = &finding.fix {
        let _ = writeln!(
            out,
            "<div class=\"label\">Fix</div><pre class=\"fix\">{}</pre>",
            lines(fix, MAX_MESSAGE_BYTES)
        );
    }
    out.push_str("</div>\n");
}

/// The inputs lint could not read, first: the run is no pass while one is left, so
/// the page says so before anything that could read as one.
fn unread_html(out: &mut String, unread: &[Unread]) {
    if unread.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h3>Not read</h3>\n<p class=\"bad\">{} input(s) could not be read: the run is not a pass.</p>\n<ul class=\"unread\">",
        unread.len()
    );
    for u in unread {
        let _ = writeln!(
            out,
            "<li><code>{}</code>: {}</li>",
            line(&u.path, 2 * MAX_NAME_BYTES),
            lines(&u.why, MAX_MESSAGE_BYTES)
        );
    }
    out.push_str("</ul>\n");
}

fn targets_html(out: &mut String, targets: &[TargetStatus]) {
    if targets.is_empty() {
        return;
    }
    out.push_str(
        "<h3>Targets</h3>\n<table class=\"targets\">\n<tr><th>Deployment</th><th>kopf</th><th>Mode</th><th>Namespaces</th><th>Peering</th><th>Log format</th><th>ServiceAccount</th></tr>\n",
    );
    let or_dash = |v: &Option<String>| line(v.as_deref().unwrap_or("-"), MAX_NAME_BYTES);
    for t in targets {
        let namespaces = if t.namespaces.is_empty() {
            "-".to_string()
        } else {
            t.namespaces.join(", ")
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            line(&t.name, MAX_NAME_BYTES),
            if t.kopf { "yes" } else { "no" },
            or_dash(&t.mode),
            line(&namespaces, MAX_REASON_BYTES),
            or_dash(&t.peering),
            or_dash(&t.log_format),
            or_dash(&t.service_account),
        );
    }
    out.push_str("</table>\n");
}

fn exemptions_html(out: &mut String, skipped: &[SkippedCheck]) {
    out.push_str("<h3>Exemptions and skipped checks</h3>\n");
    if skipped.is_empty() {
        out.push_str("<p class=\"none\">None.</p>\n");
        return;
    }
    out.push_str(
        "<table class=\"exemptions\">\n<tr><th>Check</th><th>Target</th><th>State</th><th>Reason</th></tr>\n",
    );
    for s in skipped {
        let (class, state) = if s.honoured {
            ("", "skipped")
        } else {
            ("bad", "exemption refused: the check ran")
        };
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"{class}\">{state}</td><td>{}</td></tr>",
            esc(s.check.as_str()),
            line(&s.target, MAX_NAME_BYTES),
            lines(&s.reason, MAX_REASON_BYTES),
        );
    }
    out.push_str("</table>\n");
}

fn undecided_html(out: &mut String, subject: &Subject) {
    let report = &subject.report;
    if report.undecided.is_empty() && report.notes.is_empty() {
        return;
    }
    out.push_str("<h3>Not decided from files</h3>\n<ul>\n");
    for u in &report.undecided {
        let _ = writeln!(
            out,
            "<li><b>{}</b> of {}: {}</li>",
            u.area.prefix(),
            line(&u.targets.join(", "), MAX_REASON_BYTES),
            lines(&u.why, MAX_MESSAGE_BYTES)
        );
    }
    for note in &report.notes {
        let _ = writeln!(out, "<li>{}</li>", lines(note, MAX_MESSAGE_BYTES));
    }
    out.push_str("</ul>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Finding;
    use crate::catalog::CheckId;
    use crate::checks::finding;
    use crate::cli::results::Source;
    use crate::evaluate::lint::LintReport;

    const HOSTILE: &str = "<script>alert('x')</script><img src=http://evil.example/x>";

    fn hostile_results(findings: usize) -> Results {
        let one = LintFinding {
            finding: Finding {
                fix: Some(format!("fix {HOSTILE}\n")),
                ..finding(
                    CheckId::WorkloadMemoryLimit,
                    "op",
                    format!("message {HOSTILE}"),
                    Some(format!("evidence {HOSTILE}")),
                )
            },
            location: None,
            insert_before: None,
        };
        let report = LintReport {
            findings: vec![one; findings],
            skipped: vec![SkippedCheck {
                check: CheckId::RbacEvents,
                target: "op".into(),
                reason: format!("reason {HOSTILE}"),
                honoured: true,
            }],
            ..LintReport::default()
        };
        Results {
            source: Source::Report,
            subjects: vec![Subject {
                name: format!("ns/ {HOSTILE}"),
                audited: true,
                conditions: vec![Condition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    reason: "Audited".into(),
                    message: format!("condition {HOSTILE}"),
                    last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        jiff::Timestamp::UNIX_EPOCH,
                    ),
                    observed_generation: None,
                }],
                summary: None,
                report,
            }],
            data: serde_json::Value::Null,
        }
    }

    #[test]
    fn everything_from_the_cluster_is_escaped_and_nothing_is_loaded() {
        let page = render(&hostile_results(1));
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        for field in ["message", "evidence", "fix", "reason", "condition", "ns/"] {
            assert!(
                page.contains(&format!(
                    "{field} &lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;"
                )),
                "{field} escaped: {page}"
            );
        }
        // Nothing to load: no attribute that names a resource, no CSS that fetches one.
        for loader in ["src=\"", "href=", "url(", "@import", "<link", "<iframe"] {
            assert!(!page.contains(loader), "{loader}: {page}");
        }
        assert!(page.contains("default-src 'none'"));
    }

    #[test]
    fn findings_are_grouped_by_area_with_severity_fix_and_exemptions() {
        let page = render(&hostile_results(1));
        assert!(page.contains("<h4>workload</h4>"), "{page}");
        assert!(
            page.contains("<code>workload.memory-limit</code>"),
            "{page}"
        );
        assert!(page.contains("class=\"fix\""), "{page}");
        assert!(
            page.contains("<h3>Exemptions and skipped checks</h3>"),
            "{page}"
        );
        assert!(page.contains("<td class=\"good\">True</td>"), "{page}");
    }

    #[test]
    fn at_most_max_findings_are_shown_and_the_rest_counted() {
        let page = render(&hostile_results(MAX_FINDINGS + 7));
        assert_eq!(
            page.matches("<div class=\"finding ").count(),
            MAX_FINDINGS,
            "bounded"
        );
        assert!(page.contains("7 more finding(s) not shown"), "{page}");
    }

    #[test]
    fn unread_inputs_come_first_and_no_findings_is_never_said_alone() {
        let mut r = hostile_results(0);
        r.subjects[0].report.unread.push(Unread {
            path: "charts/<op>".into(),
            why: "helm template failed".into(),
        });
        let page = render(&r);
        assert!(page.contains("<h3>Not read</h3>"), "{page}");
        assert!(
            page.contains("<li><code>charts/&lt;op&gt;</code>: helm template failed</li>"),
            "{page}"
        );
        assert!(!page.contains("No findings.</p>"), "{page}");
        assert!(page.contains("No findings in what was read; 1 input(s) could not be read."));
        assert!(page.find("Not read") < page.find("<h3>Findings"), "first");
    }
}

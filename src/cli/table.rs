//! `-o table`: the results for people on a terminal, the same layout for `check`,
//! `report` and `lint`: per operator its targets, its findings (with the file and line
//! lint found them at, the evidence and the fix), a count, the exemptions, what lint
//! could not decide, the inputs it could not read and the conditions. Severities are
//! coloured when asked.
//!
//! Every single-line field (a name, a path, a reason, a note) is put on one line by
//! [`one_line`], so that a name holding a line break cannot start a line of its own;
//! the whole text is made inert again by the output layer.

use super::inert::{STYLES, one_line};
use super::results::{Results, Subject};
use crate::api::TargetStatus;
use crate::catalog::Severity;
use crate::model::source::Unread;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::fmt::Write as _;

/// Column of the evidence, fix and location lines under a finding.
const INDENT: &str = "          ";

/// `results` as text; ANSI colours on the severities and headings when `color`.
pub(crate) fn render(results: &Results, color: bool) -> String {
    let paint = Paint(color);
    let headed = results.subjects.len() > 1 || results.source == super::results::Source::Report;
    let mut out = String::new();
    for subject in &results.subjects {
        if headed {
            let heading = format!("=== KopfAudit {}", one_line(&subject.name));
            let _ = writeln!(out, "{}", paint.bold(&heading));
        }
        subject_text(&mut out, subject, paint);
    }
    if results.subjects.is_empty() {
        out.push_str("No KopfAudits found.\n");
    }
    out
}

/// ANSI styling, or none.
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    /// `text` in `style` (one of [`STYLES`], the only ones the output keeps), then
    /// reset, when colouring.
    fn sgr(self, style: &str, text: &str) -> String {
        if self.0 {
            format!("{style}{text}{}", STYLES[0])
        } else {
            text.to_string()
        }
    }

    /// A heading.
    fn bold(self, text: &str) -> String {
        self.sgr(STYLES[1], text)
    }

    /// A severity word padded to its column: red errors, yellow warnings, cyan infos.
    fn severity(self, severity: Severity) -> String {
        let padded = format!("{:<8}", severity.as_str());
        match severity {
            Severity::Error => self.sgr(STYLES[2], &padded),
            Severity::Warning => self.sgr(STYLES[3], &padded),
            Severity::Info => self.sgr(STYLES[4], &padded),
        }
    }
}

/// A subject's text: its targets, findings, exemptions, what lint could not decide or
/// read, and its conditions.
fn subject_text(out: &mut String, subject: &Subject, paint: Paint) {
    if !subject.audited {
        out.push_str("(not audited yet)\n\n");
        return;
    }
    let report = &subject.report;
    for t in &report.targets {
        let _ = writeln!(out, "{}", target_line(t));
    }
    findings_text(out, subject, paint);
    for s in &report.skipped {
        let state = if s.honoured {
            "skipped"
        } else {
            "exemption refused"
        };
        let _ = writeln!(
            out,
            "{state}: {} on {}: {}",
            s.check,
            one_line(&s.target),
            one_line(&s.reason)
        );
    }
    for u in &report.undecided {
        let _ = writeln!(
            out,
            "not decided from files: {} of {}: {}",
            u.area.prefix(),
            one_line(&u.targets.join(", ")),
            one_line(&u.why)
        );
    }
    for note in &report.notes {
        let _ = writeln!(out, "note: {}", one_line(note));
    }
    unread_text(out, &report.unread);
    conditions_text(out, &subject.conditions);
    out.push('\n');
}

/// How a target runs kopf, on one line.
fn target_line(t: &TargetStatus) -> String {
    one_line(&format!(
        "TARGET {}  kopf={}  mode={}  namespaces={}  peering={}  log-format={}  serviceAccount={}",
        t.name,
        t.kopf,
        t.mode.as_deref().unwrap_or("-"),
        if t.namespaces.is_empty() {
            "-".to_string()
        } else {
            t.namespaces.join(",")
        },
        t.peering.as_deref().unwrap_or("-"),
        t.log_format.as_deref().unwrap_or("-"),
        t.service_account.as_deref().unwrap_or("-"),
    ))
}

/// The inputs that were not read, each with why, and that the run is no pass.
fn unread_text(out: &mut String, unread: &[Unread]) {
    if unread.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "NOT READ: {} input(s) could not be read; the run is not a pass:",
        unread.len()
    );
    for u in unread {
        let _ = writeln!(out, "  {}: {}", one_line(&u.path), one_line(&u.why));
    }
}

/// The findings, with their place, evidence and fix, and a count; never "No
/// findings." alone when an input was not read.
fn findings_text(out: &mut String, subject: &Subject, paint: Paint) {
    let findings = &subject.report.findings;
    let unread = subject.report.unread.len();
    if findings.is_empty() {
        if unread == 0 {
            out.push_str("No findings.\n");
        } else {
            let _ = writeln!(
                out,
                "No findings in what was read; {unread} input(s) could not be read."
            );
        }
        return;
    }
    let _ = writeln!(
        out,
        "{:<8} {:<36} {:<24} MESSAGE",
        "SEVERITY", "CHECK", "TARGET"
    );
    for f in findings {
        let finding = &f.finding;
        let mut message = finding.message.lines();
        let _ = writeln!(
            out,
            "{} {:<36} {:<24} {}",
            paint.severity(finding.severity),
            finding.check.as_str(),
            one_line(&finding.target),
            message.next().unwrap_or_default()
        );
        // A message's further lines (an RBAC rule to paste) under the finding, indented.
        for line in message {
            let _ = writeln!(out, "{INDENT}  {line}");
        }
        if let Some(at) = &f.location {
            let _ = writeln!(out, "{INDENT}at: {}", one_line(&at.to_string()));
        }
        if let Some(e) = &finding.evidence {
            let mut evidence = e.lines();
            let _ = writeln!(
                out,
                "{INDENT}evidence: {}",
                evidence.next().unwrap_or_default()
            );
            for line in evidence {
                let _ = writeln!(out, "{INDENT}  {line}");
            }
        }
        if let Some(fix) = &finding.fix {
            let _ = writeln!(out, "{INDENT}fix:");
            for line in fix.lines() {
                let _ = writeln!(out, "{INDENT}  {line}");
            }
        }
    }
    let count = |s: Severity| findings.iter().filter(|f| f.finding.severity == s).count();
    let omitted = subject.summary.as_ref().map_or(0, |s| s.omitted);
    let _ = write!(
        out,
        "{} finding(s): {} error, {} warning, {} info",
        findings.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    );
    if omitted > 0 {
        let _ = write!(out, " ({omitted} more left out of the status)");
    }
    if unread > 0 {
        let _ = write!(
            out,
            " in what was read; {unread} input(s) could not be read"
        );
    }
    out.push_str(".\n");
}

/// The conditions, one line each.
fn conditions_text(out: &mut String, conditions: &[Condition]) {
    if conditions.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{:<22} {:<8} {:<20} MESSAGE",
        "CONDITION", "STATUS", "REASON"
    );
    for c in conditions {
        let _ = writeln!(
            out,
            "{:<22} {:<8} {:<20} {}",
            one_line(&c.type_),
            one_line(&c.status),
            one_line(&c.reason),
            one_line(&c.message)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::CheckId;
    use crate::checks::finding;
    use crate::cli::results::Source;
    use crate::evaluate::lint::{LintFinding, LintReport};
    use crate::model::source::Location;

    fn results(source: Source) -> Results {
        let report = LintReport {
            findings: vec![LintFinding {
                finding: crate::api::Finding {
                    fix: Some("line one\nline two\n".into()),
                    ..finding(
                        CheckId::SourceBlockingCall,
                        "op.py:create_fn",
                        "async handler create_fn() calls time.sleep():\nawait instead".into(),
                        Some("time.sleep(1)".into()),
                    )
                },
                location: Some(Location::new("op.py", 20)),
                insert_before: None,
            }],
            ..LintReport::default()
        };
        Results {
            source,
            subjects: vec![Subject {
                name: "team-a/op".into(),
                audited: true,
                report,
                ..Subject::default()
            }],
            data: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_finding_shows_where_its_evidence_and_its_fix_and_a_count() {
        let text = render(&results(Source::Lint), false);
        assert!(text.contains("source.blocking-call"), "{text}");
        assert!(
            text.contains("time.sleep():\n            await instead\n"),
            "{text}"
        );
        assert!(text.contains("at: op.py:20\n"), "{text}");
        assert!(text.contains("evidence: time.sleep(1)\n"), "{text}");
        assert!(text.contains("fix:\n            line one\n"), "{text}");
        assert!(
            text.contains("1 finding(s): 0 error, 1 warning, 0 info."),
            "{text}"
        );
        assert!(!text.contains('\x1b'), "no colour unless asked");
        assert!(!text.contains("=== KopfAudit"), "one lint tree, no heading");
    }

    #[test]
    fn colour_paints_the_severity_and_a_report_heads_each_kopfaudit() {
        let text = render(&results(Source::Report), true);
        assert!(text.contains("\x1b[33mwarning \x1b[0m"), "{text:?}");
        assert!(
            text.contains("\x1b[1m=== KopfAudit team-a/op\x1b[0m"),
            "{text:?}"
        );
    }

    #[test]
    fn nothing_unread_is_never_called_no_findings() {
        let mut r = results(Source::Lint);
        r.subjects[0].report.findings.clear();
        assert!(render(&r, false).contains("No findings.\n"));
        r.subjects[0].report.unread.push(Unread {
            path: "charts/op".into(),
            why: "helm template failed".into(),
        });
        let text = render(&r, false);
        assert!(!text.contains("No findings."), "{text}");
        assert!(
            text.contains("No findings in what was read; 1 input(s) could not be read."),
            "{text}"
        );
        assert!(
            text.contains(
                "NOT READ: 1 input(s) could not be read; the run is not a pass:\n  charts/op: helm template failed\n"
            ),
            "{text}"
        );
        let with_findings = {
            let mut r = results(Source::Lint);
            r.subjects[0].report.unread = text_unread();
            render(&r, false)
        };
        assert!(
            with_findings.contains("0 info in what was read; 1 input(s) could not be read."),
            "{with_findings}"
        );
    }

    /// One input that was not read.
    fn text_unread() -> Vec<Unread> {
        vec![Unread {
            path: "a.py".into(),
            why: "not UTF-8".into(),
        }]
    }

    #[test]
    fn a_name_or_path_with_a_line_break_stays_on_its_line() {
        let mut r = results(Source::Report);
        r.subjects[0].name = "ns/op\n::error::owned".into();
        r.subjects[0].report.findings[0].finding.target = "t\n::error::x".into();
        r.subjects[0].report.findings[0].location = Some(Location::new("a\n##[error]b.py", 2));
        r.subjects[0]
            .report
            .notes
            .push("note\r\n::warning::y".into());
        let text = render(&r, false);
        assert!(
            text.contains("=== KopfAudit ns/op ::error::owned\n"),
            "{text}"
        );
        assert!(text.contains("at: a #\u{B7}#[error]b.py:2\n"), "{text}");
        assert!(text.contains("note: note  ::warning::y\n"), "{text}");
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("::")),
            "{text}"
        );
    }
}

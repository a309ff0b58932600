//! `-o table`: the results for people on a terminal, the same layout for `check`,
//! `report` and `lint`: per operator its targets, its findings (with the file and line
//! lint found them at, the evidence and the fix), a count, the exemptions, what lint
//! could not decide and the conditions. Severities are coloured when asked.

use super::output::{Results, Subject};
use crate::api::TargetStatus;
use crate::catalog::Severity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::fmt::Write as _;

/// Column of the evidence, fix and location lines under a finding.
const INDENT: &str = "          ";

/// `results` as text; ANSI colours on the severities and headings when `color`.
pub(crate) fn render(results: &Results, color: bool) -> String {
    let paint = Paint(color);
    let headed = results.subjects.len() > 1 || results.source == super::output::Source::Report;
    let mut out = String::new();
    for subject in &results.subjects {
        if headed {
            let heading = format!("=== KopfAudit {}", subject.name);
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
    /// `text` in the SGR `code`, when colouring.
    fn sgr(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// A heading.
    fn bold(self, text: &str) -> String {
        self.sgr("1", text)
    }

    /// A severity word padded to its column: red errors, yellow warnings, cyan infos.
    fn severity(self, severity: Severity) -> String {
        let padded = format!("{:<8}", severity.as_str());
        match severity {
            Severity::Error => self.sgr("1;31", &padded),
            Severity::Warning => self.sgr("33", &padded),
            Severity::Info => self.sgr("36", &padded),
        }
    }
}

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
        let _ = writeln!(out, "{state}: {} on {}: {}", s.check, s.target, s.reason);
    }
    for u in &report.undecided {
        let _ = writeln!(
            out,
            "not decided from files: {} of {}: {}",
            u.area.prefix(),
            u.targets.join(", "),
            u.why
        );
    }
    for note in &report.notes {
        let _ = writeln!(out, "note: {note}");
    }
    conditions_text(out, &subject.conditions);
    out.push('\n');
}

/// How a target runs kopf, on one line.
fn target_line(t: &TargetStatus) -> String {
    format!(
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
    )
}

fn findings_text(out: &mut String, subject: &Subject, paint: Paint) {
    let findings = &subject.report.findings;
    if findings.is_empty() {
        out.push_str("No findings.\n");
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
            finding.target,
            message.next().unwrap_or_default()
        );
        // A message's further lines (an RBAC rule to paste) under the finding, indented.
        for line in message {
            let _ = writeln!(out, "{INDENT}  {line}");
        }
        if let Some(at) = &f.location {
            let _ = writeln!(out, "{INDENT}at: {at}");
        }
        if let Some(e) = &finding.evidence {
            let _ = writeln!(out, "{INDENT}evidence: {e}");
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
    out.push_str(".\n");
}

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
            c.type_, c.status, c.reason, c.message
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::CheckId;
    use crate::checks::finding;
    use crate::cli::output::Source;
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
}

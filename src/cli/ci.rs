//! The formats CI platforms read, for `check`, `report` and `lint` alike: SARIF 2.1.0
//! for code scanning (GitHub, GitLab), JUnit XML, GitLab Code Quality; and lint's JSON.

use super::output::Results;
use crate::catalog::{CheckId, Severity};
use crate::evaluate::lint::{LintFinding, LintReport};
use crate::model::source::Location;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Where the checks are documented: SARIF's `helpUri` of each rule.
const REFERENCE_URL: &str = "https://github.com/kopfaudit/kopf-audit/blob/main/docs/reference.md";

/// A live audit's results as a report for the CI formats: the same findings, with no
/// file (a live audit reads none; SARIF and Code Quality then point at the root).
pub(crate) fn from_status(status: &crate::api::KopfAuditStatus) -> LintReport {
    LintReport {
        findings: status
            .findings
            .iter()
            .map(|f| LintFinding {
                finding: f.clone(),
                location: None,
                insert_before: None,
            })
            .collect(),
        skipped: status.skipped.clone(),
        targets: status.targets.clone(),
        ..LintReport::default()
    }
}

/// The report as JSON.
pub(crate) fn json(report: &LintReport) -> Value {
    json!({
        "findings": report.findings.iter().map(finding_json).collect::<Vec<_>>(),
        "skipped": report.skipped,
        "targets": report.targets,
        "undecided": report.undecided.iter().map(|u| json!({
            "targets": u.targets, "area": u.area.prefix(), "why": u.why,
        })).collect::<Vec<_>>(),
        "notes": report.notes,
    })
}

fn finding_json(f: &LintFinding) -> Value {
    json!({
        "check": f.finding.check,
        "severity": f.finding.severity,
        "target": f.finding.target,
        "message": f.finding.message,
        "evidence": f.finding.evidence,
        "fix": f.finding.fix,
        "file": f.location.as_ref().map(|l| &l.file),
        "line": f.location.as_ref().map(|l| l.line),
    })
}

/// SARIF's level for a severity.
fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The report as SARIF 2.1.0: one rule per check of the catalogue (stable `ruleId`s),
/// one result per finding with a location (code scanning drops results without one;
/// a finding whose cause no linted file holds points at the linted root), and
/// `partialFingerprints` that keep a finding's identity across runs.
pub(crate) fn sarif(report: &LintReport) -> Value {
    let rules: Vec<Value> = CheckId::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.as_str(),
                "name": c.as_str(),
                "shortDescription": {"text": c.summary()},
                "fullDescription": {"text": c.summary()},
                "helpUri": format!("{REFERENCE_URL}#{}", c.area().prefix()),
                "defaultConfiguration": {"level": level(c.default_severity())},
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let (file, line) = file_and_line(f);
            let index = CheckId::ALL.iter().position(|c| *c == f.finding.check);
            let mut result = json!({
                "ruleId": f.finding.check.as_str(),
                "ruleIndex": index,
                "level": level(f.finding.severity),
                "message": message(f),
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": file},
                        "region": {"startLine": line},
                    }
                }],
                "partialFingerprints": {
                    "kopfAudit/v1": fingerprint(f),
                },
            });
            if let (Some(lines), Some(at)) = (&f.insert_before, &f.location) {
                result["fixes"] = json!([insertion(f, at, lines)]);
            }
            result
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "kopf-audit",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": REFERENCE_URL,
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

/// Where a finding points: its file and line (at least 1), else the root: the CI
/// platforms drop a finding without a location.
fn file_and_line(f: &LintFinding) -> (&str, u32) {
    f.location
        .as_ref()
        .map_or((".", 1), |l| (l.file.as_str(), l.line.max(1)))
}

/// A result's message: the text, and with a fix also Markdown that shows it as code.
fn message(f: &LintFinding) -> Value {
    match &f.finding.fix {
        None => json!({"text": f.finding.message}),
        Some(fix) => json!({
            "text": format!("{}\nFix:\n{fix}", f.finding.message),
            "markdown": format!("{}\n\nFix:\n\n```\n{fix}```", f.finding.message),
        }),
    }
}

/// A SARIF fix that inserts `lines` at the start of the finding's line: an empty
/// deleted region there, and the lines as inserted content.
fn insertion(f: &LintFinding, at: &Location, lines: &str) -> Value {
    json!({
        "description": {"text": format!("Insert before line {}: {}", at.line, lines.trim_end())},
        "artifactChanges": [{
            "artifactLocation": {"uri": at.file},
            "replacements": [{
                "deletedRegion": {
                    "startLine": at.line.max(1),
                    "startColumn": 1,
                    "endLine": at.line.max(1),
                    "endColumn": 1,
                },
                "insertedContent": {"text": lines},
            }],
        }],
        "properties": {"check": f.finding.check.as_str()},
    })
}

/// A finding's identity across runs: its check, target, file and message, not its line
/// (lines move when code is edited above it). FNV-1a, as hex.
fn fingerprint(f: &LintFinding) -> String {
    let file = f.location.as_ref().map_or("", |l| l.file.as_str());
    let text = format!(
        "{}\0{}\0{file}\0{}",
        f.finding.check.as_str(),
        f.finding.target,
        f.finding.message
    );
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// GitLab Code Quality's severity for a severity.
fn code_quality_severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "critical",
        Severity::Warning => "major",
        Severity::Info => "info",
    }
}

/// The report as a GitLab Code Quality report (CodeClimate's issue format, as GitLab
/// reads it from `artifacts:reports:codequality`): one issue per finding.
pub(crate) fn code_quality(report: &LintReport) -> Value {
    Value::Array(
        report
            .findings
            .iter()
            .map(|f| {
                let (path, line) = file_and_line(f);
                json!({
                    "type": "issue",
                    "check_name": f.finding.check.as_str(),
                    "description": f.finding.message,
                    "categories": ["Bug Risk"],
                    "severity": code_quality_severity(f.finding.severity),
                    "fingerprint": fingerprint(f),
                    "location": {"path": path, "lines": {"begin": line}},
                })
            })
            .collect(),
    )
}

/// Text escaped for XML and HTML, text and attribute values alike.
pub(super) fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 allows no other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The results as JUnit XML, which CI platforms show as tests: one test suite per
/// audited operator, with one test case per check of the catalogue, failed when it found
/// something, with every finding in its failure.
pub(crate) fn junit(results: &Results) -> String {
    let suites: Vec<(String, &LintReport)> = results
        .subjects
        .iter()
        .map(|s| {
            let name = match results.source {
                super::output::Source::Lint => format!("kopf-audit lint {}", s.name),
                source => format!("kopf-audit {} {}", source.command(), s.name),
            };
            (name, &s.report)
        })
        .collect();
    let failed = |report: &LintReport| {
        CheckId::ALL
            .iter()
            .filter(|c| report.findings.iter().any(|f| f.finding.check == **c))
            .count()
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"kopf-audit {}\" tests=\"{}\" failures=\"{}\">",
        results.source.command(),
        CheckId::ALL.len() * suites.len(),
        suites.iter().map(|(_, r)| failed(r)).sum::<usize>()
    );
    for (name, report) in suites {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">",
            xml(&name),
            CheckId::ALL.len(),
            failed(report)
        );
        junit_cases(&mut out, report);
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// One test case per check of the catalogue, failed by the report's findings of it.
fn junit_cases(out: &mut String, report: &LintReport) {
    for check in CheckId::ALL {
        let findings: Vec<&LintFinding> = report
            .findings
            .iter()
            .filter(|f| f.finding.check == *check)
            .collect();
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\"",
            check.area().prefix(),
            check.as_str()
        );
        if findings.is_empty() {
            out.push_str("/>\n");
            continue;
        }
        let body: Vec<String> = findings
            .iter()
            .map(|f| {
                let at = f
                    .location
                    .as_ref()
                    .map_or_else(|| ".".to_string(), ToString::to_string);
                format!("{at}: {} ({})", f.finding.message, f.finding.severity)
            })
            .collect();
        let _ = writeln!(
            out,
            ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
            xml(&format!("{} finding(s)", findings.len())),
            xml(check.as_str()),
            xml(&body.join("\n"))
        );
    }
}

#[cfg(test)]
mod tests;

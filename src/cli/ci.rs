//! The formats CI platforms read, for `check`, `report` and `lint` alike: SARIF 2.1.0
//! for code scanning (GitHub, GitLab), JUnit XML, GitLab Code Quality; and lint's JSON.
//!
//! Every path they name is a path inside the linted root ([`inside_root`]): a file
//! name, or a chart's `# Source:` comment, from a stranger's pull request must not make
//! code scanning point at `/etc/passwd` or outside the repository.

use super::results::Results;
use crate::catalog::{CheckId, Severity};
use crate::evaluate::lint::{LintFinding, LintReport};
use crate::model::source::{Location, Unread};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Where the checks are documented: SARIF's `helpUri` of each rule.
const REFERENCE_URL: &str = "https://github.com/kopfaudit/kopf-audit/blob/main/docs/reference.md";

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
        "unread": report.unread.iter().map(|u| json!({
            "path": u.path, "why": u.why,
        })).collect::<Vec<_>>(),
    })
}

/// One finding as lint's JSON has it.
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
                        "artifactLocation": {"uri": artifact_uri(file)},
                        "region": {"startLine": line},
                    }
                }],
                "partialFingerprints": {
                    "kopfAudit/v1": fingerprint(f),
                },
            });
            if let (Some(lines), Some(at)) = (&f.insert_before, &f.location)
                && let Some(path) = inside_root(&at.file)
            {
                result["fixes"] = json!([insertion(f, at, &path, lines)]);
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
            "invocations": [invocation(&report.unread)],
        }],
    })
}

/// The run's one invocation: successful only when every input was read, with an
/// error notification per input that was not (code scanning shows them as the tool's
/// own errors, apart from the findings).
fn invocation(unread: &[Unread]) -> Value {
    let notifications: Vec<Value> = unread
        .iter()
        .map(|u| {
            json!({
                "level": "error",
                "message": {"text": unread_text(u)},
                "locations": [{
                    "physicalLocation": {"artifactLocation": {"uri": artifact_uri(&u.path)}},
                }],
            })
        })
        .collect();
    json!({
        "executionSuccessful": unread.is_empty(),
        "toolExecutionNotifications": notifications,
    })
}

/// What every format says of an input that was not read.
pub(super) fn unread_text(u: &Unread) -> String {
    format!("{} could not be read: {}", u.path, u.why)
}

/// `path` as a normalised path inside the linted root (`/`-separated, no `.` or `..`
/// segment, not empty), or `None` when it is not one: absolute (`/x`, `C:/x`), leaving
/// the root through `..`, empty or the root itself, or holding a backslash (a Windows
/// separator the platforms would read differently), NUL or another character that
/// acts instead of showing.
pub(crate) fn inside_root(path: &str) -> Option<String> {
    let drive = |first: &str| first.len() == 2 && first.ends_with(':');
    if path.starts_with('/')
        || path.contains('\\')
        || path
            .chars()
            .any(|c| c.is_control() || super::inert::acts(c))
        || path.split('/').next().is_some_and(drive)
    {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            segment => parts.push(segment),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `path` as SARIF's `artifactLocation.uri`: [`inside_root`], percent-encoded, or `.`
/// (the root) for a path that is not inside it: the platforms drop a result without a
/// location, and a path outside the root is none of the repository's.
pub(crate) fn artifact_uri(path: &str) -> String {
    inside_root(path).map_or_else(|| ".".to_string(), |p| percent_encoded(&p))
}

/// `path` percent-encoded as RFC 3986 has a path: unreserved characters and `/` kept,
/// every other byte of its UTF-8 as `%XX`.
fn percent_encoded(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// `path` as Code Quality's `location.path`: [`inside_root`], plain, or `.`.
fn plain_path(path: &str) -> String {
    inside_root(path).unwrap_or_else(|| ".".to_string())
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

/// A SARIF fix that inserts `lines` at the start of the finding's line of `path` (the
/// finding's file, inside the root): an empty deleted region there, and the lines as
/// inserted content.
fn insertion(f: &LintFinding, at: &Location, path: &str, lines: &str) -> Value {
    json!({
        "description": {"text": format!("Insert before line {}: {}", at.line, lines.trim_end())},
        "artifactChanges": [{
            "artifactLocation": {"uri": percent_encoded(path)},
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
    fnv(&format!(
        "{}\0{}\0{file}\0{}",
        f.finding.check.as_str(),
        f.finding.target,
        f.finding.message
    ))
}

/// FNV-1a of `text`, as hex: a stable identity, not a secure one.
fn fnv(text: &str) -> String {
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
/// reads it from `artifacts:reports:codequality`): one issue per finding, and a
/// blocker per input that was not read.
pub(crate) fn code_quality(report: &LintReport) -> Value {
    let findings = report.findings.iter().map(|f| {
        let (path, line) = file_and_line(f);
        json!({
            "type": "issue",
            "check_name": f.finding.check.as_str(),
            "description": f.finding.message,
            "categories": ["Bug Risk"],
            "severity": code_quality_severity(f.finding.severity),
            "fingerprint": fingerprint(f),
            "location": {"path": plain_path(path), "lines": {"begin": line}},
        })
    });
    let unread = report.unread.iter().map(|u| {
        json!({
            "type": "issue",
            "check_name": UNREAD_CHECK,
            "description": unread_text(u),
            "categories": ["Bug Risk"],
            "severity": "blocker",
            "fingerprint": fnv(&format!("{UNREAD_CHECK}\0{}\0{}", u.path, u.why)),
            "location": {"path": plain_path(&u.path), "lines": {"begin": 1}},
        })
    });
    Value::Array(findings.chain(unread).collect())
}

/// The name inputs that were not read go by where a format wants a check's name
/// (Code Quality's `check_name`, JUnit's test case).
pub(super) const UNREAD_CHECK: &str = "kopf-audit.unread";

/// Text escaped for XML and HTML, text and attribute values alike, and made of
/// characters XML 1.0 allows, whatever the input: other C0 controls (NUL among them)
/// become spaces, the noncharacters U+FFFE and U+FFFF the replacement character.
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
            '\u{FFFE}' | '\u{FFFF}' => out.push(super::inert::REPLACEMENT),
            c => out.push(c),
        }
    }
    out
}

/// The results as JUnit XML, which CI platforms show as tests: one test suite per
/// audited operator, with one test case per check of the catalogue, failed when it found
/// something, with every finding in its failure; and when inputs were not read, a test
/// case [`UNREAD_CHECK`] with an error per input (the suite's `errors`).
pub(crate) fn junit(results: &Results) -> String {
    let suites: Vec<(String, &LintReport)> = results
        .subjects
        .iter()
        .map(|s| {
            let name = format!(
                "kopf-audit {} {}",
                results.source.command(),
                super::inert::one_line(&s.name)
            );
            (name, &s.report)
        })
        .collect();
    let cases = |report: &LintReport| CheckId::ALL.len() + usize::from(!report.unread.is_empty());
    let failed = |report: &LintReport| {
        CheckId::ALL
            .iter()
            .filter(|c| report.findings.iter().any(|f| f.finding.check == **c))
            .count()
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"kopf-audit {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
        results.source.command(),
        suites.iter().map(|(_, r)| cases(r)).sum::<usize>(),
        suites.iter().map(|(_, r)| failed(r)).sum::<usize>(),
        suites.iter().map(|(_, r)| r.unread.len()).sum::<usize>()
    );
    for (name, report) in suites {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
            xml(&name),
            cases(report),
            failed(report),
            report.unread.len()
        );
        junit_cases(&mut out, report);
        junit_unread(&mut out, &report.unread);
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
                let at = f.location.as_ref().map_or_else(
                    || ".".to_string(),
                    |l| super::inert::one_line(&l.to_string()),
                );
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

/// The test case of the inputs that were not read, one error each; none when every
/// input was read.
fn junit_unread(out: &mut String, unread: &[Unread]) {
    if unread.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "    <testcase classname=\"kopf-audit\" name=\"{UNREAD_CHECK}\">"
    );
    for u in unread {
        let _ = writeln!(
            out,
            "      <error message=\"{}\" type=\"{UNREAD_CHECK}\">{}</error>",
            xml(&super::inert::one_line(&unread_text(u))),
            xml(&unread_text(u))
        );
    }
    out.push_str("    </testcase>\n");
}

#[cfg(test)]
mod tests;

//! `kopf-audit lint`: the catalogue run before deploy on an operator's repository, chart
//! or rendered manifests, printed for people (grouped by file), as JSON, or as SARIF
//! 2.1.0 for code scanning (GitHub, GitLab).

use crate::catalog::{CheckId, Severity};
use crate::evaluate::lint::{LintFinding, LintReport};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Where the checks are documented: SARIF's `helpUri` of each rule.
const REFERENCE_URL: &str = "https://github.com/kopf-audit/kopf-audit/blob/main/docs/reference.md";

/// A report for people: findings grouped by file, then what lint could not decide.
pub(crate) fn text(report: &LintReport) -> String {
    let mut out = String::new();
    for t in &report.targets {
        let _ = writeln!(
            out,
            "Deployment {}: kopf={} mode={} peering={}",
            t.name,
            t.kopf,
            t.mode.as_deref().unwrap_or("-"),
            t.peering.as_deref().unwrap_or("-"),
        );
    }
    let mut file: Option<&str> = None;
    for f in &report.findings {
        let here = f.location.as_ref().map_or("(no file)", |l| l.file.as_str());
        if file != Some(here) {
            let _ = writeln!(out, "\n{here}");
            file = Some(here);
        }
        let line = f.location.as_ref().map_or(0, |l| l.line);
        let _ = writeln!(
            out,
            "  {line:>5}  {:<7}  {:<34}  {}",
            f.finding.severity.as_str(),
            f.finding.check.as_str(),
            f.finding.message
        );
        if let Some(e) = &f.finding.evidence {
            let _ = writeln!(out, "{:>52}evidence: {e}", "");
        }
    }
    if report.findings.is_empty() {
        out.push_str("\nNo findings.\n");
    } else {
        let count = |s: Severity| {
            report
                .findings
                .iter()
                .filter(|f| f.finding.severity == s)
                .count()
        };
        let _ = writeln!(
            out,
            "\n{} finding(s): {} error, {} warning, {} info.",
            report.findings.len(),
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info)
        );
    }
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
    out
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
            let (file, line) = f
                .location
                .as_ref()
                .map_or((".", 1), |l| (l.file.as_str(), l.line.max(1)));
            let index = CheckId::ALL.iter().position(|c| *c == f.finding.check);
            json!({
                "ruleId": f.finding.check.as_str(),
                "ruleIndex": index,
                "level": level(f.finding.severity),
                "message": {"text": f.finding.message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": file},
                        "region": {"startLine": line},
                    }
                }],
                "partialFingerprints": {
                    "kopfAudit/v1": fingerprint(f),
                },
            })
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

#[cfg(test)]
mod tests;

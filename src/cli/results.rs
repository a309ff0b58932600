//! The results of `check`, `report` and `lint` in the one shape every renderer reads
//! (table, HTML, SARIF, JUnit, Code Quality). Below both the renderers and the module
//! that picks one ([`super::output`]), so that nothing here imports back.

use crate::api::{KopfAuditStatus, Summary};
use crate::catalog::Severity;
use crate::evaluate::lint::{LintFinding, LintReport};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// Which command made the results: it names the JUnit suites and the HTML page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `kopf-audit check`: one live audit.
    Check,
    /// `kopf-audit report`: the stored status of KopfAudits.
    Report,
    /// `kopf-audit lint`: files.
    Lint,
}

impl Source {
    /// The command's name.
    pub(crate) fn command(self) -> &'static str {
        match self {
            Source::Check => "check",
            Source::Report => "report",
            Source::Lint => "lint",
        }
    }
}

/// What one audited operator (a KopfAudit, a Deployment, a linted tree) gave.
#[derive(Clone, Debug, Default)]
pub(crate) struct Subject {
    /// What was audited, as the reader names it: `team-a/my-operator`, or a path.
    pub(crate) name: String,
    /// False for a KopfAudit the operator has not audited yet.
    pub(crate) audited: bool,
    /// The status conditions (none for lint).
    pub(crate) conditions: Vec<Condition>,
    /// Finding counts as stored, with how many the status cap left out.
    pub(crate) summary: Option<Summary>,
    /// Findings (with a file and line for lint), exemptions, targets, what lint could
    /// not decide.
    pub(crate) report: LintReport,
}

impl Subject {
    /// A status as a subject (`check`, `report`).
    pub(crate) fn from_status(name: String, status: &KopfAuditStatus) -> Self {
        Subject {
            name,
            audited: true,
            conditions: status.conditions.clone(),
            summary: status.summary.clone(),
            report: report_of_status(status),
        }
    }
}

/// A command's results, ready for any format.
#[derive(Clone, Debug)]
pub(crate) struct Results {
    /// The command that made them.
    pub(crate) source: Source,
    /// One per audited operator.
    pub(crate) subjects: Vec<Subject>,
    /// The command's own data for `-o json` and `-o yaml` (kept as each command
    /// printed it before the formats were shared).
    pub(crate) data: serde_json::Value,
}

impl Results {
    /// The most severe finding of every subject, for `--fail-on`.
    pub(crate) fn worst(&self) -> Option<Severity> {
        self.subjects.iter().filter_map(|s| s.report.worst()).max()
    }

    /// Every subject's findings in one report, for the formats with one list (SARIF,
    /// Code Quality). With more than one subject a finding's target is prefixed by its
    /// subject, so that the same Deployment name in two namespaces stays two findings.
    pub(crate) fn merged(&self) -> LintReport {
        let qualify = self.subjects.len() > 1;
        let mut merged = LintReport::default();
        for subject in &self.subjects {
            let report = &subject.report;
            merged
                .findings
                .extend(report.findings.iter().map(|f| LintFinding {
                    finding: crate::api::Finding {
                        target: qualified(qualify, &subject.name, &f.finding.target),
                        ..f.finding.clone()
                    },
                    ..f.clone()
                }));
            merged.skipped.extend(report.skipped.iter().cloned());
            merged.targets.extend(report.targets.iter().cloned());
            merged.undecided.extend(report.undecided.iter().cloned());
            merged.notes.extend(report.notes.iter().cloned());
            merged.unread.extend(report.unread.iter().cloned());
        }
        merged
    }
}

/// `target` prefixed by `subject` when `qualify`.
fn qualified(qualify: bool, subject: &str, target: &str) -> String {
    if qualify {
        format!("{subject}: {target}")
    } else {
        target.to_string()
    }
}

/// A live audit's results as a report for every format: the same findings, with no
/// file (a live audit reads none; SARIF and Code Quality then point at the root).
pub(crate) fn report_of_status(status: &KopfAuditStatus) -> LintReport {
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

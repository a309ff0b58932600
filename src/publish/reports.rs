//! Optional report objects, so that Policy Reporter and similar UIs show the findings:
//! `wgpolicyk8s.io/v1alpha2` PolicyReports and `openreports.io/v1alpha1` Reports (the
//! API Kyverno, trivy-operator's adapter and Policy Reporter 3 move to), chosen by
//! `--reports`. One report per KopfAudit and kind, owned by the KopfAudit (deleted with
//! it): its failures, capped, and a pass for each check that ran and found nothing, so
//! that pass rates and trends mean something. Written only when its CRD exists and the
//! status changed.

use crate::api::{Finding, KopfAudit, KopfAuditStatus};
use crate::catalog::{CheckId, FIELD_MANAGER, Severity};
use crate::evaluate::status::MAX_TARGETS;
use crate::model::names::{MAX_OBJECT_NAME, derived};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Resource, ResourceExt};

/// The report objects the auditor writes (`--reports`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReportOutput {
    /// `wgpolicyk8s.io/v1alpha2` PolicyReports only.
    #[default]
    PolicyReport,
    /// `openreports.io/v1alpha1` Reports only.
    OpenReports,
    /// Both kinds.
    Both,
    /// None.
    None,
}

impl ReportOutput {
    /// The kinds to write.
    pub(crate) fn kinds(self) -> &'static [ReportKind] {
        match self {
            ReportOutput::PolicyReport => &[ReportKind::PolicyReport],
            ReportOutput::OpenReports => &[ReportKind::OpenReports],
            ReportOutput::Both => &[ReportKind::PolicyReport, ReportKind::OpenReports],
            ReportOutput::None => &[],
        }
    }
}

/// One kind of report object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReportKind {
    /// `wgpolicyk8s.io/v1alpha2` `PolicyReport`.
    PolicyReport,
    /// `openreports.io/v1alpha1` `Report` (openreports/reports-api).
    OpenReports,
}

impl ReportKind {
    /// Group, version, kind and plural.
    fn gvkp(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            ReportKind::PolicyReport => (
                "wgpolicyk8s.io",
                "v1alpha2",
                "PolicyReport",
                "policyreports",
            ),
            ReportKind::OpenReports => ("openreports.io", "v1alpha1", "Report", "reports"),
        }
    }

    /// The API resource.
    pub(crate) fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = self.gvkp();
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    /// The kind's name in logs.
    pub(crate) fn name(self) -> &'static str {
        self.gvkp().2
    }
}

/// At most this many failure results per report. Passes come on top, at most one per
/// check ID ([`CheckId::ALL`]), each naming at most [`MAX_TARGETS`] Deployments: a
/// report holds at most `MAX_RESULTS + CheckId::ALL.len()` results.
const MAX_RESULTS: usize = 50;

/// The report's name for a KopfAudit: `kopf-audit-<name>`, or for a name too long for
/// that, its readable prefix and a stable hash of it (the same report every time).
fn report_name(audit: &KopfAudit) -> String {
    derived("kopf-audit-", &audit.name_any(), "", MAX_OBJECT_NAME)
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "high",
        Severity::Warning => "medium",
        Severity::Info => "info",
    }
}

fn result(namespace: &str, finding: &Finding) -> serde_json::Value {
    let category = finding.check.area().prefix();
    let result = if finding.severity >= Severity::Warning {
        "fail"
    } else {
        "warn"
    };
    let mut out = serde_json::json!({
        "source": SOURCE,
        "policy": finding.check.as_str(),
        "category": category,
        "severity": severity(finding.severity),
        "result": result,
        "message": finding.message,
        "resources": [deployment(namespace, &finding.target)],
    });
    // Absent rather than null: a typed schema refuses a null object.
    if let Some(evidence) = &finding.evidence {
        out["properties"] = serde_json::json!({ "evidence": evidence });
    }
    out
}

/// The pass results: one per check that ran and found nothing on some target
/// (`passed`, by target, from [`crate::evaluate::StatusUpdate::passed`]), naming those
/// targets; its severity is the check's, after the KopfAudit's override, as a finding's
/// would be. A check that did not run (area unread or not applying, exempted, disabled,
/// lint-only) is not in `passed`, so it is no pass.
fn passes(
    audit: &KopfAudit,
    namespace: &str,
    passed: &[(String, CheckId)],
) -> Vec<serde_json::Value> {
    CheckId::ALL
        .iter()
        .filter_map(|check| {
            let targets: Vec<serde_json::Value> = passed
                .iter()
                .filter(|(_, c)| c == check)
                .take(MAX_TARGETS)
                .map(|(target, _)| deployment(namespace, target))
                .collect();
            if targets.is_empty() {
                return None;
            }
            let sev = audit
                .spec
                .checks
                .severity
                .get(check.as_str())
                .copied()
                .unwrap_or_else(|| check.default_severity());
            Some(serde_json::json!({
                "source": SOURCE,
                "policy": check.as_str(),
                "category": check.area().prefix(),
                "severity": severity(sev),
                "result": "pass",
                "message": check.summary(),
                "resources": targets,
            }))
        })
        .collect()
}

/// The Deployment a result is about.
fn deployment(namespace: &str, name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace, "name": name})
}

/// The report of a kind for a status and the checks that passed: every finding is a
/// failure to report (info ones as `warn`), every check in `passed` a pass. Both kinds
/// share the result and summary shape; a Report also names its `source` once, at the top.
fn build(
    kind: ReportKind,
    audit: &KopfAudit,
    status: &KopfAuditStatus,
    passed: &[(String, CheckId)],
) -> serde_json::Value {
    let namespace = audit.namespace().unwrap_or_default();
    let mut results: Vec<serde_json::Value> = status
        .findings
        .iter()
        .take(MAX_RESULTS)
        .map(|f| result(&namespace, f))
        .collect();
    let passes = passes(audit, &namespace, passed);
    let pass = passes.len();
    results.extend(passes);
    let count = |sev: Severity| status.findings.iter().filter(|f| f.severity == sev).count();
    let fail = count(Severity::Error) + count(Severity::Warning);
    let (group, version, kind_name, _) = kind.gvkp();
    let mut report = serde_json::json!({
        "apiVersion": format!("{group}/{version}"),
        "kind": kind_name,
        "metadata": {
            "name": report_name(audit),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "kopf-audit"},
            "ownerReferences": [audit.controller_owner_ref(&())],
        },
        "scope": {"apiVersion": KopfAudit::api_version(&()), "kind": KopfAudit::kind(&()), "name": audit.name_any(), "namespace": namespace},
        "summary": {"pass": pass, "fail": fail, "warn": count(Severity::Info), "error": 0, "skip": status.skipped.len()},
        "results": results,
    });
    if kind == ReportKind::OpenReports {
        report["source"] = SOURCE.into();
    }
    report
}

/// The source every result names: kopf-audit.
const SOURCE: &str = "kopf-audit";

/// Applies the report of a kind; `Ok(false)` when its CRD is not installed.
pub(crate) async fn write(
    client: &Client,
    kind: ReportKind,
    audit: &KopfAudit,
    status: &KopfAuditStatus,
    passed: &[(String, CheckId)],
) -> Result<bool, kube::Error> {
    let namespace = audit.namespace().unwrap_or_default();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &kind.resource());
    let report = build(kind, audit, status, passed);
    match api
        .patch(
            &report_name(audit),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&report),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::audit_of;

    #[test]
    fn failures_are_capped_and_the_report_owned_by_the_audit() {
        let audit = audit_of("ns", "op", "op", Some("u-1"));
        let findings = (0..60)
            .map(|i| {
                crate::checks::finding(
                    CheckId::WorkloadCpuLimit,
                    &format!("t{i}"),
                    "m".into(),
                    None,
                )
            })
            .collect();
        let status = KopfAuditStatus {
            findings,
            ..Default::default()
        };
        let report = build(ReportKind::PolicyReport, &audit, &status, &[]);
        assert_eq!(
            report["results"].as_array().map(Vec::len),
            Some(MAX_RESULTS)
        );
        assert_eq!(report["results"][0]["policy"], "workload.cpu-limit");
        assert_eq!(report["results"][0]["result"], "fail");
        assert_eq!(report["summary"]["fail"], 60);
        assert_eq!(report["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(report["metadata"]["name"], "kopf-audit-op");
    }

    #[test]
    fn an_open_report_has_the_same_results_and_names_its_source() {
        let audit = audit_of("ns", "op", "op", Some("u-1"));
        let mut info = crate::checks::finding(CheckId::WorkloadCpuRequest, "op", "m".into(), None);
        info.evidence = Some("no request".into());
        let status = KopfAuditStatus {
            findings: vec![info],
            ..Default::default()
        };
        let open = build(ReportKind::OpenReports, &audit, &status, &[]);
        let policy = build(ReportKind::PolicyReport, &audit, &status, &[]);
        assert_eq!(open["apiVersion"], "openreports.io/v1alpha1");
        assert_eq!(open["kind"], "Report");
        assert_eq!(open["source"], "kopf-audit");
        assert_eq!(policy.get("source"), None);
        assert_eq!(open["results"], policy["results"]);
        assert_eq!(open["results"][0]["result"], "warn");
        assert_eq!(open["results"][0]["severity"], "info");
        assert_eq!(open["results"][0]["properties"]["evidence"], "no request");
        assert_eq!(open["summary"]["warn"], 1);
        assert_eq!(
            ReportOutput::Both.kinds(),
            &[ReportKind::PolicyReport, ReportKind::OpenReports]
        );
        assert!(ReportOutput::None.kinds().is_empty());
    }

    #[test]
    fn each_check_that_passed_is_one_pass_result_naming_its_targets() {
        let mut audit: KopfAudit = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": "op", "namespace": "ns", "uid": "u-1"},
            "spec": {"target": {"selector": {"matchLabels": {"app": "op"}}},
                     "checks": {"severity": {"runtime.handler-failures": "error"}}}
        }))
        .expect("audit");
        audit.status = None;
        let status = KopfAuditStatus {
            findings: vec![crate::checks::finding(
                CheckId::WorkloadCpuLimit,
                "a",
                "m".into(),
                None,
            )],
            ..Default::default()
        };
        let passed = [
            ("a".to_string(), CheckId::WorkloadOomKilled),
            ("b".to_string(), CheckId::WorkloadOomKilled),
            ("b".to_string(), CheckId::WorkloadCpuLimit),
            ("a".to_string(), CheckId::RuntimeHandlerFailures),
        ];
        for kind in [ReportKind::PolicyReport, ReportKind::OpenReports] {
            let report = build(kind, &audit, &status, &passed);
            let results = report["results"].as_array().expect("results");
            let of = |result: &str| -> Vec<&serde_json::Value> {
                results.iter().filter(|r| r["result"] == result).collect()
            };
            let passes = of("pass");
            assert_eq!(report["summary"]["pass"], passes.len());
            assert_eq!(report["summary"]["fail"], of("fail").len());
            assert_eq!(results.len(), 1 + 3);
            let pass = |policy: &str| passes.iter().find(|r| r["policy"] == policy).copied();
            let oom = pass("workload.oom-killed").expect("oom-killed passed");
            assert_eq!(oom["resources"].as_array().map(Vec::len), Some(2));
            assert_eq!(oom["resources"][1]["name"], "b");
            assert_eq!(oom["resources"][1]["kind"], "Deployment");
            assert_eq!(oom["category"], "workload");
            assert_eq!(oom["source"], "kopf-audit");
            assert_eq!(oom["severity"], "high");
            assert_eq!(oom["message"], CheckId::WorkloadOomKilled.summary());
            // Failed on a, passed on b: one of each.
            let cpu = pass("workload.cpu-limit").expect("cpu-limit passed on b");
            assert_eq!(cpu["resources"][0]["name"], "b");
            let runtime = pass("runtime.handler-failures").expect("overridden");
            assert_eq!(runtime["severity"], "high", "the KopfAudit's override");
            assert!(pass("workload.liveness").is_none());
        }
    }

    #[test]
    fn passes_are_at_most_one_per_check_and_max_targets_resources_each() {
        let audit = audit_of("ns", "op", "op", Some("u-1"));
        let passed: Vec<(String, CheckId)> = (0..MAX_TARGETS + 3)
            .flat_map(|t| CheckId::ALL.iter().map(move |c| (format!("t{t}"), *c)))
            .collect();
        let report = build(
            ReportKind::PolicyReport,
            &audit,
            &KopfAuditStatus::default(),
            &passed,
        );
        let results = report["results"].as_array().expect("results");
        assert_eq!(results.len(), CheckId::ALL.len());
        assert_eq!(report["summary"]["pass"], CheckId::ALL.len());
        assert!(
            results
                .iter()
                .all(|r| r["resources"].as_array().map(Vec::len) == Some(MAX_TARGETS))
        );
        let none = build(
            ReportKind::PolicyReport,
            &audit,
            &KopfAuditStatus::default(),
            &[],
        );
        assert_eq!(none["summary"]["pass"], 0);
        assert_eq!(none["results"].as_array().map(Vec::len), Some(0));
    }

    #[test]
    fn a_253_character_audit_gets_a_valid_stable_report_name() {
        let long = format!("{}end", "long-name-".repeat(25));
        let audit = audit_of("ns", &long, "op", Some("u-1"));
        let name = report_name(&audit);
        assert!(
            crate::model::names::is_dns_subdomain(&name),
            "{name} ({} bytes)",
            name.len()
        );
        assert!(name.starts_with("kopf-audit-long-name-"), "{name}");
        assert_eq!(name, report_name(&audit.clone()));
        let report = build(
            ReportKind::PolicyReport,
            &audit,
            &KopfAuditStatus::default(),
            &[],
        );
        assert_eq!(report["metadata"]["name"], name.as_str());
        assert_eq!(report["scope"]["name"], long.as_str());
    }
}

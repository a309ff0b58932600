//! Optional report objects, so that Policy Reporter and similar UIs show the findings:
//! `wgpolicyk8s.io/v1alpha2` PolicyReports and `openreports.io/v1alpha1` Reports (the
//! API Kyverno, trivy-operator's adapter and Policy Reporter 3 move to), chosen by
//! `--reports`. One report per KopfAudit and kind, failures only, capped, owned by the
//! KopfAudit (deleted with it). Written only when its CRD exists and the status changed.

use crate::api::{Finding, KopfAudit, KopfAuditStatus};
use crate::catalog::{FIELD_MANAGER, Severity};
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

/// At most this many results per report.
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
        "resources": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace, "name": finding.target}],
    });
    // Absent rather than null: a typed schema refuses a null object.
    if let Some(evidence) = &finding.evidence {
        out["properties"] = serde_json::json!({ "evidence": evidence });
    }
    out
}

/// The report of a kind for a status: every finding is a failure to report (info ones
/// as `warn`). Both kinds share the result and summary shape; a Report also names its
/// `source` once, at the top.
fn build(kind: ReportKind, audit: &KopfAudit, status: &KopfAuditStatus) -> serde_json::Value {
    let namespace = audit.namespace().unwrap_or_default();
    let results: Vec<serde_json::Value> = status
        .findings
        .iter()
        .take(MAX_RESULTS)
        .map(|f| result(&namespace, f))
        .collect();
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
        "summary": {"pass": 0, "fail": fail, "warn": count(Severity::Info), "error": 0, "skip": status.skipped.len()},
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
) -> Result<bool, kube::Error> {
    let namespace = audit.namespace().unwrap_or_default();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &kind.resource());
    let report = build(kind, audit, status);
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
    use crate::catalog::CheckId;

    #[test]
    fn failures_only_capped_and_owned_by_the_audit() {
        let mut audit: KopfAudit = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": "op", "namespace": "ns", "uid": "u-1"},
            "spec": {"target": {"deployment": "op"}}
        }))
        .expect("audit");
        audit.status = None;
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
        let report = build(ReportKind::PolicyReport, &audit, &status);
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
        let audit: KopfAudit = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": "op", "namespace": "ns", "uid": "u-1"},
            "spec": {"target": {"deployment": "op"}}
        }))
        .expect("audit");
        let mut info = crate::checks::finding(CheckId::WorkloadCpuRequest, "op", "m".into(), None);
        info.evidence = Some("no request".into());
        let status = KopfAuditStatus {
            findings: vec![info],
            ..Default::default()
        };
        let open = build(ReportKind::OpenReports, &audit, &status);
        let policy = build(ReportKind::PolicyReport, &audit, &status);
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
    fn a_253_character_audit_gets_a_valid_stable_report_name() {
        let long = format!("{}end", "long-name-".repeat(25));
        let audit: KopfAudit = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": long, "namespace": "ns", "uid": "u-1"},
            "spec": {"target": {"deployment": "op"}}
        }))
        .expect("audit");
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
        );
        assert_eq!(report["metadata"]["name"], name.as_str());
        assert_eq!(report["scope"]["name"], long.as_str());
    }
}

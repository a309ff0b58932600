//! Optional PolicyReport output (`wgpolicyk8s.io/v1alpha2`), so that Policy Reporter and
//! similar UIs show the findings: one report per KopfAudit, failures only, capped, owned
//! by the KopfAudit (deleted with it). Written only when the CRD exists and the status
//! changed.

use crate::api::{Finding, KopfAudit, KopfAuditStatus};
use crate::catalog::{FIELD_MANAGER, Severity};
use crate::model::names::{MAX_OBJECT_NAME, derived};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Resource, ResourceExt};

/// At most this many results per report.
const MAX_RESULTS: usize = 50;

/// The PolicyReport resource.
pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport"),
        "policyreports",
    )
}

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
    serde_json::json!({
        "source": "kopf-audit",
        "policy": finding.check.as_str(),
        "category": category,
        "severity": severity(finding.severity),
        "result": result,
        "message": finding.message,
        "properties": finding.evidence.as_ref().map(|e| serde_json::json!({"evidence": e})),
        "resources": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace, "name": finding.target}],
    })
}

/// The report for a status: every finding is a failure to report (info ones as `warn`).
fn build(audit: &KopfAudit, status: &KopfAuditStatus) -> serde_json::Value {
    let namespace = audit.namespace().unwrap_or_default();
    let results: Vec<serde_json::Value> = status
        .findings
        .iter()
        .take(MAX_RESULTS)
        .map(|f| result(&namespace, f))
        .collect();
    let count = |sev: Severity| status.findings.iter().filter(|f| f.severity == sev).count();
    let fail = count(Severity::Error) + count(Severity::Warning);
    serde_json::json!({
        "apiVersion": "wgpolicyk8s.io/v1alpha2",
        "kind": "PolicyReport",
        "metadata": {
            "name": report_name(audit),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "kopf-audit"},
            "ownerReferences": [audit.controller_owner_ref(&())],
        },
        "scope": {"apiVersion": KopfAudit::api_version(&()), "kind": KopfAudit::kind(&()), "name": audit.name_any(), "namespace": namespace},
        "summary": {"pass": 0, "fail": fail, "warn": count(Severity::Info), "error": 0, "skip": status.skipped.len()},
        "results": results,
    })
}

/// Applies the report; `Ok(false)` when the PolicyReport CRD is not installed.
pub(crate) async fn write(
    client: &Client,
    audit: &KopfAudit,
    status: &KopfAuditStatus,
) -> Result<bool, kube::Error> {
    let namespace = audit.namespace().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource());
    let report = build(audit, status);
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
        let report = build(&audit, &status);
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
        let report = build(&audit, &KopfAuditStatus::default());
        assert_eq!(report["metadata"]["name"], name.as_str());
        assert_eq!(report["scope"]["name"], long.as_str());
    }
}

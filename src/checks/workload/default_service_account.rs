//! `workload.default-service-account`: the target's pods run as the namespace's
//! default ServiceAccount. Reads the pod template's serviceAccountName.

use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::finding;
use crate::model::evidence::TargetEvidence;

/// The pods share the default ServiceAccount (and its RBAC) with unrelated pods.
pub(crate) fn live(target: &str, evidence: &TargetEvidence) -> Option<Finding> {
    if !evidence.service_account().is_default() {
        return None;
    }
    Some(finding(
        CheckId::WorkloadDefaultServiceAccount,
        target,
        "The pods run as the namespace's default ServiceAccount, sharing its RBAC with unrelated pods: create a dedicated ServiceAccount and set serviceAccountName.".to_string(),
        Some("serviceAccountName: default".into()),
    ))
}

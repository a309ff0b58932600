//! `workload.default-service-account`: the target's pods run as the namespace's
//! default ServiceAccount. Reads the pod template's serviceAccountName.

use super::on_kopf_container;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::TargetEvidence;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, _| live_on(name, input.target))
}

/// The pods share the default ServiceAccount (and its RBAC) with unrelated pods.
pub(crate) fn live_on(target: &str, evidence: &TargetEvidence) -> Option<Finding> {
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

//! `workload.cpu-request`: the kopf container requests no CPU, so the scheduler
//! reserves no time for it. Reads the container's resources.requests.cpu.

use super::{Bound, resource};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::finding;
use k8s_openapi::api::core::v1::Container;

/// The kopf container sets no resources.requests.cpu.
pub(crate) fn live(target: &str, container: &Container) -> Option<Finding> {
    if resource(container, Bound::Requests, "cpu").is_some() {
        return None;
    }
    Some(finding(
        CheckId::WorkloadCpuRequest,
        target,
        format!(
            "Container {} has no CPU request: set resources.requests.cpu (e.g. 100m) so the scheduler reserves time for it.",
            container.name
        ),
        None,
    ))
}

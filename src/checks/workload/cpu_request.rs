//! `workload.cpu-request`: the kopf container requests no CPU, so the scheduler
//! reserves no time for it. Reads the container's resources.requests.cpu.

use super::on_kopf_container;
use super::{Bound, resource};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use k8s_openapi::api::core::v1::Container;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, live_on)
}

/// The kopf container sets no resources.requests.cpu.
pub(crate) fn live_on(target: &str, container: &Container) -> Option<Finding> {
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

//! `workload.cpu-limit`: the kopf container has a CPU limit, which only throttles it.
//! Reads the container's resources.limits.cpu.

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

/// The kopf container sets resources.limits.cpu.
pub(crate) fn live_on(target: &str, container: &Container) -> Option<Finding> {
    let limit = resource(container, Bound::Limits, "cpu")?;
    Some(finding(
        CheckId::WorkloadCpuLimit,
        target,
        format!(
            "Container {} has a CPU limit of {limit}: CPU is compressible and a limit only throttles the operator; remove resources.limits.cpu and keep a request.",
            container.name
        ),
        Some(format!("limits.cpu: {limit}")),
    ))
}

//! `workload.memory-request`: the kopf container requests less memory than kopf's
//! resting baseline (or none). Reads the container's resources.requests.memory.

use super::on_kopf_container;
use super::{Bound, resource};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, container_patch, finding};
use crate::model::quantity;
use crate::model::settings::WorkloadThresholds;
use k8s_openapi::api::core::v1::Container;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, c| live_on(name, c, &input.settings.workload))
}

/// The kopf container: no memory request, or one below the threshold, or unreadable.
pub(crate) fn live_on(
    target: &str,
    container: &Container,
    thresholds: &WorkloadThresholds,
) -> Option<Finding> {
    let want = quantity::human(thresholds.memory_request);
    let request = resource(container, Bound::Requests, "memory");
    let problem = match request {
        None => "has no memory request".to_string(),
        Some(q) => match quantity::bytes(q) {
            Some(b) if b >= thresholds.memory_request => return None,
            Some(_) => format!("requests {q} of memory, below kopf's resting baseline"),
            None => format!("has an unreadable memory request {q:?}"),
        },
    };
    let mut f = finding(
        CheckId::WorkloadMemoryRequest,
        target,
        format!(
            "Container {} {problem}: set resources.requests.memory to at least {want}.",
            container.name
        ),
        request.map(|q| format!("requests.memory: {q}")),
    );
    f.fix = Some(container_patch(
        &container.name,
        &format!("resources:\n  requests:\n    memory: {want}"),
    ));
    Some(f)
}

/// Any workload (kopf's thresholds do not apply): a container with no memory request
/// at all.
pub(crate) fn missing(target: &str, container: &Container) -> Option<Finding> {
    if resource(container, Bound::Requests, "memory").is_some() {
        return None;
    }
    Some(finding(
        CheckId::WorkloadMemoryRequest,
        target,
        format!(
            "Container {} has no memory request: set resources.requests.memory from its measured use.",
            container.name
        ),
        None,
    ))
}

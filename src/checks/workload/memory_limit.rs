//! `workload.memory-limit`: the kopf container's memory limit leaves too little room
//! above kopf's resting baseline (or there is none). Reads the container's
//! resources.limits.memory.

use super::on_kopf_container;
use super::{Bound, resource};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::{LiveInput, Raised, container_patch, finding};
use crate::model::quantity;
use crate::model::settings::WorkloadThresholds;
use k8s_openapi::api::core::v1::Container;

/// Below this memory limit a kopf operator is OOMKilled before doing any work.
const MEMORY_LIMIT_ERROR_BELOW: f64 = 256.0 * 1024.0 * 1024.0;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, c| live_on(name, c, &input.settings.workload))
}

/// The kopf container: no memory limit, one below the threshold (an error below
/// [`MEMORY_LIMIT_ERROR_BELOW`]), or an unreadable one.
pub(crate) fn live_on(
    target: &str,
    container: &Container,
    thresholds: &WorkloadThresholds,
) -> Option<Finding> {
    let want = quantity::human(thresholds.memory_limit);
    let limit = resource(container, Bound::Limits, "memory");
    let (problem, severity) = match limit {
        None => ("has no memory limit".to_string(), Severity::Warning),
        Some(q) => match quantity::bytes(q) {
            Some(b) if b >= thresholds.memory_limit => return None,
            Some(b) if b < MEMORY_LIMIT_ERROR_BELOW => (
                format!(
                    "is limited to {q} of memory, below kopf's resting baseline, so it will be OOMKilled under normal watch load"
                ),
                Severity::Error,
            ),
            Some(_) => (
                format!("is limited to {q} of memory, little headroom above kopf's baseline"),
                Severity::Warning,
            ),
            None => (
                format!("has an unreadable memory limit {q:?}"),
                Severity::Warning,
            ),
        },
    };
    let mut f = finding(
        CheckId::WorkloadMemoryLimit,
        target,
        format!(
            "Container {} {problem}: set resources.limits.memory to at least {want}.",
            container.name
        ),
        limit.map(|q| format!("limits.memory: {q}")),
    );
    f.severity = severity;
    f.fix = Some(container_patch(
        &container.name,
        &format!("resources:\n  limits:\n    memory: {want}"),
    ));
    Some(f)
}

/// Any workload (kopf's thresholds do not apply): a container with no memory limit at
/// all.
pub(crate) fn missing(target: &str, container: &Container) -> Option<Finding> {
    if resource(container, Bound::Limits, "memory").is_some() {
        return None;
    }
    Some(finding(
        CheckId::WorkloadMemoryLimit,
        target,
        format!(
            "Container {} has no memory limit: set resources.limits.memory from its measured use.",
            container.name
        ),
        None,
    ))
}

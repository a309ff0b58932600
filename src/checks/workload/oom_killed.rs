//! `workload.oom-killed`: a container of the target's pods was OOMKilled. Reads the
//! pods' container statuses (current and last state).

use super::on_kopf_container;
use super::{pod_name, statuses};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, c| live_on(name, &input.target.pods, &c.name))
}

/// The first pod whose `container` terminated with reason OOMKilled, now or last time.
pub(crate) fn live_on(target: &str, pods: &[Pod], container: &str) -> Option<Finding> {
    let is_oom = |cs: &ContainerStatus| {
        let current = cs.state.as_ref().and_then(|s| s.terminated.as_ref());
        let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
        [current, last]
            .into_iter()
            .flatten()
            .any(|t| t.reason.as_deref() == Some("OOMKilled"))
    };
    let (pod, _) = statuses(pods, container).find(|(_, cs)| is_oom(cs))?;
    Some(finding(
        CheckId::WorkloadOomKilled,
        target,
        format!(
            "Container {container} was OOMKilled: raise resources.limits.memory first (kopf idles well above 128Mi; 512Mi is the baseline), then look for a leak."
        ),
        Some(format!(
            "pod {}: lastState.terminated.reason OOMKilled",
            pod_name(pod)
        )),
    ))
}

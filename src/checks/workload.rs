//! Workload checks (`workload.*`): the target Deployment and its pods. Each check has
//! its module (`workload/<name>.rs`) with its live decider, which the registry lists and
//! [`super::run_area`] runs; this one holds what several share, and runs the few that
//! hold for any Deployment on a target that is not kopf.

use super::{LiveInput, Raised};
use crate::api::Finding;
use crate::model::evidence::{HandledResource, TargetEvidence, Webhook};
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};

pub(crate) mod cpu_limit;
pub(crate) mod cpu_request;
pub(crate) mod crash_loop;
pub(crate) mod debug_logging;
pub(crate) mod default_service_account;
pub(crate) mod grace_period;
pub(crate) mod liveness;
pub(crate) mod memory_limit;
pub(crate) mod memory_request;
pub(crate) mod no_scope_flag;
pub(crate) mod not_kopf;
pub(crate) mod oom_killed;
pub(crate) mod rollout_overlap;
pub(crate) mod standalone_replicas;
pub(crate) mod webhook_blast_radius;

/// Runs a workload decider on the target's kopf container: the precondition every
/// workload check of a kopf target shares (without its container known, none decides).
/// `decide` gets the target's name and the container.
fn on_kopf_container<I: IntoIterator<Item = Finding>>(
    input: &LiveInput<'_>,
    decide: impl FnOnce(&str, &Container) -> I,
) -> Vec<Raised> {
    let Some(container) = input.target.kopf_container() else {
        return Vec::new();
    };
    decide(input.target.name(), container)
        .into_iter()
        .map(Raised::alone)
        .collect()
}

/// The workload checks that hold for any Deployment, run on a target that is not kopf
/// (or not known to be): no memory request or limit, OOMKilled, a crash loop, the
/// default ServiceAccount. kopf's own thresholds do not apply to it.
pub(crate) fn any_workload(target: &TargetEvidence, wanted: Option<&str>) -> Vec<Finding> {
    let name = target.name();
    let not_read = Err(crate::model::evidence::Unavailable::new(
        crate::model::evidence::Obstacle::Failed,
        "the auditor reads the logs of kopf operators only",
    ));
    let mut findings = Vec::new();
    let containers = crate::model::kopf_run::template_containers(&target.deployment);
    for container in containers
        .iter()
        .filter(|c| wanted.is_none_or(|w| c.name == w))
    {
        findings.extend(memory_request::missing(name, container));
        findings.extend(memory_limit::missing(name, container));
        findings.extend(oom_killed::live_on(name, &target.pods, &container.name));
        findings.extend(crash_loop::live_on(
            name,
            &target.pods,
            &container.name,
            &not_read,
        ));
    }
    findings.extend(default_service_account::live_on(name, target));
    findings
}

/// Which half of a container's resources.
#[derive(Clone, Copy)]
enum Bound {
    /// resources.requests.
    Requests,
    /// resources.limits.
    Limits,
}

/// A container's request or limit of one resource (`memory`, `cpu`), as written; the
/// memory and CPU checks read their own.
fn resource<'a>(container: &'a Container, bound: Bound, key: &str) -> Option<&'a str> {
    let resources = container.resources.as_ref()?;
    let map = match bound {
        Bound::Requests => resources.requests.as_ref()?,
        Bound::Limits => resources.limits.as_ref()?,
    };
    map.get(key).map(|q| q.0.as_str())
}

/// Each pod's status of the container named `container`, for the checks that read
/// how it ran (OOMKilled, a crash loop).
fn statuses<'a>(
    pods: &'a [Pod],
    container: &'a str,
) -> impl Iterator<Item = (&'a Pod, &'a ContainerStatus)> {
    pods.iter().flat_map(move |pod| {
        pod.status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .filter(move |cs| cs.name == container)
            .map(move |cs| (pod, cs))
    })
}

/// A pod's name, as its findings' evidence names it.
fn pod_name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("")
}

/// Hosts of the tunnels and local addresses kopf's dev-mode webhook servers use
/// (kopf `_kits/webhooks.py`: WebhookK3dServer, WebhookMinikubeServer,
/// WebhookDockerDesktopServer, WebhookNgrokTunnel, a plain WebhookServer's localhost).
const DEV_TUNNEL_HOSTS: [&str; 9] = [
    ".ngrok.io",
    ".ngrok-free.app",
    ".ngrok.app",
    "host.k3d.internal",
    "host.minikube.internal",
    "host.docker.internal",
    "localhost",
    "127.0.0.1",
    "[::1]",
];

/// Whether a webhook belongs to this operator: its rules cover a handled resource, and
/// it calls a Service in the operator's namespace, or a URL. Read by
/// `workload.webhook-blast-radius` and `runtime.webhook-certificate`.
pub(crate) fn serves_this_operator(
    webhook: &Webhook,
    namespace: &str,
    handled: &[HandledResource],
) -> bool {
    let covers = webhook.resources.iter().any(|(group, plural)| {
        handled
            .iter()
            .any(|h| (group == "*" || *group == h.group) && (plural == "*" || *plural == h.plural))
    });
    covers
        && webhook
            .service_namespace
            .as_deref()
            .is_none_or(|ns| ns == namespace)
}

/// The host of a URL, if it is a development tunnel or a local address. Read by
/// `workload.webhook-blast-radius` and `runtime.webhook-certificate`.
pub(crate) fn dev_tunnel(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(_) => host.split_once(']').map_or(host, |(h, _)| h).to_string() + "]",
        None => host.split(':').next().unwrap_or_default().to_string(),
    };
    let host = host.to_ascii_lowercase();
    DEV_TUNNEL_HOSTS
        .iter()
        .any(|t| {
            if t.starts_with('.') {
                host.ends_with(t)
            } else {
                host == *t
            }
        })
        .then_some(host)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod grace_period_tests;

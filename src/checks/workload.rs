//! Workload checks (`workload.*`): the target Deployment and its pods. Each check has
//! its module (`workload/<name>.rs`) with its decider; this one runs them and holds what
//! several share.

use crate::api::Finding;
use crate::model::evidence::{HandledResource, KopfEvidence, TargetEvidence, Webhook};
use crate::model::settings::CheckSettings;
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};

mod cpu_limit;
mod cpu_request;
mod crash_loop;
mod debug_logging;
mod default_service_account;
mod grace_period;
mod liveness;
mod memory_limit;
mod memory_request;
mod no_scope_flag;
pub(crate) mod not_kopf;
mod oom_killed;
mod rollout_overlap;
mod standalone_replicas;
mod webhook_blast_radius;

/// Runs every workload check on one kopf target.
pub(crate) fn check(
    target: &TargetEvidence,
    kopf: &KopfEvidence,
    settings: &CheckSettings,
) -> Vec<Finding> {
    let Some(container) = target.kopf_container() else {
        return Vec::new();
    };
    let name = target.name();
    let run = &kopf.run;
    let thresholds = &settings.workload;
    let pods = &target.pods;
    let mut findings = Vec::new();
    findings.extend(memory_request::live(name, container, thresholds));
    findings.extend(memory_limit::live(name, container, thresholds));
    findings.extend(cpu_limit::live(name, container));
    findings.extend(cpu_request::live(name, container));
    findings.extend(oom_killed::live(name, pods, &container.name));
    findings.extend(crash_loop::live(name, pods, &container.name, &kopf.logs));
    findings.extend(standalone_replicas::live(name, target, run));
    findings.extend(liveness::live(name, container, run));
    findings.extend(default_service_account::live(name, target));
    findings.extend(no_scope_flag::live(name, run));
    findings.extend(rollout_overlap::live(name, target, run));
    findings.extend(debug_logging::live(name, run, &kopf.logs));
    findings.extend(grace_period::live(target, kopf));
    if let (Ok(handled), Ok(webhooks)) = (&kopf.handled, &kopf.webhooks) {
        findings.extend(webhook_blast_radius::live(
            target,
            &container.name,
            handled,
            webhooks,
        ));
    }
    findings
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
        findings.extend(oom_killed::live(name, &target.pods, &container.name));
        findings.extend(crash_loop::live(
            name,
            &target.pods,
            &container.name,
            &not_read,
        ));
    }
    findings.extend(default_service_account::live(name, target));
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

//! `workload.webhook-blast-radius`: kopf-managed admission webhooks for the handled
//! resources that make the API server refuse writes whenever the operator is down.
//! Reads the webhook configurations, the Deployment's replicas and its pods' readiness.

use super::on_kopf_container;
use super::{dev_tunnel, serves_this_operator};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{HandledResource, TargetEvidence, Webhook, WebhookConfig};

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |_, c| {
        match (&input.kopf.handled, &input.kopf.webhooks) {
            (Ok(handled), Ok(webhooks)) => live_on(input.target, &c.name, handled, webhooks),
            _ => Vec::new(),
        }
    })
}

/// One finding per configuration with webhooks of this operator, naming what makes it
/// fragile.
pub(crate) fn live_on(
    target: &TargetEvidence,
    container: &str,
    handled: &[HandledResource],
    configs: &[WebhookConfig],
) -> Vec<Finding> {
    let replicas = target.deployment.spec.replicas.unwrap_or(1);
    let ready = ready_containers(target, container);
    configs
        .iter()
        .filter_map(|config| {
            let ours: Vec<&Webhook> = config
                .webhooks
                .iter()
                .filter(|w| serves_this_operator(w, target.namespace(), handled))
                .collect();
            let problems = problems(&ours, replicas, ready);
            if problems.is_empty() {
                return None;
            }
            Some(finding(
                CheckId::WorkloadWebhookBlastRadius,
                target.name(),
                format!(
                    "kopf's {} {} admits writes for this operator: {}. Set ignore_failures=True on non-critical admission handlers, run 2+ ready replicas behind the Service, give the configuration a namespaceSelector excluding kube-system, and serve it from the cluster (kopf.WebhookServer with a Service), not a tunnel.",
                    config.kind.as_str(),
                    config.name,
                    problems.join("; ")
                ),
                Some(format!(
                    "{} webhook(s) for the handled resources, {} with failurePolicy Fail",
                    ours.len(),
                    ours.iter().filter(|w| w.fails_closed).count()
                )),
            ))
        })
        .collect()
}

/// How many of the target's pods have `container` Ready.
fn ready_containers(target: &TargetEvidence, container: &str) -> usize {
    target
        .pods
        .iter()
        .flat_map(|p| {
            p.status
                .iter()
                .flat_map(|s| s.container_statuses.iter().flatten())
        })
        .filter(|cs| cs.name == container && cs.ready)
        .count()
}

/// What makes this operator's webhooks of one configuration fragile, in the order the
/// message names them.
fn problems(ours: &[&Webhook], replicas: i32, ready: usize) -> Vec<String> {
    let mut problems: Vec<String> = Vec::new();
    let closed = ours.iter().any(|w| w.fails_closed);
    if closed && replicas <= 1 {
        problems.push(format!("failurePolicy: Fail with {replicas} replica(s): every restart or rollout of the operator refuses writes to the handled resources"));
    } else if closed && ready == 0 {
        problems.push("failurePolicy: Fail while no pod of the operator is Ready: writes to the handled resources are refused now".into());
    }
    if ours.iter().any(|w| w.fails_closed && !w.spares_kube_system) {
        problems.push("no namespaceSelector leaving kube-system out (kopf sets none): an outage blocks writes there too".into());
    }
    let tunnels: Vec<String> = ours
        .iter()
        .filter_map(|w| dev_tunnel(w.url.as_deref()?))
        .collect();
    if let Some(host) = tunnels.first() {
        problems.push(format!("clientConfig.url points at {host}, a development tunnel or local address the API server cannot rely on"));
    }
    problems
}

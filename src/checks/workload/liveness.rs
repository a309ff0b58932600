//! `workload.liveness`: the kopf container's liveness probe does not reach kopf's
//! liveness endpoint (or there is none, or kopf binds it where the kubelet cannot reach
//! it). Reads the container's livenessProbe and kopf's `--liveness` flag.

use super::on_kopf_container;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::kopf_run::{KopfRun, LivenessEndpoint};
use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// What kopf's documentation uses as the liveness endpoint.
const LIVENESS_FIX: &str = "--liveness=http://0.0.0.0:8080/healthz";

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, c| live_on(name, c, &input.kopf.run))
}

/// The kopf container's probe against the endpoint kopf serves, when its flags are
/// known; else only whether it has a probe at all.
pub(crate) fn live_on(target: &str, container: &Container, run: &KopfRun) -> Option<Finding> {
    let endpoint = run.liveness.as_deref().and_then(LivenessEndpoint::parse);
    let probe = container.liveness_probe.as_ref();
    if endpoint.is_none() && !run.origin.flags_known() {
        return hidden_liveness(target, container);
    }
    let problem = match (probe, &endpoint) {
        (_, Some(e)) if !e.reachable_by_kubelet() => format!(
            "serves kopf's liveness endpoint on {}, which kopf binds to localhost (kopf 1.45 `_core/engines/probing.py`: `parts.hostname or LOCALHOST`), so the kubelet's probe cannot reach it and restarts the pod in a loop: use {LIVENESS_FIX}",
            e.host.as_deref().unwrap_or("a URL without a host")
        ),
        (None, Some(e)) => format!(
            "has no liveness probe although kopf serves one: add livenessProbe.httpGet on port {} path {}",
            e.port, e.path
        ),
        (None, None) => format!(
            "has no liveness probe: start kopf with {LIVENESS_FIX} and add livenessProbe.httpGet on port 8080 path /healthz"
        ),
        (Some(p), None) if p.http_get.is_some() => format!(
            "probes HTTP but kopf serves no liveness endpoint: add {LIVENESS_FIX} to kopf's args and point the probe at it"
        ),
        (Some(p), Some(e)) => match probe_http(p, container) {
            Some((pp, ppath)) if pp == e.port && ppath == e.path => return None,
            Some((pp, ppath)) => format!(
                "probes port {pp} path {ppath} but kopf serves liveness on port {} path {}: point livenessProbe.httpGet at it",
                e.port, e.path
            ),
            None => format!(
                "has a liveness probe that does not hit kopf's endpoint: use livenessProbe.httpGet on port {} path {}",
                e.port, e.path
            ),
        },
        // An exec or TCP probe without --liveness: it checks something, not kopf's health.
        (Some(_), None) => format!(
            "has a liveness probe that does not ask kopf: add {LIVENESS_FIX} and probe it with httpGet"
        ),
    };
    Some(finding(
        CheckId::WorkloadLiveness,
        target,
        format!("Container {} {problem}.", container.name),
        run.liveness.as_ref().map(|l| format!("--liveness={l}")),
    ))
}

/// How a probe reaches the container: an HTTP port and path, or something else.
fn probe_http(probe: &Probe, container: &Container) -> Option<(u16, String)> {
    let get = probe.http_get.as_ref()?;
    let port = match &get.port {
        IntOrString::Int(p) => u16::try_from(*p).ok()?,
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok())?,
    };
    Some((port, get.path.clone().unwrap_or_else(|| "/".into())))
}

/// `workload.liveness` when the command line hides kopf's flags: whether kopf serves a
/// liveness endpoint is not known, so only a missing probe is reported.
fn hidden_liveness(target: &str, container: &Container) -> Option<Finding> {
    if container.liveness_probe.is_some() {
        return None;
    }
    Some(finding(
        CheckId::WorkloadLiveness,
        target,
        format!(
            "Container {} has no liveness probe: serve kopf's liveness endpoint ({LIVENESS_FIX}, or `liveness_endpoint=` in `kopf.run()`) and add livenessProbe.httpGet on port 8080 path /healthz.",
            container.name
        ),
        None,
    ))
}

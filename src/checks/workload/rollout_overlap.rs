//! `workload.rollout-overlap`: a rollout that starts the new pod before the old one
//! stops runs two instances of a single-leader operator at once. Reads the
//! Deployment's replicas and strategy, and kopf's peering.

use super::on_kopf_container;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::TargetEvidence;
use crate::model::kopf_run::{KopfRun, Peering};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, _| {
        live_on(name, input.target, &input.kopf.run)
    })
}

/// A single-leader operator (one replica, or --standalone) rolled out with a surge.
pub(crate) fn live_on(target: &str, evidence: &TargetEvidence, run: &KopfRun) -> Option<Finding> {
    let spec = &evidence.deployment.spec;
    let replicas = spec.replicas.unwrap_or(1);
    let single_leader = replicas <= 1 || run.peering == Peering::Standalone;
    let strategy = spec.strategy.as_ref();
    let kind = strategy
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate");
    if !single_leader || kind == "Recreate" {
        return None;
    }
    // The default surge is 25%, which rounds up to one pod.
    let surge = strategy
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_surge.as_ref());
    if no_surge(surge) {
        return None;
    }
    let mode = if run.peering == Peering::Standalone {
        "with --standalone both handle every object (twice the side effects, conflicting patches)"
    } else {
        "with peering the two pause each other while both are alive"
    };
    let mut f = finding(
        CheckId::WorkloadRolloutOverlap,
        target,
        format!(
            "The Deployment rolls out with {kind} and a surge, so every rollout runs two instances of the operator at once: {mode}. kopf's deployment docs use strategy: Recreate; set spec.strategy.type: Recreate (or rollingUpdate.maxSurge: 0)."
        ),
        Some(format!("strategy: {kind}, maxSurge: {}", shown(surge))),
    );
    f.fix = Some("spec:\n  strategy:\n    type: Recreate\n    rollingUpdate: null\n".into());
    Some(f)
}

/// Whether a rolling update's maxSurge is zero (unset is the default 25%: a surge).
fn no_surge(surge: Option<&IntOrString>) -> bool {
    match surge {
        Some(IntOrString::Int(0)) => true,
        Some(IntOrString::String(s)) => s.trim() == "0%" || s.trim() == "0",
        _ => false,
    }
}

/// A rolling update's maxSurge as the evidence shows it.
fn shown(surge: Option<&IntOrString>) -> String {
    surge.map_or("25% (default)".to_string(), |s| match s {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(t) => t.clone(),
    })
}

//! `workload.standalone-replicas`: kopf runs with --standalone (peering off) in more
//! than one replica, so every replica handles every object. Reads the Deployment's
//! replicas and kopf's command line.

use super::on_kopf_container;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::TargetEvidence;
use crate::model::kopf_run::{KopfRun, Peering};

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, _| {
        live_on(name, input.target, &input.kopf.run)
    })
}

/// More than one replica of a kopf that runs with --standalone.
pub(crate) fn live_on(target: &str, evidence: &TargetEvidence, run: &KopfRun) -> Option<Finding> {
    let replicas = evidence.deployment.spec.replicas.unwrap_or(1);
    if run.peering != Peering::Standalone || replicas <= 1 {
        return None;
    }
    Some(finding(
        CheckId::WorkloadStandaloneReplicas,
        target,
        format!(
            "kopf runs with --standalone (peering off) and {replicas} replicas: every replica handles every object. Set replicas to 1, or drop --standalone and enable peering."
        ),
        Some(format!("replicas: {replicas}, args: --standalone")),
    ))
}

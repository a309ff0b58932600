//! `workload.not-kopf`: the target Deployment runs no kopf, by neither its command line
//! nor its log. Decided for such a target by the evaluation, which calls [`live_on`];
//! the registry's [`live`] has nothing to say of a target with kopf evidence.

use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::TargetEvidence;

/// The live decider the registry lists: a target whose kopf evidence was gathered runs
/// kopf, so nothing; the finding is [`live_on`]'s, for a target without.
pub(crate) fn live(_: &LiveInput<'_>) -> Vec<Raised> {
    Vec::new()
}

/// The finding for a target with no kopf container (`wanted_container`: the one
/// spec.target names, if any).
pub(crate) fn live_on(target: &TargetEvidence, wanted_container: Option<&str>) -> Finding {
    let name = target.name();
    let which = wanted_container
        .map(|c| format!("container {c:?}"))
        .unwrap_or_else(|| "no container".into());
    finding(
        CheckId::WorkloadNotKopf,
        name,
        format!(
            "Deployment {name}: {which} runs kopf, neither on its command line (`kopf run`, `python -m kopf run`) nor by its log (no line that only kopf writes at the start of its containers' logs); kopf-specific checks are skipped. Point spec.target at the kopf operator, or set spec.target.container."
        ),
        None,
    )
}

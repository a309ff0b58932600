//! `workload.no-scope-flag`: kopf runs with neither -A/--all-namespaces nor
//! -n/--namespace. Reads kopf's command line.

use super::on_kopf_container;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::kopf_run::{KopfRun, Scope};

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, _| live_on(name, &input.kopf.run))
}

/// kopf's scope is implicit: it falls back to cluster-wide with a FutureWarning.
pub(crate) fn live_on(target: &str, run: &KopfRun) -> Option<Finding> {
    if run.scope != Scope::Implicit {
        return None;
    }
    Some(finding(
        CheckId::WorkloadNoScopeFlag,
        target,
        "kopf runs with neither -A/--all-namespaces nor -n/--namespace: it falls back to cluster-wide with a FutureWarning that this will become an error. Add -n NAMESPACE (or -A) to its args.".to_string(),
        None,
    ))
}

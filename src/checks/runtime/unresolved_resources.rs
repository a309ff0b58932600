//! `runtime.unresolved-resources`: a resource the operator handles has no CRD
//! (kopf logs `Unresolved resources cannot be served`).

use super::{first_of, on_log};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised};
use crate::model::evidence::LogEvidence;
use kopf_log::EventKind;

/// The first `Unresolved resources` line: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `runtime.unresolved-resources`: `Unresolved resources cannot be served`.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeUnresolvedResources,
        |k| matches!(k, EventKind::UnresolvedResources),
        "kopf cannot find the CRD of a resource it handles, so nothing of it is served: install the CRD (or fix the group/version/plural in the handler decorators).",
    )
}

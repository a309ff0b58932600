//! `runtime.peering-conflict`: two operators with the same peering priority pause
//! each other (kopf logs `Possibly conflicting operators with the same priority`).

use super::{first_of, on_log};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised};
use crate::model::evidence::LogEvidence;
use kopf_log::EventKind;

/// The first `Possibly conflicting operators` line: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `runtime.peering-conflict`: `Possibly conflicting operators with the same priority`.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimePeeringConflict,
        |k| matches!(k, EventKind::PeeringConflict),
        "Two operators with the same peering priority are running, so both pause and nothing is served: give each a distinct --priority, or run one replica.",
    )
}

//! `runtime.orphaned-daemons`: a daemon did not exit when asked and was left orphaned
//! (`did not exit in time. Leaving it orphaned.`).

use super::{first_of, on_log};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised};
use crate::model::evidence::LogEvidence;
use kopf_log::EventKind;

/// The first orphaned daemon: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `runtime.orphaned-daemons`: `did not exit in time. Leaving it orphaned.`
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeOrphanedDaemons,
        |k| matches!(k, EventKind::OrphanedDaemon { .. }),
        "A daemon did not exit when asked and was left orphaned: make it check `stopped` (or handle cancellation) so that it exits in time.",
    )
}

//! `runtime.throttling`: kopf throttles after an unexpected error in its own machinery
//! (`Throttling for N seconds due to an unexpected error`).

use super::{first_of, on_log};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised};
use crate::model::evidence::LogEvidence;
use kopf_log::EventKind;

/// The first throttling line: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `runtime.throttling`: `Throttling for N seconds due to an unexpected error`.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeThrottling,
        |k| matches!(k, EventKind::Throttling { .. }),
        "kopf throttles after an unexpected error in its own machinery and loops: read the traceback before the throttling line and fix its cause.",
    )
}

//! `runtime.unparsed-logs`: most lines of the operator's log match none of kopf's
//! formats, so the log-based checks see little.

use super::on_log;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;

/// The log's statistics: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// Below this share of kopf lines, the log evidence is weak (with enough lines to judge).
const MIN_KOPF_RATIO: f64 = 0.5;
/// Fewer lines than this are too few to judge the share by.
const MIN_LINES_TO_JUDGE: u64 = 20;

/// `runtime.unparsed-logs`: most lines match none of kopf's formats.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let stats = &logs.stats;
    if stats.lines < MIN_LINES_TO_JUDGE || stats.kopf_ratio() >= MIN_KOPF_RATIO {
        return None;
    }
    Some(finding(
        CheckId::RuntimeUnparsedLogs,
        target,
        "Most lines of the operator's log match none of kopf's formats, so the log-based checks see little: log through kopf's loggers (the `logger` handler argument) and keep --log-format full, plain or json.".to_string(),
        None,
    ))
}

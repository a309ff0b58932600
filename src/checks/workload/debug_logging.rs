//! `workload.debug-logging`: kopf logs at DEBUG in production, by its flags or by what
//! its log holds. Reads kopf's command line and the log's record counts.

use super::on_kopf_container;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{Gathered, LogEvidence};
use crate::model::kopf_run::{KopfRun, Verbosity};

/// Below this many records the share of DEBUG ones says nothing.
const MIN_RECORDS_TO_JUDGE: u64 = 50;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, _| {
        live_on(name, &input.kopf.run, &input.kopf.logs)
    })
}

/// DEBUG in production, by flag or by what the log holds.
pub(crate) fn live_on(
    target: &str,
    run: &KopfRun,
    logs: &Gathered<LogEvidence>,
) -> Option<Finding> {
    let why = match &run.verbosity {
        (Verbosity::Verbose | Verbosity::Debug, Some(flag)) => format!("kopf runs with {flag}"),
        _ => {
            let stats = &logs.as_ref().ok()?.stats;
            let dominated =
                stats.records >= MIN_RECORDS_TO_JUDGE && stats.debug_records * 2 > stats.records;
            if !dominated {
                return None;
            }
            // No counts: an unchanged state must give an unchanged message.
            "most records in the log window are DEBUG (kopf was started with -v/--debug or its loggers were set to DEBUG)".to_string()
        }
    };
    Some(finding(
        CheckId::WorkloadDebugLogging,
        target,
        format!(
            "{why}: at DEBUG kopf logs whole object bodies and patches (Secrets' data too, when it handles Secrets) and floods the log, crowding failures out of any bounded window. Drop -v/--verbose/-d/--debug (and kopf.configure(verbose=True) or debug=True) in production (kopf logs INFO by default)."
        ),
        None,
    ))
}

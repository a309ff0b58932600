//! `events.duplicates`: a failure posted explicitly and mirrored from the log too.
//! Reads the Events the operator posted.

use super::{describe, is_logging, on_read};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{EventRecord, Reporter};
use std::collections::BTreeSet;

/// The live decider the registry lists: [`live_on`] on the Events the operator posted.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_read(input, |read| live_on(read.name, &read.posted))
}

/// `events.duplicates`: a failure posted explicitly and mirrored from the log too.
pub(crate) fn live_on(target: &str, posted: &[&EventRecord]) -> Option<Finding> {
    let explicit: BTreeSet<(&str, &str, &str)> = posted
        .iter()
        .filter(|e| !is_logging(e) && e.type_.is_problem())
        .map(|e| {
            (
                e.kind.as_str(),
                e.object_namespace.as_str(),
                e.name.as_str(),
            )
        })
        .collect();
    let mirrored = posted.iter().find(|e| {
        e.reporter == Reporter::Kopf
            && is_logging(e)
            && e.type_.is_problem()
            && explicit.contains(&(
                e.kind.as_str(),
                e.object_namespace.as_str(),
                e.name.as_str(),
            ))
    })?;
    Some(finding(
        CheckId::EventsDuplicates,
        target,
        "Failures surface twice, as an explicit Event and as a `Logging` Event mirrored from the log: expected with posting.loggers on; keep one of the two.".to_string(),
        Some(describe(mirrored)),
    ))
}

//! `events.truncated`: Event messages cut at kopf's limit. Reads the Events the
//! operator posted.

use super::{KOPF_MESSAGE_LIMIT, describe, on_read};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{EventRecord, Reporter};

/// The live decider the registry lists: [`live_on`] on the Events the operator posted.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_read(input, |read| live_on(read.name, &read.posted))
}

/// `events.truncated`: messages cut at kopf's 1024-character limit.
pub(crate) fn live_on(target: &str, posted: &[&EventRecord]) -> Option<Finding> {
    let cut = posted.iter().find(|e| {
        e.reporter == Reporter::Kopf
            && e.message.chars().count() >= KOPF_MESSAGE_LIMIT - 3
            && e.message.contains("...")
    })?;
    Some(finding(
        CheckId::EventsTruncated,
        target,
        format!(
            "Event messages reach kopf's {KOPF_MESSAGE_LIMIT}-character limit and are cut in the middle: keep messages short and put details in status."
        ),
        Some(describe(cut)),
    ))
}

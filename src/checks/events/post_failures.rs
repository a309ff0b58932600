//! `events.post-failures`: kopf failed to post Events and swallowed the error. Reads
//! the log.

use super::on_read;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::runtime::quote;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use kopf_log::EventKind;

/// The live decider the registry lists: [`live_on`] on the log.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_read(input, |read| live_on(read.name, read.logs))
}

/// `events.post-failures`: kopf failed to post Events and swallowed the error.
pub(crate) fn live_on(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let record = logs
        .records
        .iter()
        .find(|r| matches!(r.kind, EventKind::EventPostFailed { .. }))?;
    let code = match record.kind {
        EventKind::EventPostFailed { code: Some(code) } => format!(" with code {code}"),
        _ => String::new(),
    };
    let hint = if matches!(record.kind, EventKind::EventPostFailed { code: Some(403) }) {
        "grant create (and patch) on core `events` in the namespaces it serves"
    } else {
        "read the message quoted in evidence"
    };
    Some(finding(
        CheckId::EventsPostFailures,
        target,
        format!(
            "kopf failed to post Events{code} and swallowed the error, so Events are silently missing: {hint}."
        ),
        Some(quote(record)),
    ))
}

//! `events.logging-flood`: INFO (or DEBUG) log records mirrored as `Logging` Events.
//! Reads the Events the operator posted and the log's kopf version.

use super::{describe, is_logging, mirrors_every_record, on_read};
use crate::api::Finding;
use crate::catalog::{CheckId, EventType};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{EventRecord, Reporter};

/// The live decider the registry lists: [`live_on`] on the Events the operator posted.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_read(input, |read| {
        live_on(read.name, &read.posted, mirrors_every_record(read.logs))
    })
}

/// `events.logging-flood`: INFO (or DEBUG) log records mirrored as Events. Before kopf
/// 1.41 (`old_kopf`) there is no `posting.loggers` to turn off: only the level helps.
pub(crate) fn live_on(target: &str, posted: &[&EventRecord], old_kopf: bool) -> Option<Finding> {
    let first = posted.iter().find(|e| {
        e.reporter == Reporter::Kopf
            && is_logging(e)
            && matches!(e.type_, EventType::Normal | EventType::Debug)
    })?;
    let message = if old_kopf {
        "kopf mirrors INFO log lines as `Logging` Events on the handled objects: kopf 1.40 and older have no settings.posting.loggers and post every object-logger record at or above settings.posting.level (INFO by default). Set settings.posting.level = logging.WARNING in a startup handler (kopf.info() is then dropped too: post lifecycle Events with kopf.event()), or upgrade kopf and set posting.loggers = False."
    } else {
        "kopf mirrors INFO log lines as `Logging` Events on the handled objects (posting.loggers on at level INFO, or kopf 1.41 to 1.43): set settings.posting.level = logging.WARNING, or posting.loggers = False and post explicit events."
    };
    Some(finding(
        CheckId::EventsLoggingFlood,
        target,
        message.to_string(),
        Some(describe(first)),
    ))
}

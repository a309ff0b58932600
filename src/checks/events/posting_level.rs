//! `events.posting-level`: kopf mirrors its log as Events, yet none of its INFO lines:
//! `settings.posting.level` is above INFO. Reads the Events the operator posted and the
//! log's counts.

use super::{describe, is_logging, on_read};
use crate::api::Finding;
use crate::catalog::{CheckId, EventType};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{EventRecord, LogEvidence, Reporter};

/// The live decider the registry lists: [`live_on`] on the log and the Events the
/// operator posted.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_read(input, |read| live_on(read.name, read.logs, &read.posted))
}

/// `events.posting-level`: kopf mirrors its object logger as Events (a `Logging` Warning
/// or Error exists) and the log holds handler successes (INFO lines of that logger), yet
/// no INFO line became an Event and no Normal Event from kopf is on any handled object:
/// `settings.posting.level` is above INFO. The same level drops `kopf.info()` (and
/// `kopf.warn()` above WARNING) without a log line, while `kopf.event()` checks only
/// `posting.enabled` (`_core/engines/posting.py` of kopf 1.38.0, 1.43.0 and 1.45.2: `info`
/// tests `posting.level <= logging.INFO`, `warn` `<= logging.WARNING`, `event` neither).
pub(crate) fn live_on(
    target: &str,
    logs: &LogEvidence,
    posted: &[&EventRecord],
) -> Option<Finding> {
    let kopf = || posted.iter().filter(|e| e.reporter == Reporter::Kopf);
    let mirrored = kopf().find(|e| is_logging(e) && e.type_.is_problem())?;
    let any_normal = kopf().any(|e| matches!(e.type_, EventType::Normal | EventType::Debug));
    if any_normal || logs.stats.successes == 0 {
        return None;
    }
    Some(finding(
        CheckId::EventsPostingLevel,
        target,
        "kopf posts its log as `Logging` Events, yet none of its INFO lines (`Handler '...' succeeded.` is in the log) and no Normal Event reach the handled objects: settings.posting.level is above INFO. That level also drops every kopf.info() call (and kopf.warn() above WARNING) without a log line, so lifecycle Events posted that way never reach the cluster: post them with kopf.event(body, type='Normal', reason=..., message=...), which no level filters, or set posting.level back to logging.INFO.".to_string(),
        Some(describe(mirrored)),
    ))
}

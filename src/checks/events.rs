//! Events checks (`events.*`): how the operator surfaces state as Events, read from its
//! logs and its objects' Events side by side. A failure in the log with no Warning Event
//! on its object is the classic kopf trap: raising `kopf.TemporaryError` posts nothing
//! unless `settings.posting.loggers` is on (kopf 1.45 `_core/engines/posting.py`).
//!
//! The gatherer keeps only Events about objects of the handled resources in the served
//! namespaces ([`crate::model::evidence::EventEvidence`]); these checks also ignore
//! Events that neither kopf nor the operator posted.
//!
//! Each check has its module (`events/<name>.rs`) with its live decider, which the
//! registry lists and [`super::run_area`] runs; this one holds what several share.

use super::runtime::QUOTE_CHARS;
use super::{LiveInput, Raised};
use crate::api::Finding;
use crate::model::evidence::{EventRecord, LogEvidence, Reporter};
use crate::model::source::kopf_version::LogPosting;

pub(crate) mod duplicates;
pub(crate) mod logging_flood;
pub(crate) mod post_failures;
pub(crate) mod posting_level;
pub(crate) mod silent_failures;
pub(crate) mod steady_state_spam;
pub(crate) mod truncated;

/// Whether the log's wording dates kopf before `settings.posting.loggers`: every
/// object-logger record at or above `posting.level` becomes an Event, failures included.
/// kopf 1.37.5, 1.38.0 and 1.40.1 have no such setting (`_cogs/configs/configuration.py`
/// `PostingSettings`: `enabled`, `level` and the reporting fields), and their
/// `_core/engines/posting.py` `K8sPoster.filter` posts every object-logger record at or
/// above `posting.level` (INFO by default); kopf 1.41.0 and 1.43.0 have `loggers: bool =
/// True`, kopf 1.44.6 and 1.45.2 `loggers = False`, each checked in that filter. The
/// boundary is lint's too: one rule, [`LogPosting::of`].
fn mirrors_every_record(logs: &LogEvidence) -> bool {
    LogPosting::in_log(&logs.version) == Some(LogPosting::EveryRecord)
}

/// kopf cuts event messages longer than this to head + `...` + tail.
pub(crate) const KOPF_MESSAGE_LIMIT: usize = 1024;

/// The reason kopf gives Events mirrored from log records.
const LOGGING_REASON: &str = "Logging";

/// What the events deciders read of a target whose log and Events were both read.
struct Read<'a> {
    /// The target's name, as findings name it.
    name: &'a str,
    /// The log.
    logs: &'a LogEvidence,
    /// Every Event read, whoever posted it.
    events: &'a [EventRecord],
    /// The Events the operator posted ([`posted_by_operator`]).
    posted: Vec<&'a EventRecord>,
    /// Whether the Events of cluster-scoped objects may lie where they were not read.
    cluster_scoped_unread: bool,
}

/// Runs an events decider on what it reads, the precondition every events check
/// shares: without both the log and the Events, none decides.
fn on_read<'a>(
    input: &LiveInput<'a>,
    decide: impl FnOnce(&Read<'a>) -> Option<Finding>,
) -> Vec<Raised> {
    let (Ok(logs), Ok(events)) = (&input.kopf.logs, &input.kopf.events) else {
        return Vec::new();
    };
    let name = input.target.name();
    let read = Read {
        name,
        logs,
        events: &events.events,
        posted: events
            .events
            .iter()
            .filter(|e| posted_by_operator(e, name))
            .collect(),
        cluster_scoped_unread: !events.unread.is_empty(),
    };
    decide(&read).into_iter().map(Raised::alone).collect()
}

/// Whether the operator posted an Event: through kopf, or as a component named after
/// its Deployment. Kubelet, other controllers and kopf-audit itself never count against
/// it.
fn posted_by_operator(event: &EventRecord, deployment: &str) -> bool {
    match &event.reporter {
        Reporter::Kopf => true,
        Reporter::Auditor => false,
        Reporter::Other(component) => component == deployment,
    }
}

/// An Event in one line, bounded, as findings quote it in evidence.
fn describe(event: &EventRecord) -> String {
    kopf_log::excerpt(
        &format!(
            "{} {} {}: {} {}",
            event.kind,
            event.type_,
            event.object(),
            event.reason,
            event.message
        ),
        QUOTE_CHARS,
    )
}

/// Whether kopf mirrored the Event from a log record (reason `Logging`).
fn is_logging(event: &EventRecord) -> bool {
    event.reason == LOGGING_REASON
}

#[cfg(test)]
mod tests;

//! `events.silent-failures`: handler failures in the log with no problem Event on their
//! object. Reads the log's handler failures and every Event read.

use super::{mirrors_every_record, on_read};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::runtime::quote;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{EventRecord, LogEvidence};
use kopf_log::Record;
use std::collections::BTreeMap;

/// The live decider the registry lists: [`live_on`] on the log and every Event read.
/// Without a known handled resource no Event was read: silence cannot be told from
/// Events that were never looked at.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    if !input.kopf.handled.as_ref().is_ok_and(|h| !h.is_empty()) {
        return Vec::new();
    }
    on_read(input, |read| {
        live_on(
            read.name,
            read.logs,
            read.events,
            read.cluster_scoped_unread,
        )
    })
}

/// `events.silent-failures`: handler failures in the log with no problem Event on their
/// object (whoever posted it: any Warning on the object tells its owner). Failures of
/// cluster-scoped objects are not judged when their Events may lie in a namespace that
/// was not read (`cluster_scoped_unread`).
pub(crate) fn live_on(
    target: &str,
    logs: &LogEvidence,
    events: &[EventRecord],
    cluster_scoped_unread: bool,
) -> Option<Finding> {
    let mut silent: BTreeMap<String, &Record> = BTreeMap::new();
    for record in logs.records.iter().filter(|r| r.kind.is_handler_failure()) {
        let Some(object) = &record.object else {
            continue;
        };
        if cluster_scoped_unread && object.namespace.is_none() {
            continue;
        }
        let reported = events
            .iter()
            .any(|e| e.type_.is_problem() && is_about(e, record));
        if !reported {
            let key = crate::model::evidence::qualified(object.namespace.as_deref(), &object.name);
            silent.entry(key).or_insert(record);
        }
    }
    let (_, first) = silent.iter().next()?;
    let objects: Vec<&str> = silent.keys().take(3).map(String::as_str).collect();
    let more = if silent.len() > 3 { " and others" } else { "" };
    let objects = objects.join(", ");
    let message = if mirrors_every_record(logs) {
        // Before posting.loggers, the failure's ERROR record is itself posted: its
        // absence means posting is off or its level is above ERROR.
        format!(
            "Handler failures of {objects}{more} are in the log but no Warning or Error Event is on the object: kopf 1.40 and older post every object-logger record at or above settings.posting.level as an Event, so settings.posting.enabled is False or settings.posting.level is above ERROR. Set settings.posting.level = logging.WARNING (and posting.enabled = True) in a startup handler."
        )
    } else {
        format!(
            "Handler failures of {objects}{more} are in the log but no Warning Event is on the object: raising TemporaryError posts nothing unless posting.loggers is on. Post one with kopf.event(body, type='Warning', reason=..., message=...) in an except block and re-raise, or set settings.posting.loggers = True with settings.posting.level = logging.WARNING."
        )
    };
    Some(finding(
        CheckId::EventsSilentFailures,
        target,
        message,
        Some(quote(first)),
    ))
}

/// Whether an Event is about the object a log record names. Text logs give only
/// `[namespace/name]`; JSON logs add kind and uid, which then must match too.
fn is_about(event: &EventRecord, record: &Record) -> bool {
    let Some(o) = &record.object else {
        return false;
    };
    if let Some(uid) = o.uid.as_deref().filter(|u| !u.is_empty())
        && !event.uid.is_empty()
    {
        return event.uid == uid;
    }
    let namespace = o.namespace.as_deref().unwrap_or("");
    event.name == o.name
        && event.object_namespace == namespace
        && o.kind.as_deref().is_none_or(|k| k == event.kind)
}

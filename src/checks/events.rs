//! Events checks (`events.*`): how the operator surfaces state as Events, read from its
//! logs and its objects' Events side by side. A failure in the log with no Warning Event
//! on its object is the classic kopf trap: raising `kopf.TemporaryError` posts nothing
//! unless `settings.posting.loggers` is on (kopf 1.45 `_core/engines/posting.py`).
//!
//! The gatherer keeps only Events about objects of the handled resources in the served
//! namespaces ([`crate::model::evidence::EventEvidence`]); these checks also ignore
//! Events that neither kopf nor the operator posted.

use super::finding;
use super::runtime::{QUOTE_CHARS, quote};
use crate::api::Finding;
use crate::catalog::{CheckId, EventType};
use crate::model::evidence::{EventRecord, KopfEvidence, LogEvidence, Reporter, TargetEvidence};
use crate::model::settings::CheckSettings;
use crate::model::source::kopf_version::LogPosting;
use kopf_log::{EventKind, HandlerKind, Record};
use std::collections::{BTreeMap, BTreeSet};

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

/// Runs every events check on one kopf target.
pub(crate) fn check(
    target: &TargetEvidence,
    kopf: &KopfEvidence,
    settings: &CheckSettings,
) -> Vec<Finding> {
    let (Ok(logs), Ok(events)) = (&kopf.logs, &kopf.events) else {
        return Vec::new();
    };
    let name = target.name();
    // The Events of cluster-scoped objects may lie where they were not read.
    let cluster_scoped_unread = !events.unread.is_empty();
    let events = &events.events;
    let posted: Vec<&EventRecord> = events
        .iter()
        .filter(|e| posted_by_operator(e, name))
        .collect();
    let mut out = Vec::new();
    // Without a known handled resource no Event was read: silence cannot be told from
    // Events that were never looked at.
    if kopf.handled.as_ref().is_ok_and(|h| !h.is_empty()) {
        out.extend(silent_failures(name, logs, events, cluster_scoped_unread));
    }
    out.extend(logging_flood(name, &posted, mirrors_every_record(logs)));
    out.extend(posting_level(name, logs, &posted));
    out.extend(steady_state_spam(
        name,
        &posted,
        logs,
        settings.event_repeats,
    ));
    out.extend(post_failures(name, logs));
    out.extend(duplicates(name, &posted));
    out.extend(truncated(name, &posted));
    out
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

/// `events.silent-failures`: handler failures in the log with no problem Event on their
/// object (whoever posted it: any Warning on the object tells its owner). Failures of
/// cluster-scoped objects are not judged when their Events may lie in a namespace that
/// was not read (`cluster_scoped_unread`).
fn silent_failures(
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

fn is_logging(event: &EventRecord) -> bool {
    event.reason == LOGGING_REASON
}

/// `events.logging-flood`: INFO (or DEBUG) log records mirrored as Events. Before kopf
/// 1.41 (`old_kopf`) there is no `posting.loggers` to turn off: only the level helps.
fn logging_flood(target: &str, posted: &[&EventRecord], old_kopf: bool) -> Option<Finding> {
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

/// `events.posting-level`: kopf mirrors its object logger as Events (a `Logging` Warning
/// or Error exists) and the log holds handler successes (INFO lines of that logger), yet
/// no INFO line became an Event and no Normal Event from kopf is on any handled object:
/// `settings.posting.level` is above INFO. The same level drops `kopf.info()` (and
/// `kopf.warn()` above WARNING) without a log line, while `kopf.event()` checks only
/// `posting.enabled` (`_core/engines/posting.py` of kopf 1.38.0, 1.43.0 and 1.45.2: `info`
/// tests `posting.level <= logging.INFO`, `warn` `<= logging.WARNING`, `event` neither).
fn posting_level(target: &str, logs: &LogEvidence, posted: &[&EventRecord]) -> Option<Finding> {
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

/// What makes two Events the same: kind, namespace, name, reason, message.
type SameEvent<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

/// `events.steady-state-spam`: the same Event posted again and again on one object. The
/// conventions' own pattern is spared: a change handler that posts a Warning on each
/// failed attempt and re-raises, so that kopf retries it ([`posted_per_retry`]); that
/// is `runtime.handler-failures`' finding. A timer or daemon posting on every tick, or
/// any handler posting a steady state, is not.
fn steady_state_spam(
    target: &str,
    posted: &[&EventRecord],
    logs: &LogEvidence,
    repeats: usize,
) -> Option<Finding> {
    let mut groups: BTreeMap<SameEvent, Vec<&EventRecord>> = BTreeMap::new();
    for e in posted.iter().filter(|e| !is_logging(e)) {
        let key = (
            e.kind.as_str(),
            e.object_namespace.as_str(),
            e.name.as_str(),
            e.reason.as_str(),
            e.message.as_str(),
        );
        groups.entry(key).or_default().push(e);
    }
    let (_, same) = groups.iter().find(|(_, same)| {
        same.iter().map(|e| e.count as usize).sum::<usize>() >= repeats
            && !posted_per_retry(same, logs)
    })?;
    let example = same[0];
    Some(finding(
        CheckId::EventsSteadyStateSpam,
        target,
        format!(
            "The same Event (reason {}) was posted {repeats} or more times on one object in the window: Events are not deduplicated by kopf; report ongoing state in status.conditions and post an Event only when something changes.",
            example.reason
        ),
        Some(describe(example)),
    ))
}

/// How long after kopf's last retry line of an object a failed attempt's Event may
/// still be posted: the last attempt fails after the last retry's delay, and then kopf
/// writes no retry line for it.
const RETRY_SLACK: jiff::SignedDuration = jiff::SignedDuration::from_secs(60);

/// Whether repeated Events of one object are a retried change handler's, one per failed
/// attempt: they are Warnings (or worse), the log shows a change handler
/// (`Handler 'x'`, not a timer or daemon) failing on that object to be retried (`failed
/// temporarily`, `will try again in N seconds`, `Will retry.` before kopf 1.40) at least
/// as often as the Events but one (the last attempt's), and every Event lies within
/// those retries' span.
fn posted_per_retry(same: &[&EventRecord], logs: &LogEvidence) -> bool {
    let first = same[0];
    if !same.iter().all(|e| e.type_.is_problem()) {
        return false;
    }
    let namespace = (!first.object_namespace.is_empty()).then_some(first.object_namespace.as_str());
    let retries: Vec<&kopf_log::Tallied> = logs
        .tally
        .iter()
        .filter(|t| {
            matches!(&t.outcome, kopf_log::Outcome::Retried { kind, .. } if *kind == HandlerKind::Handler)
                && t.namespace.as_deref() == namespace
                && t.name == first.name
        })
        .collect();
    let count: u64 = retries.iter().map(|t| t.count).sum();
    let events: u64 = same.iter().map(|e| u64::from(e.count)).sum();
    if count == 0 || count + 1 < events {
        return false;
    }
    let to_jiff = |t: kopf_log::Timestamp| jiff::Timestamp::new(t.secs, t.nanos as i32).ok();
    let since = retries
        .iter()
        .filter_map(|t| t.first.and_then(to_jiff))
        .min();
    let until = retries
        .iter()
        .filter_map(|t| t.last.and_then(to_jiff))
        .max();
    let (Some(since), Some(until)) = (since, until) else {
        return true;
    };
    let slack = RETRY_SLACK.max(until.duration_since(since) / (count.max(2) - 1) as i32);
    same.iter()
        .filter_map(|e| e.time)
        .all(|at| at >= since - jiff::SignedDuration::from_secs(10) && at <= until + slack)
}

/// `events.post-failures`: kopf failed to post Events and swallowed the error.
fn post_failures(target: &str, logs: &LogEvidence) -> Option<Finding> {
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

/// `events.duplicates`: a failure posted explicitly and mirrored from the log too.
fn duplicates(target: &str, posted: &[&EventRecord]) -> Option<Finding> {
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

/// `events.truncated`: messages cut at kopf's 1024-character limit.
fn truncated(target: &str, posted: &[&EventRecord]) -> Option<Finding> {
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

#[cfg(test)]
mod tests;

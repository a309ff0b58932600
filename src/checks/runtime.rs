//! Runtime checks (`runtime.*`): what the operator's logs say about its own health.
//! Findings quote one short, redacted line and carry no counts or times, so that an
//! unchanged log gives an unchanged status. Each check has its module
//! (`runtime/<name>.rs`) with its decider, message and fix; this one runs them and
//! holds what several share (quoting a record, naming a task or a version).

use super::{LiveInput, Raised, finding};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::model::evidence::{LogEvidence, ObjectSample, qualified};
use kopf_log::{BackgroundTask, EventKind, KopfVersion, Record, VersionRange};

pub(crate) mod api_tls_failure;
pub(crate) mod credentials_lost;
pub(crate) mod dead_watcher;
mod faults;
pub(crate) mod foreign_peer;
pub(crate) mod handler_failures;
pub(crate) mod handler_loop;
pub(crate) mod kopf_version;
pub(crate) mod not_handling;
pub(crate) mod operator_conflict;
pub(crate) mod orphaned_daemons;
pub(crate) mod peering_conflict;
pub(crate) mod permission_degraded;
pub(crate) mod rate_limited;
pub(crate) mod startup_forbidden;
pub(crate) mod startup_stalled;
pub(crate) mod thread_exhaustion;
pub(crate) mod throttling;
pub(crate) mod unparsed_logs;
pub(crate) mod unresolved_resources;
pub(crate) mod webhook_certificate;

/// The operator's log, when it was read: a check of the log decides nothing without it.
fn logs<'a>(input: &LiveInput<'a>) -> Option<&'a LogEvidence> {
    input.kopf.logs.as_ref().ok()
}

/// The sampled handled objects, none when they were not read (for the checks that
/// only refine what they decide by them).
fn samples<'a>(input: &LiveInput<'a>) -> &'a [ObjectSample] {
    input
        .kopf
        .objects
        .as_ref()
        .map_or(&[][..], |o| &o.samples[..])
}

/// Runs a decider of the log alone on the target's log, the precondition every check
/// of the log shares: none decides when the log was not read.
fn on_log<F>(input: &LiveInput<'_>, decide: impl FnOnce(&str, &LogEvidence) -> F) -> Vec<Raised>
where
    F: IntoIterator<Item = Finding>,
{
    logs(input).map_or_else(Vec::new, |logs| alone(decide(input.target.name(), logs)))
}

/// Findings with no cause shared with other checks.
fn alone(findings: impl IntoIterator<Item = Finding>) -> Vec<Raised> {
    findings.into_iter().map(Raised::alone).collect()
}

/// From kopf 1.45 a failed watcher stops the operator (`_core/reactor/orchestration.py`
/// re-raises a failed ensemble task); up to 1.44.6 the dead task stays registered and
/// is never respawned.
const EXITS_ON_DEAD_WATCHER: KopfVersion = KopfVersion::new(1, 45, 0);

/// At most this many objects are named in a not-handling or startup-stalled finding.
const NAMED_OBJECTS: usize = 5;

/// How many characters of a log line a finding quotes.
pub(crate) const QUOTE_CHARS: usize = 240;

/// `[ns/name] message`, shortened and redacted.
pub(crate) fn quote(record: &Record) -> String {
    let object = record
        .object
        .as_ref()
        .map(|o| format!("[{}] ", qualified(o.namespace.as_deref(), &o.name)))
        .unwrap_or_default();
    kopf_log::excerpt(&format!("{object}{}", record.message), QUOTE_CHARS)
}

/// The first record of a kind, as a finding with a fixed message.
fn first_of(
    target: &str,
    logs: &LogEvidence,
    check: CheckId,
    matches: impl Fn(&EventKind) -> bool,
    message: &str,
) -> Option<Finding> {
    let record = logs.all_records().find(|r| matches(&r.kind))?;
    Some(finding(
        check,
        target,
        message.to_string(),
        Some(quote(record)),
    ))
}

/// A duration as a message says it, rounded down to whole minutes (so that a finding's
/// text changes rarely).
fn rounded(d: jiff::SignedDuration) -> String {
    let minutes = d.as_secs() / 60;
    if minutes >= 120 {
        format!("{} h", minutes / 60)
    } else {
        format!("{minutes} min")
    }
}

/// `watcher for RES@NS` / `peering keep-alive for NAME@NS` of a record.
fn task_name(record: &Record) -> String {
    let task = record
        .kind
        .background_task()
        .map_or("background task", BackgroundTask::as_str);
    let (target, namespace) = match &record.kind {
        EventKind::WatcherFailed {
            resource,
            namespace,
        } => (Some(resource.clone()), namespace.clone()),
        EventKind::TaskFailed {
            target, namespace, ..
        }
        | EventKind::TaskFinished {
            target, namespace, ..
        } => (target.clone(), namespace.clone()),
        _ => (None, None),
    };
    match (target, namespace) {
        (Some(t), Some(ns)) => format!("{task} {t}@{ns}"),
        (Some(t), None) => format!("{task} {t}"),
        _ => task.to_string(),
    }
}

/// `kopf 1.45.2`, `kopf 1.40 or newer`, `kopf 1.38 to 1.43`...
fn describe_version(v: &VersionRange) -> String {
    match (v.at_least, v.at_most) {
        (Some(lo), Some(hi)) if lo == hi => format!("kopf {lo}"),
        (Some(lo), Some(hi)) => format!("kopf {lo} to {hi}"),
        (Some(lo), None) => format!("kopf {lo} or newer"),
        (None, Some(hi)) => format!("kopf {hi} or older"),
        (None, None) => "this kopf (its version is not in the log)".into(),
    }
}

#[cfg(test)]
mod tests;

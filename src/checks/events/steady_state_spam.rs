//! `events.steady-state-spam`: the same Event posted again and again on one object.
//! Reads the Events the operator posted and the log's retries.

use super::{describe, is_logging, on_read};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{EventRecord, LogEvidence};
use kopf_log::HandlerKind;
use std::collections::BTreeMap;

/// The live decider the registry lists: [`live_on`] on the Events the operator posted,
/// at the audit's threshold of repeats.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_read(input, |read| {
        live_on(
            read.name,
            &read.posted,
            read.logs,
            input.settings.event_repeats,
        )
    })
}

/// What makes two Events the same: kind, namespace, name, reason, message.
type SameEvent<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

/// `events.steady-state-spam`: the same Event posted again and again on one object. The
/// conventions' own pattern is spared: a change handler that posts a Warning on each
/// failed attempt and re-raises, so that kopf retries it ([`posted_per_retry`]); that
/// is `runtime.handler-failures`' finding. A timer or daemon posting on every tick, or
/// any handler posting a steady state, is not.
pub(crate) fn live_on(
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

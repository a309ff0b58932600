//! `runtime.handler-loop`: a change handler patches what kopf diffs of its own object
//! (spec, labels, annotations), so its own patch is the next change and it runs again,
//! for ever. Live, from the log: the same handler succeeds on one object again and
//! again, each time after an update. From the source: an update or field handler
//! writes, on every call, a value that differs each time through its `patch`.

use super::{alone, logs, samples};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::source::{SourceFinding, handler_target};
use crate::checks::{LiveInput, Raised, Wording};
use crate::model::evidence::{LogEvidence, ObjectSample, qualified};
use crate::model::source::Handler;
use kopf_log::HandlerKind;
use std::collections::BTreeMap;

/// What the check says and the fix it gives, whichever decided.
pub(crate) const WORDING: Wording = Wording {
    check: CheckId::RuntimeHandlerLoop,
    advice: "the handler most likely changes what kopf diffs of its own object (spec, a label or an annotation), and kopf stores the diff-base from before the handler ran, so its own patch is the next change and it runs again, for ever (API load and a log flood). Patch only when the value differs, put what the handler writes into status (kopf does not diff status) or return it, let kopf.on.field watch only fields the handler does not write, or raise kopf.PermanentError when there is nothing to do.",
    fix,
};

/// Python that patches only what differs (or writes where kopf does not diff).
fn fix() -> String {
    "# kopf handles a handler's own patch as the next change: patch only what differs.\n\
if spec.get('field') != value:\n    patch.spec['field'] = value\n\
# Or keep it where kopf does not diff: patch.status['field'] = value\n"
        .to_string()
}

/// Successes of one change handler on one object in the window from which a loop is
/// reported, when the object's updates were processed as often (the catalogue's
/// default).
const LOOP_REPEATS: u64 = 10;

/// The cause kopf titles `Updating` in `Updating is processed: ...` (the same in kopf
/// 1.37.5, 1.38.0, 1.43.0, 1.44.6 and 1.45.2 `_core/reactor/processing.py`,
/// `title.capitalize()`), lower-cased as the tally keeps it.
const UPDATING: &str = "updating";

/// Live, from the log when it was read, and from the sampled objects when they were:
/// [`decide`] on them.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    let Some(logs) = logs(input) else {
        return Vec::new();
    };
    alone(decide(input.target.name(), logs, samples(input)))
}

/// What [`live`] decides: a change handler (`Handler 'x'`, never a timer or a daemon,
/// which run on purpose and are named `Timer 'x'` and `Daemon 'x'`, kopf
/// `_core/intents/handlers.py`) that succeeded at least [`LOOP_REPEATS`] times on one
/// object in the window, that object's updates processed as often: each success
/// followed an update. kopf stores the diff-base from before the handler ran, so a
/// handler that patches what kopf diffs (spec, labels, annotations) causes the next
/// update itself. An object that someone other than kopf changed after the handler's
/// first success there (its `metadata.managedFields`, when it is sampled) is left out:
/// those updates may be theirs. One finding per handler, naming its objects, the
/// busiest first.
pub(crate) fn decide(target: &str, logs: &LogEvidence, objects: &[ObjectSample]) -> Vec<Finding> {
    let changed_by_others = |t: &kopf_log::Tallied| {
        let first = t
            .first
            .and_then(|f| jiff::Timestamp::new(f.secs, f.nanos as i32).ok());
        objects
            .iter()
            .filter(|o| {
                o.name == t.name
                    && Some(o.namespace.as_str()) == t.namespace.as_deref().or(Some(""))
            })
            .filter_map(|o| o.handling.changed_by_others)
            .any(|at| first.is_some_and(|first| at > first))
    };
    let updates: BTreeMap<(Option<&str>, &str), u64> = logs
        .tally
        .iter()
        .filter(
            |t| matches!(&t.outcome, kopf_log::Outcome::Processed { cause } if cause == UPDATING),
        )
        .map(|t| ((t.namespace.as_deref(), t.name.as_str()), t.count))
        .collect();
    let mut per_handler: BTreeMap<&str, Vec<&kopf_log::Tallied>> = BTreeMap::new();
    for t in logs.tally.iter() {
        let kopf_log::Outcome::Succeeded { kind, id } = &t.outcome else {
            continue;
        };
        let object = (t.namespace.as_deref(), t.name.as_str());
        let updated = updates.get(&object).copied().unwrap_or(0);
        if *kind == HandlerKind::Handler
            && t.count >= LOOP_REPEATS
            && updated >= LOOP_REPEATS
            && !changed_by_others(t)
        {
            per_handler.entry(id).or_default().push(t);
        }
    }
    per_handler
        .into_iter()
        .map(|(id, mut looping)| {
            looping.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
            let busiest = looping[0];
            let object = qualified(busiest.namespace.as_deref(), &busiest.name);
            let others = match looping.len() - 1 {
                0 => String::new(),
                1 => " (and 1 more object)".to_string(),
                n => format!(" (and {n} more objects)"),
            };
            let seen = format!(
                "Handler '{id}' succeeded {} on {object}{others} in the log window, {}, each time after an update",
                times(busiest.count),
                rate(busiest),
            );
            WORDING.finding(
                target,
                &seen,
                Some(format!("[{object}] Handler '{id}' succeeded. ({})", times(busiest.count))),
            )
        })
        .collect()
}

/// How many times, as a bucket (stable from one audit to the next).
fn times(count: u64) -> &'static str {
    match count {
        0..=99 => "10 or more times",
        100..=999 => "100 or more times",
        _ => "1000 or more times",
    }
}

/// How often a pair was counted, as a bucket of the mean interval between its first and
/// last record.
fn rate(t: &kopf_log::Tallied) -> &'static str {
    let (Some(first), Some(last)) = (t.first, t.last) else {
        return "at a rate the log's timestamps do not show";
    };
    let span = (last.secs - first.secs).max(0) as f64 + f64::from(last.nanos) / 1e9
        - f64::from(first.nanos) / 1e9;
    let every = span / t.count.saturating_sub(1).max(1) as f64;
    match every {
        e if e < 1.0 => "more than once a second",
        e if e < 10.0 => "every few seconds",
        e if e < 60.0 => "several times a minute",
        _ => "about once a minute or less often",
    }
}

/// The handlers kopf calls again on each change of their object (on.update for every
/// change of what it diffs; on.field for changes of their field).
const CHANGE_HANDLERS: [&str; 2] = ["on.update", "on.field"];

/// From the source: an update or field handler that writes, on every call, a value that
/// differs each time (the time, a random or unique id) into what kopf diffs of its own
/// object (spec, labels, annotations) through its `patch` (kopf issues 1294, 935). A
/// write under a condition (patch only when different) is not reported.
pub(crate) fn source(h: &Handler) -> Option<SourceFinding> {
    let decorator = std::iter::once(&h.decorator)
        .chain(h.stacked.iter().map(|r| &r.decorator))
        .find(|d| CHANGE_HANDLERS.contains(&d.as_str()))?;
    let (path, at, _) = h
        .self_patches
        .iter()
        .find(|(_, _, every_call)| *every_call)?;
    let seen = format!(
        "@kopf.{decorator} handler {}() writes patch.{path} on every call, with a value that differs each time",
        h.function
    );
    Some(SourceFinding::at(
        WORDING.finding(&handler_target(h), &seen, None),
        at,
    ))
}

#[cfg(test)]
mod tests;

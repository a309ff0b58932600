//! `runtime.dead-watcher`: a background task that must run for as long as the
//! operator does (a watcher, a peering keep-alive or observer) has failed.

use super::{EXITS_ON_DEAD_WATCHER, describe_version, on_log, quote, task_name};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use kopf_log::{BackgroundTask, EventKind, Record};
use std::collections::BTreeMap;

/// Each dead task: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `runtime.dead-watcher`: a background task that must run for as long as the operator
/// does has failed: the watch of a resource, or a peering keep-alive or observer.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Vec<Finding> {
    let version = &logs.version;
    let exits = version.at_least.is_some_and(|v| v >= EXITS_ON_DEAD_WATCHER);
    // Up to 1.44 a restart revives the task, so only the running container counts;
    // from 1.45 the previous container's log says why it exited.
    let previous = logs.previous.values().flatten().filter(|_| exits);
    let mut seen: BTreeMap<String, &Record> = BTreeMap::new();
    for r in logs.records.iter().chain(previous) {
        let vital = matches!(
            r.kind.background_task(),
            Some(
                BackgroundTask::Watcher
                    | BackgroundTask::PeeringKeepAlive
                    | BackgroundTask::PeeringObserver
            )
        );
        let died = matches!(
            r.kind,
            EventKind::WatcherFailed { .. }
                | EventKind::TaskFailed { .. }
                | EventKind::TaskFinished { .. }
        );
        if vital && died {
            seen.entry(task_name(r)).or_insert(r);
        }
    }
    let effect = if exits {
        "kopf 1.45 stops the whole operator on it, so the pod restarts (a crash loop if it keeps failing)".to_string()
    } else if version.at_most.is_some_and(|v| v < EXITS_ON_DEAD_WATCHER) {
        format!(
            "{} does not respawn it: the operator runs on, blind to it, its liveness probe still passing, until it is restarted",
            describe_version(version)
        )
    } else {
        "up to kopf 1.44 it is not respawned (the operator runs on, blind to it, until restarted); kopf 1.45 exits on it".to_string()
    };
    seen.into_iter()
        .map(|(task, record)| {
            finding(
                CheckId::RuntimeDeadWatcher,
                target,
                format!(
                    "kopf's {task} failed: {effect}. Restart the operator, and fix the cause in the traceback (often a permission or an API error)."
                ),
                Some(quote(record)),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;

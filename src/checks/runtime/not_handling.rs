//! `runtime.not-handling`: the operator's pod runs, yet handled objects changed long
//! ago are still not handled (their diff-base shows the old state).

use super::{NAMED_OBJECTS, alone, describe_version, logs, rounded};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{LogEvidence, ObjectSample};
use crate::model::settings::CheckSettings;
use crate::model::source::kopf_version::BOOKMARKS;
use k8s_openapi::api::core::v1::Pod;
use kopf_log::{BackgroundTask, EventKind};
use std::collections::BTreeSet;

/// The objects waiting: decided from the sampled objects and the pods, when the log
/// (for the likely causes) and the objects were read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    let (Some(logs), Ok(objects)) = (logs(input), &input.kopf.objects) else {
        return Vec::new();
    };
    alone(decide(
        input.target.name(),
        &objects.samples,
        &input.target.pods,
        &input.kopf.run.container,
        logs,
        input.settings,
    ))
}

/// `runtime.not-handling`: handled objects whose essence has differed from their
/// diff-base for longer than the threshold while the operator's pod runs: it is alive
/// and its liveness probe passes, yet it stopped handling.
pub(super) fn decide(
    target: &str,
    objects: &[ObjectSample],
    pods: &[Pod],
    container: &str,
    logs: &LogEvidence,
    settings: &CheckSettings,
) -> Option<Finding> {
    if !running(pods, container) {
        return None;
    }
    let threshold = jiff::SignedDuration::try_from(settings.unhandled_after).unwrap_or_default();
    // Resources whose objects carry diff-bases: kopf has change handlers for them.
    let diffed: BTreeSet<usize> = objects
        .iter()
        .filter(|o| o.handling.diffbase)
        .map(|o| o.resource)
        .collect();
    let mut waiting: Vec<(String, jiff::SignedDuration, bool)> = objects
        .iter()
        .filter_map(|o| {
            let h = &o.handling;
            let since = if h.diffbase {
                h.differs.then_some(h.changed_by_others?)?
            } else {
                // The second signal, managedFields: kopf wrote to the object, others
                // changed it later. Only where kopf diffs the resource at all (not for
                // daemons, timers or event handlers alone, which store no diff-base).
                let kopf = h.changed_by_kopf.filter(|_| diffed.contains(&o.resource))?;
                h.changed_by_others.filter(|others| *others > kopf)?
            };
            let waited = settings.now.duration_since(since);
            // kopf wrote to it after the change: it noticed, its handlers did not finish.
            let noticed = h.changed_by_kopf.is_some_and(|kopf| kopf > since);
            (waited > threshold).then(|| (o.qualified_name(), waited, h.in_progress || noticed))
        })
        .collect();
    if waiting.is_empty() {
        return None;
    }
    waiting.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let shown: Vec<String> = waiting
        .iter()
        .take(NAMED_OBJECTS)
        .map(|(name, waited, _)| format!("{name} (over {})", rounded(*waited)))
        .collect();
    let more = match waiting.len().saturating_sub(NAMED_OBJECTS) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let causes = likely_causes(logs, waiting.iter().any(|(_, _, p)| *p));
    Some(finding(
        CheckId::RuntimeNotHandling,
        target,
        format!(
            "The operator's pod runs, yet changes to {}{more} have not been handled: their spec, labels or annotations differ from kopf's last-handled diff-base. Likely causes: {causes}. Restart the operator to recover, then fix the cause (if they merely stopped matching the handlers' labels/annotations/when filters, kopf ignores them on purpose: skip this check for them).",
            shown.join(", ")
        ),
        Some(format!(
            "{} handled object(s) changed and not handled",
            waiting.len()
        )),
    ))
}

/// Whether the kopf container of some pod is running (not waiting, not terminated).
fn running(pods: &[Pod], container: &str) -> bool {
    pods.iter().any(|p| {
        p.status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .any(|cs| {
                cs.name == container && cs.state.as_ref().is_some_and(|s| s.running.is_some())
            })
    })
}

/// What the log and the objects point at, most specific first.
pub(super) fn likely_causes(logs: &LogEvidence, in_progress: bool) -> String {
    let mut causes = Vec::new();
    if logs
        .records
        .iter()
        .any(|r| matches!(r.kind.background_task(), Some(BackgroundTask::Watcher)))
    {
        causes.push("a dead watcher (see runtime.dead-watcher)".to_string());
    }
    let last_peering_turn = logs
        .records
        .iter()
        .rfind(|r| matches!(r.kind, EventKind::PeeringPaused | EventKind::PeeringResumed));
    if last_peering_turn.is_some_and(|r| matches!(r.kind, EventKind::PeeringPaused)) {
        causes.push(
            "a paused peering (another operator of higher or equal priority is alive)".to_string(),
        );
    }
    if in_progress {
        causes.push("a handler that does not finish (kopf noticed the change: its progress marks or writes are on the objects; see runtime.handler-failures)".to_string());
    }
    if logs.version.at_most.is_none_or(|v| v < BOOKMARKS) {
        causes.push(format!(
            "a watch stream that froze silently ({} without settings.watching.server_timeout or client_timeout; fixed by bookmarks in kopf 1.44)",
            describe_version(&logs.version)
        ));
    }
    if causes.is_empty() {
        causes.push(
            "a watch stream that stopped (kopf 1.44+ reconnects an inactive one after 70 s)".into(),
        );
    }
    causes.join("; ")
}

#[cfg(test)]
mod tests;

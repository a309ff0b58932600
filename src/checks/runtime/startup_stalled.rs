//! `runtime.startup-stalled`: the operator has run for minutes without handling
//! anything: kopf never got past its startup.

use super::{NAMED_OBJECTS, alone, logs, quote, rounded};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::bounded::listed;
use crate::model::evidence::{LogEvidence, ObjectSample};
use crate::model::settings::CheckSettings;
use k8s_openapi::api::core::v1::Pod;
use kopf_log::{EventKind, HandlerKind};

/// Decided from the whole log, the pods and the sampled objects, when the log and the
/// objects were read.
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

/// How long the operator's container may run with no handler outcome in its whole log
/// and no mark of kopf on any handled object before `runtime.startup-stalled` fires (the
/// catalogue's default).
const STALLED_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// `runtime.startup-stalled`: the kopf container has run for longer than
/// [`STALLED_AFTER`], all of its log since it started is in the window (so nothing was
/// missed), that log holds no handler outcome (no success, no failure, no processed
/// cause, no peering pause), and handled objects exist but none carries a mark of kopf
/// (diff-base, progress, a finalizer, `status.kopf`, a change by kopf's field manager).
/// kopf runs the startup activities, and waits until every `@kopf.index` has indexed
/// every object, before any other handler (kopf 1.45.2 `_core/reactor/running.py`,
/// `_core/engines/indexing.py`), so a startup handler that never returns, or an index
/// starved by `settings.queueing.worker_limit` (kopf issue 1243), stops it there, its
/// liveness probe still passing. Distinct from `runtime.not-handling`, which compares
/// objects that kopf handled once with their diff-base.
pub(super) fn decide(
    target: &str,
    objects: &[ObjectSample],
    pods: &[Pod],
    container: &str,
    logs: &LogEvidence,
    settings: &CheckSettings,
) -> Option<Finding> {
    let started = latest_start(pods, container)?;
    let window = jiff::SignedDuration::try_from(settings.window).unwrap_or_default();
    let ran = settings.now.duration_since(started);
    if ran <= STALLED_AFTER || ran > window || objects.is_empty() || logs.truncated {
        return None;
    }
    // Activities (login, startup) run before handling, and indexers while kopf waits for
    // the indexing to finish (verbose: `Indexer 'x' succeeded.`, kopf 1.45.2
    // `_core/actions/loggers.py` TerseObjectLogger): neither is an outcome of handling.
    let handles = |kind: HandlerKind| !matches!(kind, HandlerKind::Activity | HandlerKind::Indexer);
    let handled_something = logs.tally.iter().any(|t| match &t.outcome {
        kopf_log::Outcome::Succeeded { kind, .. } | kopf_log::Outcome::Retried { kind, .. } => {
            handles(*kind)
        }
        kopf_log::Outcome::Processed { .. } => true,
    }) || logs.records.iter().any(|r| {
        r.kind.handler().is_some_and(|h| handles(h.kind))
            || matches!(
                r.kind,
                EventKind::CauseProcessed { .. }
                    | EventKind::PeeringPaused
                    | EventKind::PeeringConflict
            )
    });
    if handled_something || objects.iter().any(carries_kopf_marks) {
        return None;
    }
    let mut names: Vec<String> = objects.iter().map(ObjectSample::qualified_name).collect();
    names.sort();
    Some(finding(
        CheckId::RuntimeStartupStalled,
        target,
        format!(
            "The operator has been running for over {} without handling anything: its log since it started shows no handler outcome, and no handled object ({}) carries kopf's marks. kopf never got past its startup: look for an @kopf.on.startup handler that never returns (give it a timeout, move long work into a daemon), @kopf.index handlers with settings.queueing.worker_limit (settings.batching before its rename) below the number of indexed objects (raise or remove the limit: indexing must finish before any handler runs), or a resource it waits for and cannot list. Restarting does not help while the cause stays.",
            rounded(STALLED_AFTER),
            listed(&names, ", ", NAMED_OBJECTS),
        ),
        logs.records.iter().rfind(|r| r.is_kopf()).map(quote),
    ))
}

/// Whether kopf left any mark on an object: a diff-base, progress, a finalizer,
/// `status.kopf`, or a change by its field manager.
fn carries_kopf_marks(o: &ObjectSample) -> bool {
    let h = &o.handling;
    h.diffbase
        || h.in_progress
        || h.changed_by_kopf.is_some()
        || !o.finalizers.is_empty()
        || !o.status_kopf_keys.is_empty()
}

/// When the kopf container of the most recently started running pod started.
fn latest_start(pods: &[Pod], container: &str) -> Option<jiff::Timestamp> {
    pods.iter()
        .flat_map(|p| p.status.iter())
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter(|cs| cs.name == container)
        .filter_map(|cs| cs.state.as_ref()?.running.as_ref()?.started_at.as_ref())
        .map(|t| t.0)
        .max()
}

#[cfg(test)]
mod tests;

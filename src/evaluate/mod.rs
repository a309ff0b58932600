//! The evaluate layer, pure, with the clock passed in: from what gathering found to
//! findings ([`run`]), the conditions they ask for ([`conditions`]), the next status
//! ([`status`]) and the Events worth emitting ([`events`]). No client, no I/O.

pub(crate) mod cluster_audit;
pub(crate) mod conditions;
pub(crate) mod events;
pub(crate) mod lint;
pub(crate) mod run;
pub(crate) mod status;

use crate::api::{Finding, KopfAuditSpec, KopfAuditStatus};
use crate::catalog::CheckId;
use crate::model::evidence::{AuditFailure, Observation, Stall};
use crate::model::settings::AuditSettings;
use events::PlannedEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
pub(crate) use run::{Evaluation, Policy};
pub(crate) use status::pending_status;
use status::{FindingsMerge, MAX_SKIPPED, MAX_TARGETS, cap, merge_conditions, merge_findings};
use std::time::Duration;

/// What an audit came to: the single input of status and Event planning.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    /// The checks ran on gathered evidence.
    Evaluated(Evaluation),
    /// Only a change of the spec or the target can let the audit run: wait for it.
    Stalled(Stall),
    /// The audit could not complete (an API error): retried with back-off, the last
    /// results kept.
    Failed(AuditFailure),
    /// `spec.suspend` is set: the last results are kept.
    Suspended,
}

/// The next status, whether it differs from the stored one, and the Events to emit.
#[derive(Clone, Debug)]
pub(crate) struct StatusUpdate {
    /// The full status to apply.
    pub(crate) status: KopfAuditStatus,
    /// False when only timestamps would change: nothing is written.
    pub(crate) changed: bool,
    /// Transition events, empty in a steady state.
    pub(crate) events: Vec<PlannedEvent>,
    /// The checks that ran and found nothing, by target ([`Evaluation::passed`]): the
    /// report's passes. Empty when no check ran (a failed, stalled or suspended audit).
    /// Status does not carry them: its findings are capped, so what is absent there may
    /// still have been found.
    pub(crate) passed: Vec<(String, CheckId)>,
}

/// Merges an outcome into the stored status; `resolve_after` is the hold-down.
pub(crate) fn next_status(
    stored: Option<&KopfAuditStatus>,
    outcome: &Outcome,
    generation: Option<i64>,
    now: &Time,
    resolve_after: Duration,
) -> StatusUpdate {
    let empty = KopfAuditStatus::default();
    let old = stored.unwrap_or(&empty);
    let mut status = old.clone();
    status.observed_generation = generation;
    let merged = match outcome {
        Outcome::Evaluated(eval) => {
            let merged = merge_findings(&eval.findings, &old.findings, now, resolve_after, |f| {
                eval.is_complete(&f.target, f.check)
            });
            status.targets = eval.targets.iter().take(MAX_TARGETS).cloned().collect();
            status.skipped = eval.skipped.iter().take(MAX_SKIPPED).cloned().collect();
            merged
        }
        Outcome::Failed(_) => FindingsMerge {
            kept: old
                .findings
                .iter()
                .map(|f| Finding {
                    stale: true,
                    ..f.clone()
                })
                .collect(),
            ..Default::default()
        },
        Outcome::Stalled(_) => {
            status.targets.clear();
            status.skipped.clear();
            FindingsMerge::default()
        }
        Outcome::Suspended => FindingsMerge {
            kept: old.findings.clone(),
            ..Default::default()
        },
    };
    if !matches!(outcome, Outcome::Suspended) {
        let (findings, summary) = cap(&merged.kept);
        status.findings = findings;
        status.summary = Some(summary);
    }
    let desired = conditions::desired(outcome, &merged.kept, &old.conditions);
    let (merged_conditions, changes) = merge_conditions(&old.conditions, &desired, generation, now);
    status.conditions = merged_conditions;
    let mut unstamped = status.clone();
    unstamped.last_audit_time = old.last_audit_time.clone();
    let changed = stored.is_none() || unstamped != *old;
    if changed {
        status.last_audit_time = Some(now.clone());
    } else {
        status = old.clone();
    }
    let events = events::plan(old, outcome, &desired, &changes, &merged, &status);
    let passed = match outcome {
        Outcome::Evaluated(eval) => eval.passed.iter().cloned().collect(),
        _ => Vec::new(),
    };
    StatusUpdate {
        status,
        changed,
        events,
        passed,
    }
}

/// The value of the `kopfaudit.dev/requested-at` annotation, cleaned as status echoes
/// it, when `stored` has not answered it yet: a request for an audit now. The
/// annotation is the tenant's to write, up to the API server's 256 KiB: status echoes
/// it cleaned and bounded, as it shows names.
pub(crate) fn unanswered_request(
    stored: &KopfAuditStatus,
    requested: Option<&str>,
) -> Option<String> {
    let requested = crate::model::bounded::clean_name(requested?);
    (stored.last_handled_requested_at.as_ref() != Some(&requested)).then_some(requested)
}

/// Records in `update` that the audit ran for the `requested` value of the
/// `kopfaudit.dev/requested-at` annotation: a new value is echoed in
/// `status.lastHandledRequestedAt`, which is a change worth writing (the requester
/// waits for it), stamped with `now`.
pub(crate) fn acknowledge_request(
    update: &mut StatusUpdate,
    stored: &KopfAuditStatus,
    requested: Option<&str>,
    now: &Time,
) {
    let Some(requested) = unanswered_request(stored, requested) else {
        return;
    };
    update.status.last_handled_requested_at = Some(requested);
    // The deferred request (if any) is answered now.
    update.status.request_deferred_until = None;
    if !update.changed {
        update.changed = true;
        update.status.last_audit_time = Some(now.clone());
    }
}

/// Evaluates what gathering found (or the error that stopped it).
pub(crate) fn evaluate(
    spec: &KopfAuditSpec,
    settings: &AuditSettings,
    gathered: Result<Observation, AuditFailure>,
    policy: &Policy,
) -> Outcome {
    match gathered {
        Ok(Observation::Evidence(evidence)) => {
            Outcome::Evaluated(run::evaluate(spec, settings, &evidence, policy))
        }
        Ok(Observation::Stalled(stall)) => Outcome::Stalled(stall),
        Ok(Observation::Suspended) => Outcome::Suspended,
        Err(failure) => Outcome::Failed(failure),
    }
}

#[cfg(test)]
mod tests;

//! Event planning from typed changes: at most one headline Event when the Stalled or
//! Compliant condition transitions (or the audit is suspended), plus one Event per
//! finding raised or resolved between two complete audits. Nothing in a steady state;
//! nothing for a finding kept stale or waiting out its hold-down.

use super::Outcome;
use super::conditions::DesiredCondition;
use super::status::{Change, FindingsMerge};
use crate::api::{Finding, KopfAuditStatus};
use crate::catalog::{ConditionReason, ConditionStatus, ConditionType, EventReason, Severity};
use crate::model::bounded::{MAX_NOTE_BYTES, clean};
use std::collections::{BTreeMap, BTreeSet};

/// An Event the publish phase should emit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PlannedEvent {
    /// `Warning` for problems, else `Normal`.
    pub(crate) warning: bool,
    /// CamelCase reason.
    pub(crate) reason: EventReason,
    /// Under 1024 characters; names the check and the fix.
    pub(crate) note: String,
}

/// The Events for what an audit changed. `old` is the status before the audit, `new`
/// the status after it (capped), `changes` how each desired condition merged.
pub(crate) fn plan(
    old: &KopfAuditStatus,
    outcome: &Outcome,
    desired: &[DesiredCondition],
    changes: &BTreeMap<ConditionType, Change>,
    merged: &FindingsMerge,
    new: &KopfAuditStatus,
) -> Vec<PlannedEvent> {
    let transitioned = |t| changes.get(&t) == Some(&Change::Transitioned);
    let want = |t| desired.iter().find(|d| d.type_ == t);
    let suspended =
        want(ConditionType::Ready).is_some_and(|r| r.reason == ConditionReason::Suspended);
    let mut events = Vec::new();
    if transitioned(ConditionType::Stalled)
        || transitioned(ConditionType::Compliant)
        || (suspended && transitioned(ConditionType::Ready))
    {
        events.extend(headline(desired, new));
    }
    if matches!(outcome, Outcome::Evaluated(_)) && has_baseline(old) {
        events.extend(finding_events(merged, new));
    }
    events
}

/// Whether the stored findings are those of an earlier complete audit, so that a
/// difference is news. The first audit and the return of a lost target have only a
/// headline Event.
fn has_baseline(old: &KopfAuditStatus) -> bool {
    let reason = |t: ConditionType| {
        old.conditions
            .iter()
            .find(|c| c.type_ == t.as_str())
            .and_then(|c| ConditionReason::parse(&c.reason))
    };
    matches!(
        reason(ConditionType::Ready),
        Some(ConditionReason::AuditSucceeded | ConditionReason::AuditFailed)
    ) && !matches!(
        reason(ConditionType::Compliant),
        None | Some(ConditionReason::AuditPending | ConditionReason::TargetStalled)
    )
}

fn finding_events(merged: &FindingsMerge, new: &KopfAuditStatus) -> Vec<PlannedEvent> {
    let shown: BTreeSet<(crate::catalog::CheckId, &str)> = new
        .findings
        .iter()
        .map(|f| (f.check, f.target.as_str()))
        .collect();
    let raised = merged
        .raised
        .iter()
        .filter(|f| shown.contains(&(f.check, f.target.as_str())))
        .map(|f| PlannedEvent {
            warning: f.severity >= Severity::Warning,
            reason: EventReason::FindingRaised,
            note: clip(&format!(
                "{} ({}) on {}: {}",
                f.check, f.severity, f.target, f.message
            )),
        });
    let resolved = merged.resolved.iter().map(|f| PlannedEvent {
        warning: false,
        reason: EventReason::FindingResolved,
        note: clip(&format!("{} on {} is resolved.", f.check, f.target)),
    });
    raised.chain(resolved).collect()
}

/// The headline Event of the audit's new state, from the desired conditions.
fn headline(desired: &[DesiredCondition], new: &KopfAuditStatus) -> Option<PlannedEvent> {
    let want = |t| desired.iter().find(|d| d.type_ == t);
    let ready = want(ConditionType::Ready)?;
    if ready.reason == ConditionReason::Suspended {
        return Some(PlannedEvent {
            warning: false,
            reason: EventReason::Suspended,
            note: clip(&ready.message),
        });
    }
    if let Some(stalled) = want(ConditionType::Stalled)
        && stalled.status == ConditionStatus::True
    {
        let reason = if stalled.reason == ConditionReason::TargetNotFound {
            EventReason::TargetMissing
        } else {
            EventReason::AuditStalled
        };
        return Some(PlannedEvent {
            warning: true,
            reason,
            note: clip(&stalled.message),
        });
    }
    let compliant = want(ConditionType::Compliant)?;
    let summary = new.summary.clone().unwrap_or_default();
    let counts = format!(
        "{} error(s), {} warning(s), {} info(s)",
        summary.errors, summary.warnings, summary.infos
    );
    Some(match compliant.status {
        ConditionStatus::True => PlannedEvent {
            warning: false,
            reason: EventReason::AuditPassed,
            note: clip(&format!("Compliant: {counts}.")),
        },
        ConditionStatus::False => PlannedEvent {
            warning: true,
            reason: EventReason::NonCompliant,
            note: clip(&format!(
                "Not compliant ({counts}): {}. See status.findings for the fixes.",
                serious_ids(&new.findings)
            )),
        },
        ConditionStatus::Unknown => PlannedEvent {
            warning: false,
            reason: EventReason::ComplianceUnknown,
            note: clip(&format!("{} ({counts}).", compliant.message)),
        },
    })
}

/// The IDs of the findings at warning or above, sorted, comma-separated.
fn serious_ids(findings: &[Finding]) -> String {
    let ids: BTreeSet<&str> = findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .map(|f| f.check.as_str())
        .collect();
    ids.into_iter().collect::<Vec<_>>().join(", ")
}

/// Event notes are capped at 1 KiB by the API; keep them under, and as clean as status.
fn clip(text: &str) -> String {
    clean(text, MAX_NOTE_BYTES)
}

//! The next status: findings merged with the stored ones (kept while an area cannot be
//! read, resolved only after staying absent for the hold-down), capped, and conditions
//! merged by metav1.Condition's rules (`lastTransitionTime` moves only when the status
//! flips). Written only when something other than timestamps changed.

use super::conditions::{self, DesiredCondition};
use crate::api::{Finding, KopfAuditStatus, Summary};
use crate::catalog::{CheckId, ConditionType, Severity};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// At most this many findings are kept in status, most severe first.
pub(crate) const MAX_FINDINGS: usize = 50;

/// At most this many targets are shown in status (a selector may match any number of
/// Deployments); the findings and conditions still cover them all. With the bounds of
/// `model::bounded`, a full status stays far below etcd's limit.
pub(crate) const MAX_TARGETS: usize = 20;

/// At most this many skipped checks are shown in status (one per exempted check and
/// target).
pub(crate) const MAX_SKIPPED: usize = 50;

/// How one condition changed when merged; decides whether to write and to emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Identical: no write needed for it.
    Unchanged,
    /// Message or observedGeneration changed: write, no Event.
    Updated,
    /// Status or reason changed (or it is new): write, and it is a transition.
    Transitioned,
}

/// What merging the findings did.
#[derive(Debug, Default)]
pub(crate) struct FindingsMerge {
    /// The findings the status keeps, most severe first, uncapped.
    pub(crate) kept: Vec<Finding>,
    /// Findings seen for the first time (by check and target).
    pub(crate) raised: Vec<Finding>,
    /// Findings absent for the hold-down: they leave the status (one per check and target).
    pub(crate) resolved: Vec<Finding>,
}

/// The status written on first sight: every condition present, Reconciling=True.
pub(crate) fn pending_status(generation: Option<i64>, now: &Time) -> KopfAuditStatus {
    let (conditions, _) = merge_conditions(&[], &conditions::pending(), generation, now);
    KopfAuditStatus {
        observed_generation: generation,
        conditions,
        ..Default::default()
    }
}

/// A finding's identity across audits: its check and target.
fn identity(f: &Finding) -> (CheckId, &str) {
    (f.check, f.target.as_str())
}

/// Merges fresh findings with the stored ones: a fresh finding keeps the `since` of its
/// stored twin; a stored finding whose area could not be read (`complete` false) is kept
/// stale; one that a complete audit no longer finds is kept with `absentSince` until the
/// hold-down passes, then resolved.
pub(crate) fn merge_findings(
    fresh: &[Finding],
    stored: &[Finding],
    now: &Time,
    resolve_after: Duration,
    complete: impl Fn(&Finding) -> bool,
) -> FindingsMerge {
    let mut out = FindingsMerge::default();
    let stored_by_id: BTreeMap<(CheckId, &str), &Finding> =
        stored.iter().rev().map(|s| (identity(s), s)).collect();
    let fresh_ids: BTreeSet<(CheckId, &str)> = fresh.iter().map(identity).collect();
    for f in fresh {
        let twin = stored_by_id.get(&identity(f));
        if twin.is_none() && !out.raised.iter().any(|r| identity(r) == identity(f)) {
            out.raised.push(f.clone());
        }
        out.kept.push(Finding {
            since: Some(
                twin.and_then(|s| s.since.clone())
                    .unwrap_or_else(|| now.clone()),
            ),
            stale: false,
            absent_since: None,
            ..f.clone()
        });
    }
    for s in stored.iter().filter(|s| !fresh_ids.contains(&identity(s))) {
        if !complete(s) {
            out.kept.push(Finding {
                stale: true,
                ..s.clone()
            });
            continue;
        }
        let absent = s.absent_since.clone().unwrap_or_else(|| now.clone());
        let held = now.0.duration_since(absent.0).unsigned_abs();
        if held >= resolve_after {
            if !out.resolved.iter().any(|r| identity(r) == identity(s)) {
                out.resolved.push(s.clone());
            }
        } else {
            out.kept.push(Finding {
                stale: false,
                absent_since: Some(absent),
                ..s.clone()
            });
        }
    }
    Finding::sort(&mut out.kept);
    out
}

/// The first [`MAX_FINDINGS`] findings and the counts of all.
pub(crate) fn cap(findings: &[Finding]) -> (Vec<Finding>, Summary) {
    let mut summary = Summary::default();
    for f in findings {
        match f.severity {
            Severity::Error => summary.errors += 1,
            Severity::Warning => summary.warnings += 1,
            Severity::Info => summary.infos += 1,
        }
    }
    let kept: Vec<Finding> = findings.iter().take(MAX_FINDINGS).cloned().collect();
    summary.omitted = u32::try_from(findings.len().saturating_sub(kept.len())).unwrap_or(u32::MAX);
    (kept, summary)
}

/// Merges desired conditions into the stored ones, keeping `lastTransitionTime` unless
/// the status flips, and reports each condition's change. Stored conditions the desired
/// list does not name are kept as they are.
pub(crate) fn merge_conditions(
    stored: &[Condition],
    desired: &[DesiredCondition],
    generation: Option<i64>,
    now: &Time,
) -> (Vec<Condition>, BTreeMap<ConditionType, Change>) {
    let mut changes = BTreeMap::new();
    let mut merged: Vec<Condition> = Vec::with_capacity(ConditionType::ALL.len());
    for type_ in ConditionType::ALL {
        let old = stored.iter().find(|c| c.type_ == type_.as_str());
        let Some(want) = desired.iter().find(|d| d.type_ == type_) else {
            merged.extend(old.cloned());
            continue;
        };
        let status_same = old.is_some_and(|c| c.status == want.status.as_str());
        let change = match old {
            None => Change::Transitioned,
            Some(c) if !status_same || c.reason != want.reason.as_str() => Change::Transitioned,
            Some(c) if c.message != want.message || c.observed_generation != generation => {
                Change::Updated
            }
            Some(_) => Change::Unchanged,
        };
        let last_transition_time = match old {
            Some(c) if status_same => c.last_transition_time.clone(),
            _ => now.clone(),
        };
        merged.push(Condition {
            type_: type_.as_str().to_string(),
            status: want.status.as_str().to_string(),
            reason: want.reason.as_str().to_string(),
            message: want.message.clone(),
            observed_generation: generation,
            last_transition_time,
        });
        changes.insert(type_, change);
    }
    (merged, changes)
}

//! The conditions an outcome asks for, typed: the kstatus trio (Ready, Reconciling,
//! Stalled), one condition per area and the Compliant roll-up. An area that could not
//! be read is not declared compliant: a transient failure keeps the last verdict, an
//! obstacle (forbidden, outside the namespace) makes it Unknown with the reason.

use super::Outcome;
use super::run::{AreaState, Evaluation};
use crate::api::Finding;
use crate::catalog::{Area, ConditionReason, ConditionStatus, ConditionType, Severity};
use crate::model::bounded::{MAX_CONDITION_MESSAGE_BYTES, clean};
use crate::model::evidence::Obstacle;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::collections::BTreeSet;

/// What the evaluation wants a condition to say; timestamps are added when merging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DesiredCondition {
    /// Which condition.
    pub(crate) type_: ConditionType,
    /// Its status.
    pub(crate) status: ConditionStatus,
    /// Why, in CamelCase.
    pub(crate) reason: ConditionReason,
    /// What a person can act on.
    pub(crate) message: String,
}

impl DesiredCondition {
    /// A condition whose message is [`clean`]ed: it can quote an API error, a
    /// selector's error or a target's name.
    fn new(
        type_: ConditionType,
        status: ConditionStatus,
        reason: ConditionReason,
        message: impl Into<String>,
    ) -> Self {
        DesiredCondition {
            type_,
            status,
            reason,
            message: clean(&message.into(), MAX_CONDITION_MESSAGE_BYTES),
        }
    }
}

use ConditionReason as R;
use ConditionStatus as S;
use ConditionType as T;

/// The kstatus trio for one state of the audit.
fn trio(ready: S, reconciling: S, stalled: S, reason: R, message: &str) -> [DesiredCondition; 3] {
    [
        DesiredCondition::new(T::Ready, ready, reason, message),
        DesiredCondition::new(T::Reconciling, reconciling, reason, message),
        DesiredCondition::new(T::Stalled, stalled, reason, message),
    ]
}

/// The conditions an outcome asks for; `findings` are the ones the next status keeps
/// (fresh, stale and not yet resolved) and `stored` the conditions before this audit.
/// Conditions not listed keep their stored value.
pub(crate) fn desired(
    outcome: &Outcome,
    findings: &[Finding],
    stored: &[Condition],
) -> Vec<DesiredCondition> {
    match outcome {
        Outcome::Evaluated(eval) => {
            let mut out = trio(
                S::True,
                S::False,
                S::False,
                R::AuditSucceeded,
                "The audit ran for the current generation.",
            )
            .to_vec();
            let areas: Vec<DesiredCondition> = Area::ALL
                .iter()
                .filter_map(|a| area_condition(*a, eval, findings, stored))
                .collect();
            out.push(compliant(&areas));
            out.extend(areas);
            out
        }
        Outcome::Suspended => trio(
            S::False,
            S::False,
            S::False,
            R::Suspended,
            "spec.suspend is true: no audits run; the last results are kept.",
        )
        .to_vec(),
        Outcome::Failed(why) => {
            let message = format!(
                "The audit could not complete and is retried with back-off; the last results are kept: {why}"
            );
            vec![
                DesiredCondition::new(T::Ready, S::False, R::AuditFailed, &message),
                DesiredCondition::new(T::Reconciling, S::True, R::AuditFailed, &message),
            ]
        }
        Outcome::Stalled(stall) => {
            let mut out = trio(S::False, S::False, S::True, stall.reason, &stall.message).to_vec();
            let unknown = "The audit is stalled; see the Stalled condition.";
            out.push(DesiredCondition::new(
                T::Compliant,
                S::Unknown,
                R::TargetStalled,
                unknown,
            ));
            out.extend(Area::ALL.iter().filter_map(|a| {
                let type_ = T::for_area(*a)?;
                Some(DesiredCondition::new(
                    type_,
                    S::Unknown,
                    R::TargetStalled,
                    unknown,
                ))
            }));
            out
        }
    }
}

/// The conditions written the first time a KopfAudit is seen, before its first audit.
pub(crate) fn pending() -> Vec<DesiredCondition> {
    let msg = "The first audit is running.";
    ConditionType::ALL
        .iter()
        .map(|t| {
            let status = if *t == T::Reconciling {
                S::True
            } else {
                S::Unknown
            };
            DesiredCondition::new(*t, status, R::AuditPending, msg)
        })
        .collect()
}

/// The stored verdict of a condition, when it came from a complete evaluation.
fn stored_verdict(stored: &[Condition], type_: ConditionType) -> Option<ConditionStatus> {
    let c = stored.iter().find(|c| c.type_ == type_.as_str())?;
    match R::parse(&c.reason)? {
        R::NoFindings => Some(S::True),
        R::FindingsPresent => Some(S::False),
        _ => None,
    }
}

fn area_condition(
    area: Area,
    eval: &Evaluation,
    findings: &[Finding],
    stored: &[Condition],
) -> Option<DesiredCondition> {
    let type_ = T::for_area(area)?;
    let serious: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.check.area() == area && f.severity >= Severity::Warning)
        .collect();
    let found = || {
        let ids: BTreeSet<&str> = serious.iter().map(|f| f.check.as_str()).collect();
        let ids: Vec<&str> = ids.into_iter().collect();
        format!(
            "{} finding(s) at warning or above: {}.",
            serious.len(),
            ids.join(", ")
        )
    };
    let clean = || format!("No {} finding at warning or above.", area.prefix());
    let noted = |message: String| {
        eval.notes
            .get(&area)
            .into_iter()
            .flatten()
            .fold(message, |m, note| m + " " + note)
    };
    Some(match eval.area(area) {
        AreaState::Evaluated if serious.is_empty() => {
            DesiredCondition::new(type_, S::True, R::NoFindings, noted(clean()))
        }
        AreaState::Evaluated => {
            DesiredCondition::new(type_, S::False, R::FindingsPresent, noted(found()))
        }
        AreaState::NotKopf(message) => {
            DesiredCondition::new(type_, S::Unknown, R::NotKopf, message)
        }
        AreaState::Partial(reason, why) if serious.is_empty() => {
            DesiredCondition::new(type_, S::Unknown, reason, why)
        }
        AreaState::Partial(_, why) => {
            DesiredCondition::new(type_, S::False, R::FindingsPresent, found() + " " + &why)
        }
        AreaState::Unavailable(u) if u.why == Obstacle::Failed => {
            let kept = format!(
                " This audit could not read the area ({}); the verdict and findings of the last complete audit are kept.",
                u.message
            );
            match stored_verdict(stored, type_) {
                _ if !serious.is_empty() => {
                    DesiredCondition::new(type_, S::False, R::FindingsPresent, found() + &kept)
                }
                Some(S::True) => {
                    DesiredCondition::new(type_, S::True, R::NoFindings, clean() + &kept)
                }
                _ => DesiredCondition::new(type_, S::Unknown, R::GatherFailed, u.message),
            }
        }
        AreaState::Unavailable(u) => {
            let stale = findings
                .iter()
                .filter(|f| f.check.area() == area && f.stale)
                .count();
            let message = if stale > 0 {
                format!(
                    "{} {stale} finding(s) of the last complete audit are kept, marked stale.",
                    u.message
                )
            } else {
                u.message.clone()
            };
            DesiredCondition::new(type_, S::Unknown, u.reason(), message)
        }
    })
}

fn compliant(areas: &[DesiredCondition]) -> DesiredCondition {
    let names = |status: S| -> Vec<&str> {
        areas
            .iter()
            .filter(|c| c.status == status)
            .map(|c| c.type_.as_str())
            .collect()
    };
    let not_compliant = names(S::False);
    let unknown = names(S::Unknown);
    if !not_compliant.is_empty() {
        DesiredCondition::new(
            T::Compliant,
            S::False,
            R::AreasNotCompliant,
            format!("Not compliant: {}.", not_compliant.join(", ")),
        )
    } else if !unknown.is_empty() {
        DesiredCondition::new(
            T::Compliant,
            S::Unknown,
            R::AreasUnknown,
            format!("Undecided: {}.", unknown.join(", ")),
        )
    } else {
        DesiredCondition::new(
            T::Compliant,
            S::True,
            R::AllAreasCompliant,
            "All areas are compliant.",
        )
    }
}

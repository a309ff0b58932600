//! Condition types and reasons, defined once, and the metav1.Condition merge rules:
//! `lastTransitionTime` moves only when the status flips; a change of status or reason
//! is a transition worth an Event.

use crate::checks::Area;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use std::fmt;

/// Every condition type the auditor writes; exactly these appear in `status.conditions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConditionType {
    /// The audit ran for the current generation (kstatus summary).
    Ready,
    /// An audit of the current generation is in progress.
    Reconciling,
    /// The audit cannot run: target missing, refused, invalid.
    Stalled,
    /// Roll-up of the five area conditions.
    Compliant,
    /// No workload finding at warning or above.
    WorkloadCompliant,
    /// No RBAC finding at warning or above.
    RbacCompliant,
    /// No events finding at warning or above.
    EventsCompliant,
    /// No persistence finding at warning or above.
    PersistenceCompliant,
    /// No runtime finding at warning or above.
    RuntimeHealthy,
}

impl ConditionType {
    /// Every type, in the order they are written to status.
    pub const ALL: [ConditionType; 9] = [
        ConditionType::Ready,
        ConditionType::Reconciling,
        ConditionType::Stalled,
        ConditionType::Compliant,
        ConditionType::WorkloadCompliant,
        ConditionType::RbacCompliant,
        ConditionType::EventsCompliant,
        ConditionType::PersistenceCompliant,
        ConditionType::RuntimeHealthy,
    ];

    /// The `type` string in status.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Reconciling => "Reconciling",
            ConditionType::Stalled => "Stalled",
            ConditionType::Compliant => "Compliant",
            ConditionType::WorkloadCompliant => "WorkloadCompliant",
            ConditionType::RbacCompliant => "RBACCompliant",
            ConditionType::EventsCompliant => "EventsCompliant",
            ConditionType::PersistenceCompliant => "PersistenceCompliant",
            ConditionType::RuntimeHealthy => "RuntimeHealthy",
        }
    }

    /// The condition that reports an area.
    pub fn for_area(area: Area) -> ConditionType {
        match area {
            Area::Workload => ConditionType::WorkloadCompliant,
            Area::Rbac => ConditionType::RbacCompliant,
            Area::Events => ConditionType::EventsCompliant,
            Area::Persistence => ConditionType::PersistenceCompliant,
            Area::Runtime => ConditionType::RuntimeHealthy,
        }
    }

    /// What `True` means, for the README.
    pub fn meaning(self) -> &'static str {
        match self {
            ConditionType::Ready => "the audit ran for the current generation",
            ConditionType::Reconciling => "an audit of the current generation is in progress",
            ConditionType::Stalled => {
                "the audit cannot run (target missing, cross-namespace refused, API errors)"
            }
            ConditionType::Compliant => "all five area conditions are True",
            ConditionType::WorkloadCompliant => {
                "no workload finding (Deployment, pods) at warning or above"
            }
            ConditionType::RbacCompliant => {
                "no RBAC finding (the ServiceAccount's permissions) at warning or above"
            }
            ConditionType::EventsCompliant => {
                "no events finding (how state surfaces as Events) at warning or above"
            }
            ConditionType::PersistenceCompliant => {
                "no persistence finding (kopf's marks on handled objects and CRDs) at warning or above"
            }
            ConditionType::RuntimeHealthy => {
                "no runtime finding (the operator's logs about its own health) at warning or above"
            }
        }
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A condition's status, as metav1.Condition spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// It could not be decided; the reason says why.
    Unknown,
}

impl Status {
    /// The `status` string in status.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }

    /// `True` when `holds`, else `False`.
    pub fn from_bool(holds: bool) -> Status {
        if holds { Status::True } else { Status::False }
    }
}

macro_rules! define_reasons {
    ($( $variant:ident: $doc:literal; )*) => {
        /// Every CamelCase reason the auditor writes into conditions and Events.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Reason {
            $( #[doc = $doc] $variant, )*
        }

        impl Reason {
            /// Every reason, for the README.
            pub const ALL: &'static [Reason] = &[$(Reason::$variant),*];

            /// The CamelCase string.
            pub fn as_str(self) -> &'static str {
                match self { $(Reason::$variant => stringify!($variant),)* }
            }

            /// What the reason means, for the README.
            pub fn meaning(self) -> &'static str {
                match self { $(Reason::$variant => $doc,)* }
            }
        }
    };
}

define_reasons! {
    AuditPending: "The KopfAudit was just seen; its first audit is running.";
    AuditSucceeded: "The audit ran for the current generation.";
    AuditFailed: "The audit could not complete (an API error); it is retried with back-off.";
    TargetNotFound: "The target Deployment (or selector) matches nothing in the namespace.";
    CrossNamespaceRefused: "The target is in another namespace and the auditor does not allow cross-namespace targets.";
    Suspended: "spec.suspend is true: no audits run.";
    NoFindings: "No finding at warning or above in this area.";
    FindingsPresent: "At least one finding at warning or above; see status.findings.";
    Forbidden: "The auditor may not read what this area needs; the message names the permission.";
    NotKopf: "The target runs no kopf operator, so kopf-specific checks do not apply.";
    NotAudited: "This area is not audited by this version of kopf-audit.";
    TargetStalled: "The area was not evaluated because the audit is stalled.";
    AreasNotCompliant: "At least one area condition is False.";
    AreasUnknown: "At least one area condition is Unknown and none is False.";
    AllAreasCompliant: "All five area conditions are True.";
    FindingRaised: "Event: a finding appeared.";
    FindingResolved: "Event: a finding went away.";
    TargetMissing: "Event: the audit stalled because its target is gone.";
    AuditStalled: "Event: the audit stalled for another reason.";
    NonCompliant: "Event: the audit turned non-compliant.";
    AuditPassed: "Event: the audit turned compliant.";
    ComplianceUnknown: "Event: compliance can no longer be decided.";
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the evaluation wants a condition to say; timestamps are added when merging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredCondition {
    /// Which condition.
    pub type_: ConditionType,
    /// Its status.
    pub status: Status,
    /// Why, in CamelCase.
    pub reason: Reason,
    /// What a person can act on.
    pub message: String,
}

impl DesiredCondition {
    /// Shorthand for building a desired condition.
    pub fn new(
        type_: ConditionType,
        status: Status,
        reason: Reason,
        message: impl Into<String>,
    ) -> Self {
        DesiredCondition {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }
}

/// How one condition changed when merged; decides whether to write and to emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Identical apart from nothing: no write needed for it.
    Unchanged,
    /// Message or observedGeneration changed: write, no Event.
    Updated,
    /// Status or reason changed (or it is new): write, and it is a transition.
    Transitioned,
}

/// Merges desired conditions into the stored ones, keeping `lastTransitionTime` unless
/// the status flips, and reports each condition's change.
pub fn merge(
    stored: &[Condition],
    desired: &[DesiredCondition],
    generation: Option<i64>,
    now: &Time,
) -> (Vec<Condition>, Vec<(ConditionType, Change)>) {
    let mut merged = Vec::with_capacity(desired.len());
    let mut changes = Vec::with_capacity(desired.len());
    for want in desired {
        let old = stored.iter().find(|c| c.type_ == want.type_.as_str());
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
            type_: want.type_.as_str().to_string(),
            status: want.status.as_str().to_string(),
            reason: want.reason.as_str().to_string(),
            message: want.message.clone(),
            observed_generation: generation,
            last_transition_time,
        });
        changes.push((want.type_, change));
    }
    (merged, changes)
}

/// Finds a condition's status in a stored list.
pub fn status_of(conditions: &[Condition], type_: ConditionType) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == type_.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("valid"))
    }

    fn want(status: Status, reason: Reason, msg: &str) -> DesiredCondition {
        DesiredCondition::new(ConditionType::WorkloadCompliant, status, reason, msg)
    }

    #[test]
    fn new_condition_is_a_transition_stamped_now() {
        let (merged, changes) = merge(
            &[],
            &[want(Status::True, Reason::NoFindings, "ok")],
            Some(1),
            &at(10),
        );
        assert_eq!(changes[0].1, Change::Transitioned);
        assert_eq!(merged[0].last_transition_time, at(10));
        assert_eq!(merged[0].type_, "WorkloadCompliant");
        assert_eq!(merged[0].observed_generation, Some(1));
    }

    #[test]
    fn same_status_keeps_the_transition_time() {
        let (first, _) = merge(
            &[],
            &[want(Status::True, Reason::NoFindings, "ok")],
            Some(1),
            &at(10),
        );
        let (second, changes) = merge(
            &first,
            &[want(Status::True, Reason::NoFindings, "ok")],
            Some(1),
            &at(99),
        );
        assert_eq!(changes[0].1, Change::Unchanged);
        assert_eq!(second, first);
        let (third, changes) = merge(
            &first,
            &[want(Status::True, Reason::NoFindings, "ok, reworded")],
            Some(2),
            &at(99),
        );
        assert_eq!(changes[0].1, Change::Updated);
        assert_eq!(third[0].last_transition_time, at(10));
    }

    #[test]
    fn flip_or_new_reason_is_a_transition() {
        let (first, _) = merge(
            &[],
            &[want(Status::True, Reason::NoFindings, "ok")],
            Some(1),
            &at(10),
        );
        let (flipped, changes) = merge(
            &first,
            &[want(Status::False, Reason::FindingsPresent, "bad")],
            Some(1),
            &at(20),
        );
        assert_eq!(changes[0].1, Change::Transitioned);
        assert_eq!(flipped[0].last_transition_time, at(20));
        let (_, changes) = merge(
            &first,
            &[want(Status::True, Reason::Suspended, "ok")],
            Some(1),
            &at(30),
        );
        assert_eq!(changes[0].1, Change::Transitioned);
    }
}

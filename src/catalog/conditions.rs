//! Condition types, condition statuses, condition reasons and Event reasons, each
//! defined once: dashboards, `kubectl wait`, Argo CD and alert rules match on these
//! strings, so they are public API.

use super::checks::Area;
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
    /// `None` for the lint-only source area.
    pub fn for_area(area: Area) -> Option<ConditionType> {
        match area {
            Area::Workload => Some(ConditionType::WorkloadCompliant),
            Area::Rbac => Some(ConditionType::RbacCompliant),
            Area::Events => Some(ConditionType::EventsCompliant),
            Area::Persistence => Some(ConditionType::PersistenceCompliant),
            Area::Runtime => Some(ConditionType::RuntimeHealthy),
            Area::Source => None,
        }
    }

    /// What `True` means, for the reference.
    pub fn meaning(self) -> &'static str {
        match self {
            ConditionType::Ready => "the audit ran for the current generation",
            ConditionType::Reconciling => "an audit of the current generation is in progress",
            ConditionType::Stalled => {
                "the audit cannot run until the spec or the target changes (target missing, cross-namespace refused, invalid selector)"
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
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// It could not be decided; the reason says why.
    Unknown,
}

impl ConditionStatus {
    /// The `status` string in status.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// Defines a string enum with a doc per variant, `ALL`, `as_str`, `parse` and `meaning`.
macro_rules! define_words {
    ($(#[$doc:meta])* $name:ident { $( $variant:ident: $meaning:literal; )* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( #[doc = $meaning] $variant, )*
        }

        impl $name {
            /// Every value, for the reference.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The CamelCase string.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => stringify!($variant),)* }
            }

            /// Reads a stored string back; `None` for anything this version does not write.
            pub fn parse(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|r| r.as_str() == text)
            }

            /// What it means, for the reference.
            pub fn meaning(self) -> &'static str {
                match self { $($name::$variant => $meaning,)* }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

define_words! {
    /// Every CamelCase reason the auditor writes into conditions.
    ConditionReason {
        AuditPending: "The KopfAudit was just seen; its first audit is running.";
        AuditSucceeded: "The audit ran for the current generation.";
        AuditFailed: "The audit could not complete (an API error); it is retried with back-off, and the last results are kept.";
        InvalidSpec: "The spec cannot be used as written (e.g. an invalid label selector); the audit waits for a change.";
        InternalError: "Auditing this target's data hit a defect of kopf-audit (the message quotes it); the auditor kept running, the other audits are unaffected, and this one is tried again at the next interval.";
        TargetNotFound: "The target Deployment (or selector) matches nothing in the namespace.";
        TargetTooLarge: "The target's Deployments and pods are over what the auditor reads for one audit (16 MiB, or one object over 8 MiB); the message names the list that went over. Narrow spec.target, or shrink what the Deployment and its pods carry.";
        CrossNamespaceRefused: "The target is in another namespace and the auditor does not allow cross-namespace targets.";
        Suspended: "spec.suspend is true: no audits run.";
        NoFindings: "No finding at warning or above in this area.";
        FindingsPresent: "At least one finding at warning or above; see status.findings.";
        Forbidden: "The auditor may not read what this area needs; the message names the permission.";
        OutsideNamespace: "The area needs objects outside the KopfAudit's namespace, which the auditor reads only when started with --allow-cross-namespace.";
        GatherFailed: "The area could not be read this time (an API error); the last results are kept, marked stale.";
        NoRunningPod: "The target has no pod that ever ran, so it has no log to read: the log-based areas wait for one (an empty log is not a healthy one).";
        AuthorizationUndecided: "The API server could not decide some of the operator's permissions (a SubjectAccessReview answered with an evaluationError, quoted in the message); they are asked again at the next audit.";
        LogsPartial: "Part of the log window was read but not kept (more distinct records than the auditor keeps): findings seen are reported, but none is resolved and the area is not declared compliant.";
        ObjectsPartial: "Some handled objects were listed but not read: their JSON's shape (many tiny maps, deep nesting) would cost the auditor more memory than it spends on one object. Nothing is concluded from them: findings seen are reported, but none is resolved and the area is not declared compliant.";
        NothingHandled: "No resource the operator handles is known (spec.handledResources is empty, and neither its log nor its RBAC names one): the events and persistence areas read no objects or Events, so they are not declared compliant; list the resources in spec.handledResources.";
        NotInFiles: "`kopf-audit lint` only: the area needs what exists only in a running cluster (logs, Events, handled objects, peering), or a role the linted files do not define.";
        SecretsNotSampled: "The operator handles only core Secrets, and the auditor never reads one, since a Secret carries credentials and data (the chart grants no Secrets read, on purpose): no handled object was sampled, so the persistence area is not declared compliant. Its log, its Events and its RBAC on Secrets are still checked; nothing is to be granted.";
        NotKopf: "The target runs no kopf operator, so kopf-specific checks do not apply.";
        TargetStalled: "The area was not evaluated because the audit is stalled.";
        AreasNotCompliant: "At least one area condition is False.";
        AreasUnknown: "At least one area condition is Unknown and none is False.";
        AllAreasCompliant: "All five area conditions are True.";
        DiscoverySucceeded: "ClusterKopfAudit only: discovery ran for the current generation and every operator found is audited, by its generated KopfAudit or by one written elsewhere that stands in for it (spec.declaredAudits).";
        DiscoveryFailed: "ClusterKopfAudit only: discovery or a KopfAudit write failed (an API error, quoted with how many writes failed); the other writes are made all the same, it is retried with back-off, and the generated KopfAudits are kept.";
    }
}

define_words! {
    /// Every CamelCase reason of the auditor's Events: alerting matches on these.
    EventReason {
        FindingRaised: "A finding appeared.";
        FindingResolved: "A finding went away and stayed away for the hold-down time.";
        TargetMissing: "The audit stalled because its target is gone.";
        AuditStalled: "The audit stalled for another reason (refused, invalid spec).";
        NonCompliant: "The audit turned non-compliant.";
        AuditPassed: "The audit turned compliant.";
        ComplianceUnknown: "Compliance can no longer be decided.";
        Suspended: "spec.suspend was set: audits stopped.";
    }
}

/// The `type` of an Event, as Kubernetes and kopf spell it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
    /// `Error` (kopf's `kopf.exception` and ERROR log records).
    Error,
    /// `Fatal` (kopf's CRITICAL log records).
    Fatal,
    /// `Debug` (kopf's DEBUG log records).
    Debug,
    /// Anything else, as written.
    Other(String),
}

impl EventType {
    /// Reads an Event's `type`.
    pub fn parse(text: &str) -> EventType {
        match text {
            "Normal" => EventType::Normal,
            "Warning" => EventType::Warning,
            "Error" => EventType::Error,
            "Fatal" => EventType::Fatal,
            "Debug" => EventType::Debug,
            other => EventType::Other(other.to_string()),
        }
    }

    /// The string as written.
    pub fn as_str(&self) -> &str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
            EventType::Error => "Error",
            EventType::Fatal => "Fatal",
            EventType::Debug => "Debug",
            EventType::Other(s) => s,
        }
    }

    /// Whether the Event reports a problem (Warning, Error, Fatal).
    pub fn is_problem(&self) -> bool {
        matches!(
            self,
            EventType::Warning | EventType::Error | EventType::Fatal
        )
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_back_what_they_write() {
        for r in ConditionReason::ALL {
            assert_eq!(ConditionReason::parse(r.as_str()), Some(*r));
        }
        for r in EventReason::ALL {
            assert_eq!(EventReason::parse(r.as_str()), Some(*r));
        }
        assert_eq!(ConditionReason::parse("Bogus"), None);
        assert!(EventType::parse("Warning").is_problem());
        assert_eq!(EventType::parse("Odd"), EventType::Other("Odd".into()));
    }
}

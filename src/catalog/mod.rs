//! The bottom layer: every name that is public API, defined once and importing nothing
//! else of the crate. Check IDs, severities and areas ([`checks`]); condition types,
//! statuses and reasons, Event reasons and types ([`conditions`]); the strings other
//! tools match on (field manager, reporting controller, annotation prefix); and the
//! generated reference of all of them ([`reference`]).

pub mod checks;
pub mod conditions;
pub(crate) mod reference;

pub use checks::{Area, CheckId, Severity};
pub use conditions::{ConditionReason, ConditionStatus, ConditionType, EventReason, EventType};

/// The API group of every kopf-audit resource.
pub const GROUP: &str = "kopfaudit.dev";

/// The field manager of every server-side apply the auditor makes (status, PolicyReport):
/// one owner for the whole status.
pub const FIELD_MANAGER: &str = "kopf-audit";

/// The `reportingController` of the auditor's Events; the auditor never counts Events
/// of this controller as evidence against an audited operator.
pub const REPORTING_CONTROLLER: &str = "kopfaudit.dev/kopf-audit";

/// The annotation prefix that exempts a target from a check:
/// `skip.kopfaudit.dev/<check-id>: <reason>`.
pub const SKIP_ANNOTATION_PREFIX: &str = "skip.kopfaudit.dev/";

/// The annotation that asks for one audit now (Flux's `requestedAt` idiom): any new
/// value triggers one audit, and `status.lastHandledRequestedAt` echoes it once run.
pub const REQUESTED_AT_ANNOTATION: &str = "kopfaudit.dev/requested-at";

/// The label on every KopfAudit a ClusterKopfAudit generated, its value the
/// ClusterKopfAudit's name: `kubectl get ka -A -l kopfaudit.dev/cluster-audit` lists them.
pub const CLUSTER_AUDIT_LABEL: &str = "kopfaudit.dev/cluster-audit";

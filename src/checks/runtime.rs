//! Runtime checks (`runtime.*`): what the operator's logs say about its own health.
//! Findings quote one short, redacted line and carry no counts or times, so that an
//! unchanged log gives an unchanged status.

use super::{Cause, Raised, finding};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::evidence::{KopfEvidence, LogEvidence, TargetEvidence, qualified};
use kopf_log::{EventKind, PermissionScope, Record};
use std::collections::BTreeMap;

/// How many characters of a log line a finding quotes.
pub(crate) const QUOTE_CHARS: usize = 240;

/// Below this share of kopf lines, the log evidence is weak (with enough lines to judge).
const MIN_KOPF_RATIO: f64 = 0.5;
const MIN_LINES_TO_JUDGE: u64 = 20;

/// Runs every runtime check on one kopf target.
pub(crate) fn check(target: &TargetEvidence, kopf: &KopfEvidence) -> Vec<Raised> {
    let Ok(logs) = &kopf.logs else {
        return Vec::new();
    };
    let name = target.name();
    let mut out: Vec<Raised> = startup_forbidden(name, logs);
    let alone = [
        handler_failures(name, logs),
        permission_degraded(name, logs).into_iter().collect(),
        peering_conflict(name, logs).into_iter().collect(),
        unresolved_resources(name, logs).into_iter().collect(),
        throttling(name, logs).into_iter().collect(),
        orphaned_daemons(name, logs).into_iter().collect(),
        unparsed_logs(name, logs).into_iter().collect(),
    ];
    out.extend(alone.into_iter().flatten().map(Raised::alone));
    out
}

/// `[ns/name] message`, shortened and redacted.
pub(crate) fn quote(record: &Record) -> String {
    let object = record
        .object
        .as_ref()
        .map(|o| format!("[{}] ", qualified(o.namespace.as_deref(), &o.name)))
        .unwrap_or_default();
    kopf_log::excerpt(&format!("{object}{}", record.message), QUOTE_CHARS)
}

/// The object a record is about, as messages name it.
fn object_name(record: &Record) -> String {
    match &record.object {
        Some(o) => qualified(o.namespace.as_deref(), &o.name),
        None => "(no object)".into(),
    }
}

/// `runtime.handler-failures`: one finding per handler, the first failure quoted, the
/// objects named.
fn handler_failures(target: &str, logs: &LogEvidence) -> Vec<Finding> {
    let mut per_handler: BTreeMap<String, (Severity, &Record, Vec<String>)> = BTreeMap::new();
    for record in logs.all_records().filter(|r| r.kind.is_handler_failure()) {
        let Some(handler) = record.kind.handler() else {
            continue;
        };
        let severity = match record.kind {
            EventKind::HandlerFailedPermanently { .. } => Severity::Error,
            _ => Severity::Warning,
        };
        let entry =
            per_handler
                .entry(handler.to_string())
                .or_insert((severity, record, Vec::new()));
        entry.0 = entry.0.max(severity);
        let object = object_name(record);
        if !entry.2.contains(&object) {
            entry.2.push(object);
        }
    }
    per_handler
        .into_iter()
        .map(|(handler, (severity, first, mut objects))| {
            objects.sort();
            let shown: Vec<&str> = objects.iter().take(3).map(String::as_str).collect();
            let more = if objects.len() > 3 { " and others" } else { "" };
            let mut f = finding(
                CheckId::RuntimeHandlerFailures,
                target,
                format!(
                    "{handler} fails in the log window for {}{more}: fix the cause quoted in evidence; kopf retries it in a loop (a permanent failure is not retried).",
                    shown.join(", ")
                ),
                Some(quote(first)),
            );
            f.severity = severity;
            f
        })
        .collect()
}

/// `runtime.startup-forbidden`: one finding per refused verb, resource and scope; an RBAC
/// finding about the same denial explains it instead (evaluate keeps one per cause).
fn startup_forbidden(target: &str, logs: &LogEvidence) -> Vec<Raised> {
    let mut seen: BTreeMap<Cause, (&Record, &kopf_log::Forbidden)> = BTreeMap::new();
    for record in logs.all_records() {
        let Some(denial) = &record.forbidden else {
            continue;
        };
        if let Some(cause) = Cause::from_log(denial) {
            seen.entry(cause).or_insert((record, denial));
        }
    }
    seen.into_iter()
        .map(|(cause, (record, denial))| {
            let group = denial.api_group.clone().unwrap_or_default();
            let group_text = if group.is_empty() { "\"\"".to_string() } else { group };
            let scope = if denial.cluster_scope {
                "at cluster scope (ClusterRole)".to_string()
            } else {
                format!("in namespace {}", denial.namespace.as_deref().unwrap_or("?"))
            };
            let (verb, resource) = (&denial.verb, &denial.resource);
            let f = finding(
                CheckId::RuntimeStartupForbidden,
                target,
                format!(
                    "The API server refused `{verb}` on {resource} (group {group_text}) {scope}: add a rule `apiGroups: [{group_text}], resources: [{resource}], verbs: [{verb}]` to the operator's role."
                ),
                Some(quote(record)),
            );
            Raised { finding: f, causes: vec![cause] }
        })
        .collect()
}

/// The first record of a kind, as a finding with a fixed message.
fn first_of(
    target: &str,
    logs: &LogEvidence,
    check: CheckId,
    matches: impl Fn(&EventKind) -> bool,
    message: &str,
) -> Option<Finding> {
    let record = logs.all_records().find(|r| matches(&r.kind))?;
    Some(finding(
        check,
        target,
        message.to_string(),
        Some(quote(record)),
    ))
}

/// `runtime.permission-degraded`: `Not enough permissions to watch for resources`.
fn permission_degraded(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimePermissionDegraded,
        |k| {
            matches!(
                k,
                EventKind::PermissionDegraded {
                    what: PermissionScope::Watch
                }
            )
        },
        "kopf may not watch some resources, so their changes are not noticed: grant list and watch on them (see the rbac findings).",
    )
}

/// `runtime.peering-conflict`: `Possibly conflicting operators with the same priority`.
fn peering_conflict(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimePeeringConflict,
        |k| matches!(k, EventKind::PeeringConflict),
        "Two operators with the same peering priority are running, so both pause and nothing is served: give each a distinct --priority, or run one replica.",
    )
}

/// `runtime.unresolved-resources`: `Unresolved resources cannot be served`.
fn unresolved_resources(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeUnresolvedResources,
        |k| matches!(k, EventKind::UnresolvedResources),
        "kopf cannot find the CRD of a resource it handles, so nothing of it is served: install the CRD (or fix the group/version/plural in the handler decorators).",
    )
}

/// `runtime.throttling`: `Throttling for N seconds due to an unexpected error`.
fn throttling(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeThrottling,
        |k| matches!(k, EventKind::Throttling { .. }),
        "kopf throttles after an unexpected error in its own machinery and loops: read the traceback before the throttling line and fix its cause.",
    )
}

/// `runtime.orphaned-daemons`: `did not exit in time. Leaving it orphaned.`
fn orphaned_daemons(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeOrphanedDaemons,
        |k| matches!(k, EventKind::OrphanedDaemon { .. }),
        "A daemon did not exit when asked and was left orphaned: make it check `stopped` (or handle cancellation) so that it exits in time.",
    )
}

/// `runtime.unparsed-logs`: most lines match none of kopf's formats.
fn unparsed_logs(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let stats = &logs.stats;
    if stats.lines < MIN_LINES_TO_JUDGE || stats.kopf_ratio() >= MIN_KOPF_RATIO {
        return None;
    }
    Some(finding(
        CheckId::RuntimeUnparsedLogs,
        target,
        "Most lines of the operator's log match none of kopf's formats, so the log-based checks see little: log through kopf's loggers (the `logger` handler argument) and keep --log-format full, plain or json.".to_string(),
        None,
    ))
}

#[cfg(test)]
mod tests;

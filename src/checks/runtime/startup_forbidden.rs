//! `runtime.startup-forbidden`: the API server refused the operator a verb on a
//! resource, as an `is forbidden` line of its log names it.

use super::{logs, quote};
use crate::catalog::CheckId;
use crate::checks::{Cause, LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use kopf_log::Record;
use std::collections::BTreeMap;

/// Each refusal the log shows, with its cause: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    let Some(logs) = logs(input) else {
        return Vec::new();
    };
    decide(input.target.name(), logs)
}

/// `runtime.startup-forbidden`: one finding per refused verb, resource and scope; an RBAC
/// finding about the same denial explains it instead (evaluate keeps one per cause).
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Vec<Raised> {
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

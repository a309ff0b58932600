//! `runtime.handler-failures`: handlers that fail in the log window, one finding per
//! handler, the first failure quoted, the objects named.

use super::{on_log, quote};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{LogEvidence, qualified};
use kopf_log::{EventKind, Record};
use std::collections::BTreeMap;

/// Each failing handler: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// The object a record is about, as messages name it.
fn object_name(record: &Record) -> String {
    match &record.object {
        Some(o) => qualified(o.namespace.as_deref(), &o.name),
        // Python's `basicConfig` format: kopf writes `[ns/name]` in its own formats only.
        None => "an object its log does not name".into(),
    }
}

/// `runtime.handler-failures`: one finding per handler, the first failure quoted, the
/// objects named.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Vec<Finding> {
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

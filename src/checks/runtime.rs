//! Runtime checks (`runtime.*`): what the operator's logs say about its own health.
//! Findings quote one short, redacted line and carry no counts or times, so that an
//! unchanged log gives an unchanged status.

use super::{CheckId, Severity, finding};
use crate::api::Finding;
use crate::evaluate::CheckConfig;
use crate::evidence::{LogEvidence, TargetEvidence};
use crate::kopf_mode::KopfRun;
use kopf_log::{EventKind, PermissionScope, Record};
use std::collections::BTreeMap;

/// How many characters of a log line a finding quotes.
pub const QUOTE_CHARS: usize = 240;

/// Below this share of kopf lines, the log evidence is weak (with enough lines to judge).
const MIN_KOPF_RATIO: f64 = 0.5;
const MIN_LINES_TO_JUDGE: u64 = 20;

/// Runs every runtime check on one kopf target.
pub fn check(target: &TargetEvidence, _run: &KopfRun, _config: &CheckConfig) -> Vec<Finding> {
    let Some(logs) = target.logs.ready() else {
        return Vec::new();
    };
    let name = super::workload::target_name(target);
    let mut out = Vec::new();
    out.extend(handler_failures(name, logs));
    out.extend(startup_forbidden(name, logs));
    out.extend(by_kind(name, logs, CheckId::RuntimePermissionDegraded, |k| {
        matches!(k, EventKind::PermissionDegraded { what: PermissionScope::Watch })
    }, "kopf may not watch some resources, so their changes are not noticed: grant list and watch on them (see the rbac findings)."));
    out.extend(by_kind(name, logs, CheckId::RuntimePeeringConflict, |k| {
        matches!(k, EventKind::PeeringConflict)
    }, "Two operators with the same peering priority are running, so both pause and nothing is served: give each a distinct --priority, or run one replica."));
    out.extend(by_kind(name, logs, CheckId::RuntimeUnresolvedResources, |k| {
        matches!(k, EventKind::UnresolvedResources)
    }, "kopf cannot find the CRD of a resource it handles, so nothing of it is served: install the CRD (or fix the group/version/plural in the handler decorators)."));
    out.extend(by_kind(name, logs, CheckId::RuntimeThrottling, |k| {
        matches!(k, EventKind::Throttling { .. })
    }, "kopf throttles after an unexpected error in its own machinery and loops: read the traceback before the throttling line and fix its cause."));
    out.extend(by_kind(name, logs, CheckId::RuntimeOrphanedDaemons, |k| {
        matches!(k, EventKind::OrphanedDaemon { .. })
    }, "A daemon did not exit when asked and was left orphaned: make it check `stopped` (or handle cancellation) so that it exits in time."));
    out.extend(unparsed(name, logs));
    out
}

/// All records, current container first, then the previous container's.
fn all_records(logs: &LogEvidence) -> impl Iterator<Item = &Record> {
    logs.records.iter().chain(logs.previous.iter())
}

/// `[ns/name] message`, shortened and redacted.
pub fn quote(record: &Record) -> String {
    let object = record
        .object
        .as_ref()
        .map(|o| match &o.namespace {
            Some(ns) => format!("[{ns}/{}] ", o.name),
            None => format!("[{}] ", o.name),
        })
        .unwrap_or_default();
    kopf_log::excerpt(&format!("{object}{}", record.message), QUOTE_CHARS)
}

fn object_name(record: &Record) -> String {
    match &record.object {
        Some(o) => match &o.namespace {
            Some(ns) => format!("{ns}/{}", o.name),
            None => o.name.clone(),
        },
        None => "(no object)".into(),
    }
}

fn handler_failures(target: &str, logs: &LogEvidence) -> Vec<Finding> {
    // One finding per handler: the first failure quoted, the objects named.
    let mut per_handler: BTreeMap<String, (Severity, &Record, Vec<String>)> = BTreeMap::new();
    for record in all_records(logs).filter(|r| r.kind.is_handler_failure()) {
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

fn startup_forbidden(target: &str, logs: &LogEvidence) -> Vec<Finding> {
    let mut seen = BTreeMap::new();
    for record in all_records(logs) {
        let Some(denial) = &record.forbidden else {
            continue;
        };
        if denial.verb.is_empty() {
            continue;
        }
        let group = denial.api_group.clone().unwrap_or_default();
        let key = (
            denial.verb.clone(),
            denial.resource.clone(),
            group.clone(),
            denial.cluster_scope,
        );
        seen.entry(key)
            .or_insert((record, denial.namespace.clone()));
    }
    seen.into_iter()
        .map(|((verb, resource, group, cluster), (record, namespace))| {
            let group_text = if group.is_empty() { "\"\"".to_string() } else { group.clone() };
            let scope = if cluster {
                "at cluster scope (ClusterRole)".to_string()
            } else {
                format!("in namespace {}", namespace.unwrap_or_else(|| "?".into()))
            };
            finding(
                CheckId::RuntimeStartupForbidden,
                target,
                format!(
                    "The API server refused `{verb}` on {resource} (group {group_text}) {scope}: add a rule `apiGroups: [{group_text}], resources: [{resource}], verbs: [{verb}]` to the operator's role."
                ),
                Some(quote(record)),
            )
        })
        .collect()
}

fn by_kind(
    target: &str,
    logs: &LogEvidence,
    check: CheckId,
    matches: impl Fn(&EventKind) -> bool,
    message: &str,
) -> Option<Finding> {
    let record = all_records(logs).find(|r| matches(&r.kind))?;
    Some(finding(
        check,
        target,
        message.to_string(),
        Some(quote(record)),
    ))
}

fn unparsed(target: &str, logs: &LogEvidence) -> Option<Finding> {
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
mod tests {
    use super::*;
    use crate::evidence::Gathered;

    /// Parses sample lines as the gatherer would.
    pub(crate) fn parse(lines: &[&str]) -> LogEvidence {
        let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
        let mut records = Vec::new();
        for line in lines {
            records.extend(parser.push_line(line.as_bytes()));
        }
        while let Some(r) = parser.finish() {
            records.push(r);
        }
        LogEvidence {
            records,
            previous: Vec::new(),
            stats: parser.stats(),
            truncated: false,
        }
    }

    fn target_with(logs: LogEvidence) -> TargetEvidence {
        let mut t = TargetEvidence::default();
        t.deployment.metadata.name = Some("op".into());
        t.logs = Gathered::Ready(logs);
        t
    }

    fn ids(lines: &[&str]) -> Vec<CheckId> {
        let t = target_with(parse(lines));
        let run = crate::kopf_mode::parse_container(&k8s_openapi::api::core::v1::Container {
            command: Some(vec!["kopf".into(), "run".into(), "-A".into()]),
            ..Default::default()
        })
        .expect("kopf");
        let config = CheckConfig {
            workload: Default::default(),
            event_repeats: 3,
            now: jiff::Timestamp::UNIX_EPOCH,
        };
        check(&t, &run, &config)
            .into_iter()
            .map(|f| f.check)
            .collect()
    }

    const FULL_FAIL: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed temporarily: backend down";
    const FULL_FORBIDDEN: &str = "[2026-11-30 02:41:55,039] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: GET https://x/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:ns:op\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope', {})";

    #[test]
    fn handler_failures_and_forbidden() {
        let found = ids(&[FULL_FAIL, FULL_FORBIDDEN]);
        assert!(
            found.contains(&CheckId::RuntimeHandlerFailures),
            "{found:?}"
        );
        assert!(
            found.contains(&CheckId::RuntimeStartupForbidden),
            "{found:?}"
        );
        let t = target_with(parse(&[FULL_FORBIDDEN]));
        let f = startup_forbidden("op", t.logs.ready().expect("logs"));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.contains("`list` on customresourcedefinitions"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message.contains("apiextensions.k8s.io"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn the_same_failure_twice_is_one_finding_naming_each_object_once() {
        let b = FULL_FAIL.replace("[ns/a]", "[ns/b]");
        let t = target_with(parse(&[FULL_FAIL, FULL_FAIL, &b]));
        let f = handler_failures("op", t.logs.ready().expect("logs"));
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("ns/a, ns/b"), "{}", f[0].message);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn quiet_log_has_no_findings_and_noise_is_reported_as_unparsed() {
        let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
        assert!(ids(&[ok]).is_empty());
        let noise: Vec<&str> = std::iter::repeat_n("hello from print()", 30).collect();
        assert_eq!(ids(&noise), vec![CheckId::RuntimeUnparsedLogs]);
    }
}

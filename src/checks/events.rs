//! Events checks (`events.*`): how the operator surfaces state as Events, read from its
//! logs and its objects' Events side by side. Nobody else correlates the two: a failure
//! in the log with no Warning Event on its object is the seed's first lesson
//! ("I had errors but no events showed up").

use super::runtime::quote;
use super::{CheckId, finding};
use crate::api::Finding;
use crate::evaluate::CheckConfig;
use crate::evidence::{EventRecord, LogEvidence, TargetEvidence};
use crate::kopf_mode::KopfRun;
use kopf_log::{EventKind, Record};
use std::collections::{BTreeMap, BTreeSet};

/// kopf cuts event messages longer than this to head + `...` + tail.
pub const KOPF_MESSAGE_LIMIT: usize = 1024;

/// Runs every events check on one kopf target.
pub fn check(target: &TargetEvidence, _run: &KopfRun, config: &CheckConfig) -> Vec<Finding> {
    let (Some(logs), Some(events)) = (target.logs.ready(), target.events.ready()) else {
        return Vec::new();
    };
    let name = super::workload::target_name(target);
    let mut out = Vec::new();
    out.extend(silent_failures(name, logs, events));
    out.extend(logging_flood(name, events));
    out.extend(steady_state_spam(name, events, config.event_repeats));
    out.extend(post_failures(name, logs));
    out.extend(duplicates(name, events));
    out.extend(truncated(name, events));
    out
}

/// The object a log record is about: (namespace or empty, name).
fn record_object(record: &Record) -> Option<(String, String)> {
    let o = record.object.as_ref()?;
    Some((o.namespace.clone().unwrap_or_default(), o.name.clone()))
}

/// Whether an Event is about the object (namespace, name). Events of cluster-scoped
/// objects live in the operator's namespace, so only the name is compared for them.
fn is_about(event: &EventRecord, namespace: &str, name: &str) -> bool {
    event.name == name
        && (namespace.is_empty()
            || event.object_namespace == namespace
            || event.object_namespace.is_empty())
}

fn is_problem(event: &EventRecord) -> bool {
    matches!(event.type_.as_str(), "Warning" | "Error" | "Fatal")
}

fn silent_failures(target: &str, logs: &LogEvidence, events: &[EventRecord]) -> Option<Finding> {
    let mut silent: BTreeMap<(String, String), &Record> = BTreeMap::new();
    for record in logs.records.iter().filter(|r| r.kind.is_handler_failure()) {
        let Some((ns, name)) = record_object(record) else {
            continue;
        };
        let reported = events
            .iter()
            .any(|e| is_problem(e) && is_about(e, &ns, &name));
        if !reported {
            silent.entry((ns, name)).or_insert(record);
        }
    }
    let (_, first) = silent.iter().next()?;
    let objects: Vec<String> = silent
        .keys()
        .take(3)
        .map(|(ns, n)| {
            if ns.is_empty() {
                n.clone()
            } else {
                format!("{ns}/{n}")
            }
        })
        .collect();
    let more = if silent.len() > 3 { " and others" } else { "" };
    Some(finding(
        CheckId::EventsSilentFailures,
        target,
        format!(
            "Handler failures of {}{more} are in the log but no Warning Event is on the object: raising TemporaryError posts nothing unless posting.loggers is on. Post one with kopf.event(body, type='Warning', reason=..., message=...) in an except block and re-raise, or set settings.posting.loggers = True with settings.posting.level = logging.WARNING.",
            objects.join(", ")
        ),
        Some(quote(first)),
    ))
}

fn describe(event: &EventRecord) -> String {
    let object = if event.object_namespace.is_empty() {
        event.name.clone()
    } else {
        format!("{}/{}", event.object_namespace, event.name)
    };
    kopf_log::excerpt(
        &format!(
            "{} {} {object}: {} {}",
            event.kind, event.type_, event.reason, event.message
        ),
        super::runtime::QUOTE_CHARS,
    )
}

fn logging_flood(target: &str, events: &[EventRecord]) -> Option<Finding> {
    let first = events.iter().find(|e| {
        e.from_kopf && e.reason == "Logging" && matches!(e.type_.as_str(), "Normal" | "Debug")
    })?;
    Some(finding(
        CheckId::EventsLoggingFlood,
        target,
        "kopf mirrors INFO log lines as `Logging` Events on the handled objects (posting.loggers on at level INFO, or kopf 1.41 to 1.43): set settings.posting.level = logging.WARNING, or posting.loggers = False and post explicit events.".to_string(),
        Some(describe(first)),
    ))
}

fn steady_state_spam(target: &str, events: &[EventRecord], repeats: usize) -> Option<Finding> {
    let mut counts: BTreeMap<(&str, &str, &str, &str), (usize, &EventRecord)> = BTreeMap::new();
    for e in events.iter().filter(|e| e.reason != "Logging") {
        let key = (
            e.object_namespace.as_str(),
            e.name.as_str(),
            e.reason.as_str(),
            e.message.as_str(),
        );
        let entry = counts.entry(key).or_insert((0, e));
        entry.0 += e.count as usize;
    }
    let (_, (_, example)) = counts.iter().find(|(_, (n, _))| *n >= repeats)?;
    Some(finding(
        CheckId::EventsSteadyStateSpam,
        target,
        format!(
            "The same Event (reason {}) was posted {repeats} or more times on one object in the window: Events are not deduplicated by kopf; report ongoing state in status.conditions and post an Event only when something changes.",
            example.reason
        ),
        Some(describe(example)),
    ))
}

fn post_failures(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let record = logs
        .records
        .iter()
        .find(|r| matches!(r.kind, EventKind::EventPostFailed { .. }))?;
    let code = match record.kind {
        EventKind::EventPostFailed { code: Some(code) } => format!(" with code {code}"),
        _ => String::new(),
    };
    let hint = if matches!(record.kind, EventKind::EventPostFailed { code: Some(403) }) {
        "grant create (and patch) on core `events` in the namespaces it serves"
    } else {
        "read the message quoted in evidence"
    };
    Some(finding(
        CheckId::EventsPostFailures,
        target,
        format!(
            "kopf failed to post Events{code} and swallowed the error, so Events are silently missing: {hint}."
        ),
        Some(quote(record)),
    ))
}

fn duplicates(target: &str, events: &[EventRecord]) -> Option<Finding> {
    let explicit: BTreeSet<(&str, &str)> = events
        .iter()
        .filter(|e| e.reason != "Logging" && is_problem(e))
        .map(|e| (e.object_namespace.as_str(), e.name.as_str()))
        .collect();
    let mirrored = events.iter().find(|e| {
        e.from_kopf
            && e.reason == "Logging"
            && is_problem(e)
            && explicit.contains(&(e.object_namespace.as_str(), e.name.as_str()))
    })?;
    Some(finding(
        CheckId::EventsDuplicates,
        target,
        "Failures surface twice, as an explicit Event and as a `Logging` Event mirrored from the log: expected with posting.loggers on; keep one of the two.".to_string(),
        Some(describe(mirrored)),
    ))
}

fn truncated(target: &str, events: &[EventRecord]) -> Option<Finding> {
    let cut = events.iter().find(|e| {
        e.from_kopf
            && e.message.chars().count() >= KOPF_MESSAGE_LIMIT - 3
            && e.message.contains("...")
    })?;
    Some(finding(
        CheckId::EventsTruncated,
        target,
        format!(
            "Event messages reach kopf's {KOPF_MESSAGE_LIMIT}-character limit and are cut in the middle: keep messages short and put details in status."
        ),
        Some(describe(cut)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, type_: &str, reason: &str, from_kopf: bool) -> EventRecord {
        EventRecord {
            namespace: "ns".into(),
            kind: "Widget".into(),
            object_namespace: "ns".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            type_: type_.into(),
            reason: reason.into(),
            message: "m".into(),
            from_kopf,
            count: 1,
            time: None,
        }
    }

    fn logs(lines: &[&str]) -> LogEvidence {
        let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
        let mut records: Vec<Record> = lines
            .iter()
            .filter_map(|l| parser.push_line(l.as_bytes()))
            .collect();
        while let Some(r) = parser.finish() {
            records.push(r);
        }
        LogEvidence {
            records,
            stats: parser.stats(),
            ..Default::default()
        }
    }

    const FAIL_A: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed temporarily: backend down";

    #[test]
    fn failure_without_warning_event_is_silent() {
        let l = logs(&[FAIL_A]);
        let f = silent_failures("op", &l, &[event("a", "Normal", "Provisioned", true)])
            .expect("finding");
        assert!(f.message.contains("ns/a"), "{}", f.message);
        assert!(
            f.evidence
                .as_deref()
                .is_some_and(|e| e.contains("backend down"))
        );
        assert!(
            silent_failures(
                "op",
                &l,
                &[event("a", "Warning", "ProvisioningFailed", true)]
            )
            .is_none()
        );
    }

    #[test]
    fn cluster_scoped_failures_match_events_in_the_operators_namespace() {
        let line = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [gadget-1] Handler 'reconcile' failed temporarily: boom";
        let l = logs(&[line]);
        let mut e = event("gadget-1", "Warning", "Failed", true);
        e.object_namespace = String::new();
        e.namespace = "operator-ns".into();
        assert!(silent_failures("op", &l, &[e]).is_none());
        assert!(silent_failures("op", &l, &[]).is_some());
    }

    #[test]
    fn logging_events_spam_duplicates_and_post_failures() {
        let events = vec![
            event("a", "Normal", "Logging", true),
            event("a", "Warning", "Logging", true),
            event("a", "Warning", "Failed", true),
            event("b", "Normal", "Tick", true),
            event("b", "Normal", "Tick", true),
            event("b", "Normal", "Tick", true),
        ];
        assert!(logging_flood("op", &events).is_some());
        assert!(duplicates("op", &events).is_some());
        let spam = steady_state_spam("op", &events, 3).expect("spam");
        assert!(spam.message.contains("Tick"));
        assert!(steady_state_spam("op", &events, 4).is_none());
        let l = logs(&[
            "[2026-11-30 02:41:55,039] kopf.objects         [WARNING ] [ns/a] Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden.",
        ]);
        let f = post_failures("op", &l).expect("post failure");
        assert!(f.message.contains("403"), "{}", f.message);
    }

    #[test]
    fn quiet_operator_has_no_event_findings() {
        let events = vec![event("a", "Normal", "Provisioned", true)];
        assert!(logging_flood("op", &events).is_none());
        assert!(steady_state_spam("op", &events, 3).is_none());
        assert!(duplicates("op", &events).is_none());
        assert!(truncated("op", &events).is_none());
    }
}

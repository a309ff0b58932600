//! `workload.crash-loop`: a container of the target's pods crash-loops or has
//! restarted. Reads the pods' container statuses, and quotes the lines of the previous
//! container's log that explain the exit.

use super::on_kopf_container;
use super::{pod_name, statuses};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{Gathered, LogEvidence};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// How many lines of a previous container's log a crash-loop finding quotes: kopf's
/// last denial, its last error and that error's exception, and the exit line of what
/// followed kopf's last line.
const CRASH_QUOTE_LINES: usize = 4;
/// How long each quoted line may be.
const QUOTE_CHARS: usize = 240;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |name, c| {
        live_on(name, &input.target.pods, &c.name, &input.kopf.logs)
    })
}

/// The first pod whose `container` is in CrashLoopBackOff, else the first where it has
/// restarted, with the previous log's explanation as evidence.
pub(crate) fn live_on(
    target: &str,
    pods: &[Pod],
    container: &str,
    logs: &Gathered<LogEvidence>,
) -> Option<Finding> {
    let waiting_reason = |cs: &ContainerStatus| {
        cs.state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone())
    };
    let (pod, status) = statuses(pods, container)
        .find(|(_, cs)| waiting_reason(cs).as_deref() == Some("CrashLoopBackOff"))
        .or_else(|| statuses(pods, container).find(|(_, cs)| cs.restart_count > 0))?;
    let state = if waiting_reason(status).as_deref() == Some("CrashLoopBackOff") {
        "is in CrashLoopBackOff"
    } else {
        "has restarted"
    };
    let quote = previous_log_quote(pod, logs);
    Some(finding(
        CheckId::WorkloadCrashLoop,
        target,
        format!(
            "Container {container} {state}: the lines of the previous container's log that explain the exit are quoted in evidence; an RBAC `forbidden` points at a missing rule (see the rbac findings)."
        ),
        Some(format!("pod {}: {quote}", pod_name(pod))),
    ))
}

/// What the evidence quotes of a pod's previous container's log: its exit lines, or
/// why there are none.
fn previous_log_quote(pod: &Pod, logs: &Gathered<LogEvidence>) -> String {
    match logs {
        Ok(logs) => match logs.previous.get(pod_name(pod)) {
            Some(records) => {
                let tail = logs.previous_tail.get(pod_name(pod));
                let lines = exit_lines(records, tail.map_or(&[][..], Vec::as_slice));
                if lines.is_empty() {
                    "(no error in the previous container's log)".to_string()
                } else {
                    lines.join(" | ")
                }
            }
            None => "(no previous log)".to_string(),
        },
        Err(why) => format!("(previous log unreadable: {})", why.message),
    }
}

/// The lines that explain why a container exited: the last denial, the last ERROR or
/// CRITICAL record and the last line of its traceback (the exception), and the last
/// line of what the container wrote after kopf's last line (`tail`: a Python traceback
/// kopf did not log, such as an ImportError of the operator's module), redacted.
fn exit_lines(records: &[kopf_log::Record], tail: &[kopf_log::Record]) -> Vec<String> {
    let is_error = |r: &&kopf_log::Record| r.level.is_some_and(|l| l >= kopf_log::Level::Error);
    let last_denial = records.iter().rev().find(|r| r.forbidden.is_some());
    let last_error = records.iter().rev().find(is_error);
    let mut out: Vec<String> = Vec::new();
    let mut push = |text: &str| {
        let line = kopf_log::excerpt(text, QUOTE_CHARS);
        if !line.is_empty() && !out.contains(&line) && out.len() < CRASH_QUOTE_LINES {
            out.push(line);
        }
    };
    if let Some(r) = last_denial {
        push(&r.message);
    }
    if let Some(r) = last_error {
        push(&r.message);
        if let Some(exception) = last_traceback_line(r) {
            push(exception);
        }
    }
    if let Some(r) = tail.last() {
        push(last_traceback_line(r).unwrap_or(r.message.as_str()));
    }
    out
}

/// The last non-empty line of a record's traceback: the exception.
fn last_traceback_line(record: &kopf_log::Record) -> Option<&str> {
    record
        .traceback
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
}

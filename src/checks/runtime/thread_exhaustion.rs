//! `runtime.thread-exhaustion`: Python could not start a thread, so the sync handlers
//! and daemons kopf runs in its thread pool fail.

use super::faults::{fault_quote, first_with, names};
use super::on_log;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use kopf_log::Fault;

/// Decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `runtime.thread-exhaustion`: Python could not start a thread (CPython's
/// `RuntimeError: can't start new thread`). kopf runs sync handlers and daemons in its
/// executor's threads (kopf 1.37.5 to 1.45.2 `_core/actions/invocation.py`,
/// `settings.execution.max_workers`, by default Python's `min(32, CPUs + 4)`); a sync
/// daemon holds its thread for its whole life.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let fault = Fault::ThreadExhausted;
    let record = first_with(logs, fault)?;
    let handlers: Vec<String> = {
        let mut seen: Vec<String> = logs
            .all_records()
            .filter(|r| names(r, fault))
            .filter_map(|r| r.kind.handler().map(|h| h.to_string()))
            .collect();
        seen.sort();
        seen.dedup();
        seen
    };
    let failing = match handlers.as_slice() {
        [] => "kopf's own machinery fails".to_string(),
        [one] => format!("{one} fails and is retried"),
        many => format!(
            "{} fail and are retried",
            crate::model::bounded::listed(many, ", ", 3)
        ),
    };
    let daemons = handlers.iter().any(|h| h.starts_with("Daemon "));
    let mut message = format!(
        "Python could not start a new thread (`can't start new thread`): {failing}. kopf runs sync handlers, timers and daemons in a thread pool (settings.execution.max_workers, by default min(32, CPUs + 4)), and each sync daemon holds a thread for as long as it runs; the container hit its limit of threads (the pod's pids limit, the node's, or too little memory for their stacks)."
    );
    if daemons {
        message.push_str(
            " Make long-running daemons async (`async def`), so that they hold no thread.",
        );
    }
    message.push_str(" Cap settings.execution.max_workers below the limit, or raise the limit.");
    let mut f = finding(
        CheckId::RuntimeThreadExhaustion,
        target,
        message,
        Some(fault_quote(record, fault)),
    );
    f.fix = Some(THREADS_FIX.into());
    Some(f)
}

/// A startup handler that caps kopf's thread pool (kopf 1.37.5 to 1.45.2
/// `_cogs/configs/configuration.py` `ExecutionSettings.max_workers`).
const THREADS_FIX: &str = "import kopf\n\n@kopf.on.startup()\ndef configure(settings: kopf.OperatorSettings, **_):\n    # Below the pod's pids limit, with room for kopf's own threads.\n    settings.execution.max_workers = 16\n";

//! `source.sync-daemon-pool`: synchronous daemons that serve every object of their
//! resource while kopf's executor keeps Python's default size (kopf 1.45
//! `_core/actions/invocation.py`, `_cogs/configs/configuration.py`). Reads the daemons'
//! filters and the executor settings.

use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::checks::startup_settings;
use crate::model::source::SourceFacts;

/// How many other daemons a finding names before it counts the rest.
const MAX_NAMED: usize = 5;

/// What Python sizes kopf's default executor at (`concurrent.futures.ThreadPoolExecutor()`
/// with no `max_workers`), as messages say it.
const DEFAULT_POOL: &str = "min(32, CPUs + 4) threads, with the CPUs of the node (os.cpu_count()), not the pod's CPU limit";

/// The decider: at the first synchronous daemon that serves every object
/// of its resource, naming the others, while the executor keeps Python's default size.
/// kopf runs a synchronous daemon in `settings.execution.executor` (kopf 1.45
/// `_core/actions/invocation.py`, `run_in_executor`), a `ThreadPoolExecutor()` whose
/// `max_workers` is left unset (`_cogs/configs/configuration.py`,
/// `ExecutionSettings`), and the daemon holds its thread for its object's whole life.
pub(crate) fn source(facts: &SourceFacts) -> Option<SourceFinding> {
    if ["execution.max_workers", "execution.executor"]
        .iter()
        .any(|path| facts.setting_write(path).is_some())
    {
        return None;
    }
    let mut unbounded = facts
        .handlers
        .iter()
        .filter(|h| h.daemon.is_some() && !h.is_async && !h.filtered && h.resource.is_some());
    let first = unbounded.next()?;
    let others: Vec<String> = unbounded
        .map(|h| format!("{}() at {}", h.function, h.location))
        .collect();
    let also = match others.len() {
        0 => String::new(),
        n if n <= MAX_NAMED => format!(" (so do {})", others.join(", ")),
        n => format!(
            " (so do {} and {} more)",
            others[..MAX_NAMED].join(", "),
            n - MAX_NAMED
        ),
    };
    let resource = first
        .resource
        .as_ref()
        .map_or_else(String::new, |r| format!(" {}", r.name));
    let mut found = raise(
        CheckId::SourceSyncDaemonPool,
        &handler_target(first),
        &first.location,
        format!(
            "Synchronous daemon {}() serves every{resource} object, with no labels=, annotations=, when= or field= filter{also}: kopf runs each in a thread of settings.execution.executor for its object's whole life, and settings.execution.max_workers is left at Python's default, {DEFAULT_POOL}, shared with every synchronous handler (kopf 1.45 `_core/actions/invocation.py`). With more objects than threads, the daemons of the rest never start, and every synchronous handler waits behind them. Make the daemon `async def` (awaiting `stopped.wait(...)`), narrow it with labels= or when=, or set settings.execution.max_workers above the number of objects in an @kopf.on.startup handler.",
            first.function
        ),
    );
    found.finding.fix = Some(startup_settings(&[
        "settings.execution.max_workers = 64  # above the objects with a synchronous daemon",
    ]));
    Some(found)
}

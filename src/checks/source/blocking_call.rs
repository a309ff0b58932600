//! `source.blocking-call`: an async handler that makes a blocking call, itself or
//! through the repository's functions it calls: kopf runs every async handler in one
//! event loop. Reads each handler's blocking calls and the helpers it calls.

use super::call_graph::{CallGraph, Search};
use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::{Handler, SourceFacts};

/// The decider: per handler, its own blocking calls, then those through the helpers
/// it calls, with one call graph of the repository.
pub(crate) fn source(facts: &SourceFacts) -> Vec<SourceFinding> {
    let graph = CallGraph::new(facts);
    facts
        .handlers
        .iter()
        .flat_map(|h| in_handler(h).into_iter().chain(through_helpers(&graph, h)))
        .collect()
}

/// The handler's own blocking calls: one finding each, at the call.
fn in_handler(h: &Handler) -> Vec<SourceFinding> {
    h.blocking_calls
        .iter()
        .map(|(what, at)| {
            raise(
                CheckId::SourceBlockingCall,
                &handler_target(h),
                at,
                format!(
                    "async handler {}() calls {what}: kopf runs every async handler in one event loop, so this call stalls all handling until it returns. Await an async equivalent, or make the handler a plain `def` (kopf runs those in a thread pool).",
                    h.function
                ),
            )
        })
        .collect()
}

/// Blocking calls through the repository's own functions: an async handler
/// that calls a helper (by a plain name, in its module or, when the name is unique in
/// the repository, in another) which makes a blocking call itself or through the
/// helpers it calls, up to [`MAX_CALL_DEPTH`](super::call_graph::MAX_CALL_DEPTH) deep. One finding per call site, at it.
fn through_helpers(graph: &CallGraph<'_>, h: &Handler) -> Vec<SourceFinding> {
    if !h.is_async {
        return Vec::new();
    }
    let mut seen_sites = std::collections::BTreeSet::new();
    let mut search = Search::default();
    h.calls
        .iter()
        .filter(|(_, at)| seen_sites.insert(at.clone()))
        .filter_map(|(name, at)| {
            let helper = graph.resolve(name, &at.file)?;
            let (chain, what, blocked_at) =
                graph.through(helper, 0, &mut search, &|f| {
                    Ok(f.blocking_calls.first().cloned())
                })?;
            Some(raise(
                CheckId::SourceBlockingCall,
                &handler_target(h),
                at,
                format!(
                    "async handler {}() calls {chain}, which calls {what} at {blocked_at}: kopf runs every async handler in one event loop, so this call stalls all handling until it returns. Make the helper async (awaiting an async equivalent), run it with `await asyncio.to_thread(...)`, or make the handler a plain `def` (kopf runs those in a thread pool).",
                    h.function
                ),
            ))
        })
        .collect()
}

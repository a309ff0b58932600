//! `source.module-logger`: a handler that logs with a module-level or the root logger,
//! itself or through the functions it calls: records with no object reference, which
//! kopf never posts as Events. Reads each handler's logger calls and the helpers it
//! calls.

use super::call_graph::{CallGraph, Search};
use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::{Handler, SourceFacts};

/// The handlers that serve no object: their records have nothing to be posted on.
const OPERATOR_HANDLERS: [&str; 4] = ["on.startup", "on.cleanup", "on.login", "on.probe"];

/// The decider: per handler, with one call graph of the repository.
pub(crate) fn source(facts: &SourceFacts) -> Vec<SourceFinding> {
    let graph = CallGraph::new(facts);
    facts
        .handlers
        .iter()
        .filter_map(|h| of_handler(&graph, h))
        .collect()
}

/// One handler's finding, at its first call of a module-level or the root logger; for
/// a handler that logs with neither such a logger nor kopf's own, at its first call of
/// a repository function that does, itself or through the functions it calls.
fn of_handler(graph: &CallGraph<'_>, h: &Handler) -> Option<SourceFinding> {
    if OPERATOR_HANDLERS.contains(&h.decorator.as_str()) {
        return None;
    }
    if let Some((logger, at)) = h.module_logger_calls.first() {
        let count = h.module_logger_calls.len();
        return Some(raise(
            CheckId::SourceModuleLogger,
            &handler_target(h),
            at,
            format!(
                "Handler {}() logs {count} time(s) with {}: its records carry no object reference, so kopf never posts them as Events on the object. Take kopf's `logger` keyword argument (`def {}(..., logger, **kwargs)`) and log with it.",
                h.function,
                logger_words(logger),
                h.function
            ),
        ));
    }
    if !h.kopf_logger_calls.is_empty() {
        return None;
    }
    through_helpers(graph, h)
}

/// `the root logger …` or `the module-level logger `log``.
fn logger_words(logger: &str) -> String {
    if logger == "logging" {
        "the root logger (`logging.info(...)` and the like)".to_string()
    } else {
        format!("the module-level logger `{logger}`")
    }
}

/// [`of_handler`] through the repository's functions: the first call site whose
/// helper logs through a module-level or the root logger.
fn through_helpers(graph: &CallGraph<'_>, h: &Handler) -> Option<SourceFinding> {
    let mut search = Search::default();
    h.calls.iter().find_map(|(name, at)| {
        let helper = graph.resolve(name, &at.file)?;
        let (chain, logger, logged_at) = graph.through(helper, 0, &mut search, &|f| {
            Ok(f.module_logger_calls.first().cloned())
        })?;
        Some(raise(
            CheckId::SourceModuleLogger,
            &handler_target(h),
            at,
            format!(
                "Handler {}() logs only through {chain}, which logs with {} at {logged_at}: those records carry no object reference, so kopf never posts them as Events on the object. Take kopf's `logger` keyword argument (`def {}(..., logger, **kwargs)`) and pass it to the function that logs.",
                h.function,
                logger_words(&logger),
                h.function
            ),
        ))
    })
}

//! `source.silent-failure`: a handler that raises a kopf error, itself or through the
//! functions it calls, and posts no Event, on a kopf that posts no log record as one.
//! Reads the kopf versions the files allow, the posting settings, each handler's raises
//! and posts, and the helpers it calls.

use super::call_graph::{CallGraph, Search};
use super::posted::{Posted, loggers_posted};
use super::{SourceFinding, allowed, handler_target, raise, undecided};
use crate::catalog::CheckId;
use crate::model::source::{Handler, Literal, Location, SourceFacts};

/// The decider: per handler, with one call graph of the repository.
pub(crate) fn source(facts: &SourceFacts) -> Vec<SourceFinding> {
    let graph = CallGraph::new(facts);
    facts
        .handlers
        .iter()
        .filter_map(|h| of_handler(facts, &graph, h))
        .collect()
}

/// One handler's finding. Info when the kopf versions allowed straddle 1.41.
pub(super) fn of_handler(
    facts: &SourceFacts,
    graph: &CallGraph<'_>,
    h: &Handler,
) -> Option<SourceFinding> {
    let (error, at) = match h.raises.first() {
        Some((error, at)) => (error.clone(), at.clone()),
        None => raised_by_helper(graph, h)?,
    };
    let (error, at) = (&error, &at);
    if !h.posts.is_empty() || facts.setting("posting.enabled") == Some(&Literal::Bool(false)) {
        return None;
    }
    let version = match (loggers_posted(facts), &facts.kopf) {
        (Posted::Yes(_), _) => return None,
        (Posted::Depends { pin, boundary }, _) => {
            return Some(undecided(raise(
                CheckId::SourceSilentFailure,
                &handler_target(h),
                at,
                format!(
                    "Handler {}() raises {error}. {}: before it, kopf posts the failure's log record as an Event; from it, only with settings.posting.loggers, which is off, and the handler posts none itself, so its failures would reach only the operator's log, never the object's Events (events.silent-failures once deployed). Pin kopf or commit a lock file to decide; calling `kopf.warn(body, reason=..., message=...)` before raising is right on both sides.",
                    h.function,
                    allowed(pin, boundary)
                ),
            )));
        }
        (Posted::No, Some(k)) => format!("kopf {} (pinned at {})", k.shown(), k.location),
        (Posted::No, None) => {
            "kopf 1.41 and later (no version is pinned: the current kopf is assumed)".into()
        }
    };
    Some(raise(
        CheckId::SourceSilentFailure,
        &handler_target(h),
        at,
        format!(
            "Handler {}() raises {error}, but {version} posts log records as Events only with settings.posting.loggers, which is off, and the handler posts none itself: its failures reach only the operator's log, never the object's Events (events.silent-failures once deployed). Call `kopf.warn(body, reason=..., message=...)` before raising, or set `settings.posting.loggers = True` with posting.level WARNING.",
            h.function
        ),
    ))
}

/// A kopf error a handler raises through the helpers it calls (followed as
/// `source.blocking-call` follows them), none of which posts an Event: what it raises, as
/// a phrase naming the chain (`kopf.TemporaryError (through check() (defined at
/// x.py:3), at x.py:5)`), and the handler's call site.
fn raised_by_helper(graph: &CallGraph<'_>, h: &Handler) -> Option<(String, Location)> {
    let mut search = Search::default();
    h.calls.iter().find_map(|(name, at)| {
        let helper = graph.resolve(name, &at.file)?;
        let (chain, error, raised_at) = graph.through(helper, 0, &mut search, &|f| {
            if f.posts {
                return Err(());
            }
            Ok(f.raises.first().cloned())
        })?;
        Some((
            format!("{error} (through {chain}, at {raised_at})"),
            at.clone(),
        ))
    })
}

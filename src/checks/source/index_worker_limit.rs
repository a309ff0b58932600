//! `source.index-worker-limit`: an `@kopf.index` handler under a worker limit, which
//! can keep the operator from ever handling (kopf issue 1243). Reads the handlers'
//! decorators and the worker-limit settings.

use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::{Literal, SourceFacts};

/// The decider: at the startup setting of the worker limit, else at the first index
/// handler.
pub(crate) fn source(facts: &SourceFacts) -> Option<SourceFinding> {
    let index = facts
        .handlers
        .iter()
        .find(|h| matches!(h.decorator.as_str(), "index" | "on.index"))?;
    let (path, limit) = ["queueing.worker_limit", "batching.worker_limit"]
        .into_iter()
        .find_map(|p| match facts.setting(p) {
            Some(Literal::Int(n)) => Some((p, *n)),
            _ => None,
        })?;
    let at = facts
        .settings
        .iter()
        .rev()
        .find(|s| s.in_startup && s.path == path)
        .map_or_else(|| index.location.clone(), |s| s.location.clone());
    Some(raise(
        CheckId::SourceIndexWorkerLimit,
        &handler_target(index),
        &at,
        format!(
            "settings.{path} = {limit} with @kopf.index handler {}(): before any handler runs, kopf waits until every object is indexed, and with more than {limit} objects the worker limit keeps the rest from being indexed: the operator never starts handling, while its liveness probe passes (kopf issue 1243; runtime.startup-stalled once deployed). Remove the limit, or keep it well above the number of indexed objects.",
            index.function
        ),
    ))
}

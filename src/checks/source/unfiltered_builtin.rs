//! `source.unfiltered-builtin`: a change handler of a built-in kind with no filter:
//! kopf writes its diff-base annotation onto every object of that kind; a timer or
//! daemon: kopf puts its finalizer on every one (both are declared with
//! `requires_finalizer=True`, kopf 1.45 `on.py`). Reads each handler's decorator,
//! resource and filters.

use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::Handler;

/// The change handlers that make kopf keep a diff-base on each object.
const DIFFBASE_HANDLERS: [&str; 5] = [
    "on.create",
    "on.update",
    "on.delete",
    "on.resume",
    "on.field",
];

/// The handlers kopf spawns per object, each of which needs kopf's finalizer on it.
const SPAWNING_HANDLERS: [&str; 2] = ["timer", "daemon"];

/// The decider, per handler: at an unfiltered change handler, timer or daemon of a
/// built-in kind.
pub(crate) fn source(h: &Handler) -> Option<SourceFinding> {
    if h.filtered {
        return None;
    }
    let kind = h.resource.as_ref()?.builtin()?;
    if SPAWNING_HANDLERS.contains(&h.decorator.as_str()) {
        return Some(raise(
            CheckId::SourceUnfilteredBuiltin,
            &handler_target(h),
            &h.location,
            format!(
                "@kopf.{} handler {}() takes every {kind} it serves, unfiltered: kopf puts its finalizer on each one (timers and daemons need it to stop them; kopf 1.45 `on.py`, requires_finalizer=True), so while the operator is down, or once it is removed, deleting any {kind} it serves hangs; and it runs one {} per object. Narrow it with labels=, annotations= or when=.",
                h.decorator,
                h.function,
                h.decorator,
                kind = kind.kind,
            ),
        ));
    }
    if !DIFFBASE_HANDLERS.contains(&h.decorator.as_str()) {
        return None;
    }
    let data = if kind.kind == "Secret" {
        " On Secrets that annotation copies their data in clear text."
    } else {
        ""
    };
    Some(raise(
        CheckId::SourceUnfilteredBuiltin,
        &handler_target(h),
        &h.location,
        format!(
            "@kopf.{} handler {}() takes every {} it serves, unfiltered: kopf writes its diff-base annotation (kopf.zalando.org/last-handled-configuration) onto each one, and handles them all.{data} Narrow it with labels=, annotations= or when=.",
            h.decorator, h.function, kind.kind
        ),
    ))
}

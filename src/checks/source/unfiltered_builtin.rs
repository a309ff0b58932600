//! `source.unfiltered-builtin`: a change handler of a built-in kind with no filter:
//! kopf writes its diff-base annotation onto every object of that kind. Reads each
//! handler's decorator, resource and filters.

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

/// The decider, per handler: at an unfiltered change handler of a built-in kind.
pub(crate) fn source(h: &Handler) -> Option<SourceFinding> {
    if h.filtered || !DIFFBASE_HANDLERS.contains(&h.decorator.as_str()) {
        return None;
    }
    let kind = h.resource.as_ref()?.builtin()?;
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

//! `source.handler-kwargs`: a handler whose signature has no `**kwargs`, though kopf
//! calls every handler with all its keyword arguments (kopf 1.45
//! `_core/actions/invocation.py`). Reads each handler's signature.

use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::Handler;

/// The decider, per handler: at a handler whose signature has no `**kwargs`.
pub(crate) fn source(h: &Handler) -> Option<SourceFinding> {
    (!h.has_kwargs).then(|| {
        raise(
            CheckId::SourceHandlerKwargs,
            &handler_target(h),
            &h.location,
            format!(
                "Handler {}() (@kopf.{}) has no **kwargs: kopf calls every handler with all its keyword arguments (kopf 1.45 `_core/actions/invocation.py`: `fn(**kwargs)`), so each call raises TypeError. End its signature with `**kwargs`.",
                h.function, h.decorator
            ),
        )
    })
}

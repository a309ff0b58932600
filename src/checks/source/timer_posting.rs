//! `source.timer-posting`: a timer that posts an Event on every tick. Reads each
//! timer's Event posts and whether they are made on every call.

use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::Handler;

/// The decider, per handler: at a timer's first Event posted on every call.
pub(crate) fn source(h: &Handler) -> Option<SourceFinding> {
    if !matches!(h.decorator.as_str(), "timer" | "on.timer") {
        return None;
    }
    let (at, _) = h.posts.iter().find(|(_, every_call)| *every_call)?;
    Some(raise(
        CheckId::SourceTimerPosting,
        &handler_target(h),
        at,
        format!(
            "Timer {}() posts an Event on every tick: the object's Events fill with the same message (events.steady-state-spam once deployed). Post only when something changed, or log instead.",
            h.function
        ),
    ))
}

//! `source.watch-timeouts`: a kopf operator whose startup handlers set neither watch
//! timeout (kopf 1.45 `_cogs/configs/configuration.py`, `WatchingSettings`; kopf issue
//! 585). Reads the kopf versions the files allow, the handlers and the watching
//! settings.

use super::{SourceFinding, allowed, raise, undecided};
use crate::catalog::{CheckId, Severity};
use crate::checks::startup_settings;
use crate::model::source::kopf_version::{BOOKMARKS, ByVersion};
use crate::model::source::{Literal, SourceFacts};

/// The watch timeouts: either bounds every watch stream (kopf 1.45
/// `_cogs/configs/configuration.py`, `WatchingSettings`; both default to `None`).
const WATCH_TIMEOUTS: [&str; 2] = ["watching.server_timeout", "watching.client_timeout"];

/// What the fix sets: kopf's docs' server timeout, and a client timeout a little
/// longer, so that the server ends a healthy stream first.
const WATCH_TIMEOUTS_FIX: [&str; 2] = [
    "settings.watching.server_timeout = 10 * 60",
    "settings.watching.client_timeout = 11 * 60",
];

/// The decider: a kopf operator (one with handlers) whose startup handlers
/// set neither watch timeout. A warning when every kopf version allowed is before
/// 1.44 (a stream a load balancer or NAT drops silently is never restarted: kopf issue
/// 585), info otherwise (1.44 notices a silent stream by its bookmarks, but only on
/// Python 3.11 and later, kopf docs `configuration.rst`). At the first startup handler,
/// else the first handler.
pub(crate) fn source(facts: &SourceFacts) -> Option<SourceFinding> {
    if facts.handlers.is_empty()
        || WATCH_TIMEOUTS
            .iter()
            .any(|p| facts.setting(p).is_some_and(|v| *v != Literal::None))
    {
        return None;
    }
    let at = facts
        .handlers
        .iter()
        .find(|h| h.decorator == "on.startup")
        .or_else(|| facts.handlers.first())?;
    let unset = "no @kopf.on.startup handler sets settings.watching.server_timeout or client_timeout (both default to None: a watch stream lasts as long as the connection does)";
    let frozen = "a watch stream that a load balancer or NAT drops silently stays open with nothing on it, and the operator stops seeing changes while it runs and passes its liveness probe (kopf issue 585; runtime.not-handling once deployed)";
    let by_version = facts
        .kopf
        .as_ref()
        .map(|pin| (pin, pin.range.across(&[BOOKMARKS], |v| v >= BOOKMARKS)));
    let found = match by_version {
        Some((pin, ByVersion::Decided(false))) => warning(raise(
            CheckId::SourceWatchTimeouts,
            &at.location.file,
            &at.location,
            format!(
                "kopf {} (pinned at {}) has no bookmarks and no inactivity timeout (both arrived in 1.44), and {unset}: {frozen}. kopf's configuration docs: before 1.44, setting either timeout is what recovers from such freezes. Set both in an @kopf.on.startup handler, or upgrade kopf to 1.44 or later.",
                pin.shown(),
                pin.location
            ),
        )),
        Some((pin, ByVersion::Split { boundary, .. })) => undecided(raise(
            CheckId::SourceWatchTimeouts,
            &at.location.file,
            &at.location,
            format!(
                "{unset}. {}: before it, {frozen}; from it, kopf restarts a stream silent for settings.watching.inactivity_timeout (70 s), on Python 3.11 and later only. Pin kopf 1.44 or later, or set both timeouts in an @kopf.on.startup handler: right on both sides.",
                allowed(pin, boundary)
            ),
        )),
        _ => raise(
            CheckId::SourceWatchTimeouts,
            &at.location.file,
            &at.location,
            format!(
                "{unset}. {}kopf 1.44 and later restart a stream silent for settings.watching.inactivity_timeout (70 s, by its bookmarks; kopf 1.45 `_cogs/clients/watching.py`), but only on Python 3.11 and later: on Python 3.10, or with that timeout raised, {frozen}. kopf's configuration docs set server_timeout in their startup example; set it (and a slightly longer client_timeout) to bound every stream whatever the Python.",
                facts.kopf.as_ref().map_or_else(
                    || "No kopf version is pinned (the current kopf is assumed): ".to_string(),
                    |pin| format!("kopf {} (pinned at {}): ", pin.shown(), pin.location)
                )
            ),
        ),
    };
    let mut found = found;
    found.finding.fix = Some(startup_settings(&WATCH_TIMEOUTS_FIX));
    Some(found)
}

/// A finding every kopf version allowed decides for the worse: a warning.
fn warning(mut found: SourceFinding) -> SourceFinding {
    found.finding.severity = Severity::Warning;
    found
}

#[cfg(test)]
mod tests;

//! `source.posting-flood`: every INFO record of a handler's logger posted as an Event
//! on its object. Reads the kopf versions the files allow, the posting settings and
//! each handler's calls of kopf's logger (kopf 1.45 `_cogs/configs/configuration.py`).

use super::posted::{Posted, loggers_posted};
use super::{SourceFinding, allowed, handler_target, raise, undecided};
use crate::catalog::CheckId;
use crate::checks::startup_settings;
use crate::model::source::{Literal, SourceFacts};

/// Whether `posting.level` is left at INFO (or lower): kopf's default is `logging.INFO`.
fn posting_level_info(facts: &SourceFacts) -> bool {
    match facts.setting("posting.level") {
        None => true,
        Some(Literal::Name(n)) => matches!(
            n.as_str(),
            "logging.INFO" | "logging.DEBUG" | "INFO" | "DEBUG"
        ),
        Some(Literal::Int(level)) => *level <= 20,
        Some(Literal::Str(s)) => matches!(s.to_ascii_uppercase().as_str(), "INFO" | "DEBUG"),
        Some(_) => false,
    }
}

/// The decider: at the first INFO record of a handler's logger. Info when
/// the kopf versions allowed straddle 1.41.
pub(crate) fn source(facts: &SourceFacts) -> Option<SourceFinding> {
    let posted = loggers_posted(facts);
    if matches!(posted, Posted::No) || !posting_level_info(facts) {
        return None;
    }
    let (h, at) = facts.handlers.iter().find_map(|h| {
        h.kopf_logger_calls
            .iter()
            .find(|(method, _)| matches!(method.as_str(), "info" | "debug"))
            .map(|(_, at)| (h, at))
    })?;
    let target = handler_target(h);
    let mut found = match posted {
        Posted::Yes(why) => raise(
            CheckId::SourcePostingFlood,
            &target,
            at,
            format!(
                "{why}, and posting.level is left at INFO: every logger.info() of a handler, like this one in {}(), becomes an Event on its object (events.logging-flood once deployed). Set `settings.posting.level = logging.WARNING` in an @kopf.on.startup handler.",
                h.function
            ),
        ),
        Posted::Depends { pin, boundary } => undecided(raise(
            CheckId::SourcePostingFlood,
            &target,
            at,
            format!(
                "{}: before it, kopf posts every record of a handler's logger at posting.level (left at INFO) as an Event, so every logger.info() of a handler, like this one in {}(), would become an Event on its object (events.logging-flood once deployed); from it, only with settings.posting.loggers = True, which is off. Pin kopf or commit a lock file to decide; `settings.posting.level = logging.WARNING` in an @kopf.on.startup handler is right on both sides.",
                allowed(pin, boundary),
                h.function
            ),
        )),
        Posted::No => return None,
    };
    found.finding.fix = Some(startup_settings(&[
        "settings.posting.level = logging.WARNING",
    ]));
    Some(found)
}

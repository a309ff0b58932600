//! Whether handlers' log records are posted as Events, across the kopf versions the
//! files allow: what `source.posting-flood` and `source.silent-failure` decide on.

use crate::model::source::kopf_version::{ByVersion, KOPF_ERAS, KopfVersion, LogPosting};
use crate::model::source::{KopfPin, Literal, SourceFacts};

/// Whether handlers' log records are posted as Events, across the kopf versions the
/// files allow.
pub(super) enum Posted<'a> {
    /// They are, for this reason.
    Yes(String),
    /// They are not, or posting is off.
    No,
    /// The versions allowed straddle `boundary`: posted before it, not from it.
    Depends {
        /// The requirement that allows both.
        pin: &'a KopfPin,
        /// The first version that posts no log record without `posting.loggers`.
        boundary: KopfVersion,
    },
}

/// Whether handlers' log records are posted as Events, and why: kopf before 1.41 posts
/// every record of the object logger at `posting.level` (kopf 0.x as well, at
/// `settings.posting.level` or `kopf.config.EventsConfig.events_loglevel`); from 1.41
/// only with `settings.posting.loggers = True` (kopf 1.45
/// `_cogs/configs/configuration.py`). With no version named and no setting deciding it,
/// the current kopf (loggers not posted) is assumed.
pub(super) fn loggers_posted(facts: &SourceFacts) -> Posted<'_> {
    if facts.setting("posting.enabled") == Some(&Literal::Bool(false)) {
        return Posted::No;
    }
    let loggers_on = facts.setting("posting.loggers") == Some(&Literal::Bool(true));
    let by_setting = || {
        Posted::Yes("settings.posting.loggers = True posts every record of a handler's logger at posting.level as an Event".into())
    };
    let Some(pin) = &facts.kopf else {
        return if loggers_on { by_setting() } else { Posted::No };
    };
    let posted = pin.range.across(&KOPF_ERAS, |v| {
        loggers_on || LogPosting::of(v) == LogPosting::EveryRecord
    });
    match posted {
        ByVersion::Decided(false) => Posted::No,
        ByVersion::Decided(true)
            if pin.log_posting() == ByVersion::Decided(LogPosting::EveryRecord) =>
        {
            Posted::Yes(by_version(pin))
        }
        ByVersion::Decided(true) => by_setting(),
        ByVersion::Split { boundary, .. } => Posted::Depends { pin, boundary },
    }
}

/// Why a kopf that posts every record does: its version.
fn by_version(pin: &KopfPin) -> String {
    let level = if pin.before_one() {
        "posting.level (kopf 0.x: settings.posting.level, or kopf.config.EventsConfig.events_loglevel before it)"
    } else {
        "posting.level"
    };
    format!(
        "kopf {} (pinned at {}) posts every record of a handler's logger at {level} as an Event (posting.loggers arrived in 1.41)",
        pin.shown(),
        pin.location
    )
}

//! The kopf versions an operator's files allow, as a range, and what kopf does with a
//! handler's log records across them. A requirement is rarely one version (`^1.38.0`
//! allows every 1.x from 1.38): a check that depends on the version decides only when
//! every version the range allows gives the same answer.

use super::Location;
use std::fmt;

/// A kopf release number: kopf-log's type, the one every version rule here is
/// written in, whether the version comes from a requirement or from a log's wording.
pub(crate) use kopf_log::KopfVersion;

/// Reads a version as requirements write it: `1.38`, `1.37.2`, `1.38.0rc1`, and also a
/// lone `1` (`^1`, `==1.*`), a missing part being 0 and a pre-release suffix dropped;
/// `None` when it starts with no number. (kopf-log's own parse wants `major.minor`, as
/// kopf's log writes it.)
pub(crate) fn parse_version(text: &str) -> Option<KopfVersion> {
    let mut parts = text.split('.').map(leading_number);
    let major = parts.next().flatten()?;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some(KopfVersion::new(major, minor, patch))
}

/// The number a version part starts with (`0rc1` is 0).
fn leading_number(part: &str) -> Option<u16> {
    let digits: &str = &part[..part
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(part.len())];
    digits.parse().ok()
}

/// One end of a range: a version, and whether it is allowed itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct End {
    /// The version.
    pub(crate) version: KopfVersion,
    /// Whether the version itself is in the range (`>=`, `<=`) or not (`>`, `<`).
    pub(crate) inclusive: bool,
}

impl End {
    /// The version itself is in the range.
    pub(crate) const fn inclusive(version: KopfVersion) -> End {
        End {
            version,
            inclusive: true,
        }
    }

    /// The version itself is not in the range.
    pub(crate) const fn exclusive(version: KopfVersion) -> End {
        End {
            version,
            inclusive: false,
        }
    }
}

/// The kopf versions a requirement allows: between a lower and an upper end, either
/// open. The default allows every version (`*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KopfRange {
    /// The lowest allowed version, when there is one.
    pub(crate) lower: Option<End>,
    /// The highest allowed version, when there is one.
    pub(crate) upper: Option<End>,
}

impl KopfRange {
    /// Exactly one version (`==1.37.2`, a lock file).
    pub(crate) const fn exactly(version: KopfVersion) -> KopfRange {
        KopfRange {
            lower: Some(End::inclusive(version)),
            upper: Some(End::inclusive(version)),
        }
    }

    /// From `lower` (inclusive) up to `upper` (exclusive): `^`, `~`, `~=`, `==1.37.*`.
    pub(crate) const fn from_until(lower: KopfVersion, upper: KopfVersion) -> KopfRange {
        KopfRange {
            lower: Some(End::inclusive(lower)),
            upper: Some(End::exclusive(upper)),
        }
    }

    /// The versions both allow (specifiers joined by `,`).
    pub(crate) fn and(self, other: KopfRange) -> KopfRange {
        KopfRange {
            lower: tighter(self.lower, other.lower, |a, b| a > b),
            upper: tighter(self.upper, other.upper, |a, b| a < b),
        }
    }

    /// The one version it allows, when it allows exactly one.
    pub(crate) fn exact(&self) -> Option<KopfVersion> {
        match (self.lower, self.upper) {
            (Some(l), Some(u)) if l == u && l.inclusive => Some(l.version),
            _ => None,
        }
    }

    /// Whether it allows some version before `boundary`.
    fn allows_before(&self, boundary: KopfVersion) -> bool {
        self.lower.is_none_or(|l| l.version < boundary)
    }

    /// Whether it allows `boundary` or some later version.
    fn allows_from(&self, boundary: KopfVersion) -> bool {
        self.upper
            .is_none_or(|u| u.version > boundary || (u.version == boundary && u.inclusive))
    }

    /// What `answer` gives across every version the range allows, where `answer` may
    /// change only at the `boundaries` (ascending): decided when it is the same on
    /// every side the range reaches, else the first boundary it differs across.
    pub(crate) fn across<T: PartialEq + Copy>(
        &self,
        boundaries: &[KopfVersion],
        answer: impl Fn(KopfVersion) -> T,
    ) -> ByVersion<T> {
        let lowest = self.lower.map_or(KopfVersion::new(0, 0, 0), |l| l.version);
        let first = answer(lowest);
        for &boundary in boundaries {
            if !(self.allows_before(boundary) && self.allows_from(boundary)) {
                continue;
            }
            let from = answer(boundary);
            if from != first {
                return ByVersion::Split {
                    boundary,
                    before: first,
                    from,
                };
            }
        }
        ByVersion::Decided(first)
    }
}

/// The tighter of two optional ends by `beyond` (a later lower end, an earlier upper
/// end); at the same version, the exclusive end.
fn tighter(
    a: Option<End>,
    b: Option<End>,
    beyond: impl Fn(KopfVersion, KopfVersion) -> bool,
) -> Option<End> {
    match (a, b) {
        (Some(a), Some(b)) if a.version == b.version => Some(End {
            version: a.version,
            inclusive: a.inclusive && b.inclusive,
        }),
        (Some(a), Some(b)) => Some(if beyond(a.version, b.version) { a } else { b }),
        (a, b) => a.or(b),
    }
}

impl fmt::Display for KopfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(v) = self.exact() {
            return write!(f, "=={v}");
        }
        let lower = self
            .lower
            .map(|l| format!("{}{}", if l.inclusive { ">=" } else { ">" }, l.version));
        let upper = self
            .upper
            .map(|u| format!("{}{}", if u.inclusive { "<=" } else { "<" }, u.version));
        match (lower, upper) {
            (None, None) => write!(f, "any version"),
            (l, u) => write!(
                f,
                "{}",
                l.into_iter().chain(u).collect::<Vec<_>>().join(",")
            ),
        }
    }
}

/// An answer over a range of versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ByVersion<T> {
    /// Every allowed version gives this.
    Decided(T),
    /// The allowed versions straddle `boundary`: those before it give `before`, it
    /// (and some after it) give `from`.
    Split {
        /// The first version whose answer differs.
        boundary: KopfVersion,
        /// The answer of the versions before it.
        before: T,
        /// The answer from it on.
        from: T,
    },
}

/// The kopf versions an operator's files allow, and where they say so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KopfPin {
    /// The versions allowed.
    pub(crate) range: KopfRange,
    /// The specifier as written (`^1.38.0`, `>=1.38,<2`, `==1.37.2`).
    pub(crate) written: String,
    /// Whether a lock file (poetry.lock, uv.lock, Pipfile.lock, pip-compile output)
    /// says it: the version installed, which decides over any requirement.
    pub(crate) locked: bool,
    /// Where.
    pub(crate) location: Location,
}

impl KopfPin {
    /// How strongly it decides the version: a lock file over one exact version over a
    /// range.
    pub(crate) fn weight(&self) -> u8 {
        match (self.locked, self.range.exact().is_some()) {
            (true, _) => 2,
            (false, true) => 1,
            (false, false) => 0,
        }
    }

    /// The version or range as messages name it: `1.37.2` when exact, else the
    /// specifier as written.
    pub(crate) fn shown(&self) -> String {
        match self.range.exact() {
            Some(_) => self.written.trim_start_matches('=').trim().to_string(),
            None => self.written.clone(),
        }
    }

    /// Whether every version allowed is a kopf 0.x, whose posting level is set by
    /// `settings.posting.level` (0.27) or `kopf.config.EventsConfig.events_loglevel`.
    pub(crate) fn before_one(&self) -> bool {
        self.range.across(&KOPF_ERAS, |v| v.major == 0) == ByVersion::Decided(true)
    }

    /// What kopf does with handlers' log records, across the versions allowed.
    pub(crate) fn log_posting(&self) -> ByVersion<LogPosting> {
        self.range.across(&KOPF_ERAS, LogPosting::of)
    }
}

/// The start of kopf 1.x (no 1.0 was released: 1.29 followed 0.28, but every 0.x is
/// below 1.0.0) and kopf 1.41 (which added `settings.posting.loggers`): the versions
/// where what the linter models of posting may change.
pub(crate) const KOPF_ERAS: [KopfVersion; 2] = [KopfVersion::new(1, 0, 0), LOGGERS_SETTING];

/// kopf 1.44: watch streams ask for bookmarks, and a stream silent for
/// `settings.watching.inactivity_timeout` (70 s) is closed and restarted (kopf 1.45
/// `_cogs/clients/watching.py`); before it, nothing notices a silent stream and a watch
/// can freeze. Lint asks it of a requirement's range, the live runtime checks of the
/// log's wording.
pub(crate) const BOOKMARKS: KopfVersion = KopfVersion::new(1, 44, 0);

/// kopf 1.41: `settings.posting.loggers` arrived.
pub(crate) const LOGGERS_SETTING: KopfVersion = KopfVersion::new(1, 41, 0);

/// What kopf posts as Events of a handler's log records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogPosting {
    /// Every record of the object's logger at the posting level. kopf 1.x before
    /// 1.41 (`settings.posting.level`), and, as far as the linter models it, kopf 0.x:
    /// 0.27's `settings.posting.level`, and before it `kopf.config.EventsConfig`'s
    /// `events_loglevel`, post the same way.
    EveryRecord,
    /// Only with `settings.posting.loggers = True` (kopf 1.41 and later, kopf 1.45
    /// `_cogs/configs/configuration.py`).
    WithLoggersSetting,
}

impl LogPosting {
    /// What one kopf version does: the one rule of the `posting.loggers` boundary,
    /// which lint asks across the versions a requirement allows
    /// ([`KopfPin::log_posting`]) and the live audit across those a log's wording
    /// shows ([`LogPosting::in_log`]).
    pub(crate) fn of(version: KopfVersion) -> LogPosting {
        if version < LOGGERS_SETTING {
            LogPosting::EveryRecord
        } else {
            LogPosting::WithLoggersSetting
        }
    }

    /// What the kopf a log comes from does, when every version its wording allows
    /// does the same ([`LogPosting::of`] changes once, so the two ends decide); `None`
    /// when the range straddles 1.41, is unbounded on the side that matters, or is
    /// contradictory.
    pub(crate) fn in_log(version: &kopf_log::VersionRange) -> Option<LogPosting> {
        if version.is_empty() {
            return None;
        }
        let newest = version.at_most.map(LogPosting::of);
        let oldest = version.at_least.map(LogPosting::of);
        match (oldest, newest) {
            (_, Some(LogPosting::EveryRecord)) => Some(LogPosting::EveryRecord),
            (Some(LogPosting::WithLoggersSetting), _) => Some(LogPosting::WithLoggersSetting),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;

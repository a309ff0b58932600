//! kopf's version, as far as the wording of its messages tells it.
//!
//! Every clue below was read in kopf's released sources (PyPI wheels 1.38.0,
//! 1.39.1, 1.40.0, 1.42.1, 1.42.2, 1.43.0, 1.44.0 and 1.45.2): a wording is
//! bounded by the last release that has it and the first that has the other.

use crate::classify::handler_span;
use serde::Serialize;
use std::fmt;

/// A kopf release number (`1.45.2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct KopfVersion {
    /// The major number (1 for every current release).
    pub major: u16,
    /// The minor number.
    pub minor: u16,
    /// The patch number (0 when not written).
    pub patch: u16,
}

impl KopfVersion {
    /// The release `major.minor.patch`.
    pub const fn new(major: u16, minor: u16, patch: u16) -> Self {
        KopfVersion {
            major,
            minor,
            patch,
        }
    }

    /// Reads `1.45.2`, `1.38` or `1.45.2rc1` (anything after the numbers is
    /// ignored); `None` without at least `major.minor`.
    pub fn parse(s: &str) -> Option<KopfVersion> {
        let mut parts = s.split('.');
        let mut number = |required: bool| -> Option<u16> {
            let part = parts.next();
            let digits: &str = part.map_or("", |p| {
                &p[..p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len())]
            });
            match digits.parse() {
                Ok(n) => Some(n),
                Err(_) if !required => Some(0),
                Err(_) => None,
            }
        };
        Some(KopfVersion::new(
            number(true)?,
            number(true)?,
            number(false)?,
        ))
    }
}

impl fmt::Display for KopfVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Inclusive bounds on kopf's version; `None` means unbounded.
///
/// Exists so that a check can tell which kopf a log comes from (e.g. whether
/// a failed watcher is respawned, or which defaults apply) without the
/// container's image: [`Stats::kopf_version`](crate::Stats::kopf_version)
/// narrows it over a whole log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub struct VersionRange {
    /// The oldest version the log can come from.
    pub at_least: Option<KopfVersion>,
    /// The newest version the log can come from.
    pub at_most: Option<KopfVersion>,
}

impl VersionRange {
    /// Exactly `v`.
    pub const fn exact(v: KopfVersion) -> Self {
        VersionRange {
            at_least: Some(v),
            at_most: Some(v),
        }
    }

    /// `v` or newer.
    pub const fn at_least(v: KopfVersion) -> Self {
        VersionRange {
            at_least: Some(v),
            at_most: None,
        }
    }

    /// `v` or older.
    pub const fn at_most(v: KopfVersion) -> Self {
        VersionRange {
            at_least: None,
            at_most: Some(v),
        }
    }

    /// Narrows to what both ranges allow (the lower bound raised, the upper
    /// one lowered). Two clues that contradict each other (a log written by
    /// two kopf versions) leave a range for which [`VersionRange::is_empty`]
    /// is true.
    pub fn narrow(&mut self, other: VersionRange) {
        self.at_least = self.at_least.max(other.at_least);
        self.at_most = match (self.at_most, other.at_most) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// No version fits: the clues contradict each other.
    pub fn is_empty(&self) -> bool {
        matches!((self.at_least, self.at_most), (Some(lo), Some(hi)) if lo > hi)
    }

    /// No clue at all.
    pub fn is_unbounded(&self) -> bool {
        self.at_least.is_none() && self.at_most.is_none()
    }

    /// Whether `v` is in the range.
    pub fn contains(&self, v: KopfVersion) -> bool {
        self.at_least.is_none_or(|lo| lo <= v) && self.at_most.is_none_or(|hi| v <= hi)
    }

    /// The version, when the range holds exactly one.
    pub fn exact_version(&self) -> Option<KopfVersion> {
        match (self.at_least, self.at_most) {
            (Some(lo), Some(hi)) if lo == hi => Some(lo),
            _ => None,
        }
    }
}

/// The wording that tells the version (see [`VersionClue::range`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum VersionClue {
    /// DEBUG `Starting Kopf 1.45.2.` (`_core/reactor/running.py`, every
    /// release): the exact version; only with `--verbose`/`--debug`.
    Banner,
    /// ERROR `Handler 'x' failed with an exception. Will retry.` (also `Will
    /// ignore.`, `Will stop.`; `_core/actions/execution.py`): 1.39.1 and older.
    ExceptionWillRetry,
    /// ERROR `Handler 'x' failed with an exception and will try again in N
    /// seconds: ...` (also `and will ignore it:`, `and will stop now`;
    /// `_core/actions/execution.py`): 1.40.0 and newer.
    ExceptionAndWill,
    /// WARNING `Patching failed with inconsistencies: ...`
    /// (`_core/actions/application.py`): 1.43.0 and older.
    PatchingFailed,
    /// WARNING `Merge-patching finished with inconsistencies: ...`
    /// (`_core/actions/application.py`): 1.44.0 and newer.
    MergePatchingFinished,
    /// DEBUG `Patching with: ...` (`_core/actions/application.py`): 1.43.0 and older.
    PatchingWith,
    /// DEBUG `Merge-patching the resource with: ...` / `... the status with:`
    /// / `JSON-patching the ...` (`_core/actions/application.py`): 1.44.0 and newer.
    MergePatchingWith,
    /// WARNING ``Receiving `too many requests` error from server, will retry
    /// after N seconds. ...`` (`_cogs/clients/watching.py`): 1.42.1 and older.
    TooManyRequestsWarning,
    /// A message naming `APITooManyRequestsError` (`Request attempt #1/9
    /// failed; will retry: ... -> APITooManyRequestsError(...)`; the class
    /// is in `_cogs/clients/errors.py` and retried by `_cogs/clients/api.py`):
    /// 1.42.2 and newer.
    TooManyRequestsRetried,
    /// DEBUG `Overriding the backoff Ns with the retry-after Ms from the
    /// server: ...` (`_cogs/clients/api.py`): 1.42.2 and newer.
    RetryAfterOverride,
    /// DEBUG `Watch-stream for RES WHERE is inactive, reconnecting.`
    /// (`_cogs/clients/watching.py`): 1.44.0 and newer.
    WatchStreamInactive,
}

impl VersionClue {
    /// The versions that write this wording (for [`VersionClue::Banner`],
    /// unbounded: the version is in the message, see [`VersionSignal`]).
    pub fn range(self) -> VersionRange {
        const V1_39_1: KopfVersion = KopfVersion::new(1, 39, 1);
        const V1_40_0: KopfVersion = KopfVersion::new(1, 40, 0);
        const V1_42_1: KopfVersion = KopfVersion::new(1, 42, 1);
        const V1_42_2: KopfVersion = KopfVersion::new(1, 42, 2);
        const V1_43_0: KopfVersion = KopfVersion::new(1, 43, 0);
        const V1_44_0: KopfVersion = KopfVersion::new(1, 44, 0);
        match self {
            VersionClue::Banner => VersionRange::default(),
            VersionClue::ExceptionWillRetry => VersionRange::at_most(V1_39_1),
            VersionClue::ExceptionAndWill => VersionRange::at_least(V1_40_0),
            VersionClue::PatchingFailed | VersionClue::PatchingWith => {
                VersionRange::at_most(V1_43_0)
            }
            VersionClue::MergePatchingFinished
            | VersionClue::MergePatchingWith
            | VersionClue::WatchStreamInactive => VersionRange::at_least(V1_44_0),
            VersionClue::TooManyRequestsWarning => VersionRange::at_most(V1_42_1),
            VersionClue::TooManyRequestsRetried | VersionClue::RetryAfterOverride => {
                VersionRange::at_least(V1_42_2)
            }
        }
    }
}

/// What one message tells of kopf's version.
///
/// Exists so that a check can name its clue in evidence ("the log's wording
/// is kopf 1.40.0 or newer: ...").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct VersionSignal {
    /// The wording.
    pub clue: VersionClue,
    /// The versions it allows.
    pub range: VersionRange,
}

impl VersionSignal {
    fn of(clue: VersionClue) -> Option<VersionSignal> {
        Some(VersionSignal {
            clue,
            range: clue.range(),
        })
    }
}

/// What `message` (without the `[ns/name] ` prefix) tells of the version of
/// the kopf that wrote it; `None` for the many messages that are the same in
/// every release. Exists for messages from elsewhere than the parser (which
/// sets [`Record::version`](crate::Record::version) itself).
pub fn version_signal(message: &str) -> Option<VersionSignal> {
    signal(message.as_bytes())
}

/// [`version_signal`] on bytes.
pub(crate) fn signal(m: &[u8]) -> Option<VersionSignal> {
    match m.first()? {
        b'S' => {
            let rest = m.strip_prefix(b"Starting Kopf ")?;
            let v = std::str::from_utf8(rest.strip_suffix(b".")?).ok()?;
            Some(VersionSignal {
                clue: VersionClue::Banner,
                range: VersionRange::exact(KopfVersion::parse(v)?),
            })
        }
        b'H' | b'T' | b'D' | b'A' | b'W' | b'I' => {
            if let Some((_, _, rest)) = handler_span(m) {
                if rest.starts_with(b" failed with an exception. Will ") {
                    return VersionSignal::of(VersionClue::ExceptionWillRetry);
                }
                if rest.starts_with(b" failed with an exception and will ") {
                    return VersionSignal::of(VersionClue::ExceptionAndWill);
                }
                return None;
            }
            let r = m.strip_prefix(b"Watch-stream for ")?;
            r.ends_with(b" is inactive, reconnecting.")
                .then_some(())
                .and_then(|()| VersionSignal::of(VersionClue::WatchStreamInactive))
        }
        b'P' => {
            if m.starts_with(b"Patching failed with inconsistencies") {
                VersionSignal::of(VersionClue::PatchingFailed)
            } else if m.starts_with(b"Patching with: ") {
                VersionSignal::of(VersionClue::PatchingWith)
            } else {
                None
            }
        }
        b'M' => {
            if m.starts_with(b"Merge-patching finished with inconsistencies") {
                VersionSignal::of(VersionClue::MergePatchingFinished)
            } else if m.starts_with(b"Merge-patching the ") {
                VersionSignal::of(VersionClue::MergePatchingWith)
            } else {
                None
            }
        }
        b'J' => m
            .starts_with(b"JSON-patching the ")
            .then_some(())
            .and_then(|()| VersionSignal::of(VersionClue::MergePatchingWith)),
        b'R' => {
            if m.starts_with(b"Receiving `too many requests` error from server") {
                VersionSignal::of(VersionClue::TooManyRequestsWarning)
            } else if m.starts_with(b"Request attempt #")
                && memchr::memmem::find(m, b"APITooManyRequestsError").is_some()
            {
                VersionSignal::of(VersionClue::TooManyRequestsRetried)
            } else {
                None
            }
        }
        b'O' => m
            .starts_with(b"Overriding the backoff ")
            .then_some(())
            .and_then(|()| VersionSignal::of(VersionClue::RetryAfterOverride)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;

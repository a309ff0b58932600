//! Handler outcomes counted per object: how often each handler succeeded on
//! each object, failed there to be retried, and how often each cause was
//! processed on it.
//!
//! Exists because these INFO lines (`Handler 'x' succeeded.`, `Updating is
//! processed: 1 succeeded; 0 failed.`, the same in kopf 1.37.5, 1.38.0,
//! 1.43.0, 1.44.6 and 1.45.2 `_core/actions/execution.py` and
//! `_core/reactor/processing.py`) are routine and never kept as records,
//! yet a handler that succeeds on the same object again and again (it
//! patches what kopf diffs, and its own patch is the next change) shows
//! only in their counts.

use crate::{HandlerKind, Timestamp};
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// At most this many distinct (outcome, object) pairs are counted per
/// [`Tally`]; past it, new pairs only count in [`Tally::untallied`]. A loop
/// shows on the first pairs seen as well as on later ones.
pub const MAX_TALLIED: usize = 256;

/// What a counted record says.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "type")]
pub enum Outcome {
    /// `{Kind} 'id' succeeded.`
    Succeeded {
        /// `Handler`, `Timer`, `Daemon`... (timers and daemons run on purpose).
        kind: HandlerKind,
        /// The handler id.
        id: String,
    },
    /// `{Kind} 'id' failed temporarily: ...` (not the final attempt) or
    /// `... failed with an exception and will try again in N seconds: ...`
    /// (`... Will retry.` before kopf 1.40): kopf retries it.
    Retried {
        /// `Handler`, `Timer`, `Daemon`...
        kind: HandlerKind,
        /// The handler id.
        id: String,
    },
    /// `{Cause} is processed: N succeeded; M failed.`
    Processed {
        /// The cause title, lower-cased (`creation`, `updating`, `resuming`...).
        cause: String,
    },
}

/// One counted (outcome, object) pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tallied {
    /// What the records said.
    pub outcome: Outcome,
    /// The object's namespace (`None` when cluster-scoped).
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// How many records said it.
    pub count: u64,
    /// The earliest time among them (the kubelet's, else the record's own).
    pub first: Option<Timestamp>,
    /// The latest.
    pub last: Option<Timestamp>,
}

/// The outcome of a line, as borrowed bytes (no allocation to count a repeat).
#[derive(Debug, Clone, Copy)]
pub(crate) enum RawOutcome<'l> {
    Succeeded(HandlerKind, &'l [u8]),
    Retried(HandlerKind, &'l [u8]),
    Processed(&'l [u8]),
}

/// Routine outcomes per object, bounded ([`MAX_TALLIED`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    entries: Vec<Tallied>,
    index: HashMap<u64, Vec<usize>>,
    /// Records not counted because the bound was reached.
    pub untallied: u64,
}

impl Tally {
    /// Every counted pair, in the order first seen.
    pub fn iter(&self) -> impl Iterator<Item = &Tallied> {
        self.entries.iter()
    }

    /// How many distinct pairs are counted.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds the counts of `more` (another read of the same log, or another
    /// container of the same operator).
    pub fn add(&mut self, more: &Tally) {
        for t in &more.entries {
            let raw = match &t.outcome {
                Outcome::Succeeded { kind, id } => RawOutcome::Succeeded(*kind, id.as_bytes()),
                Outcome::Retried { kind, id } => RawOutcome::Retried(*kind, id.as_bytes()),
                Outcome::Processed { cause } => RawOutcome::Processed(cause.as_bytes()),
            };
            let ns = t.namespace.as_deref().map(str::as_bytes);
            self.count_n(raw, ns, t.name.as_bytes(), t.first, t.count);
            if let Some(at) = t.last {
                self.count_n(raw, ns, t.name.as_bytes(), Some(at), 0);
            }
        }
        self.untallied += more.untallied;
    }

    /// Counts one record.
    pub(crate) fn count(
        &mut self,
        outcome: RawOutcome<'_>,
        namespace: Option<&[u8]>,
        name: &[u8],
        at: Option<Timestamp>,
    ) {
        self.count_n(outcome, namespace, name, at, 1);
    }

    /// Takes one record back (a record counted, then built again).
    pub(crate) fn uncount(
        &mut self,
        outcome: RawOutcome<'_>,
        namespace: Option<&[u8]>,
        name: &[u8],
    ) {
        if let Some(i) = self.find(key_hash(outcome, namespace, name), outcome, namespace, name) {
            let e = &mut self.entries[i];
            e.count = e.count.saturating_sub(1);
        }
    }

    fn count_n(
        &mut self,
        outcome: RawOutcome<'_>,
        namespace: Option<&[u8]>,
        name: &[u8],
        at: Option<Timestamp>,
        n: u64,
    ) {
        let hash = key_hash(outcome, namespace, name);
        if let Some(i) = self.find(hash, outcome, namespace, name) {
            let e = &mut self.entries[i];
            e.count += n;
            e.first = min_time(e.first, at);
            e.last = e.last.max(at);
            return;
        }
        if self.entries.len() >= MAX_TALLIED {
            self.untallied += n;
            return;
        }
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let outcome = match outcome {
            RawOutcome::Succeeded(kind, id) => Outcome::Succeeded { kind, id: text(id) },
            RawOutcome::Retried(kind, id) => Outcome::Retried { kind, id: text(id) },
            RawOutcome::Processed(cause) => Outcome::Processed {
                cause: text(cause).to_ascii_lowercase(),
            },
        };
        self.index.entry(hash).or_default().push(self.entries.len());
        self.entries.push(Tallied {
            outcome,
            namespace: namespace.map(text),
            name: text(name),
            count: n,
            first: at,
            last: at,
        });
    }

    fn find(
        &self,
        hash: u64,
        outcome: RawOutcome<'_>,
        namespace: Option<&[u8]>,
        name: &[u8],
    ) -> Option<usize> {
        self.index.get(&hash)?.iter().copied().find(|&i| {
            let e = &self.entries[i];
            let same_outcome = match (&e.outcome, outcome) {
                (Outcome::Succeeded { kind, id }, RawOutcome::Succeeded(k, raw))
                | (Outcome::Retried { kind, id }, RawOutcome::Retried(k, raw)) => {
                    *kind == k && id.as_bytes() == raw
                }
                (Outcome::Processed { cause }, RawOutcome::Processed(raw)) => {
                    cause.as_bytes().eq_ignore_ascii_case(raw)
                }
                _ => false,
            };
            same_outcome
                && e.namespace.as_deref().map(str::as_bytes) == namespace
                && e.name.as_bytes() == name
        })
    }
}

/// The earlier of two optional times (a missing one does not count).
fn min_time(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The hash of a pair (a cause's title case-insensitively).
fn key_hash(outcome: RawOutcome<'_>, namespace: Option<&[u8]>, name: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    match outcome {
        RawOutcome::Succeeded(kind, id) => {
            kind.hash(&mut h);
            id.hash(&mut h);
        }
        RawOutcome::Retried(kind, id) => {
            h.write_u8(0xfe);
            kind.hash(&mut h);
            id.hash(&mut h);
        }
        RawOutcome::Processed(cause) => {
            h.write_u8(0xff);
            for c in cause {
                h.write_u8(c.to_ascii_lowercase());
            }
        }
    }
    namespace.hash(&mut h);
    name.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_count_on_one_entry_and_merge() {
        let mut t = Tally::default();
        let at = |s| Some(Timestamp { secs: s, nanos: 0 });
        let ok = RawOutcome::Succeeded(HandlerKind::Handler, b"touch");
        t.count(ok, Some(b"ns"), b"a", at(5));
        t.count(ok, Some(b"ns"), b"a", at(3));
        t.count(RawOutcome::Processed(b"Updating"), Some(b"ns"), b"a", at(4));
        t.count(RawOutcome::Processed(b"updating"), Some(b"ns"), b"a", at(6));
        assert_eq!(t.len(), 2);
        let first = t.iter().next().unwrap();
        assert_eq!((first.count, first.first, first.last), (2, at(3), at(5)));
        let mut merged = Tally::default();
        merged.add(&t);
        merged.add(&t);
        let counts: Vec<u64> = merged.iter().map(|e| e.count).collect();
        assert_eq!(counts, [4, 4]);
        assert_eq!(
            merged.iter().nth(1).unwrap().outcome,
            Outcome::Processed {
                cause: "updating".into()
            }
        );
        t.uncount(ok, Some(b"ns"), b"a");
        assert_eq!(t.iter().next().unwrap().count, 1);
    }

    #[test]
    fn bounded() {
        let mut t = Tally::default();
        for i in 0..MAX_TALLIED + 10 {
            let name = format!("o{i}");
            t.count(
                RawOutcome::Processed(b"Updating"),
                None,
                name.as_bytes(),
                None,
            );
        }
        assert_eq!((t.len(), t.untallied), (MAX_TALLIED, 10));
    }
}

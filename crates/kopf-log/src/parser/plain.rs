//! The `[namespace/name] ` object prefix and the `plain` format's known messages.

#[cfg(doc)]
use super::Stats;
#[cfg(doc)]
use crate::EventKind;
use crate::ObjectRef;
use crate::classify::{first_word_end, handler_span, own};
use crate::swar::find_near;

/// `[namespace/name] ` or `[name] ` (kopf's `ObjectPrefixingMixin`).
pub(super) fn parse_prefix<'m>(m: &'m [u8], whole: Option<&str>) -> Option<(ObjectRef, &'m [u8])> {
    let (ns, name, rest) = split_prefix(m)?;
    // Only ASCII passed the checks of `split_prefix`: these conversions cannot fail.
    let obj = ObjectRef {
        namespace: ns.map(|n| own(whole, n)),
        name: own(whole, name),
        kind: None,
        uid: None,
        api_version: None,
    };
    Some((obj, rest))
}

/// [`parse_prefix`] without allocating: (namespace, name, rest of the message).
pub(super) type PrefixParts<'m> = (Option<&'m [u8]>, &'m [u8], &'m [u8]);

pub(super) fn split_prefix(m: &[u8]) -> Option<PrefixParts<'_>> {
    if m.first() != Some(&b'[') {
        return None;
    }
    let limit = m.len().min(1 + 63 + 1 + 253 + 2);
    let close = find_near(b']', &m[..limit])?;
    if m.get(close + 1) != Some(&b' ') {
        return None;
    }
    let inner = &m[1..close];
    let (ns, name) = match find_near(b'/', inner) {
        Some(s) => (Some(&inner[..s]), &inner[s + 1..]),
        None => (None, inner),
    };
    if name.is_empty() || name.len() > 253 || !all_in(name, &NAME_BYTES) {
        return None;
    }
    if let Some(ns) = ns
        && (ns.is_empty() || ns.len() > 63 || !all_in(ns, &NAMESPACE_BYTES))
    {
        return None;
    }
    Some((ns, name, &m[close + 2..]))
}

/// The bytes [`split_prefix`] accepts in a name: ASCII alphanumerics and
/// `-._:@+`. A table: one load per byte instead of a chain of compares.
static NAME_BYTES: [bool; 256] = {
    let mut set = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        set[c] = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':' | b'@' | b'+');
        c += 1;
    }
    set
};

/// The bytes of a namespace (an RFC 1123 label): `a-z`, `0-9`, `-`.
static NAMESPACE_BYTES: [bool; 256] = {
    let mut set = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        set[c] = b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
        c += 1;
    }
    set
};

/// Whether every byte of `b` is in `set`; without a branch per byte, since
/// names are short and nearly always valid.
fn all_in(b: &[u8], set: &[bool; 256]) -> bool {
    b.iter().fold(true, |ok, &c| ok & set[usize::from(c)])
}

/// Frequent kopf messages that have no [`EventKind`] but still mark a `plain`
/// line as kopf's (for [`Stats::kopf_lines`]).
pub(super) fn known_plain(m: &[u8], _whole: Option<&str>) -> bool {
    const PREFIXES: &[&[u8]] = &[
        b"Starting Kopf ",
        b"Initial authentication has been initiated.",
        b"Re-authentication has been initiated.",
        b"Adding the finalizer",
        b"Removing the finalizer",
        b"Patching with: ",
        b"Merge-patching the ",
        b"JSON-patching the ",
        b"Something has changed, but we are not interested",
        b"Deleted, really deleted, and we are notified.",
        b"Deletion, but we are done with it",
        b"Handling cycle is finished",
        b"Sleeping for ",
        b"Sleeping was ",
        b"Stop-flag is ",
        b"Signal ",
        b"Throttling is over.",
        b"Starting the watch-stream for ",
        b"Stopping the watch-stream for ",
        b"Restarting the watch-stream for ",
        b"Pausing the watch-stream for ",
        b"Resuming the watch-stream for ",
        b"Keep-alive in ",
        b"Serving health status at ",
        b"Client is configured ",
        b"Async client is configured ",
        b"Request attempt #",
        b"Non-watchable resources will not be served",
        b"Non-patchable resources will not be served",
        b"Ambiguous resources will not be served",
        b"Event processing has failed with an unrecoverable error",
    ];
    /// The first bytes of `PREFIXES`: most noise lines start otherwise and
    /// skip the 31 comparisons.
    const FIRST_BYTES: [bool; 256] = {
        let mut set = [false; 256];
        let mut i = 0;
        while i < PREFIXES.len() {
            set[PREFIXES[i][0] as usize] = true;
            i += 1;
        }
        set
    };
    if handler_span(m).is_some() {
        return true;
    }
    let first = m.first().map_or(0, |&b| usize::from(b));
    (FIRST_BYTES[first] && PREFIXES.iter().any(|p| m.starts_with(p)))
        || first_word_end(m).is_some_and(|n| m[n..].starts_with(b" is superseded by "))
        || m.ends_with(b" has been initiated.")
}

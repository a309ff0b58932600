//! kopf's `full` format header: `[asctime] logger [LEVEL   ] message`.

use crate::Level;
use crate::time::{HourCache, Timestamp, parse_asctime_cached};

/// Whether `l` starts with the `[YYYY-MM-DD HH:MM:SS,mmm] ` of a `full` line
/// (the shape only; [`parse_full`] parses it).
pub(super) fn is_full_header(l: &[u8]) -> bool {
    l.len() >= 26
        && l[0] == b'['
        && l[5] == b'-'
        && l[8] == b'-'
        && l[11] == b' '
        && l[14] == b':'
        && l[20] == b','
        && l[24] == b']'
        && l[25] == b' '
}

/// The parts of a `full` format line.
pub(super) struct FullHeader<'a> {
    pub(super) ts: Timestamp,
    pub(super) logger: &'a [u8],
    pub(super) level: Option<Level>,
    pub(super) msg: &'a [u8],
}

/// `[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] message`
/// (`%(name)-20.20s [%(levelname)-8.8s]`).
pub(super) fn parse_full<'l>(l: &'l [u8], hours: &HourCache) -> Option<FullHeader<'l>> {
    if !is_full_header(l) {
        return None;
    }
    let ts = parse_asctime_cached(&l[1..24], hours)?;
    // Fast path: an ASCII logger name of exactly 20 (padded/cut) characters.
    let at = if l.len() >= 57 && l[46] == b' ' && l[47] == b'[' && l[56] == b']' {
        46
    } else {
        // Non-ASCII logger names are 20 characters but more bytes: search.
        let limit = l.len().min(26 + 20 * 4 + 1);
        (26..limit).find(|&i| {
            l.get(i) == Some(&b' ') && l.get(i + 1) == Some(&b'[') && l.get(i + 10) == Some(&b']')
        })?
    };
    let logger = &l[26..at];
    let level_raw = &l[at + 2..at + 10];
    let level = padded_level(level_raw)
        .or_else(|| std::str::from_utf8(level_raw).ok().and_then(Level::parse));
    let rest = &l[at + 11..];
    let msg = rest.strip_prefix(b" ").unwrap_or(rest);
    Some(FullHeader {
        ts,
        logger,
        level,
        msg,
    })
}

/// The levels exactly as `[%(levelname)-8.8s]` writes them, without the
/// general [`Level::parse`] (trimming, UTF-8 check, case folding): the
/// `full` header of nearly every line takes this path.
fn padded_level(raw: &[u8]) -> Option<Level> {
    match raw {
        b"INFO    " => Some(Level::Info),
        b"DEBUG   " => Some(Level::Debug),
        b"WARNING " => Some(Level::Warning),
        b"ERROR   " => Some(Level::Error),
        b"CRITICAL" => Some(Level::Critical),
        _ => None,
    }
}

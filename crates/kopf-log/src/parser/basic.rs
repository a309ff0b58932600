//! Python's own logging formats: `logging.basicConfig()`'s default,
//! `LEVEL:logger:message`, or a custom `format=` (`%(asctime)s %(levelname)s
//! [%(name)s] %(message)s` and the like): what kopf's loggers write when the operator
//! starts kopf from Python (`kopf.run()`) and sets up logging itself. Only `kopf run`
//! installs kopf's own formats (kopf 1.45 `cli.py` calls `loggers.configure()`;
//! `kopf.run()` does not), so these lines carry no `[namespace/name]` prefix (kopf adds
//! it in its own formatter).

use crate::Level;

/// The parts of a `basicConfig` line of one of kopf's loggers.
pub(super) struct BasicHeader<'a> {
    pub(super) level: Level,
    pub(super) logger: &'a [u8],
    pub(super) msg: &'a [u8],
}

/// A line of one of kopf's loggers (`kopf` or `kopf.*`) in Python's default
/// `basicConfig` format, else in a custom format (see [`custom_format`]); `None` for
/// any other line, so that another program's lines are never taken for kopf's.
pub(super) fn parse_basic(l: &[u8]) -> Option<BasicHeader<'_>> {
    default_format(l).or_else(|| custom_format(l))
}

/// `INFO:kopf.objects:Handler 'x' succeeded.`, `basicConfig`'s default format.
fn default_format(l: &[u8]) -> Option<BasicHeader<'_>> {
    let (level, rest) = [
        (&b"INFO:"[..], Level::Info),
        (b"DEBUG:", Level::Debug),
        (b"WARNING:", Level::Warning),
        (b"ERROR:", Level::Error),
        (b"CRITICAL:", Level::Critical),
    ]
    .into_iter()
    .find_map(|(prefix, level)| l.strip_prefix(prefix).map(|rest| (level, rest)))?;
    let colon = memchr::memchr(b':', rest)?;
    let logger = &rest[..colon];
    if logger != b"kopf" && !logger.starts_with(b"kopf.") {
        return None;
    }
    Some(BasicHeader {
        level,
        logger,
        msg: &rest[colon + 1..],
    })
}

/// How far into a line a custom format's header (time, level, logger) may reach.
const MAX_HEADER: usize = 128;

/// The bytes that separate a custom format's fields from each other and the message.
fn is_separator(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'[' | b']' | b'(' | b')' | b':' | b'-' | b'|'
    )
}

/// A custom format (`2026-12-01 10:00:00,000 ERROR [kopf.objects] message`,
/// `... [ERROR] kopf.objects: message`, `kopf.objects - ERROR - message`): within the
/// first [`MAX_HEADER`] bytes, a token naming one of kopf's loggers next to a level
/// token, nothing but separators between them (neighbours in every such format; a
/// level word elsewhere is the message's); the message follows the later of them.
fn custom_format(l: &[u8]) -> Option<BasicHeader<'_>> {
    let head = &l[..l.len().min(MAX_HEADER)];
    let (start, end) = kopf_logger_token(head)?;
    let (level, level_start, level_end) = level_token(head)?;
    let between = if level_end <= start {
        &head[level_end..start]
    } else {
        head.get(end..level_start)?
    };
    if !between.iter().all(|&c| is_separator(c)) {
        return None;
    }
    let mut msg = &l[end.max(level_end)..];
    while let Some((&c, rest)) = msg.split_first() {
        if !is_separator(c) {
            break;
        }
        msg = rest;
    }
    Some(BasicHeader {
        level,
        logger: &l[start..end],
        msg,
    })
}

/// The first token of `head` that names one of kopf's loggers (`kopf`, `kopf.*`):
/// starting the line or after a separator, ending at one.
fn kopf_logger_token(head: &[u8]) -> Option<(usize, usize)> {
    let mut from = 0;
    loop {
        let start = from + memchr::memmem::find(&head[from..], b"kopf")?;
        let end = head[start..]
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'.' || c == b'_'))
            .map_or(head.len(), |i| start + i);
        let name = &head[start..end];
        let before = start == 0 || is_separator(head[start - 1]);
        let after = head.get(end).is_some_and(|&c| is_separator(c));
        if before && after && (name == b"kopf" || name.starts_with(b"kopf.")) {
            return Some((start, end));
        }
        from = start + 4;
    }
}

/// The first level token of `head` (`DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`)
/// between separators, with where it starts and ends.
fn level_token(head: &[u8]) -> Option<(Level, usize, usize)> {
    let mut at = 0;
    while at < head.len() {
        let start = at;
        let end = head[start..]
            .iter()
            .position(|&c| is_separator(c))
            .map_or(head.len(), |i| start + i);
        let level = match &head[start..end] {
            b"DEBUG" => Some(Level::Debug),
            b"INFO" => Some(Level::Info),
            b"WARNING" => Some(Level::Warning),
            b"ERROR" => Some(Level::Error),
            b"CRITICAL" => Some(Level::Critical),
            _ => None,
        };
        if let Some(level) = level
            && (start == 0 || is_separator(head[start - 1]))
            && head.get(end).is_none_or(|&c| is_separator(c))
        {
            return Some((level, start, end));
        }
        at = end + 1;
    }
    None
}

/// Whether `l` starts a `basicConfig` record of kopf's (for tracebacks, which end
/// where one begins).
pub(super) fn is_basic_header(l: &[u8]) -> bool {
    parse_basic(l).is_some()
}

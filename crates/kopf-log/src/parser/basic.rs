//! Python's `logging.basicConfig()` default format, `LEVEL:logger:message`: what
//! kopf's loggers write when the operator starts kopf from Python (`kopf.run()`) and
//! sets up logging itself. Only `kopf run` installs kopf's own formats (kopf 1.45
//! `cli.py` calls `loggers.configure()`; `kopf.run()` does not), so these lines carry
//! no time and no `[namespace/name]` prefix (kopf adds it in its own formatter).

use crate::Level;

/// The parts of a `basicConfig` line of one of kopf's loggers.
pub(super) struct BasicHeader<'a> {
    pub(super) level: Level,
    pub(super) logger: &'a [u8],
    pub(super) msg: &'a [u8],
}

/// `INFO:kopf.objects:Handler 'x' succeeded.`: a `basicConfig` line whose logger is
/// kopf's (`kopf` or `kopf.*`); `None` for any other line, so that another program's
/// lines in this format are never taken for kopf's.
pub(super) fn parse_basic(l: &[u8]) -> Option<BasicHeader<'_>> {
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

/// Whether `l` starts a `basicConfig` record of kopf's (for tracebacks, which end
/// where one begins).
pub(super) fn is_basic_header(l: &[u8]) -> bool {
    parse_basic(l).is_some()
}

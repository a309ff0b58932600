//! Traceback continuation lines: which lines continue a record, and the
//! bounded copy a record keeps.

use super::bounded::bounded_redacted;
use crate::{Level, LogFormat, MASK, Record};
use memchr::memmem;
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trace {
    /// No traceback has started after the record's line.
    Idle,
    /// Inside `Traceback (most recent call last):` ... frames.
    Frames,
    /// After the exception line (`ValueError: boom`).
    AfterException,
}

/// Bounded traceback lines: the first ones, a count of the omitted middle, the last ones.
#[derive(Default)]
pub(super) struct Tb {
    head: Vec<String>,
    tail: VecDeque<String>,
    omitted: usize,
    pub(super) blanks: usize,
    head_max: usize,
    tail_max: usize,
    /// A line so far opened a PEM block (`-----BEGIN ...`) that no line closed.
    pem_open: bool,
}

impl Tb {
    pub(super) fn new(max_lines: usize) -> Self {
        let max_lines = max_lines.max(2);
        Tb {
            head_max: max_lines - max_lines / 3,
            tail_max: max_lines / 3,
            ..Tb::default()
        }
    }

    /// Adds line `raw`, cut at `max_bytes` (redacted whole first when it is
    /// longer: [`bounded_redacted`]). Inside a PEM block that an earlier line
    /// opened, the line is masked whole, up to the block's `-----END`: an
    /// exception's message printed over several lines (kopf logs it as it is)
    /// splits a key into base64 lines, and a short one (the last) looks like
    /// no secret on its own.
    pub(super) fn push_line(&mut self, raw: &[u8], max_bytes: usize) {
        let line = if self.pem_open {
            pem_body_line(raw, max_bytes)
        } else {
            bounded_redacted(raw, None, max_bytes).0
        };
        self.pem_open = pem_open_after(raw, self.pem_open);
        self.push(line);
    }

    pub(super) fn push(&mut self, s: String) {
        if self.head.len() < self.head_max {
            self.head.push(s);
        } else if self.tail_max == 0 {
            self.omitted += 1;
        } else {
            if self.tail.len() == self.tail_max {
                self.tail.pop_front();
                self.omitted += 1;
            }
            self.tail.push_back(s);
        }
    }

    /// The kept lines, with a marker for the omitted ones (trailing blanks dropped).
    pub(super) fn into_lines(self) -> Vec<String> {
        let Tb {
            mut head,
            tail,
            omitted,
            ..
        } = self;
        if omitted > 0 {
            head.push(format!("... {omitted} more lines ..."));
        }
        head.extend(tail);
        head
    }
}

/// Whether a PEM block is open after `line`, `open` telling whether one was
/// before it: the line's last marker decides.
fn pem_open_after(line: &[u8], open: bool) -> bool {
    if memmem::find(line, b"-----").is_none() {
        return open;
    }
    match (
        memmem::rfind(line, b"-----BEGIN"),
        memmem::rfind(line, b"-----END"),
    ) {
        (Some(begin), Some(end)) => begin > end,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => open,
    }
}

/// A line of an open PEM block: [`MASK`], and what follows its `-----END`
/// marker when it has one (bounded like any traceback line).
fn pem_body_line(raw: &[u8], max_bytes: usize) -> String {
    let Some(end) = memmem::find(raw, b"-----END") else {
        return MASK.to_owned();
    };
    let rest = bounded_redacted(&raw[end..], None, max_bytes.saturating_sub(MASK.len())).0;
    format!("{MASK}{rest}")
}

/// kopf logs tracebacks only with `logger.exception()` (ERROR); a traceback
/// after an INFO/DEBUG record, or after a JSON record (whose tracebacks are in
/// `exc_info`), is Python's own output and starts a record of its own.
pub(super) fn accepts_traceback(rec: &Record) -> bool {
    rec.format != Some(LogFormat::Json)
        && !(matches!(rec.format, Some(LogFormat::Full | LogFormat::Basic))
            && matches!(rec.level, Some(Level::Debug | Level::Info)))
}

pub(super) fn is_traceback_start(l: &[u8]) -> bool {
    let t = l.trim_ascii();
    t.len() < 80 && t.ends_with(b"Traceback (most recent call last):")
}

/// Whether a raw line (kubelet timestamp included, no ANSI code) may be one
/// that [`is_traceback_start`] accepts: a cheap superset of it.
pub(super) fn may_start_traceback(raw: &[u8]) -> bool {
    raw.trim_ascii_end().ends_with(b"last):")
}

pub(super) fn is_chain_header(l: &[u8]) -> bool {
    l.starts_with(b"The above exception was the direct cause of the following exception:")
        || l.starts_with(b"During handling of the above exception, another exception occurred:")
}

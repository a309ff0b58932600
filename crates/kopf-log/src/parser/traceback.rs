//! Traceback continuation lines: which lines continue a record, and the
//! bounded copy a record keeps.

use crate::{Level, LogFormat, Record};
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

/// kopf logs tracebacks only with `logger.exception()` (ERROR); a traceback
/// after an INFO/DEBUG record, or after a JSON record (whose tracebacks are in
/// `exc_info`), is Python's own output and starts a record of its own.
pub(super) fn accepts_traceback(rec: &Record) -> bool {
    rec.format != Some(LogFormat::Json)
        && !(rec.format == Some(LogFormat::Full)
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

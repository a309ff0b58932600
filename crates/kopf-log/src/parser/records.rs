//! The iterator of records over a [`BufRead`].

use super::{LineHint, Parser, ParserOptions, Routine, RoutineStats, Stats};
use crate::Record;
use std::collections::VecDeque;
use std::io::{self, BufRead};

/// An iterator of records over a [`BufRead`], reading lines of at most
/// [`Parser::line_bound`] bytes (the rest of a longer line is skipped, and
/// its record is [`Record::truncated`]).
///
/// Exists for the common case of a log file or a blocking log stream.
pub struct Records<R> {
    reader: R,
    parser: Parser,
    buf: Vec<u8>,
    /// `buf` holds a line cut at the bound.
    cut: bool,
    done: bool,
    /// Records parsed from the reader's buffer, not yet yielded.
    ready: VecDeque<Record>,
}

/// Parses everything `reader` yields. Items are `Err` only for I/O errors
/// of the reader (after which the iterator ends).
pub fn records<R: BufRead>(reader: R, options: ParserOptions) -> Records<R> {
    Records {
        reader,
        parser: Parser::new(options),
        buf: Vec::new(),
        cut: false,
        done: false,
        ready: VecDeque::new(),
    }
}

impl<R> Records<R> {
    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.parser.stats()
    }

    /// The same iterator with another [`Routine`] mode: with
    /// [`Routine::Count`] it yields only the records that are not routine.
    /// Exists for [`records`] callers, like [`Parser::with_routine`].
    pub fn with_routine(mut self, routine: Routine) -> Self {
        self.parser.routine = routine;
        self
    }

    /// See [`Parser::routine_stats`].
    pub fn routine_stats(&self) -> RoutineStats {
        self.parser.routine_stats()
    }
}

impl<R: BufRead> Records<R> {
    /// Reads one line into `buf`, bounded; returns false at the end of input.
    fn read_line(&mut self) -> io::Result<bool> {
        self.buf.clear();
        self.cut = false;
        let max = self.parser.line_bound();
        let mut any = false;
        loop {
            let avail = match self.reader.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok(any);
            }
            any = true;
            let (part, used, eol) = match memchr::memchr(b'\n', avail) {
                Some(i) => (&avail[..i], i + 1, true),
                None => (avail, avail.len(), false),
            };
            let room = max.saturating_sub(self.buf.len());
            self.cut |= part.len() > room;
            self.buf.extend_from_slice(&part[..part.len().min(room)]);
            self.parser.stats.bytes += used as u64;
            self.reader.consume(used);
            if eol {
                return Ok(true);
            }
        }
    }
}

impl<R: BufRead> Iterator for Records<R> {
    type Item = io::Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            // The whole lines in the reader's buffer are parsed in place, not copied.
            if let Ok(avail) = self.reader.fill_buf() {
                let used = self.parser.complete_lines(avail, &mut self.ready);
                if used > 0 {
                    self.parser.stats.bytes += used as u64;
                    self.reader.consume(used);
                    continue;
                }
            }
            // Otherwise (a line across buffer refills, the end, an error): copy.
            match self.read_line() {
                Ok(true) => {
                    let line = std::mem::take(&mut self.buf);
                    let hint = LineHint::unknown(self.cut);
                    self.parser.line(&line, hint, &mut self.ready);
                    self.buf = line;
                }
                Ok(false) => {
                    self.done = true;
                    self.ready.extend(self.parser.finish());
                    self.ready.extend(self.parser.finish());
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

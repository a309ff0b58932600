//! The parser's options, counters and routine mode.

#[cfg(doc)]
use super::{Parser, Records, records};
#[cfg(doc)]
use crate::EventKind;
#[cfg(doc)]
use crate::Record;
use crate::VersionRange;

/// The most bytes of one line the parser buffers (64 KiB): [`Parser::push_chunk`]
/// and [`records()`] keep at most this much of a line whose newline has not
/// come yet, cut the line there and drop the rest of it as it arrives.
///
/// Exists so that a stream with a huge line (a dumped object, a binary blob,
/// no newline at all) cannot grow the parser's memory: a record keeps at most
/// [`ParserOptions::max_message_bytes`] of it anyway. kopf's own lines are
/// far shorter; the longest are tracebacks' frames and patch diffs.
pub const MAX_BUFFERED_LINE_BYTES: usize = 64 * 1024;

/// Tuning of the parser; the defaults suit the auditor.
///
/// Exists so that the bounds (what is kept per record) and kopf's
/// `--log-refkey` can be set by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParserOptions {
    /// Another JSON key holding the object reference, as set with kopf's
    /// `--log-refkey`; `object` is always accepted.
    pub refkey: Option<String>,
    /// Messages longer than this many bytes are cut (on a char boundary).
    pub max_message_bytes: usize,
    /// How many traceback lines a record keeps: the first ~2/3 and the last ~1/3,
    /// with a `... N more lines ...` marker between.
    pub max_traceback_lines: usize,
    /// Longest traceback line kept, in bytes (longer ones are cut).
    pub max_traceback_line_bytes: usize,
    /// Longest input line read by [`records()`] and [`Parser::push_chunk`],
    /// at most [`MAX_BUFFERED_LINE_BYTES`] whatever is set here (see
    /// [`Parser::line_bound`]); the rest of a longer line is skipped (but
    /// counted in [`Stats::bytes`]), and its record is [`Record::truncated`].
    /// [`Parser::push_line`] takes the caller's line whole.
    pub max_line_bytes: usize,
}

impl Default for ParserOptions {
    fn default() -> Self {
        ParserOptions {
            refkey: None,
            max_message_bytes: 4096,
            max_traceback_lines: 16,
            max_traceback_line_bytes: 512,
            max_line_bytes: MAX_BUFFERED_LINE_BYTES,
        }
    }
}

/// Counters over everything the parser was given.
///
/// Exists for `runtime.unparsed-logs` (most lines not kopf's) and for the
/// gathering's byte accounting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Lines given to the parser.
    pub lines: u64,
    /// Lines that start a record in one of kopf's formats (`full` header,
    /// kopf JSON, or a `plain` line with an object prefix or a known kopf message).
    pub kopf_lines: u64,
    /// Lines absorbed as tracebacks into the record before them.
    pub continuation_lines: u64,
    /// Lines longer than [`Parser::line_bound`], cut there by
    /// [`Parser::push_chunk`] or [`records()`], and the unterminated last
    /// line of an input cut short ([`Parser::input_cut_short`]).
    pub cut_lines: u64,
    /// Bytes given (line terminators included when read through [`records()`]
    /// or [`Parser::push_chunk`]).
    pub bytes: u64,
    /// Records emitted.
    pub records: u64,
    /// Records at level DEBUG (kopf's `-v`/`--debug`), counted in both
    /// [`Routine`] modes. Exists so that a check can tell when DEBUG records
    /// dominate a log window (the failures it looks for are crowded out of
    /// a bounded tail).
    pub debug_records: u64,
    /// Records of kind [`EventKind::HandlerSucceeded`](crate::EventKind::HandlerSucceeded)
    /// (`Handler 'x' succeeded.`, also timers', daemons'), counted in both [`Routine`]
    /// modes. Exists because these INFO lines of the object logger are routine and
    /// not kept, yet a check must know that kopf wrote some (to tell whether
    /// `settings.posting.level` let any of them become an Event).
    pub successes: u64,
    /// What the wording of all the lines so far tells of kopf's version:
    /// every [`VersionSignal`](crate::VersionSignal)'s range, narrowed
    /// together (also from the routine lines [`Routine::Count`] does not
    /// build). [`VersionRange::is_empty`] when the clues contradict each other.
    pub kopf_version: VersionRange,
}

impl Stats {
    /// Adds the counts of `more` (another read of the same log, or another log of
    /// the same operator) and narrows the version range by its clues.
    ///
    /// Exists because a log is read in parts (incrementally, per pod) while its
    /// checks judge the whole window.
    pub fn add(&mut self, more: &Stats) {
        self.lines += more.lines;
        self.kopf_lines += more.kopf_lines;
        self.continuation_lines += more.continuation_lines;
        self.cut_lines += more.cut_lines;
        self.bytes += more.bytes;
        self.records += more.records;
        self.debug_records += more.debug_records;
        self.successes += more.successes;
        self.kopf_version.narrow(more.kopf_version);
    }

    /// The share of non-continuation lines that are kopf's, `0.0..=1.0`
    /// (1.0 for no lines).
    pub fn kopf_ratio(&self) -> f64 {
        let heads = self.lines.saturating_sub(self.continuation_lines);
        if heads == 0 {
            1.0
        } else {
            self.kopf_lines as f64 / heads as f64
        }
    }
}

/// What the parser does with routine records: those with the kind
/// [`EventKind::Other`], [`EventKind::HandlerSucceeded`] or
/// [`EventKind::CauseProcessed`] and no RBAC denial ([`Record::is_routine`]).
///
/// Exists because a kopf log is mostly routine (handler successes, `is
/// processed` summaries, INFO/DEBUG chatter, non-kopf output) and the auditor
/// keeps none of it: building a full [`Record`] per routine line is most of the
/// parser's cost. Set with [`Parser::with_routine`] or [`Records::with_routine`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Routine {
    /// Every record is built and returned (the default, and the only mode
    /// before `Routine` existed).
    #[default]
    Keep,
    /// Routine records are counted in [`Stats`] (lines, kopf lines, records:
    /// the same figures as with [`Routine::Keep`]) but not returned, and most
    /// are never built: cheap prefix checks on the line recognise them without
    /// allocating or parsing JSON with serde. Every other record is returned
    /// exactly as [`Routine::Keep`] returns it, tracebacks included: the
    /// output equals the [`Routine::Keep`] output without the routine records.
    Count,
}

/// How the routine records a [`Routine::Count`] parser dropped were recognised.
///
/// Exists so that tests and the benchmark can check that the fast path is
/// the one taken (a regression to `built` keeps the output right but slow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RoutineStats {
    /// Recognised by the quick checks on the line, never built.
    pub quick: u64,
    /// Built in full first (lines the quick checks could not decide, or a
    /// routine record a traceback attached to), then dropped.
    pub built: u64,
}

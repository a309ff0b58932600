//! The streaming line parser: format detection, headers, object prefixes,
//! JSON fields, traceback continuation lines, statistics.

use crate::classify::{
    self, Finders, RoutineTag, first_word_end, forbidden_kind, handler_span, own,
};
use crate::quick_json::{self, Value, Visit, json_message};
use crate::redact::strip_ansi_into;
use crate::swar::find_near;
use crate::time::{HourCache, Timestamp, parse_asctime_cached, parse_rfc3339_cached};
use crate::{EventKind, Level, LogFormat, ObjectRef, Record};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, BufRead};

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
    /// Longest input line read by [`records`] and [`Parser::push_chunk`];
    /// the rest of a longer line is skipped (but counted in [`Stats::bytes`]).
    pub max_line_bytes: usize,
}

impl Default for ParserOptions {
    fn default() -> Self {
        ParserOptions {
            refkey: None,
            max_message_bytes: 4096,
            max_traceback_lines: 16,
            max_traceback_line_bytes: 512,
            max_line_bytes: 1 << 20,
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
    /// Bytes given (line terminators included when read through [`records`]
    /// or [`Parser::push_chunk`]).
    pub bytes: u64,
    /// Records emitted.
    pub records: u64,
}

impl Stats {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trace {
    /// No traceback has started after the record's line.
    Idle,
    /// Inside `Traceback (most recent call last):` ... frames.
    Frames,
    /// After the exception line (`ValueError: boom`).
    AfterException,
}

/// Bounded traceback lines: the first ones, a count of the omitted middle, the last ones.
#[derive(Default)]
struct Tb {
    head: Vec<String>,
    tail: VecDeque<String>,
    omitted: usize,
    blanks: usize,
    head_max: usize,
    tail_max: usize,
}

impl Tb {
    fn new(max_lines: usize) -> Self {
        let max_lines = max_lines.max(2);
        Tb {
            head_max: max_lines - max_lines / 3,
            tail_max: max_lines / 3,
            ..Tb::default()
        }
    }

    fn push(&mut self, s: String) {
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
    fn into_lines(self) -> Vec<String> {
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

struct Pending {
    rec: Record,
    trace: Trace,
    tb: Tb,
}

/// The record waiting for its continuation lines.
enum Slot {
    /// Built. Boxed so that the slot, replaced on every line, stays small:
    /// moving a whole `Record` per routine line cost more than this
    /// allocation per built one.
    Full(Box<Pending>),
    /// A routine record recognised by [`Parser::quick_head`], not built
    /// ([`Routine::Count`] only).
    Light(Light),
}

struct Light {
    /// Whether a traceback may attach to it; then its line is kept in
    /// `Parser::light_line`, to build it if one does.
    accepts: bool,
    kubelet: Option<Timestamp>,
    line: u64,
}

/// What [`Parser::quick_head`] found out about a routine line.
struct Quick {
    /// In one of kopf's formats (counts in [`Stats::kopf_lines`]).
    kopf: bool,
    /// Whether a traceback may attach ([`accepts_traceback`]).
    accepts: bool,
}

/// Where the parser puts completed records.
///
/// Exists so that a line's record is moved once, into its final place:
/// returning `Option<Record>` up through the per-line functions copied the
/// whole (large) value on every line, record or not.
trait Sink {
    fn put(&mut self, record: Record);
}

impl Sink for Option<Record> {
    /// Callers give one line at a time, which completes at most one record.
    fn put(&mut self, record: Record) {
        *self = Some(record);
    }
}

impl Sink for VecDeque<Record> {
    fn put(&mut self, record: Record) {
        self.push_back(record);
    }
}

/// Any `Extend` (the public [`Parser::push_chunk`] takes one) as a [`Sink`].
struct Extending<'e, E>(&'e mut E);

impl<E: Extend<Record>> Sink for Extending<'_, E> {
    fn put(&mut self, record: Record) {
        self.0.extend(std::iter::once(record));
    }
}

/// What a search over a whole buffer proved about one of its lines.
#[derive(Debug, Clone, Copy)]
struct LineHint {
    /// The line may contain an ANSI escape (`ESC`).
    esc: bool,
    /// The next line may start a traceback (false only when it is known not
    /// to): a routine record's line is kept for one only then.
    traceback_next: bool,
}

impl LineHint {
    /// Nothing known: check the line itself.
    const UNKNOWN: LineHint = LineHint {
        esc: true,
        traceback_next: true,
    };
}

/// The next ANSI escape in a buffer at or after the current line
/// (`usize::MAX`: none), searched again only once a line passes it, so that
/// a buffer is searched about once rather than once per line. (` is
/// forbidden` and the scope warning are not searched here: only the lines
/// [`Finders::quick_routine`] cannot prove routine otherwise look for them.)
struct Ahead {
    esc: usize,
}

impl Ahead {
    fn new(buf: &[u8]) -> Self {
        Ahead {
            esc: memchr::memchr(0x1b, buf).unwrap_or(usize::MAX),
        }
    }

    /// The hint for the line `buf[start..end]`; lines are visited in order.
    fn hint(&mut self, buf: &[u8], start: usize, end: usize) -> LineHint {
        if self.esc < start {
            self.esc = memchr::memchr(0x1b, &buf[start..]).map_or(usize::MAX, |i| start + i);
        }
        LineHint {
            esc: self.esc < end,
            traceback_next: true,
        }
    }
}

/// The streaming parser.
///
/// Feed lines with [`Parser::push_line`] (or byte chunks with
/// [`Parser::push_chunk`]); a record is returned once the next record starts,
/// i.e. after its traceback lines were absorbed; [`Parser::finish`] returns the
/// last one. Memory is bounded by the options, whatever the input.
pub struct Parser {
    opts: ParserOptions,
    finders: Finders,
    pending: Option<Slot>,
    stats: Stats,
    routine: Routine,
    dropped: RoutineStats,
    light_line: Vec<u8>,
    line_no: u64,
    ansi_buf: Vec<u8>,
    carry: Vec<u8>,
    carry_dropped: bool,
    kubelet_hours: HourCache,
    asctime_hours: HourCache,
    /// The seconds of JSON records' `timestamp` (see [`quick_fields`]).
    json_hours: HourCache,
}

impl fmt::Debug for Parser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parser")
            .field("opts", &self.opts)
            .field("stats", &self.stats)
            .field("routine", &self.routine)
            .field("line_no", &self.line_no)
            .finish_non_exhaustive()
    }
}

impl Default for Parser {
    fn default() -> Self {
        Parser::new(ParserOptions::default())
    }
}

impl Parser {
    /// A parser with the given options.
    pub fn new(options: ParserOptions) -> Self {
        Parser {
            opts: options,
            finders: Finders::new(),
            pending: None,
            stats: Stats::default(),
            routine: Routine::Keep,
            dropped: RoutineStats::default(),
            light_line: Vec::new(),
            line_no: 0,
            ansi_buf: Vec::new(),
            carry: Vec::new(),
            carry_dropped: false,
            kubelet_hours: HourCache::default(),
            asctime_hours: HourCache::default(),
            json_hours: HourCache::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The same parser with another [`Routine`] mode (the default is
    /// [`Routine::Keep`]). Exists to switch the auditor, which keeps no
    /// routine record, to [`Routine::Count`] without changing how it feeds lines.
    pub fn with_routine(mut self, routine: Routine) -> Self {
        self.routine = routine;
        self
    }

    /// How the routine records dropped so far were recognised (all zero with
    /// [`Routine::Keep`]).
    pub fn routine_stats(&self) -> RoutineStats {
        self.dropped
    }

    /// Parses one line (a trailing `\n` / `\r\n` is ignored). Returns the
    /// previous record when this line starts a new one, `None` when the line
    /// was absorbed into the pending record (a traceback) or nothing was pending
    /// (or, with [`Routine::Count`], the previous record was routine).
    pub fn push_line(&mut self, raw: &[u8]) -> Option<Record> {
        self.stats.bytes += raw.len() as u64;
        let mut record = None;
        self.line(raw, LineHint::UNKNOWN, &mut record);
        record
    }

    /// Parses a chunk of a byte stream (lines split anywhere), appending the
    /// completed records to `out`. Lines longer than
    /// [`ParserOptions::max_line_bytes`] are cut. Call [`Parser::finish`] at the end.
    pub fn push_chunk<E: Extend<Record>>(&mut self, chunk: &[u8], out: &mut E) {
        self.stats.bytes += chunk.len() as u64;
        let mut rest = chunk;
        if !self.carry.is_empty() || self.carry_dropped {
            // The line begun in the previous chunk ends in this one.
            let Some(i) = memchr::memchr(b'\n', rest) else {
                self.append_carry(rest);
                return;
            };
            self.append_carry(&rest[..i]);
            rest = &rest[i + 1..];
            let line = std::mem::take(&mut self.carry);
            self.line(&line, LineHint::UNKNOWN, &mut Extending(out));
            self.carry = line;
            self.carry.clear();
            self.carry_dropped = false;
        }
        let used = self.complete_lines(rest, &mut Extending(out));
        self.append_carry(&rest[used..]);
    }

    /// Parses every `\n`-terminated line of `buf` (each cut to
    /// [`ParserOptions::max_line_bytes`]), appending completed records to
    /// `out`; returns how many bytes that was (the unterminated rest is left
    /// to the caller). Does not count [`Stats::bytes`].
    ///
    /// Exists so that ANSI escapes, which every line must be checked for, are
    /// searched once over the whole buffer instead of once per line (most
    /// lines have none), and so that each line's successor is known (see
    /// [`LineHint::traceback_next`]).
    fn complete_lines<S: Sink>(&mut self, buf: &[u8], out: &mut S) -> usize {
        let mut ahead = Ahead::new(buf);
        let mut start = 0;
        let Some(mut end) = memchr::memchr(b'\n', buf) else {
            return 0;
        };
        loop {
            // One line ahead: whether it may start a traceback.
            let next_end = memchr::memchr(b'\n', &buf[end + 1..]).map(|i| end + 1 + i);
            let mut hint = ahead.hint(buf, start, end);
            hint.traceback_next = next_end.is_none_or(|next_end| {
                ahead.esc < next_end || may_start_traceback(&buf[end + 1..next_end])
            });
            let cut = (end - start).min(self.opts.max_line_bytes);
            self.line(&buf[start..start + cut], hint, out);
            start = end + 1;
            match next_end {
                Some(next_end) => end = next_end,
                None => return start,
            }
        }
    }

    fn append_carry(&mut self, part: &[u8]) {
        let room = self.opts.max_line_bytes.saturating_sub(self.carry.len());
        if part.len() > room {
            self.carry_dropped = true;
        }
        self.carry.extend_from_slice(&part[..part.len().min(room)]);
    }

    /// Ends the input: returns the last pending record. Call it until it
    /// returns `None` (at most twice: an unterminated line left by
    /// [`Parser::push_chunk`] makes one more record). The parser can be reused
    /// afterwards (line numbers and stats continue).
    pub fn finish(&mut self) -> Option<Record> {
        let mut first = None;
        if !self.carry.is_empty() || self.carry_dropped {
            let line = std::mem::take(&mut self.carry);
            self.carry_dropped = false;
            self.line(&line, LineHint::UNKNOWN, &mut first);
        }
        let mut last = None;
        if let Some(p) = self.pending.take() {
            self.close(p, &mut last);
        }
        // At most one of them can be a record that was pending before the
        // carried line; if both exist the caller needs both: chain via pending.
        match (first, last) {
            (Some(a), Some(b)) => {
                // Re-park the last one so that it is not lost; return the earlier.
                self.pending = Some(Slot::Full(Box::new(Pending {
                    rec: b,
                    trace: Trace::Idle,
                    tb: Tb::new(0),
                })));
                self.stats.records -= 1;
                Some(a)
            }
            (a, b) => a.or(b),
        }
    }

    fn line<S: Sink>(&mut self, raw: &[u8], hint: LineHint, out: &mut S) {
        self.line_no += 1;
        self.stats.lines += 1;
        let mut l = raw;
        if let Some(x) = l.strip_suffix(b"\n") {
            l = x;
        }
        if let Some(x) = l.strip_suffix(b"\r") {
            l = x;
        }
        let (kubelet, l) = strip_kubelet(l, &self.kubelet_hours);
        if hint.esc && memchr::memchr(0x1b, l).is_some() {
            let mut buf = std::mem::take(&mut self.ansi_buf);
            buf.clear();
            strip_ansi_into(l, &mut buf);
            self.stripped_line(&buf, kubelet, hint, out);
            self.ansi_buf = buf;
        } else {
            self.stripped_line(l, kubelet, hint, out);
        }
    }

    fn stripped_line<S: Sink>(
        &mut self,
        l: &[u8],
        kubelet: Option<Timestamp>,
        hint: LineHint,
        out: &mut S,
    ) {
        if self.absorb(l) {
            self.stats.continuation_lines += 1;
            return;
        }
        let line_no = self.line_no;
        if self.routine == Routine::Count
            && let Some(q) = self.quick_head(l)
        {
            if q.kopf {
                self.stats.kopf_lines += 1;
            }
            // Only the next line can attach a traceback to a routine record.
            let accepts = q.accepts && hint.traceback_next;
            if accepts {
                self.light_line.clear();
                self.light_line.extend_from_slice(l);
            }
            let light = Light {
                accepts,
                kubelet,
                line: line_no,
            };
            if let Some(prev) = self.pending.replace(Slot::Light(light)) {
                self.close(prev, out);
            }
            return;
        }
        let p = self.open(l, kubelet, line_no);
        if p.rec.format.is_some() {
            self.stats.kopf_lines += 1;
        }
        if let Some(prev) = self.pending.replace(Slot::Full(p)) {
            self.close(prev, out);
        }
    }

    /// Builds the record line `l` starts.
    fn open(&mut self, l: &[u8], kubelet: Option<Timestamp>, line_no: u64) -> Box<Pending> {
        let (rec, trace) = self.head(l, kubelet, line_no);
        let mut p = Box::new(Pending {
            rec,
            trace,
            tb: Tb::new(self.opts.max_traceback_lines),
        });
        if trace == Trace::Frames {
            // A traceback with no record to attach to: it is its own record.
            p.tb.push(bounded_lossy(l, self.opts.max_traceback_line_bytes).0);
        }
        p
    }

    /// Finalises a record that no more lines continue into `out`; not when
    /// it is routine and the mode is [`Routine::Count`].
    fn close<S: Sink>(&mut self, slot: Slot, out: &mut S) {
        match slot {
            Slot::Light(_) => {
                self.stats.records += 1;
                self.dropped.quick += 1;
            }
            Slot::Full(p) => {
                let rec = self.finalize(p);
                if self.routine == Routine::Count && rec.is_routine() {
                    self.dropped.built += 1;
                } else {
                    out.put(rec);
                }
            }
        }
    }

    /// Without building a record: proves that line `l` starts a routine record
    /// (one [`Parser::head`] would build with a routine kind, no denial, and no
    /// traceback of its own) and tells its format and whether a traceback may
    /// attach. `None` when unsure: the line is then parsed in full.
    fn quick_head(&self, l: &[u8]) -> Option<Quick> {
        if l.first() == Some(&b'{') {
            // `Parser::json` would accept the line with this message and no `exc_info`.
            let msg = json_message(l)?;
            let rest = split_prefix(msg).map_or(msg, |(_, _, rest)| rest);
            self.finders.quick_routine(rest)?;
            return Some(Quick {
                kopf: true,
                accepts: false,
            });
        }
        if let Some(h) = parse_full(l, &self.asctime_hours) {
            let rest = split_prefix(h.msg).map_or(h.msg, |(_, _, rest)| rest);
            self.finders.quick_routine(rest)?;
            return Some(Quick {
                kopf: true,
                accepts: !matches!(h.level, Some(Level::Debug | Level::Info)),
            });
        }
        if is_traceback_start(l) {
            return None;
        }
        let (object, rest) = match split_prefix(l) {
            Some((_, _, rest)) => (true, rest),
            None => (false, l),
        };
        let tag = self.finders.quick_routine(rest)?;
        Some(Quick {
            kopf: object || tag != RoutineTag::Other || known_plain(rest, None),
            accepts: true,
        })
    }

    /// Decides whether `l` continues the pending record (a traceback) and absorbs it.
    fn absorb(&mut self, l: &[u8]) -> bool {
        let light = match &self.pending {
            None => return false,
            Some(Slot::Full(_)) => None,
            Some(Slot::Light(x)) => Some((x.accepts, x.kubelet, x.line)),
        };
        if let Some((accepts, kubelet, line_no)) = light {
            // Only a traceback can continue a routine record (see the Idle
            // case below); it may carry a denial: build the record first.
            if !(accepts && is_traceback_start(l)) {
                return false;
            }
            let buf = std::mem::take(&mut self.light_line);
            let p = self.open(&buf, kubelet, line_no);
            self.light_line = buf;
            self.pending = Some(Slot::Full(p));
        }
        let Some(Slot::Full(p)) = self.pending.as_mut() else {
            return false;
        };
        let indented = matches!(l.first(), Some(b' ' | b'\t'));
        let blank = l.iter().all(|c| c.is_ascii_whitespace());
        let tb_start = is_traceback_start(l);
        let chain = is_chain_header(l);
        let take = match p.trace {
            Trace::Idle => {
                if tb_start && accepts_traceback(&p.rec) {
                    p.trace = Trace::Frames;
                    true
                } else {
                    false
                }
            }
            Trace::Frames => {
                if blank || indented || tb_start || chain {
                    true
                } else if is_full_header(l) || l.first() == Some(&b'{') {
                    false
                } else {
                    p.trace = Trace::AfterException;
                    true
                }
            }
            Trace::AfterException => {
                if blank {
                    true
                } else if tb_start || chain {
                    p.trace = Trace::Frames;
                    true
                } else if is_full_header(l) || l.first() == Some(&b'{') {
                    false
                } else {
                    // A multi-line exception message continues right after the
                    // exception line; after a blank line it is a new record.
                    p.tb.blanks == 0
                        && (indented
                            || (p.rec.format == Some(LogFormat::Full)
                                && parse_prefix(l, None).is_none()
                                && !known_plain(l, None)
                                && classify::classify(l, None, &self.finders).kind
                                    == EventKind::Other))
                }
            }
        };
        if !take {
            return false;
        }
        if blank {
            p.tb.blanks += 1;
            return true;
        }
        for _ in 0..std::mem::take(&mut p.tb.blanks) {
            p.tb.push(String::new());
        }
        p.tb.push(bounded_lossy(l, self.opts.max_traceback_line_bytes).0);
        if p.rec.forbidden.is_none() {
            p.rec.forbidden = self.finders.forbidden_in(l);
        }
        true
    }

    fn finalize(&mut self, p: Box<Pending>) -> Record {
        let Pending { mut rec, tb, .. } = *p;
        let lines = tb.into_lines();
        if !lines.is_empty() {
            rec.traceback = lines;
        }
        if matches!(rec.kind, EventKind::Other | EventKind::RequestRetry { .. })
            && let Some(f) = rec.forbidden.clone()
        {
            rec.kind = forbidden_kind(f);
            if rec.format == Some(LogFormat::Plain) || rec.format.is_none() {
                rec.level = rec.level.or(Some(Level::Error));
            }
        }
        self.stats.records += 1;
        rec
    }

    /// Parses a line that starts a record.
    fn head(&mut self, l: &[u8], kubelet: Option<Timestamp>, line: u64) -> (Record, Trace) {
        // Validate once; fields are then copied out without validating again.
        let whole = std::str::from_utf8(l).ok();
        if l.first() == Some(&b'{')
            && let Some(rec) = self.json(l, whole, kubelet, line)
        {
            return (rec, Trace::Idle);
        }
        let (format, timestamp, logger, level, msg) = match parse_full(l, &self.asctime_hours) {
            Some(FullHeader {
                ts,
                logger,
                level,
                msg,
            }) => {
                let logger = own(whole, logger.trim_ascii_end());
                (Some(LogFormat::Full), Some(ts), Some(logger), level, msg)
            }
            None => (None, kubelet, None, None, l),
        };
        let (object, msg) = match parse_prefix(msg, whole) {
            Some((o, rest)) => (Some(o), rest),
            None => (None, msg),
        };
        let c = classify::classify(msg, whole, &self.finders);
        let mut format = format;
        let mut level = level;
        if c.kind == EventKind::ScopeFutureWarning {
            // Python's own warning on stderr, not a kopf log line.
            level = Some(Level::Warning);
        } else if format.is_none()
            && (object.is_some() || c.kind != EventKind::Other || known_plain(msg, whole))
        {
            format = Some(LogFormat::Plain);
            level = c.kind.kopf_level();
        }
        let trace = if format.is_none() && is_traceback_start(l) {
            Trace::Frames
        } else {
            Trace::Idle
        };
        let (message, truncated) = bounded(msg, whole, self.opts.max_message_bytes);
        let rec = Record {
            timestamp: timestamp.or(kubelet),
            kubelet_timestamp: kubelet,
            level,
            logger,
            object,
            message,
            kind: c.kind,
            format,
            traceback: Vec::new(),
            forbidden: c.forbidden,
            request: c.request,
            line,
            truncated,
        };
        (rec, trace)
    }

    fn json(
        &mut self,
        l: &[u8],
        whole: Option<&str>,
        kubelet: Option<Timestamp>,
        line: u64,
    ) -> Option<Record> {
        let refkey = self.opts.refkey.as_deref().unwrap_or("object");
        let seed = LineSeed { refkey };
        let quick = whole.and_then(|text| quick_fields(text, refkey, &self.json_hours));
        let fields = match (quick, whole) {
            (Some(fields), _) => fields,
            // Already valid UTF-8: serde_json skips re-validating each string.
            (None, Some(text)) => {
                let mut de = serde_json::Deserializer::from_str(text);
                let f = seed.deserialize(&mut de).ok()?;
                de.end().ok()?;
                f
            }
            (None, None) => {
                let mut de = serde_json::Deserializer::from_slice(l);
                let f = seed.deserialize(&mut de).ok()?;
                de.end().ok()?;
                f
            }
        };
        let Some(mut message) = fields.message else {
            // JSON, but not kopf's: keep the raw line.
            let c = classify::classify(l, whole, &self.finders);
            let (message, truncated) = bounded(l, whole, self.opts.max_message_bytes);
            return Some(Record {
                timestamp: kubelet,
                kubelet_timestamp: kubelet,
                level: None,
                logger: None,
                object: None,
                message,
                kind: c.kind,
                format: None,
                traceback: Vec::new(),
                forbidden: c.forbidden,
                request: c.request,
                line,
                truncated,
            });
        };
        // `--log-prefix` also prefixes JSON messages.
        let mut object = fields.object;
        if let Some((o, rest)) = parse_prefix(message.as_bytes(), Some(&message)) {
            let skip = message.len() - rest.len();
            object = object.or(Some(o));
            message.drain(..skip);
        }
        let c = classify::classify(message.as_bytes(), Some(&message), &self.finders);
        let mut forbidden = c.forbidden;
        let mut traceback = Vec::new();
        if let Some(exc) = fields.exc_info {
            let mut tb = Tb::new(self.opts.max_traceback_lines);
            let max_bytes = self.opts.max_traceback_line_bytes;
            let finders = &self.finders;
            let mut each = |t: &str| {
                let b = t.as_bytes();
                tb.push(bounded_lossy(b, max_bytes).0);
                if forbidden.is_none() {
                    forbidden = finders.forbidden_in(b);
                }
            };
            match exc {
                ExcInfo::Text(s) => s.lines().for_each(&mut each),
                ExcInfo::Lines(v) => v.iter().flat_map(|s| s.lines()).for_each(&mut each),
            }
            traceback = tb.into_lines();
        }
        let kind = match c.kind {
            EventKind::Other | EventKind::RequestRetry { .. } if forbidden.is_some() => forbidden
                .clone()
                .map(forbidden_kind)
                .unwrap_or(EventKind::Other),
            k => k,
        };
        let level = fields.severity.or(fields.levelname);
        let timestamp = fields.timestamp.or(kubelet);
        let truncated = truncate_string(&mut message, self.opts.max_message_bytes);
        Some(Record {
            timestamp,
            kubelet_timestamp: kubelet,
            level,
            logger: fields.logger,
            object,
            message,
            kind,
            format: Some(LogFormat::Json),
            traceback,
            forbidden,
            request: c.request,
            line,
            truncated,
        })
    }
}

/// kopf logs tracebacks only with `logger.exception()` (ERROR); a traceback
/// after an INFO/DEBUG record, or after a JSON record (whose tracebacks are in
/// `exc_info`), is Python's own output and starts a record of its own.
fn accepts_traceback(rec: &Record) -> bool {
    rec.format != Some(LogFormat::Json)
        && !(rec.format == Some(LogFormat::Full)
            && matches!(rec.level, Some(Level::Debug | Level::Info)))
}

fn is_traceback_start(l: &[u8]) -> bool {
    let t = l.trim_ascii();
    t.len() < 80 && t.ends_with(b"Traceback (most recent call last):")
}

/// Whether a raw line (kubelet timestamp included, no ANSI code) may be one
/// that [`is_traceback_start`] accepts: a cheap superset of it.
fn may_start_traceback(raw: &[u8]) -> bool {
    raw.trim_ascii_end().ends_with(b"last):")
}

fn is_chain_header(l: &[u8]) -> bool {
    l.starts_with(b"The above exception was the direct cause of the following exception:")
        || l.starts_with(b"During handling of the above exception, another exception occurred:")
}

/// Detects the format of one line (after the kubelet timestamp and ANSI codes,
/// which this function also skips): `full` by its header, `json` by a JSON
/// object with a `message` key, else `plain` only when the line has an object
/// prefix or a known kopf message. Exists for callers that only sniff formats
/// (e.g. to report which `--log-format` a pod uses).
pub fn detect_format(line: &[u8]) -> Option<LogFormat> {
    let mut p = Parser::default();
    p.push_line(line);
    p.finish().and_then(|r| r.format)
}

/// Strips the kubelet's `timestamps=true` prefix (`2026-11-30T02:41:55.039412345Z `).
fn strip_kubelet<'l>(l: &'l [u8], hours: &HourCache) -> (Option<Timestamp>, &'l [u8]) {
    // The kubelet's own form in the second of the line before: most lines.
    if let Some((ts, rest)) = hours.kubelet_prefix(l) {
        return (Some(ts), rest);
    }
    if l.len() >= 20
        && l[4] == b'-'
        && l[10] == b'T'
        && let Some((ts, n)) = parse_rfc3339_cached(l, hours)
    {
        if l.get(n) == Some(&b' ') {
            return (Some(ts), &l[n + 1..]);
        }
        if n == l.len() {
            return (Some(ts), &[]);
        }
    }
    (None, l)
}

fn is_full_header(l: &[u8]) -> bool {
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

/// `[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] message`
/// (`%(name)-20.20s [%(levelname)-8.8s]`).
/// The parts of a `full` format line.
struct FullHeader<'a> {
    ts: Timestamp,
    logger: &'a [u8],
    level: Option<Level>,
    msg: &'a [u8],
}

fn parse_full<'l>(l: &'l [u8], hours: &HourCache) -> Option<FullHeader<'l>> {
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

/// `[namespace/name] ` or `[name] ` (kopf's `ObjectPrefixingMixin`).
fn parse_prefix<'m>(m: &'m [u8], whole: Option<&str>) -> Option<(ObjectRef, &'m [u8])> {
    let (ns, name, rest) = split_prefix(m)?;
    // Only ASCII passed the checks of `split_prefix`: these conversions cannot fail.
    let obj = ObjectRef {
        namespace: ns.map(|n| own(whole, n)),
        name: own(whole, name),
        kind: None,
        uid: None,
    };
    Some((obj, rest))
}

/// [`parse_prefix`] without allocating: (namespace, name, rest of the message).
type PrefixParts<'m> = (Option<&'m [u8]>, &'m [u8], &'m [u8]);

fn split_prefix(m: &[u8]) -> Option<PrefixParts<'_>> {
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
fn known_plain(m: &[u8], _whole: Option<&str>) -> bool {
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

/// Lossy UTF-8 of at most `max` bytes (after replacement characters), cut on
/// a char boundary; true when cut.
pub(crate) fn bounded_lossy(b: &[u8], max: usize) -> (String, bool) {
    bounded(b, None, max)
}

/// [`bounded_lossy`] of a sub-slice of `whole` (copied without re-validation).
pub(crate) fn bounded(b: &[u8], whole: Option<&str>, max: usize) -> (String, bool) {
    let mut cut = b.len() > max;
    let mut end = b.len().min(max);
    // Back off over UTF-8 continuation bytes (at most 3 for valid text).
    let mut steps = 0;
    while cut && end > 0 && steps < 3 && (b[end] & 0xC0) == 0x80 {
        end -= 1;
        steps += 1;
    }
    let mut s = own(whole, &b[..end]);
    // Invalid bytes become 3-byte replacement characters: re-apply the bound.
    cut |= truncate_string(&mut s, max);
    (s, cut)
}

fn truncate_string(s: &mut String, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    true
}

// ---------------------------------------------------------------------------
// JSON: one pass over the line, allocating only for the keys kopf writes.

#[cfg_attr(test, derive(Debug, PartialEq))]
enum ExcInfo {
    Text(String),
    Lines(Vec<String>),
}

#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct JsonFields {
    message: Option<String>,
    timestamp: Option<Timestamp>,
    severity: Option<Level>,
    levelname: Option<Level>,
    logger: Option<String>,
    object: Option<ObjectRef>,
    exc_info: Option<ExcInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Message,
    Timestamp,
    Severity,
    Levelname,
    Logger,
    Object,
    ExcInfo,
    Other,
}

struct KeySeed<'a> {
    refkey: &'a str,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key::of(v.as_bytes(), self.refkey))
    }
}

impl Key {
    /// What a top-level key of a JSON line holds (serde's [`KeySeed`] and
    /// [`QuickFields`] read the same keys).
    fn of(k: &[u8], refkey: &str) -> Key {
        match k {
            b"message" => Key::Message,
            b"timestamp" | b"asctime" | b"time" => Key::Timestamp,
            b"severity" => Key::Severity,
            b"levelname" | b"level" => Key::Levelname,
            b"name" | b"logger" => Key::Logger,
            b"exc_info" => Key::ExcInfo,
            b"object" => Key::Object,
            k if k == refkey.as_bytes() => Key::Object,
            _ => Key::Other,
        }
    }
}

struct LineSeed<'a> {
    refkey: &'a str,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = JsonFields;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<JsonFields, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = JsonFields;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonFields, A::Error> {
        let mut out = JsonFields::default();
        while let Some(key) = map.next_key_seed(KeySeed {
            refkey: self.refkey,
        })? {
            match key {
                Key::Message => out.message = map.next_value_seed(Lenient)?,
                Key::Timestamp => out.timestamp = map.next_value_seed(Parsed(parse_ts))?,
                Key::Severity => out.severity = map.next_value_seed(Parsed(Level::parse))?,
                Key::Levelname => out.levelname = map.next_value_seed(Parsed(Level::parse))?,
                Key::Logger => out.logger = map.next_value_seed(Lenient)?,
                Key::Object => out.object = map.next_value_seed(ObjectSeed)?,
                Key::ExcInfo => out.exc_info = map.next_value_seed(ExcSeed)?,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// The `visit_*` methods of a visitor whose value is an `Option`: booleans,
/// numbers and `null` read as `None` (serde's defaults refuse them). Written
/// once for the seeds that want only a string, a map or a list.
macro_rules! scalars_are_none {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// Any JSON value: strings and scalars as text, containers skipped.
struct Lenient;

impl<'de> DeserializeSeed<'de> for Lenient {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Lenient {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

fn parse_ts(s: &str) -> Option<Timestamp> {
    Timestamp::parse_rfc3339(s)
}

/// A string value parsed in place (no allocation); other values are skipped.
struct Parsed<T>(fn(&str) -> Option<T>);

impl<'de, T> DeserializeSeed<'de> for Parsed<T> {
    type Value = Option<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T> Visitor<'de> for Parsed<T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((self.0)(v))
    }
    scalars_are_none!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_seq(seq).map(|_| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_map(map).map(|_| None)
    }
}

/// kopf's `object` (`apiVersion, kind, name, uid, namespace`); anything else is skipped.
struct ObjectSeed;

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Option<ObjectRef>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

struct ObjKey(u8);

impl<'de> de::Deserialize<'de> for ObjKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ObjKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ObjKey, E> {
                Ok(ObjKey(match v {
                    "name" => 1,
                    "namespace" => 2,
                    "kind" => 3,
                    "uid" => 4,
                    _ => 0,
                }))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Visitor<'de> for ObjectSeed {
    type Value = Option<ObjectRef>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object reference")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut namespace, mut kind, mut uid) = (None, None, None, None);
        while let Some(ObjKey(k)) = map.next_key()? {
            match k {
                1 => name = map.next_value_seed(Lenient)?,
                2 => namespace = map.next_value_seed(Lenient)?,
                3 => kind = map.next_value_seed(Lenient)?,
                4 => uid = map.next_value_seed(Lenient)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(object_ref(name, namespace, kind, uid))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_seq(seq).map(|_| None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    scalars_are_none!();
}

/// kopf's object reference from its JSON fields (each cut at 512 bytes):
/// none without a name, no namespace when it is empty.
fn object_ref(
    name: Option<String>,
    namespace: Option<String>,
    kind: Option<String>,
    uid: Option<String>,
) -> Option<ObjectRef> {
    let cap = |s: Option<String>| {
        s.map(|mut s| {
            truncate_string(&mut s, 512);
            s
        })
    };
    cap(name).map(|name| ObjectRef {
        namespace: cap(namespace).filter(|n| !n.is_empty()),
        name,
        kind: cap(kind),
        uid: cap(uid),
    })
}

/// The fields of a simple JSON line (see [`quick_json::walk`]) read without
/// serde: what [`LineSeed`] reads, or `None` wherever the two could differ
/// (a key read twice, a scalar other than a string or `null` where a string
/// is read, `exc_info`), and serde reads the line.
///
/// Exists because serde's cost per string is high for these short ones: in
/// `Keep` mode, where every JSON line is read, this saved 8% of the scan.
fn quick_fields(text: &str, refkey: &str, hours: &HourCache) -> Option<JsonFields> {
    let mut q = QuickFields {
        refkey,
        ..QuickFields::default()
    };
    quick_json::walk(text.as_bytes(), &mut q)?;
    let owned = |b: Option<&[u8]>| -> Option<Option<String>> {
        match b {
            Some(b) => Some(Some(within(text, b)?.to_owned())),
            None => Some(None),
        }
    };
    let parsed = |b: Option<&[u8]>| b.and_then(|b| within(text, b));
    let object = match q.object {
        Some([name, namespace, kind, uid]) => {
            object_ref(owned(name)?, owned(namespace)?, owned(kind)?, owned(uid)?)
        }
        None => None,
    };
    Some(JsonFields {
        message: owned(q.message)?,
        timestamp: parsed(q.timestamp).and_then(|t| {
            // `parse_ts` with the remembered second: a pod's lines share it.
            let (ts, used) = parse_rfc3339_cached(t.as_bytes(), hours)?;
            (used == t.len()).then_some(ts)
        }),
        severity: parsed(q.severity).and_then(Level::parse),
        levelname: parsed(q.levelname).and_then(Level::parse),
        logger: owned(q.logger)?,
        object,
        exc_info: None,
    })
}

/// `part` (a slice of `text`'s bytes between two quotes) as text, without
/// validating its UTF-8 again.
fn within<'t>(text: &'t str, part: &[u8]) -> Option<&'t str> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    text.get(at..at.checked_add(part.len())?)
}

/// The [`Visit`] of [`quick_fields`]: the raw string values of kopf's keys.
#[derive(Default)]
struct QuickFields<'a, 'k> {
    refkey: &'k str,
    /// The top-level keys read so far, one bit per [`Key`].
    seen: u16,
    /// The last top-level key.
    current: Option<Key>,
    /// The last key in `object`: 0 name, 1 namespace, 2 kind, 3 uid.
    object_key: Option<usize>,
    /// The keys read in `object`, one bit each.
    object_seen: u8,
    /// The current top-level value is the `object` map.
    in_object: bool,
    message: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    severity: Option<&'a [u8]>,
    levelname: Option<&'a [u8]>,
    logger: Option<&'a [u8]>,
    /// name, namespace, kind, uid.
    object: Option<[Option<&'a [u8]>; 4]>,
}

impl<'a> Visit<'a> for QuickFields<'a, '_> {
    const DEPTH: u32 = 2;

    fn key(&mut self, depth: u32, key: &'a [u8]) -> Option<()> {
        if depth == 1 {
            let k = Key::of(key, self.refkey);
            self.current = Some(k);
            self.in_object = false;
            if k != Key::Other {
                let bit = 1 << k as u16;
                if self.seen & bit != 0 {
                    return None;
                }
                self.seen |= bit;
            }
        } else if self.in_object {
            self.object_key = match key {
                b"name" => Some(0),
                b"namespace" => Some(1),
                b"kind" => Some(2),
                b"uid" => Some(3),
                _ => None,
            };
            if let Some(k) = self.object_key {
                if self.object_seen & (1 << k) != 0 {
                    return None;
                }
                self.object_seen |= 1 << k;
            }
        }
        Some(())
    }

    fn value(&mut self, depth: u32, value: Value<'a>) -> Option<()> {
        if depth == 2 {
            let (true, Some(k)) = (self.in_object, self.object_key) else {
                return Some(());
            };
            let slot = self.object.as_mut().and_then(|o| o.get_mut(k))?;
            *slot = string_or_null(value)?;
            return Some(());
        }
        let slot = match self.current? {
            Key::Message => &mut self.message,
            Key::Timestamp => &mut self.timestamp,
            Key::Severity => &mut self.severity,
            Key::Levelname => &mut self.levelname,
            Key::Logger => &mut self.logger,
            Key::Object => {
                // serde's `ObjectSeed` reads anything but a map as no object.
                if value == Value::Object {
                    self.in_object = true;
                    self.object = Some([None; 4]);
                }
                return Some(());
            }
            Key::ExcInfo => return None,
            Key::Other => return Some(()),
        };
        *slot = string_or_null(value)?;
        Some(())
    }
}

/// A string value, or none for `null`; `None` for what serde would read
/// otherwise (`Lenient` reads a boolean as text, a container as none).
fn string_or_null(value: Value<'_>) -> Option<Option<&[u8]>> {
    match value {
        Value::Str(s) => Some(Some(s)),
        Value::Null => Some(None),
        Value::Bool | Value::Object | Value::Array => None,
    }
}

/// `exc_info`: a string, or a list of strings (`exc_info_as_array`).
struct ExcSeed;

impl<'de> DeserializeSeed<'de> for ExcSeed {
    type Value = Option<ExcInfo>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExcSeed {
    type Value = Option<ExcInfo>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a traceback")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(ExcInfo::Text(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(ExcInfo::Text(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut v = Vec::new();
        while let Some(s) = seq.next_element_seed(Lenient)? {
            if let Some(s) = s
                && v.len() < 10_000
            {
                v.push(s);
            }
        }
        Ok(Some(ExcInfo::Lines(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_map(map).map(|_| None)
    }
    scalars_are_none!();
}

// ---------------------------------------------------------------------------

/// An iterator of records over a [`BufRead`], reading lines of at most
/// [`ParserOptions::max_line_bytes`] (the rest of a longer line is skipped).
///
/// Exists for the common case of a log file or a blocking log stream.
pub struct Records<R> {
    reader: R,
    parser: Parser,
    buf: Vec<u8>,
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
        let max = self.parser.opts.max_line_bytes;
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
                    self.parser.line(&line, LineHint::UNKNOWN, &mut self.ready);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// serde's reading of a JSON line, as `Parser::json` does it.
    fn by_serde(text: &str, refkey: &str) -> Option<JsonFields> {
        let mut de = serde_json::Deserializer::from_str(text);
        let f = LineSeed { refkey }.deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(f)
    }

    /// Mutants of kopf's JSON lines: whatever [`quick_fields`] reads, serde
    /// reads the same.
    #[test]
    fn quick_fields_read_what_serde_reads() {
        let bases = [
            r#"{"message": "Handler 'x' failed temporarily: boom", "object": {"apiVersion": "v1", "kind": "K", "name": "n", "namespace": "ns", "uid": "u"}, "severity": "error", "timestamp": "2026-11-30T00:00:00.017412+00:00"}"#,
            r#"{"levelname":"WARNING","name":"kopf.objects","message":"m","ref":{"name":"a","namespace":null,"kind":["x"]},"time":"2026-11-30 00:00:00,017","o":{"name":"z"}}"#,
            "{ \"message\" : \"caf\u{e9}\" , \"object\" : { \"name\" : \"\" , \"namespace\" : \"\" } , \"level\" : \"info\" , \"logger\" : null }  ",
        ];
        let alphabet: Vec<char> = "{}[]:,\\\" tfnrulase0x\u{e9}".chars().collect();
        let mut next = crate::test_rng(0x2545_f491_4f6c_dd1d);
        let (mut quick, mut left) = (0, 0);
        // One cache for all lines, as in a parser.
        let hours = HourCache::default();
        for round in 0..40_000 {
            let mut l: Vec<char> = bases[round % bases.len()].chars().collect();
            let edits = next() % 3;
            crate::test_mutate(&mut l, &alphabet, edits, &mut next);
            let text: String = l.into_iter().collect();
            let refkey = if round % 2 == 0 { "ref" } else { "object" };
            match quick_fields(&text, refkey, &hours) {
                Some(f) => {
                    quick += 1;
                    assert_eq!(Some(f), by_serde(&text, refkey), "{text}");
                }
                None => left += 1,
            }
        }
        // Both sides of the boundary were exercised.
        assert!(quick > 5_000 && left > 5_000, "{quick} {left}");
    }
}

#[cfg(test)]
mod kubelet_tests {
    use super::*;

    /// The remembered second changes no result of `strip_kubelet`.
    #[test]
    fn a_warm_cache_strips_what_a_cold_one_strips() {
        let warm = HourCache::default();
        let mut next = crate::test_rng(0x2545_f491_4f6c_dd1d);
        for round in 0..30_000 {
            let mut l = b"2026-11-30T02:41:55.039412345Z [x] y".to_vec();
            if round % 3 == 0 {
                l[18] = b'6';
            }
            for _ in 0..(next() % 3) {
                let r = next();
                l[(r % 34) as usize] = b"0123456789Tt -:.Z/\xb0"[((r >> 8) % 19) as usize];
            }
            assert_eq!(
                strip_kubelet(&l, &warm),
                strip_kubelet(&l, &HourCache::default()),
                "{}",
                String::from_utf8_lossy(&l)
            );
        }
    }
}

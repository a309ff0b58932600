//! The streaming line parser: the state machine that turns lines into
//! records (format detection, routine fast path, traceback continuation,
//! statistics). Each format's details live in a module of its own:
//! - [`full`]: the `full` header (`[asctime] logger [LEVEL   ] message`);
//! - [`plain`]: the `[namespace/name] ` prefix and the `plain` format's known messages;
//! - [`json`]: the `json` format's fields;
//! - [`kubelet`]: the kubelet's `timestamps=true` prefix;
//! - [`traceback`]: traceback continuation lines;
//! - [`records`](mod@records): the iterator over a [`BufRead`](std::io::BufRead);
//! - [`options`]: options, counters and the routine mode.

mod basic;
mod bounded;
mod full;
mod json;
mod kubelet;
mod options;
mod plain;
mod records;
mod traceback;

pub use options::{MAX_BUFFERED_LINE_BYTES, ParserOptions, Routine, RoutineStats, Stats};
pub use records::{Records, records};

use crate::classify::{self, Finders, RoutineTag, forbidden_kind, own};
use crate::quick_json::json_head;
use crate::redact::strip_ansi_into;
use crate::tally::{RawOutcome, Tally};
use crate::time::{HourCache, Timestamp};
use crate::version::{self, VersionSignal};
use crate::{EventKind, ExceptionOutcome, Fault, Level, LogFormat, Record};
use basic::{BasicHeader, is_basic_header, parse_basic};
use bounded::bounded_redacted;
use full::{FullHeader, is_full_header, parse_full};
use kubelet::strip_kubelet;
use plain::{known_plain, parse_prefix, split_prefix};
use std::collections::VecDeque;
use std::fmt;
use traceback::{
    Tb, Trace, accepts_traceback, is_chain_header, is_traceback_start, may_start_traceback,
};

struct Pending {
    rec: Record,
    trace: Trace,
    tb: Tb,
    /// The first [`Fault`] a traceback line named (found on every line, as a denial
    /// is: the bounded traceback may omit the line).
    fault: Option<Fault>,
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
    /// Its level is DEBUG (counts in [`Stats::debug_records`]).
    debug: bool,
    /// A handler's success (counts in [`Stats::successes`]).
    succeeded: bool,
    kubelet: Option<Timestamp>,
    line: u64,
}

/// What [`Parser::quick_head`] found out about a routine line.
struct Quick<'l> {
    /// In one of kopf's formats (counts in [`Stats::kopf_lines`]).
    kopf: bool,
    /// Whether a traceback may attach ([`accepts_traceback`]).
    accepts: bool,
    /// Its level is DEBUG.
    debug: bool,
    /// A handler's success ([`RoutineTag::Succeeded`]).
    succeeded: bool,
    /// What its wording tells of kopf's version.
    version: Option<VersionSignal>,
    /// A success or a processed cause about an object, to count in [`Tally`].
    outcome: Option<Counted<'l>>,
}

/// A routine outcome about an object, as the bytes of its line: the outcome,
/// the object's namespace and name, and the time of the line's header.
type Counted<'l> = (
    RawOutcome<'l>,
    Option<&'l [u8]>,
    &'l [u8],
    Option<Timestamp>,
);

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
    /// The line was cut at [`Parser::line_bound`]: its record is
    /// [`Record::truncated`].
    cut: bool,
}

impl LineHint {
    /// Nothing known: check the line itself.
    const UNKNOWN: LineHint = LineHint {
        esc: true,
        traceback_next: true,
        cut: false,
    };

    /// Nothing known about a line cut (`cut`) or not at the bound.
    fn unknown(cut: bool) -> LineHint {
        LineHint {
            cut,
            ..LineHint::UNKNOWN
        }
    }
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
            cut: false,
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
    /// The seconds of JSON records' `timestamp` (see `quick_fields` in [`json`]).
    json_hours: HourCache,
    /// Successes and processed causes per object (in both [`Routine`] modes).
    tally: Tally,
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
            tally: Tally::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// How often each handler succeeded, and each cause was processed, on each
    /// object so far (in both [`Routine`] modes, bounded).
    pub fn tally(&self) -> &Tally {
        &self.tally
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
    /// completed records to `out`. Call [`Parser::finish`] at the end.
    ///
    /// Memory stays bounded whatever the stream: of a line that the chunk
    /// does not end, at most [`Parser::line_bound`] bytes (never more than
    /// [`MAX_BUFFERED_LINE_BYTES`]) are kept until its newline comes; the
    /// rest of a longer line is dropped as it arrives, never buffered. A line
    /// longer than the bound is cut there (at its last whole word within it),
    /// whether it came in one chunk or many: its record keeps the bounded
    /// prefix and is [`Record::truncated`], and the line counts in
    /// [`Stats::cut_lines`].
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
            let hint = LineHint::unknown(self.carry_dropped);
            self.line(&line, hint, &mut Extending(out));
            self.carry = line;
            self.carry.clear();
            self.carry_dropped = false;
        }
        let used = self.complete_lines(rest, &mut Extending(out));
        self.append_carry(&rest[used..]);
    }

    /// Parses every `\n`-terminated line of `buf` (each cut to
    /// [`Parser::line_bound`]), appending completed records to
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
            let bound = self.line_bound();
            hint.cut = end - start > bound;
            self.line(&buf[start..start + (end - start).min(bound)], hint, out);
            start = end + 1;
            match next_end {
                Some(next_end) => end = next_end,
                None => return start,
            }
        }
    }

    /// The most bytes of one line that [`Parser::push_chunk`] and [`records()`]
    /// keep: [`ParserOptions::max_line_bytes`], at most
    /// [`MAX_BUFFERED_LINE_BYTES`]; the rest of a longer line is dropped.
    pub fn line_bound(&self) -> usize {
        self.opts.max_line_bytes.min(MAX_BUFFERED_LINE_BYTES)
    }

    /// How many bytes of an unterminated line [`Parser::push_chunk`] holds
    /// now (at most [`Parser::line_bound`]), waiting for its newline. Exists
    /// so that callers and tests can check the parser's memory bound.
    pub fn buffered_bytes(&self) -> usize {
        self.carry.len()
    }

    /// Keeps `part` of the unterminated line, up to the bound.
    fn append_carry(&mut self, part: &[u8]) {
        let room = self.line_bound().saturating_sub(self.carry.len());
        if part.len() > room {
            self.carry_dropped = true;
        }
        self.carry.extend_from_slice(&part[..part.len().min(room)]);
    }

    /// Says that the input was cut short, maybe in the middle of a line (a
    /// log read bounded by `limitBytes` stops wherever the bound falls): the
    /// line [`Parser::push_chunk`] holds unterminated is then cut like a line
    /// longer than the bound, at its last whole word, its record
    /// [`Record::truncated`]. Call it before [`Parser::finish`].
    ///
    /// Exists because the word the cut split may be the head of a secret
    /// whose shape needs its tail (`https://user:pass` before the `@`), which
    /// no redaction of what is left can recognise.
    pub fn input_cut_short(&mut self) {
        if !self.carry.is_empty() {
            self.carry_dropped = true;
        }
    }

    /// Ends the input: returns the last pending record. Call it until it
    /// returns `None` (at most twice: an unterminated line left by
    /// [`Parser::push_chunk`] makes one more record). The parser can be reused
    /// afterwards (line numbers and stats continue).
    pub fn finish(&mut self) -> Option<Record> {
        let mut first = None;
        if !self.carry.is_empty() || self.carry_dropped {
            let line = std::mem::take(&mut self.carry);
            let hint = LineHint::unknown(std::mem::take(&mut self.carry_dropped));
            self.line(&line, hint, &mut first);
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
                    fault: None,
                })));
                self.stats.records -= 1;
                if let Some(Slot::Full(p)) = &self.pending {
                    self.stats.debug_records -= u64::from(p.rec.level == Some(Level::Debug));
                    self.stats.successes -=
                        u64::from(matches!(p.rec.kind, EventKind::HandlerSucceeded { .. }));
                    if let Some((outcome, ns, name)) = record_outcome(&p.rec) {
                        self.tally.uncount(outcome, ns, name);
                    }
                }
                Some(a)
            }
            (a, b) => a.or(b),
        }
    }

    fn line<S: Sink>(&mut self, raw: &[u8], hint: LineHint, out: &mut S) {
        self.line_no += 1;
        self.stats.lines += 1;
        if hint.cut {
            self.stats.cut_lines += 1;
        }
        let mut l = raw;
        if let Some(x) = l.strip_suffix(b"\n") {
            l = x;
        }
        if let Some(x) = l.strip_suffix(b"\r") {
            l = x;
        }
        if hint.cut {
            l = whole_words(l);
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
        // A cut line is built in full: its record must say it was cut.
        if self.routine == Routine::Count
            && !hint.cut
            && let Some(q) = self.quick_head(l)
        {
            if q.kopf {
                self.stats.kopf_lines += 1;
            }
            if let Some(v) = q.version {
                self.stats.kopf_version.narrow(v.range);
            }
            if let Some((outcome, ns, name, at)) = q.outcome {
                self.tally.count(outcome, ns, name, kubelet.or(at));
            }
            // Only the next line can attach a traceback to a routine record.
            let accepts = q.accepts && hint.traceback_next;
            if accepts {
                self.light_line.clear();
                self.light_line.extend_from_slice(l);
            }
            let light = Light {
                accepts,
                debug: q.debug,
                succeeded: q.succeeded,
                kubelet,
                line: line_no,
            };
            if let Some(prev) = self.pending.replace(Slot::Light(light)) {
                self.close(prev, out);
            }
            return;
        }
        let mut p = self.open(l, kubelet, line_no);
        p.rec.truncated |= hint.cut;
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
            fault: None,
        });
        if trace == Trace::Frames {
            // A traceback with no record to attach to: it is its own record.
            p.tb.push_line(l, self.opts.max_traceback_line_bytes);
        }
        p
    }

    /// Finalises a record that no more lines continue into `out`; not when
    /// it is routine and the mode is [`Routine::Count`].
    fn close<S: Sink>(&mut self, slot: Slot, out: &mut S) {
        match slot {
            Slot::Light(light) => {
                self.stats.records += 1;
                self.stats.debug_records += u64::from(light.debug);
                self.stats.successes += u64::from(light.succeeded);
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
    fn quick_head<'l>(&self, l: &'l [u8]) -> Option<Quick<'l>> {
        // Only [`RoutineTag::Other`] messages can tell a version (the
        // success and processed templates are the same in every release).
        let version = |tag: RoutineTag, rest: &[u8]| {
            if tag == RoutineTag::Other {
                version::signal(rest)
            } else {
                None
            }
        };
        if l.first() == Some(&b'{') {
            // `Parser::json` would accept the line with this message and no `exc_info`.
            let (msg, level) = json_head(l)?;
            let prefix = split_prefix(msg);
            let rest = prefix.map_or(msg, |(_, _, rest)| rest);
            let tag = self.finders.quick_routine(rest)?;
            // The object field first, else `--log-prefix`'s prefix (as `Parser::json`).
            let outcome = match raw_outcome(tag, rest) {
                Some(o) => {
                    let refkey = self.opts.refkey.as_deref().unwrap_or("object");
                    json::quick_object(l, refkey)
                        .map(|(ns, name)| (o, ns, name, None))
                        .or_else(|| counted(tag, prefix, None))
                }
                None => None,
            };
            return Some(Quick {
                kopf: true,
                accepts: false,
                debug: level == Some(Level::Debug),
                succeeded: tag == RoutineTag::Succeeded,
                version: version(tag, rest),
                outcome,
            });
        }
        if let Some(h) = parse_full(l, &self.asctime_hours) {
            let prefix = split_prefix(h.msg);
            let rest = prefix.map_or(h.msg, |(_, _, rest)| rest);
            let tag = self.finders.quick_routine(rest)?;
            return Some(Quick {
                kopf: true,
                accepts: !matches!(h.level, Some(Level::Debug | Level::Info)),
                debug: h.level == Some(Level::Debug),
                succeeded: tag == RoutineTag::Succeeded,
                version: version(tag, rest),
                outcome: counted(tag, prefix, Some(h.ts)),
            });
        }
        if let Some(h) = parse_basic(l) {
            let prefix = split_prefix(h.msg);
            let rest = prefix.map_or(h.msg, |(_, _, rest)| rest);
            let tag = self.finders.quick_routine(rest)?;
            return Some(Quick {
                kopf: true,
                accepts: !matches!(h.level, Level::Debug | Level::Info),
                debug: h.level == Level::Debug,
                succeeded: tag == RoutineTag::Succeeded,
                version: version(tag, rest),
                outcome: counted(tag, prefix, None),
            });
        }
        if is_traceback_start(l) {
            return None;
        }
        let prefix = split_prefix(l);
        let (object, rest) = match prefix {
            Some((_, _, rest)) => (true, rest),
            None => (false, l),
        };
        let tag = self.finders.quick_routine(rest)?;
        Some(Quick {
            kopf: object || tag != RoutineTag::Other || known_plain(rest, None),
            accepts: true,
            debug: false,
            succeeded: tag == RoutineTag::Succeeded,
            version: version(tag, rest),
            outcome: counted(tag, prefix, None),
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
            // Counted when it was light; it is counted again when finalised.
            if let Some((outcome, ns, name)) = record_outcome(&p.rec) {
                self.tally.uncount(outcome, ns, name);
            }
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
                } else if is_full_header(l) || l.first() == Some(&b'{') || is_basic_header(l) {
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
                } else if is_full_header(l) || l.first() == Some(&b'{') || is_basic_header(l) {
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
        p.tb.push_line(l, self.opts.max_traceback_line_bytes);
        if p.rec.forbidden.is_none() {
            p.rec.forbidden = self.finders.forbidden_in(l);
        }
        if p.fault.is_none() {
            p.fault = classify::fault_in(l);
        }
        true
    }

    fn finalize(&mut self, p: Box<Pending>) -> Record {
        let Pending {
            mut rec, tb, fault, ..
        } = *p;
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
        if rec.kind == EventKind::Other
            && let Some(fault) = classify::fault_in(rec.message.as_bytes())
                .or(fault)
                // JSON `exc_info`, split into lines by the JSON parser.
                .or_else(|| {
                    rec.traceback
                        .iter()
                        .find_map(|l| classify::fault_in(l.as_bytes()))
                })
        {
            rec.kind = EventKind::Fault { fault };
        }
        self.stats.records += 1;
        self.stats.debug_records += u64::from(rec.level == Some(Level::Debug));
        self.stats.successes += u64::from(matches!(rec.kind, EventKind::HandlerSucceeded { .. }));
        if let Some((outcome, ns, name)) = record_outcome(&rec) {
            // The quick path reads no JSON `timestamp`: the kubelet's, as it does.
            let own = (rec.format != Some(LogFormat::Json)).then_some(rec.timestamp);
            let at = rec.kubelet_timestamp.or(own.flatten());
            self.tally.count(outcome, ns, name, at);
        }
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
            None => match parse_basic(l) {
                Some(BasicHeader { level, logger, msg }) => (
                    Some(LogFormat::Basic),
                    kubelet,
                    Some(own(whole, logger)),
                    Some(level),
                    msg,
                ),
                None => (None, kubelet, None, None, l),
            },
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
        let (message, truncated) = bounded_redacted(msg, whole, self.opts.max_message_bytes);
        let version = version::signal(msg);
        if let Some(v) = version {
            self.stats.kopf_version.narrow(v.range);
        }
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
            version,
            line,
            truncated,
        };
        (rec, trace)
    }
}

/// The outcome of a routine message that [`Tally`] counts (`rest` without
/// the object prefix).
fn raw_outcome(tag: RoutineTag, rest: &[u8]) -> Option<RawOutcome<'_>> {
    match tag {
        RoutineTag::Succeeded => {
            classify::handler_span(rest).map(|(k, id, _)| RawOutcome::Succeeded(k, id))
        }
        RoutineTag::Processed => {
            classify::first_word_end(rest).map(|end| RawOutcome::Processed(&rest[..end]))
        }
        RoutineTag::Other => None,
    }
}

/// The [`Counted`] of a text line whose message has an object prefix.
fn counted<'l>(
    tag: RoutineTag,
    prefix: Option<plain::PrefixParts<'l>>,
    at: Option<Timestamp>,
) -> Option<Counted<'l>> {
    let (ns, name, rest) = prefix?;
    Some((raw_outcome(tag, rest)?, ns, name, at))
}

/// An outcome with its object's namespace and name.
type ObjectOutcome<'r> = (RawOutcome<'r>, Option<&'r [u8]>, &'r [u8]);

/// The outcome of a built record that [`Tally`] counts, with its object: a success,
/// a processed cause, or a failure kopf retries.
fn record_outcome(rec: &Record) -> Option<ObjectOutcome<'_>> {
    let object = rec.object.as_ref()?;
    let outcome = match &rec.kind {
        EventKind::HandlerSucceeded { handler } => {
            RawOutcome::Succeeded(handler.kind, handler.id.as_bytes())
        }
        EventKind::CauseProcessed { cause, .. } => RawOutcome::Processed(cause.as_bytes()),
        EventKind::HandlerFailedTemporarily {
            handler,
            final_attempt: false,
        }
        | EventKind::HandlerFailedWithException {
            handler,
            outcome: ExceptionOutcome::Retry,
            ..
        } => RawOutcome::Retried(handler.kind, handler.id.as_bytes()),
        _ => return None,
    };
    let ns = object.namespace.as_deref().map(str::as_bytes);
    Some((outcome, ns, object.name.as_bytes()))
}

/// A line cut short, up to its last space or tab: the word the cut split
/// may be the head of a secret whose shape needs its tail (`https://u:pass`
/// before the `@`, `ghp_` and a few characters), and the rest of the line,
/// which would tell, was never read.
fn whole_words(l: &[u8]) -> &[u8] {
    memchr::memrchr2(b' ', b'\t', l).map_or(&l[..0], |i| &l[..=i])
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

#[cfg(test)]
mod tests;

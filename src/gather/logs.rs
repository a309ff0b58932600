//! Reads the operator's logs through the API server, incrementally: the auditor
//! remembers, per container, the kubelet timestamp of the last line it read and reads
//! from there (`sinceTime`), so a steady audit reads only what the operator wrote since
//! the last one. What the checks read of the window is kept in memory as a bounded
//! digest (one record per kind, handler, object and denial, with when it was last seen)
//! and lost on restart: the first audit after one reads the window (`sinceSeconds`).
//!
//! Every read is bounded by `spec.logs.limitBytes`, on this side too, whatever the
//! server or a proxy does; when the cap cuts a read, the newest lines are read as well
//! (`tailLines`), so the cap never hides what the operator logs now. The previous
//! container's log is read once per restart.

use crate::model::evidence::{Gathered, LogEvidence, restarted};
use crate::model::settings::LogBounds;
use futures::AsyncBufReadExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use kube::{Client, ResourceExt};
use prometheus_client::metrics::counter::Counter;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// At most this many distinct records (kind, handler, object, denial) are remembered per
/// container: the checks need one of each, not every repeat.
pub(crate) const MAX_DIGEST: usize = 64;

/// How far past `limitBytes` a read may go to finish its last line before it is cut.
pub(crate) const LINE_SLACK_BYTES: i64 = 64 * 1024;

/// Lines of the previous container's log read for a restarted pod: its end says why it
/// exited.
const PREVIOUS_TAIL_LINES: i64 = 2000;

/// Lines read from the end of a log whose read the cap cut, so that the newest lines are
/// always seen.
const NEWEST_TAIL_LINES: i64 = 1000;

/// Traceback lines kept per remembered record (the last ones name the exception).
const KEPT_TRACEBACK_LINES: usize = 3;

/// Records kept of the end of a previous container's log after kopf's last line: a
/// container that crashed before kopf logged anything (an ImportError in the operator's
/// module) or outside kopf's logging says why only there.
pub(crate) const PREVIOUS_TAIL_RECORDS: usize = 2;

/// Containers not read for this long are forgotten (their pods are gone).
pub(crate) const FORGET_AFTER: Duration = Duration::from_secs(3600);

/// Which container log, as read by which KopfAudit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ContainerKey {
    /// The reading KopfAudit (`namespace/name`): each keeps its own cursor and digest.
    reader: String,
    namespace: String,
    pod: String,
    uid: String,
    container: String,
}

/// One remembered record and when it was last seen.
#[derive(Clone, Debug)]
struct Seen {
    key: String,
    record: kopf_log::Record,
    first: Timestamp,
    last: Timestamp,
}

/// What the auditor remembers of one container's log.
#[derive(Debug, Default)]
struct ContainerLog {
    /// The kubelet timestamp of the last line read.
    cursor: Option<Timestamp>,
    /// The distinct records of the window, oldest first seen first.
    digest: Vec<Seen>,
    /// Each read's line counts, when it was made and whether the cap cut it.
    reads: VecDeque<(Timestamp, kopf_log::Stats, bool)>,
    /// When records of the window were read but not kept, and how many: past the
    /// bound of one read, or forgotten from the digest past its bound.
    dropped: VecDeque<(Timestamp, usize)>,
    /// The previous container's log, by the restart count it was read at.
    previous: Option<(i32, Previous)>,
    /// When it was last read.
    used: Option<Timestamp>,
    /// What the wording of everything read of it says of kopf's version.
    version: kopf_log::VersionRange,
}

/// What is kept of a previous container's log.
#[derive(Clone, Debug, Default)]
struct Previous {
    /// The records some check reads, as of a current log.
    records: Vec<kopf_log::Record>,
    /// The records after kopf's last line that are not kopf's, at most
    /// [`PREVIOUS_TAIL_RECORDS`].
    tail: Vec<kopf_log::Record>,
}

/// What the auditor remembers of container logs between audits, bounded, shared by all
/// audits of one operator process; and the count of bytes read.
#[derive(Debug, Default)]
pub(crate) struct LogMemory {
    containers: Mutex<HashMap<ContainerKey, ContainerLog>>,
    bytes_read: Counter,
}

impl LogMemory {
    /// A memory counting the bytes it reads in `bytes_read`
    /// (`kopf_audit_log_bytes_read_total`).
    pub(crate) fn new(bytes_read: Counter) -> LogMemory {
        LogMemory {
            containers: Mutex::default(),
            bytes_read,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ContainerKey, ContainerLog>> {
        self.containers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets containers not read since `FORGET_AFTER` before `now`.
    pub(crate) fn forget_unused(&self, now: Timestamp) {
        let horizon = now - jiff::SignedDuration::try_from(FORGET_AFTER).unwrap_or_default();
        self.lock()
            .retain(|_, c| c.used.is_some_and(|u| u >= horizon));
    }

    /// How many containers are remembered.
    #[cfg(test)]
    pub(crate) fn containers(&self) -> usize {
        self.lock().len()
    }
}

/// Reads the new part of the current logs of every pod's kopf container (the window on
/// first sight), the previous container's log of pods that restarted (once per
/// restart), and returns the window's evidence.
pub(crate) async fn gather(
    client: &Client,
    memory: &LogMemory,
    reader: &str,
    namespace: &str,
    pods: &[Pod],
    container: &str,
    bounds: LogBounds,
) -> Gathered<LogEvidence> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let now = Timestamp::now();
    let window = jiff::SignedDuration::try_from(bounds.window).unwrap_or_default();
    let what = || format!("get pods/log in {namespace}");
    let grant = || format!("get on pods/log in {namespace}");
    let mut evidence = LogEvidence::default();
    for pod in pods {
        let key = ContainerKey {
            reader: reader.to_string(),
            namespace: namespace.to_string(),
            pod: pod.name_any(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            container: container.to_string(),
        };
        let mut log = memory.lock().remove(&key).unwrap_or_default();
        let read = read_new(&api, &key, log.cursor, bounds).await;
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                memory.lock().insert(key, log);
                return Err(super::obstacle(&e, &what(), &grant()));
            }
        };
        memory.bytes_read.inc_by(read.bytes);
        log.cursor = read.cursor.or(log.cursor);
        log.version.narrow(read.stats.kopf_version);
        log.reads.push_back((now, read.stats, read.cut));
        let forgotten = remember(&mut log.digest, read.records, now);
        if read.dropped + forgotten > 0 {
            log.dropped.push_back((now, read.dropped + forgotten));
        }
        expire(&mut log, now.checked_sub(window).unwrap_or(Timestamp::MIN));
        log.used = Some(now);
        let restarts = restart_count(pod, container);
        if restarted(pod, container) && log.previous.as_ref().is_none_or(|(n, _)| *n != restarts) {
            match read_previous(&api, &key, bounds).await {
                Ok(previous) => {
                    memory.bytes_read.inc_by(previous.bytes);
                    log.version.narrow(previous.stats.kopf_version);
                    log.previous = Some((
                        restarts,
                        Previous {
                            records: previous.records,
                            tail: previous.tail,
                        },
                    ));
                }
                // The previous container's log may be gone; the current one still counts.
                Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => {}
                Err(e) => {
                    memory.lock().insert(key, log);
                    return Err(super::obstacle(&e, &what(), &grant()));
                }
            }
        }
        add_to_evidence(&mut evidence, &key.pod, &log);
        memory.lock().insert(key, log);
    }
    evidence.records.sort_by_key(|r| r.line);
    Ok(evidence)
}

fn restart_count(pod: &Pod, container: &str) -> i32 {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .find(|cs| cs.name == container)
        .map_or(0, |cs| cs.restart_count)
}

/// The window's evidence of one container, added to the target's.
fn add_to_evidence(evidence: &mut LogEvidence, pod: &str, log: &ContainerLog) {
    evidence
        .records
        .extend(log.digest.iter().map(|s| s.record.clone()));
    for (_, stats, cut) in &log.reads {
        evidence.stats.add(stats);
        evidence.truncated |= *cut;
    }
    evidence.dropped += log.dropped.iter().map(|(_, n)| n).sum::<usize>();
    if let Some((_, previous)) = &log.previous {
        evidence
            .previous
            .insert(pod.to_string(), previous.records.clone());
        if !previous.tail.is_empty() {
            evidence
                .previous_tail
                .insert(pod.to_string(), previous.tail.clone());
        }
    }
    evidence.version.narrow(log.version);
}

/// What makes two records the same for the checks: their kind, handler, object and
/// denial, not their time or the exact wording of a changing message.
fn key_of(record: &kopf_log::Record) -> String {
    let handler = record
        .kind
        .handler()
        .map(|h| h.to_string())
        .unwrap_or_default();
    let object = record
        .object
        .as_ref()
        .map(|o| format!("{}/{}", o.namespace.as_deref().unwrap_or(""), o.name))
        .unwrap_or_default();
    let denial = record
        .forbidden
        .as_ref()
        .map(|f| {
            format!(
                "{} {} {:?} {:?}",
                f.verb, f.resource, f.api_group, f.namespace
            )
        })
        .unwrap_or_default();
    format!("{}|{handler}|{object}|{denial}", record.kind.name())
}

/// The time a record was written: the kubelet's, else its own.
fn written_at(record: &kopf_log::Record, fallback: Timestamp) -> Timestamp {
    record
        .kubelet_timestamp
        .or(record.timestamp)
        .and_then(|t| Timestamp::new(t.secs, t.nanos as i32).ok())
        .unwrap_or(fallback)
}

/// Adds the records of a read to the digest: a new kind of record is remembered, a
/// repeat only refreshes when it was last seen. Past the bound, the least recently
/// seen is forgotten; returns how many were.
fn remember(digest: &mut Vec<Seen>, records: Vec<kopf_log::Record>, now: Timestamp) -> usize {
    let mut forgotten = 0;
    for mut record in records {
        let at = written_at(&record, now);
        let key = key_of(&record);
        if let Some(seen) = digest.iter_mut().find(|s| s.key == key) {
            seen.last = seen.last.max(at);
            continue;
        }
        let len = record.traceback.len();
        if len > KEPT_TRACEBACK_LINES {
            record.traceback.drain(..len - KEPT_TRACEBACK_LINES);
        }
        if digest.len() >= MAX_DIGEST
            && let Some(oldest) = digest
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.last)
                .map(|(i, _)| i)
        {
            digest.remove(oldest);
            forgotten += 1;
        }
        digest.push(Seen {
            key,
            record,
            first: at,
            last: at,
        });
    }
    digest.sort_by_key(|s| s.first);
    forgotten
}

/// Drops what fell out of the window.
fn expire(log: &mut ContainerLog, start: Timestamp) {
    log.digest.retain(|s| s.last >= start);
    while log.reads.front().is_some_and(|(at, _, _)| *at < start) {
        log.reads.pop_front();
    }
    while log.dropped.front().is_some_and(|(at, _)| *at < start) {
        log.dropped.pop_front();
    }
}

/// What one read brought.
#[derive(Debug, Default)]
struct Read {
    records: Vec<kopf_log::Record>,
    stats: kopf_log::Stats,
    /// The kubelet timestamp of the last line read.
    cursor: Option<Timestamp>,
    bytes: u64,
    cut: bool,
    /// Records some check reads that were not kept (past [`MAX_READ_RECORDS`]).
    dropped: usize,
    /// The records after the last of kopf's that are not kopf's (previous logs only).
    tail: Vec<kopf_log::Record>,
}

/// Reads what was written since `cursor` (the window when there is none); when the cap
/// cuts it, also the newest lines.
async fn read_new(
    api: &Api<Pod>,
    key: &ContainerKey,
    cursor: Option<Timestamp>,
    bounds: LogBounds,
) -> Result<Read, kube::Error> {
    let mut params = LogParams {
        container: Some(key.container.clone()),
        timestamps: true,
        limit_bytes: Some(bounds.limit_bytes),
        ..Default::default()
    };
    match cursor {
        // `sinceTime` has whole seconds: the lines of that second read before are skipped.
        Some(c) => params.since_time = Some(Timestamp::from_second(c.as_second()).unwrap_or(c)),
        None => {
            params.since_seconds =
                Some(i64::try_from(bounds.window.as_secs().max(1)).unwrap_or(i64::MAX))
        }
    }
    let mut first = stream(api, &key.pod, &params, bounds.limit_bytes, cursor, 0).await?;
    if first.cut {
        let newest = LogParams {
            container: Some(key.container.clone()),
            timestamps: true,
            tail_lines: Some(NEWEST_TAIL_LINES),
            limit_bytes: Some(bounds.limit_bytes),
            ..Default::default()
        };
        let tail = stream(api, &key.pod, &newest, bounds.limit_bytes, first.cursor, 0).await?;
        first.records.extend(tail.records);
        first.dropped += tail.dropped;
        first.stats.add(&tail.stats);
        first.cursor = tail.cursor.or(first.cursor);
        first.bytes += tail.bytes;
    }
    Ok(first)
}

/// Reads the end of the previous container's log, with its non-kopf tail.
async fn read_previous(
    api: &Api<Pod>,
    key: &ContainerKey,
    bounds: LogBounds,
) -> Result<Read, kube::Error> {
    let params = LogParams {
        container: Some(key.container.clone()),
        previous: true,
        timestamps: true,
        tail_lines: Some(PREVIOUS_TAIL_LINES),
        limit_bytes: Some(bounds.limit_bytes),
        ..Default::default()
    };
    stream(
        api,
        &key.pod,
        &params,
        bounds.limit_bytes,
        None,
        PREVIOUS_TAIL_RECORDS,
    )
    .await
}

/// The kubelet timestamp that starts a line (`<RFC3339Nano> stdout F …`).
fn line_time(line: &[u8]) -> Option<Timestamp> {
    let end = memchr::memchr(b' ', line)?;
    let text = std::str::from_utf8(&line[..end]).ok()?;
    let t = kopf_log::Timestamp::parse_rfc3339(text)?;
    Timestamp::new(t.secs, t.nanos as i32).ok()
}

/// Streams one container log into a parser, skipping the lines at or before `after`,
/// at most `limit + LINE_SLACK_BYTES` bytes whatever the server sends; keeps up to
/// `tail` records of the non-kopf lines after kopf's last one.
async fn stream(
    api: &Api<Pod>,
    pod: &str,
    params: &LogParams,
    limit: i64,
    after: Option<Timestamp>,
    tail: usize,
) -> Result<Read, kube::Error> {
    let mut body = Box::pin(api.log_stream(pod, params).await?);
    let mut parser = scanner(tail > 0);
    let mut out = Read::default();
    let mut kept = Kept::with_tail(tail);
    let mut lines = LineTracker::new(after);
    let hard_stop = limit.saturating_add(LINE_SLACK_BYTES);
    let mut total: i64 = 0;
    loop {
        let n = match body.fill_buf().await {
            Ok([]) => break,
            Ok(chunk) => {
                let room = usize::try_from(hard_stop - total).unwrap_or(0);
                let take = chunk.len().min(room);
                let fed = lines.feed(&chunk[..take], |part| parser.push_chunk(part, &mut kept));
                out.bytes += fed as u64;
                chunk.len()
            }
            Err(e) => {
                tracing::debug!(pod, error = %e, "log stream ended early");
                break;
            }
        };
        body.consume_unpin(n);
        total = total.saturating_add(n as i64);
        if total >= hard_stop {
            break;
        }
    }
    out.cut = total >= limit;
    if out.cut {
        // The bound may fall inside a line: its last word may be half a secret.
        parser.input_cut_short();
    }
    while let Some(record) = parser.finish() {
        kept.keep(record);
    }
    out.records = kept.records;
    out.dropped = kept.dropped;
    out.tail = kept.tail.into();
    out.stats = parser.stats();
    out.cursor = lines.last;
    Ok(out)
}

/// Follows line boundaries across chunks: drops the leading lines at or before a
/// timestamp, and remembers the timestamp of the last complete line.
struct LineTracker {
    after: Option<Timestamp>,
    skipping: bool,
    /// While skipping: the incomplete line, held until it is known to be new.
    pending: Vec<u8>,
    /// The start of the current line (enough for its timestamp).
    head: Vec<u8>,
    last: Option<Timestamp>,
}

/// Bytes of a line's start kept to read its timestamp.
const HEAD_BYTES: usize = 40;

impl LineTracker {
    fn new(after: Option<Timestamp>) -> LineTracker {
        LineTracker {
            skipping: after.is_some(),
            after,
            pending: Vec::new(),
            head: Vec::with_capacity(HEAD_BYTES),
            last: None,
        }
    }

    /// Feeds the new part of `chunk` to `parse`; returns how many bytes it fed.
    fn feed(&mut self, chunk: &[u8], mut parse: impl FnMut(&[u8])) -> usize {
        let mut fed = 0;
        let mut pos = 0;
        while let Some(nl) = memchr::memchr(b'\n', &chunk[pos..]) {
            let end = pos + nl;
            self.note(&chunk[pos..end]);
            let at = line_time(&self.head);
            if self.skipping {
                if at.is_some() && at <= self.after {
                    self.pending.clear();
                    pos = end + 1;
                    self.head.clear();
                    continue;
                }
                self.skipping = false;
                if !self.pending.is_empty() {
                    let pending = std::mem::take(&mut self.pending);
                    parse(&pending);
                    fed += pending.len();
                }
                parse(&chunk[pos..]);
                fed += chunk.len() - pos;
                self.track_rest(&chunk[end + 1..], at);
                return fed;
            }
            if at.is_some() {
                self.last = at;
            }
            self.head.clear();
            pos = end + 1;
        }
        self.note(&chunk[pos..]);
        if self.skipping {
            if self.pending.len() < LINE_SLACK_BYTES as usize {
                self.pending.extend_from_slice(&chunk[pos..]);
            }
            return fed;
        }
        parse(chunk);
        chunk.len()
    }

    /// Tracks the lines after the first new one (already fed).
    fn track_rest(&mut self, rest: &[u8], first: Option<Timestamp>) {
        if first.is_some() {
            self.last = first;
        }
        self.head.clear();
        let mut pos = 0;
        while let Some(nl) = memchr::memchr(b'\n', &rest[pos..]) {
            let end = pos + nl;
            self.note(&rest[pos..end]);
            if let Some(at) = line_time(&self.head) {
                self.last = Some(at);
            }
            self.head.clear();
            pos = end + 1;
        }
        self.note(&rest[pos..]);
    }

    fn note(&mut self, bytes: &[u8]) {
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// The records a chunk completes, filtered by [`keep`].
/// The records one read keeps: only those some check reads (failures, denials,
/// warnings about kopf's own health), one per kind, handler, object and denial (the
/// latest, as the digest keeps them), at most [`MAX_READ_RECORDS`]: past the bound the
/// least recently seen is forgotten, as the digest does, and counted. So a read holds
/// no more than the digest it is folded into, whatever a log floods it with.
#[derive(Default)]
struct Kept {
    records: Vec<kopf_log::Record>,
    index: HashMap<String, usize>,
    dropped: usize,
    /// The non-kopf records since kopf's last one, the latest [`Kept::tail_len`].
    tail: VecDeque<kopf_log::Record>,
    tail_len: usize,
}

impl Kept {
    /// Keeps, besides, up to `tail_len` records of the non-kopf lines after kopf's last
    /// line (the parser must then build routine records: [`scanner`]).
    fn with_tail(tail_len: usize) -> Kept {
        Kept {
            tail_len,
            ..Kept::default()
        }
    }

    fn keep(&mut self, record: kopf_log::Record) {
        if self.tail_len > 0 {
            if record.is_kopf() {
                self.tail.clear();
            } else {
                if self.tail.len() >= self.tail_len {
                    self.tail.pop_front();
                }
                self.tail.push_back(record.clone());
            }
        }
        if record.is_routine() {
            return;
        }
        let key = key_of(&record);
        if let Some(&at) = self.index.get(&key) {
            self.records[at] = record;
            return;
        }
        if self.records.len() >= MAX_READ_RECORDS {
            self.forget_least_recent();
        }
        self.index.insert(key, self.records.len());
        self.records.push(record);
    }

    /// Forgets the record seen longest ago (the lowest line), and counts it.
    fn forget_least_recent(&mut self) {
        let Some(oldest) = (0..self.records.len()).min_by_key(|&i| self.records[i].line) else {
            return;
        };
        let gone = self.records.swap_remove(oldest);
        self.index.remove(&key_of(&gone));
        if let Some(moved) = self.records.get(oldest) {
            self.index.insert(key_of(moved), oldest);
        }
        self.dropped += 1;
    }
}

impl Extend<kopf_log::Record> for Kept {
    fn extend<I: IntoIterator<Item = kopf_log::Record>>(&mut self, records: I) {
        for record in records {
            self.keep(record);
        }
    }
}

/// At most this many distinct records are kept from one read before they are folded
/// into the digest: no more than the digest keeps.
const MAX_READ_RECORDS: usize = MAX_DIGEST;

/// A parser that only counts routine lines (successes, chatter, noise) without building
/// them: the auditor's scan. With `whole`, every record is built, so that the lines
/// after kopf's last one can be kept (a previous container's log, read once a restart).
fn scanner(whole: bool) -> kopf_log::Parser {
    let routine = if whole {
        kopf_log::Routine::Keep
    } else {
        kopf_log::Routine::Count
    };
    kopf_log::Parser::new(kopf_log::ParserOptions::default()).with_routine(routine)
}

#[cfg(test)]
mod tests;

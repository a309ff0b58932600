//! Reads the operator's logs through the API server, incrementally: the auditor
//! remembers, per container, the kubelet timestamp of the last line it read and reads
//! from there (`sinceTime`), so a steady audit reads only what the operator wrote since
//! the last one. What the checks read of the window is kept in memory as a bounded
//! digest (one record per kind, handler, object and denial, with when it was last seen)
//! and lost on restart: the first audit after one reads the window (`sinceSeconds`).
//! What one KopfAudit keeps of all its containers is held within a byte budget
//! ([`READER_BUDGET_BYTES`]), whatever its pods log and however many they are, and what
//! all KopfAudits keep together within the process's (`--log-memory-mib`,
//! [`DEFAULT_PROCESS_BUDGET_BYTES`]), however many KopfAudits a tenant creates.
//!
//! Every read is bounded by `spec.logs.limitBytes`, on this side too, whatever the
//! server or a proxy does; when the cap cuts a read, the newest lines are read as well
//! (`tailLines`), so the cap never hides what the operator logs now. The previous
//! container's log is read once per restart.

use crate::model::evidence::{Gathered, LogEvidence, restart_count, restarted};
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

/// What one KopfAudit keeps of its target's logs between audits, all its containers
/// together: their digests and previous containers' logs, in the bytes
/// [`record_bytes`] counts. Without it a KopfAudit keeps, per pod of a crash loop, 64
/// records of up to ~6 KiB in the digest (a 4 KiB message, 3 traceback lines) and 64
/// of up to ~12 KiB of the previous log (16 traceback lines): ~1.1 MiB, ~22 MiB for 20
/// replicas and as much again while its evidence is built. Past it, the least recently
/// seen records are forgotten
/// and counted as dropped, so the logs area says it saw part of the window. The
/// evidence an audit builds is a copy of at most this much, and a read in flight keeps
/// at most [`READ_BUDGET_BYTES`] more.
pub(crate) const READER_BUDGET_BYTES: usize = 512 * 1024;

/// What all KopfAudits together keep of their logs between audits, in the bytes
/// [`record_bytes`] counts, unless `--log-memory-mib` says otherwise: 128 KopfAudits at
/// their whole [`READER_BUDGET_BYTES`], thousands whose operators log as usual. Each KopfAudit has its own budget, but a tenant
/// may create many: past this one the records of the containers least recently read
/// (by whichever KopfAudit) are forgotten first and counted as dropped where they were
/// kept, so the logs area of each KopfAudit that lost some says it saw part of the
/// window. Sized to the chart's
/// 192Mi limit: the worst configuration measured 108 MiB at its peak with 4 MiB of it
/// log records (BENCHMARKS.md), and this adds at most 60 MiB to that.
pub(crate) const DEFAULT_PROCESS_BUDGET_BYTES: usize = 64 << 20;

/// What one read keeps before it is folded into what its KopfAudit remembers: a
/// quarter of [`READER_BUDGET_BYTES`], so that the read in flight adds little to it.
pub(crate) const READ_BUDGET_BYTES: usize = READER_BUDGET_BYTES / 4;

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
/// module) or outside kopf's logging says why only there. Two records at most: they are
/// outside the per-KopfAudit budget.
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
    /// Each read's routine outcomes per object, when it was made (bounded by
    /// [`kopf_log::MAX_TALLIED`] per read).
    tallies: VecDeque<(Timestamp, kopf_log::Tally)>,
    /// When records of the window were read but not kept, and how many: past the
    /// bound of one read, or forgotten from the digest past its bound.
    dropped: VecDeque<(Timestamp, usize)>,
    /// The previous container's log, by the restart count it was read at.
    previous: Option<(i32, Vec<kopf_log::Record>)>,
    /// The records after kopf's last line in the previous container's log that are not
    /// kopf's, at most [`PREVIOUS_TAIL_RECORDS`].
    previous_tail: Vec<kopf_log::Record>,
    /// When it was last read.
    used: Option<Timestamp>,
    /// The [`record_bytes`] of its digest and previous log, as last counted
    /// ([`ContainerLog::recount`]).
    bytes: usize,
    /// What the wording of everything read of it says of kopf's version.
    version: kopf_log::VersionRange,
}

impl ContainerLog {
    /// The records that count against the budgets: the digest's and the previous log's.
    fn records(&self) -> impl Iterator<Item = &kopf_log::Record> {
        let previous = self.previous.iter().flat_map(|(_, p)| p.iter());
        self.digest.iter().map(|s| &s.record).chain(previous)
    }

    /// Counts [`ContainerLog::bytes`] again, after a change.
    fn recount(&mut self) {
        self.bytes = self.records().map(record_bytes).sum();
    }
}

/// What the auditor remembers of container logs between audits, bounded, shared by all
/// audits of one operator process; and the count of bytes read.
#[derive(Debug)]
pub(crate) struct LogMemory {
    containers: Mutex<HashMap<ContainerKey, ContainerLog>>,
    bytes_read: Counter,
    /// What all readers together may keep ([`DEFAULT_PROCESS_BUDGET_BYTES`]).
    process_budget: usize,
}

impl Default for LogMemory {
    fn default() -> LogMemory {
        LogMemory::new(Counter::default(), DEFAULT_PROCESS_BUDGET_BYTES)
    }
}

impl LogMemory {
    /// A memory counting the bytes it reads in `bytes_read`
    /// (`kopf_audit_log_bytes_read_total`), keeping at most `process_budget` bytes of
    /// records for all readers together.
    pub(crate) fn new(bytes_read: Counter, process_budget: usize) -> LogMemory {
        LogMemory {
            containers: Mutex::default(),
            bytes_read,
            process_budget,
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

    /// The [`record_bytes`] of everything `reader` remembers.
    #[cfg(test)]
    pub(crate) fn reader_bytes(&self, reader: &str) -> usize {
        self.lock()
            .iter()
            .filter(|(k, _)| k.reader == reader)
            .flat_map(|(_, log)| log.records())
            .map(record_bytes)
            .sum()
    }

    /// The [`record_bytes`] of everything every reader remembers.
    #[cfg(test)]
    pub(crate) fn total_bytes(&self) -> usize {
        self.lock()
            .values()
            .flat_map(ContainerLog::records)
            .map(record_bytes)
            .sum()
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
    let mut keys = Vec::with_capacity(pods.len());
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
        if !read.tally.is_empty() {
            log.tallies.push_back((now, read.tally));
        }
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
                    log.previous = Some((restarts, previous.records));
                    log.previous_tail = previous.tail;
                }
                // The previous container's log may be gone; the current one still counts.
                Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => {}
                Err(e) => {
                    memory.lock().insert(key, log);
                    return Err(super::obstacle(&e, &what(), &grant()));
                }
            }
        }
        log.recount();
        let mut containers = memory.lock();
        containers.insert(key.clone(), log);
        fit_budget(
            &mut containers,
            |k| k.reader == reader,
            READER_BUDGET_BYTES,
            false,
            now,
        );
        fit_budget(&mut containers, |_| true, memory.process_budget, true, now);
        drop(containers);
        keys.push(key);
    }
    let containers = memory.lock();
    for key in &keys {
        if let Some(log) = containers.get(key) {
            add_to_evidence(&mut evidence, &key.pod, log);
        }
    }
    drop(containers);
    evidence.records.sort_by_key(|r| r.line);
    Ok(evidence)
}

/// The bytes a record holds, its own and on the heap (what [`READER_BUDGET_BYTES`]
/// counts): its strings by capacity, the key it is remembered by once more.
pub(crate) fn record_bytes(record: &kopf_log::Record) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::capacity);
    let object = record.object.as_ref().map_or(0, |o| {
        o.name.capacity() + opt(&o.namespace) + opt(&o.kind) + opt(&o.uid)
    });
    let forbidden = record.forbidden.as_ref().map_or(0, |f| {
        f.verb.capacity()
            + f.resource.capacity()
            + opt(&f.api_group)
            + opt(&f.user)
            + opt(&f.namespace)
    });
    let kind = match &record.kind {
        kopf_log::EventKind::CauseProcessed { cause, .. } => cause.capacity(),
        kopf_log::EventKind::Forbidden {
            verb,
            resource,
            api_group,
            user,
            namespace,
            ..
        } => verb.capacity() + resource.capacity() + opt(api_group) + opt(user) + opt(namespace),
        kopf_log::EventKind::WatcherFailed {
            resource,
            namespace,
        } => resource.capacity() + opt(namespace),
        kopf_log::EventKind::TaskFailed {
            target, namespace, ..
        }
        | kopf_log::EventKind::TaskFinished {
            target, namespace, ..
        } => opt(target) + opt(namespace),
        other => other.handler().map_or(0, |h| h.id.capacity()),
    };
    let traceback = record.traceback.capacity() * std::mem::size_of::<String>()
        + record.traceback.iter().map(String::capacity).sum::<usize>();
    // The digest's key (kind, handler, object, denial) is about as long again.
    let key = std::mem::size_of::<String>() + 16 + kind + object + forbidden;
    std::mem::size_of::<Seen>()
        + record.message.capacity()
        + opt(&record.logger)
        + traceback
        + object
        + forbidden
        + kind
        + key
}

/// Which record of a container log: one of its digest, or of its previous log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Digest(usize),
    Previous(usize),
}

/// Keeps what the containers `within` hold (one reader's, or every reader's) within
/// `budget` bytes: forgets the least recently seen records first (`by_use`: those of
/// the containers least recently read first, whichever reader keeps them, so that the
/// KopfAudits audited last keep theirs), the last record of each previous log only
/// after every other (it says why the container exited), and counts what it forgot as
/// dropped at `now`, in the container that lost it: its reader's next evidence says so.
fn fit_budget(
    containers: &mut HashMap<ContainerKey, ContainerLog>,
    within: impl Fn(&ContainerKey) -> bool,
    budget: usize,
    by_use: bool,
    now: Timestamp,
) {
    let mut total: usize = containers
        .iter()
        .filter(|(k, _)| within(k))
        .map(|(_, log)| log.bytes)
        .sum();
    if total <= budget {
        return;
    }
    // (last protected, container last read, last seen, container, slot, bytes)
    type Entry<'a> = (
        bool,
        Option<Timestamp>,
        Timestamp,
        &'a ContainerKey,
        Slot,
        usize,
    );
    let mut all: Vec<Entry<'_>> = Vec::new();
    for (key, log) in containers.iter().filter(|(k, _)| within(k)) {
        let used = if by_use { log.used } else { None };
        for (i, seen) in log.digest.iter().enumerate() {
            let bytes = record_bytes(&seen.record);
            all.push((false, used, seen.last, key, Slot::Digest(i), bytes));
        }
        if let Some((_, previous)) = &log.previous {
            for (i, record) in previous.iter().enumerate() {
                let bytes = record_bytes(record);
                let last = i + 1 == previous.len();
                let at = written_at(record, Timestamp::MIN);
                all.push((last, used, at, key, Slot::Previous(i), bytes));
            }
        }
    }
    all.sort_by_key(|(protected, used, at, _, _, _)| (*protected, *used, *at));
    let mut forget: HashMap<ContainerKey, Vec<Slot>> = HashMap::new();
    for (_, _, _, key, slot, bytes) in all {
        if total <= budget {
            break;
        }
        total = total.saturating_sub(bytes);
        forget.entry(key.clone()).or_default().push(slot);
    }
    for (key, slots) in forget {
        let Some(log) = containers.get_mut(&key) else {
            continue;
        };
        let mut index = 0;
        log.digest.retain(|_| {
            index += 1;
            !slots.contains(&Slot::Digest(index - 1))
        });
        if let Some((_, previous)) = &mut log.previous {
            let mut index = 0;
            previous.retain(|_| {
                index += 1;
                !slots.contains(&Slot::Previous(index - 1))
            });
        }
        log.dropped.push_back((now, slots.len()));
        log.recount();
    }
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
    for (_, tally) in &log.tallies {
        evidence.tally.add(tally);
    }
    evidence.dropped += log.dropped.iter().map(|(_, n)| n).sum::<usize>();
    if let Some((_, previous)) = &log.previous {
        let kept: Vec<kopf_log::Record> = previous
            .iter()
            .filter(|r| !log.digest.iter().any(|s| same_line(&s.record, r)))
            .cloned()
            .collect();
        evidence.previous.insert(pod.to_string(), kept);
        if !log.previous_tail.is_empty() {
            evidence
                .previous_tail
                .insert(pod.to_string(), log.previous_tail.clone());
        }
    }
    evidence.version.narrow(log.version);
}

/// Whether two records are one line of the log read twice: the same times, object and
/// message.
/// A container waiting to restart (CrashLoopBackOff) has no log of its own, and a real
/// kubelet answers its plain read with the last terminated container's log, as it does
/// `previous=true` (Kubernetes 1.37 `pkg/kubelet/kubelet_pods.go`,
/// `validateContainerLogStatus`): without this, those records count twice. Records with
/// no time at all are never taken for one another.
fn same_line(a: &kopf_log::Record, b: &kopf_log::Record) -> bool {
    let timed = a.timestamp.is_some() || a.kubelet_timestamp.is_some();
    timed
        && a.timestamp == b.timestamp
        && a.kubelet_timestamp == b.kubelet_timestamp
        && a.object == b.object
        && a.message == b.message
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
        // What is remembered counts against the budget by what it holds.
        record.traceback.shrink_to_fit();
        record.message.shrink_to_fit();
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
    while log.tallies.front().is_some_and(|(at, _)| *at < start) {
        log.tallies.pop_front();
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
    /// Routine outcomes per object.
    tally: kopf_log::Tally,
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
    let mut kept = Kept::default();
    let mut first = stream(
        api,
        &key.pod,
        &params,
        bounds.limit_bytes,
        cursor,
        &mut kept,
    )
    .await?;
    if first.cut {
        let newest = LogParams {
            container: Some(key.container.clone()),
            timestamps: true,
            tail_lines: Some(NEWEST_TAIL_LINES),
            limit_bytes: Some(bounds.limit_bytes),
            ..Default::default()
        };
        let tail = stream(
            api,
            &key.pod,
            &newest,
            bounds.limit_bytes,
            first.cursor,
            &mut kept,
        )
        .await?;
        first.stats.add(&tail.stats);
        first.tally.add(&tail.tally);
        first.cursor = tail.cursor.or(first.cursor);
        first.bytes += tail.bytes;
    }
    first.dropped = kept.dropped;
    first.records = kept.into_records();
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
    let mut kept = Kept::with_tail(PREVIOUS_TAIL_RECORDS);
    let mut read = stream(api, &key.pod, &params, bounds.limit_bytes, None, &mut kept).await?;
    read.dropped = kept.dropped;
    read.tail = std::mem::take(&mut kept.tail).into();
    read.records = kept.into_records();
    Ok(read)
}

/// The kubelet timestamp that starts a line (`<RFC3339Nano> stdout F …`).
fn line_time(line: &[u8]) -> Option<Timestamp> {
    let end = memchr::memchr(b' ', line)?;
    let text = std::str::from_utf8(&line[..end]).ok()?;
    let t = kopf_log::Timestamp::parse_rfc3339(text)?;
    Timestamp::new(t.secs, t.nanos as i32).ok()
}

/// Streams one container log into a parser, skipping the lines at or before `after`,
/// at most `limit + LINE_SLACK_BYTES` bytes whatever the server sends; the records
/// some check reads go to `kept`.
async fn stream(
    api: &Api<Pod>,
    pod: &str,
    params: &LogParams,
    limit: i64,
    after: Option<Timestamp>,
    kept: &mut Kept,
) -> Result<Read, kube::Error> {
    let mut body = Box::pin(api.log_stream(pod, params).await?);
    let mut parser = scanner(kept.tail_len > 0);
    let mut out = Read::default();
    let mut lines = LineTracker::new(after);
    let hard_stop = limit.saturating_add(LINE_SLACK_BYTES);
    let mut total: i64 = 0;
    loop {
        let n = match body.fill_buf().await {
            Ok([]) => break,
            Ok(chunk) => {
                let room = usize::try_from(hard_stop - total).unwrap_or(0);
                let take = chunk.len().min(room);
                let fed = lines.feed(&chunk[..take], |part| parser.push_chunk(part, &mut *kept));
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
    out.stats = parser.stats();
    out.tally = parser.tally().clone();
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

/// The records one read keeps: only those some check reads (failures, denials,
/// warnings about kopf's own health), one per kind, handler, object and denial (the
/// latest, as the digest keeps them), at most [`MAX_READ_RECORDS`] and
/// [`READ_BUDGET_BYTES`]: past either bound the least recently seen is forgotten, as
/// the digest does, and counted. So a read holds no more than the digest it is folded
/// into, whatever a log floods it with.
#[derive(Default)]
struct Kept {
    records: Vec<kopf_log::Record>,
    /// When each of `records` was last seen, in records given to [`Kept::keep`] (a
    /// read's line numbers start again in the read of the newest lines).
    seen: Vec<u64>,
    index: HashMap<String, usize>,
    dropped: usize,
    /// The [`record_bytes`] of `records`.
    bytes: usize,
    /// Records given so far.
    given: u64,
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
        let bytes = record_bytes(&record);
        self.given += 1;
        if let Some(&at) = self.index.get(&key) {
            self.bytes = self.bytes - record_bytes(&self.records[at]) + bytes;
            self.records[at] = record;
            self.seen[at] = self.given;
        } else {
            if self.records.len() >= MAX_READ_RECORDS {
                self.forget_least_recent();
            }
            self.index.insert(key, self.records.len());
            self.records.push(record);
            self.seen.push(self.given);
            self.bytes += bytes;
        }
        // The record just kept is the most recent: it is forgotten last.
        while self.bytes > READ_BUDGET_BYTES && self.records.len() > 1 {
            self.forget_least_recent();
        }
    }

    /// The records kept, least recently seen first.
    fn into_records(self) -> Vec<kopf_log::Record> {
        let mut records: Vec<(u64, kopf_log::Record)> =
            self.seen.into_iter().zip(self.records).collect();
        records.sort_by_key(|(seen, _)| *seen);
        records.into_iter().map(|(_, r)| r).collect()
    }

    /// Forgets the record seen longest ago, and counts it.
    fn forget_least_recent(&mut self) {
        let Some(oldest) = (0..self.records.len()).min_by_key(|&i| self.seen[i]) else {
            return;
        };
        self.seen.swap_remove(oldest);
        let gone = self.records.swap_remove(oldest);
        self.bytes -= record_bytes(&gone);
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

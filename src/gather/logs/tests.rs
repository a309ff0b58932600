//! Reading logs against fake API servers: one that ignores `limitBytes`, one whose log
//! grows between audits and honours `sinceTime` as the kubelet does (whole seconds).

use super::*;
use crate::testing::FakeApi;
use http::{Method, Response};
use kube::client::Body;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A kopf failure line written now.
fn failure_now() -> String {
    let now = Timestamp::now();
    format!(
        "{} [{}] kopf.objects         [ERROR   ] [ns/w1] Handler 'reconcile' failed temporarily: the same failure again and again\n",
        now.strftime("%Y-%m-%dT%H:%M:%S.%9fZ"),
        now.strftime("%Y-%m-%d %H:%M:%S,000"),
    )
}

/// 10 MiB of kopf lines, whatever the request asks.
fn flood(method: &Method, path: &str, _body: &serde_json::Value) -> Response<Body> {
    assert_eq!(method, Method::GET, "{path}");
    let line = failure_now();
    let body = line.repeat(10 * 1024 * 1024 / line.len());
    Response::new(Body::from(body.into_bytes()))
}

fn pod() -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "op-1", "namespace": "ns", "uid": "u-1"},
        "status": {"containerStatuses": [{
            "name": "operator", "restartCount": 0, "ready": true, "image": "op", "imageID": "op"
        }]}
    }))
    .expect("pod")
}

fn bounds(limit_bytes: i64) -> LogBounds {
    LogBounds {
        window: Duration::from_secs(600),
        limit_bytes,
    }
}

#[tokio::test]
async fn the_byte_cap_holds_whatever_the_server_sends() {
    let (client, api) = FakeApi::start("ns", flood);
    let memory = LogMemory::default();
    let b = bounds(1024 * 1024);
    let logs = gather(&client, &memory, "ns/audit", "ns", &[pod()], "operator", b)
        .await
        .expect("read");
    assert!(logs.truncated, "the cap cut the log");
    let most_per_read = (b.limit_bytes + LINE_SLACK_BYTES) as u64 / failure_now().len() as u64 + 1;
    // The window, then the newest lines because the cap cut the first read.
    assert!(
        logs.stats.lines <= 2 * most_per_read,
        "{} lines parsed, at most {} fit in two capped reads",
        logs.stats.lines,
        2 * most_per_read
    );
    assert_eq!(logs.records.len(), 1, "one failure, remembered once");
    let seen = api.take();
    assert_eq!(seen.len(), 2, "{seen:#?}");
    assert!(
        seen[0].path.contains("limitBytes=1048576"),
        "{}",
        seen[0].path
    );
    assert!(seen[1].path.contains("tailLines="), "{}", seen[1].path);
}

/// Lines the fake operator has written so far.
static WRITTEN: AtomicUsize = AtomicUsize::new(0);

/// When the fake operator started: five minutes ago, in whole seconds.
static START: std::sync::OnceLock<Timestamp> = std::sync::OnceLock::new();

fn start() -> Timestamp {
    *START.get_or_init(|| {
        Timestamp::from_second(Timestamp::now().as_second() - 300).unwrap_or(Timestamp::UNIX_EPOCH)
    })
}

/// Line `i`, written at second `i` after the start.
fn line(i: usize) -> String {
    let at = start() + jiff::SignedDuration::from_secs(i as i64);
    let handler = if i.is_multiple_of(10) {
        "failing"
    } else {
        "steady"
    };
    let level = if i.is_multiple_of(10) {
        "ERROR   "
    } else {
        "INFO    "
    };
    let message = if i.is_multiple_of(10) {
        format!("Handler '{handler}' failed temporarily: try {i}")
    } else {
        format!("Handler '{handler}' succeeded.")
    };
    format!(
        "{}.{i:09}Z [{},000] kopf.objects         [{level}] [ns/w1] {message}\n",
        at.strftime("%Y-%m-%dT%H:%M:%S"),
        at.strftime("%Y-%m-%d %H:%M:%S"),
    )
}

/// The log so far, from `sinceTime` (whole seconds) when asked.
fn growing(_method: &Method, path: &str, _body: &serde_json::Value) -> Response<Body> {
    let since = path
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("sinceTime="));
    let since = since
        .map(|s| s.replace("%3A", ":"))
        .and_then(|s| s.parse::<Timestamp>().ok());
    let body: String = (0..WRITTEN.load(Ordering::SeqCst))
        .filter(|i| since.is_none_or(|s| start() + jiff::SignedDuration::from_secs(*i as i64) >= s))
        .map(line)
        .collect();
    Response::new(Body::from(body.into_bytes()))
}

#[tokio::test]
async fn a_steady_audit_reads_only_what_was_written_since_the_last() {
    let (client, api) = FakeApi::start("ns", growing);
    let memory = LogMemory::default();
    let b = bounds(4 * 1024 * 1024);
    WRITTEN.store(100, Ordering::SeqCst);
    let first = gather(&client, &memory, "ns/audit", "ns", &[pod()], "operator", b)
        .await
        .expect("read");
    let after_first = memory.bytes_read.get();
    let written_first: usize = (0..100).map(|i| line(i).len()).sum();
    assert_eq!(after_first as usize, written_first, "the whole window once");
    assert_eq!(first.stats.lines, 100);
    assert_eq!(
        first.records.len(),
        1,
        "ten failures of one handler, remembered once"
    );
    assert!(api.take()[0].path.contains("sinceSeconds=600"));

    WRITTEN.store(130, Ordering::SeqCst);
    let second = gather(&client, &memory, "ns/audit", "ns", &[pod()], "operator", b)
        .await
        .expect("read");
    let read_second = memory.bytes_read.get() - after_first;
    let written_second: usize = (100..130).map(|i| line(i).len()).sum();
    assert_eq!(
        read_second as usize, written_second,
        "only the new lines: the second's already read are skipped"
    );
    assert!(api.take()[0].path.contains("sinceTime="));
    assert_eq!(second.stats.lines, 130, "the window's counts add up");
    assert_eq!(second.records.len(), 1);
    assert_eq!(memory.containers(), 1);

    // Another KopfAudit of the same operator, with a window of its own: it reads the
    // whole window itself, untouched by the first one's cursor and digest.
    let narrow = LogBounds {
        window: Duration::from_secs(60),
        limit_bytes: 1024,
    };
    gather(
        &client,
        &memory,
        "ns/tenant",
        "ns",
        &[pod()],
        "operator",
        narrow,
    )
    .await
    .expect("read");
    let platform = gather(
        &client,
        &memory,
        "ns/platform",
        "ns",
        &[pod()],
        "operator",
        b,
    )
    .await
    .expect("read");
    let paths: Vec<String> = api.take().into_iter().map(|s| s.path).collect();
    assert!(paths[0].contains("sinceSeconds=60"), "{paths:?}");
    assert!(
        paths.iter().any(|p| p.contains("sinceSeconds=600")),
        "the platform's own first read covers its whole window: {paths:?}"
    );
    assert_eq!(
        platform.records.len(),
        1,
        "the failure the tenant's window missed"
    );
    assert_eq!(memory.containers(), 3);
}

#[test]
fn distinct_records_past_the_bound_are_counted_and_repeats_are_kept_once() {
    let mut parser = scanner(false);
    let mut kept = Kept::default();
    let at = Timestamp::now();
    let failure = |object: usize| {
        format!(
            "{} [{}] kopf.objects         [ERROR   ] [ns/w{object}] Handler 'reconcile' failed temporarily: boom\n",
            at.strftime("%Y-%m-%dT%H:%M:%S.%9fZ"),
            at.strftime("%Y-%m-%d %H:%M:%S,000"),
        )
    };
    let mut text = String::new();
    for object in 0..MAX_READ_RECORDS + 7 {
        text.push_str(&failure(object));
        text.push_str(&failure(0));
    }
    parser.push_chunk(text.as_bytes(), &mut kept);
    while let Some(record) = parser.finish() {
        kept.keep(record);
    }
    assert_eq!(kept.records.len(), MAX_READ_RECORDS);
    assert_eq!(
        kept.dropped, 7,
        "the distinct ones past the bound, not the repeats"
    );
}

/// A pod whose kopf container restarted once.
fn restarted_pod() -> Pod {
    let mut p = pod();
    if let Some(cs) = p
        .status
        .as_mut()
        .and_then(|s| s.container_statuses.as_mut())
        .and_then(|c| c.first_mut())
    {
        cs.restart_count = 1;
    }
    p
}

/// The previous container died outside kopf's logging: Python's traceback, none of it
/// kopf's, after kopf's failure and an INFO line (a traceback right after an ERROR line
/// would be that record's own); the current one logs a kopf line.
fn import_error(method: &Method, path: &str, _body: &serde_json::Value) -> Response<Body> {
    assert_eq!(method, Method::GET, "{path}");
    let at = |s: u32| format!("2026-12-02T11:00:0{s}.000000000Z");
    let body = if path.contains("previous=true") {
        [
            format!("{} [2026-12-02 11:00:00,000] kopf.objects         [ERROR   ] [ns/w1] Handler 'reconcile' failed temporarily: an older failure", at(0)),
            format!("{} [2026-12-02 11:00:00,500] kopf.objects         [INFO    ] [ns/w1] Handler 'reconcile' succeeded.", at(0)),
            format!("{} Traceback (most recent call last):", at(1)),
            format!("{}   File \"/app/operator.py\", line 9, in <module>", at(1)),
            format!("{} ImportError: cannot import name 'Widget' from 'backend' (/app/backend.py); token=hunter2secretvalue", at(1)),
        ]
        .join("\n")
    } else {
        failure_now()
    };
    Response::new(Body::from(body.into_bytes()))
}

/// The evidence of one read of a pod whose kopf container restarted once, its logs as
/// `answer` serves them.
async fn read_restarted(
    answer: fn(&Method, &str, &serde_json::Value) -> Response<Body>,
) -> LogEvidence {
    let (client, _api) = FakeApi::start("ns", answer);
    let memory = LogMemory::default();
    let pods = [restarted_pod()];
    gather(
        &client,
        &memory,
        "ns/audit",
        "ns",
        &pods,
        "operator",
        bounds(1 << 20),
    )
    .await
    .expect("read")
}

#[tokio::test]
async fn a_previous_log_keeps_the_lines_after_kopf_s_last_one() {
    let logs = read_restarted(import_error).await;
    let tail = logs.previous_tail.get("op-1").expect("the non-kopf tail");
    assert_eq!(tail.len(), 1, "the traceback is one record: {tail:#?}");
    let exception = tail[0].traceback.last().expect("the exception line");
    assert!(
        exception.starts_with("ImportError: cannot import name 'Widget'"),
        "{exception}"
    );
    assert_eq!(
        logs.previous.get("op-1").map(Vec::len),
        Some(1),
        "kopf's failure is kept as before"
    );
}

#[test]
fn the_tail_is_what_follows_kopf_s_last_line_and_is_bounded() {
    let mut kept = Kept::with_tail(PREVIOUS_TAIL_RECORDS);
    let mut parser = scanner(true);
    let text = "plain noise before kopf\n\
        [2026-12-02 11:00:00,000] kopf.objects         [INFO    ] [ns/w1] Handler 'reconcile' succeeded.\n\
        one\ntwo\nthree\n";
    parser.push_chunk(text.as_bytes(), &mut kept);
    while let Some(record) = parser.finish() {
        kept.keep(record);
    }
    let tail: Vec<&str> = kept.tail.iter().map(|r| r.message.as_str()).collect();
    assert_eq!(tail, vec!["two", "three"]);
    assert!(
        kept.records.is_empty(),
        "routine records are still not kept"
    );
    // A current log keeps no tail.
    let mut kept = Kept::default();
    kept.keep(parser_record("one"));
    assert!(kept.tail.is_empty());
}

fn parser_record(line: &str) -> kopf_log::Record {
    let mut parser = scanner(true);
    let mut out: Vec<kopf_log::Record> = parser.push_line(line.as_bytes()).into_iter().collect();
    out.extend(parser.finish());
    out.remove(0)
}

/// One record of a crash loop: a 4 KiB ERROR about object `object` with a 20-line
/// traceback of long lines, written at second `second` after `at`.
fn crash_record(at: Timestamp, second: i64, object: usize) -> String {
    let t = at + jiff::SignedDuration::from_secs(second);
    let ts = t.strftime("%Y-%m-%dT%H:%M:%S.%9fZ").to_string();
    let own = t.strftime("%Y-%m-%d %H:%M:%S,000");
    let mut out = format!(
        "{ts} [{own}] kopf.objects         [ERROR   ] [ns/obj-{object}] Handler 'reconcile' failed with an exception and will try again in 60 seconds: {}\n",
        "x".repeat(4096)
    );
    out.push_str(&format!("{ts} Traceback (most recent call last):\n"));
    for frame in 0..20 {
        out.push_str(&format!(
            "{ts}   File \"/app/operator.py\", line {frame}, in reconcile {}\n",
            "y".repeat(600)
        ));
    }
    out.push_str(&format!("{ts} RuntimeError: crash {object}\n"));
    out
}

/// A crash loop on every pod: 100 distinct failures in the current log and in the
/// previous container's, the previous one ending with `RuntimeError: last words`.
fn crash_loop(_method: &Method, path: &str, _body: &serde_json::Value) -> Response<Body> {
    let now = Timestamp::now();
    let previous = path.contains("previous=true");
    let start = if previous { -7200 } else { -3000 };
    let mut body = String::new();
    for object in 0..100 {
        body.push_str(&crash_record(now, start + object as i64, object));
    }
    if previous {
        body.push_str(&crash_record(now, start + 200, 9999).replace("crash 9999", "last words"));
    }
    Response::new(Body::from(body.into_bytes()))
}

fn crashing_pod(i: usize) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("op-{i}"), "namespace": "ns", "uid": format!("u-{i}")},
        "status": {"containerStatuses": [{
            "name": "operator", "restartCount": 3, "ready": false, "image": "op", "imageID": "op",
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}
        }]}
    }))
    .expect("pod")
}

/// The bytes of the records of some evidence, as the budget counts them.
fn evidence_bytes(logs: &LogEvidence) -> usize {
    logs.all_records().map(record_bytes).sum()
}

#[tokio::test]
async fn a_crash_loop_on_twenty_pods_stays_within_the_budget_and_counts_what_it_forgets() {
    let (client, _api) = FakeApi::start("ns", crash_loop);
    let memory = LogMemory::default();
    let pods: Vec<Pod> = (0..20).map(crashing_pod).collect();
    let b = LogBounds {
        window: Duration::from_secs(24 * 3600),
        limit_bytes: 64 * 1024 * 1024,
    };
    for _ in 0..2 {
        let logs = gather(&client, &memory, "ns/audit", "ns", &pods, "operator", b)
            .await
            .expect("read");
        let kept = memory.reader_bytes("ns/audit");
        assert!(
            kept <= READER_BUDGET_BYTES,
            "{kept} bytes kept, the budget is {READER_BUDGET_BYTES}"
        );
        assert!(
            kept > READER_BUDGET_BYTES / 2,
            "the budget is used, not emptied: {kept}"
        );
        assert!(
            evidence_bytes(&logs) <= READER_BUDGET_BYTES,
            "the evidence copies at most the budget: {}",
            evidence_bytes(&logs)
        );
        // 20 pods x (100 distinct current + 101 previous) records were read: nearly all
        // of them are forgotten, and counted, so the logs area says it is partial.
        assert!(logs.dropped > 20 * 100, "{} dropped", logs.dropped);
        assert_eq!(logs.previous.len(), 20, "every pod keeps its previous log");
        for (pod, records) in &logs.previous {
            let last = records.last().expect("the last record of the previous log");
            assert_eq!(
                last.traceback.last().map(String::as_str),
                Some("RuntimeError: last words"),
                "{pod}: the exit is still quoted"
            );
        }
        assert!(
            !logs.records.is_empty(),
            "the newest current records are kept"
        );
    }
    // Another KopfAudit has a budget of its own.
    gather(
        &client,
        &memory,
        "ns/other",
        "ns",
        &pods[..1],
        "operator",
        b,
    )
    .await
    .expect("read");
    assert!(memory.reader_bytes("ns/other") <= READER_BUDGET_BYTES);
    assert!(memory.reader_bytes("ns/audit") <= READER_BUDGET_BYTES);
}

#[test]
fn one_read_keeps_no_more_than_its_budget_and_the_newest_last() {
    let mut parser = scanner(false);
    let mut kept = Kept::default();
    let at = Timestamp::now();
    for object in 0..MAX_READ_RECORDS {
        parser.push_chunk(
            crash_record(at, object as i64, object).as_bytes(),
            &mut kept,
        );
    }
    while let Some(record) = parser.finish() {
        kept.keep(record);
    }
    let bytes: usize = kept.records.iter().map(record_bytes).sum();
    assert_eq!(bytes, kept.bytes, "the running count is exact");
    assert!(bytes <= READ_BUDGET_BYTES, "{bytes}");
    assert!(kept.records.len() < MAX_READ_RECORDS);
    assert_eq!(kept.dropped + kept.records.len(), MAX_READ_RECORDS);
    let newest = format!("[ns/obj-{}]", MAX_READ_RECORDS - 1);
    assert!(
        kept.records.iter().any(|r| r
            .object
            .as_ref()
            .is_some_and(|o| format!("[ns/{}]", o.name) == newest)),
        "the newest record is kept"
    );
}

/// The records `reader` counted as dropped, in all its containers.
fn dropped_of(memory: &LogMemory, reader: &str) -> usize {
    memory
        .lock()
        .iter()
        .filter(|(k, _)| k.reader == reader)
        .flat_map(|(_, log)| log.dropped.iter().map(|(_, n)| n))
        .sum()
}

#[tokio::test]
async fn many_kopfaudits_stay_within_the_process_budget_the_least_recent_dropped_first() {
    let (client, _api) = FakeApi::start("ns", crash_loop);
    let b = LogBounds {
        window: Duration::from_secs(24 * 3600),
        limit_bytes: 64 * 1024 * 1024,
    };
    let pods = [crashing_pod(0)];
    let readers = ["ns/a0", "ns/a1", "ns/a2", "ns/a3"];
    // One crash-looping pod: each KopfAudit keeps about 160 KiB of it, within its own
    // budget; the process keeps what one and a half of them do.
    let process = 256 * 1024;
    let capped = LogMemory::new(Counter::default(), process);
    let roomy = LogMemory::default();
    for reader in readers {
        for memory in [&capped, &roomy] {
            gather(&client, memory, reader, "ns", &pods, "operator", b)
                .await
                .expect("read");
        }
        assert!(
            capped.total_bytes() <= process,
            "{} bytes kept, the process budget is {process}",
            capped.total_bytes()
        );
    }
    assert!(
        roomy.total_bytes() > process,
        "without the cap the four keep more: {}",
        roomy.total_bytes()
    );
    assert!(
        capped.reader_bytes("ns/a0") < capped.reader_bytes("ns/a3"),
        "the KopfAudit read longest ago lost its records first"
    );
    let lost = dropped_of(&capped, "ns/a0");
    assert!(
        lost > dropped_of(&roomy, "ns/a0"),
        "what the process budget forgot is counted where it was kept"
    );
    assert_eq!(
        dropped_of(&capped, "ns/a3"),
        dropped_of(&roomy, "ns/a3"),
        "the newest reader lost nothing more than its own budget took"
    );
    // The next audit of the KopfAudit that lost records says it saw part of the window.
    let logs = gather(&client, &capped, "ns/a0", "ns", &pods, "operator", b)
        .await
        .expect("read");
    assert!(
        logs.dropped >= lost,
        "{} dropped, {lost} forgotten",
        logs.dropped
    );
    assert!(capped.total_bytes() <= process);
}

/// A container in CrashLoopBackOff, as a real kubelet serves it: the plain read returns
/// the last terminated container's log, the same as `previous=true` (Kubernetes 1.37
/// `pkg/kubelet/kubelet_pods.go`, `validateContainerLogStatus`).
fn crash_looping(method: &Method, path: &str, _body: &serde_json::Value) -> Response<Body> {
    assert_eq!(method, Method::GET, "{path}");
    // One log, read twice: the same lines whenever it is read.
    static WRITTEN: std::sync::LazyLock<Timestamp> = std::sync::LazyLock::new(Timestamp::now);
    let now = *WRITTEN;
    let line = |object: &str| {
        format!(
            "{} [{}] kopf.objects         [ERROR   ] [ns/{object}] Handler 'reconcile' failed temporarily: gone",
            now.strftime("%Y-%m-%dT%H:%M:%S.%9fZ"),
            now.strftime("%Y-%m-%d %H:%M:%S,000"),
        )
    };
    let body = [line("w1"), line("w2")].join("\n");
    Response::new(Body::from(body.into_bytes()))
}

#[tokio::test]
async fn a_crash_looping_container_s_records_count_once() {
    let logs = read_restarted(crash_looping).await;
    let failures: Vec<&str> = logs
        .all_records()
        .filter(|r| r.kind.is_handler_failure())
        .filter_map(|r| r.object.as_ref().map(|o| o.name.as_str()))
        .collect();
    assert_eq!(failures, ["w1", "w2"], "each line once: {failures:?}");
}

//! `Routine::Count` (the fast mode) against `Routine::Keep` (every record
//! built): the fast mode's records are exactly the full mode's records that
//! the auditor keeps, and the counters agree, on the benchmark's generated
//! log and on the real kopf logs captured from the fixtures.

#[path = "support/gen.rs"]
mod generator;

use kopf_log::{
    EventKind, HandlerKind, Parser, ParserOptions, Record, Routine, RoutineStats, Stats, Tallied,
    Tally, records,
};
use std::path::PathBuf;

/// The auditor's filter, as written in `src/gather/logs.rs` (`keep`): an activity's
/// success (a login handler's) is kept.
fn auditor_keeps(record: &Record) -> bool {
    use EventKind as K;
    let activity = matches!(&record.kind, K::HandlerSucceeded { handler } if handler.kind == HandlerKind::Activity);
    record.forbidden.is_some()
        || activity
        || !matches!(
            record.kind,
            K::Other | K::HandlerSucceeded { .. } | K::CauseProcessed { .. }
        )
}

/// Every record and the stats, line by line (as the auditor feeds the parser).
fn by_line(data: &[u8], routine: Routine) -> (Vec<Record>, Stats, RoutineStats, Tally) {
    let mut p = Parser::new(ParserOptions::default()).with_routine(routine);
    let mut out = Vec::new();
    for line in data.split_inclusive(|&b| b == b'\n') {
        out.extend(p.push_line(line));
    }
    while let Some(r) = p.finish() {
        out.push(r);
    }
    (out, p.stats(), p.routine_stats(), p.tally().clone())
}

/// A tally's pairs in a fixed order (the modes may count them in another).
fn sorted(tally: &Tally) -> Vec<Tallied> {
    let mut all: Vec<Tallied> = tally.iter().cloned().collect();
    all.sort_by_key(|t| format!("{:?}", (&t.outcome, &t.namespace, &t.name)));
    all
}

/// The same through `push_chunk`, in chunks of `size` bytes.
fn by_chunk(data: &[u8], routine: Routine, size: usize) -> (Vec<Record>, Stats) {
    let mut p = Parser::new(ParserOptions::default()).with_routine(routine);
    let mut out = Vec::new();
    for chunk in data.chunks(size.max(1)) {
        p.push_chunk(chunk, &mut out);
    }
    while let Some(r) = p.finish() {
        out.push(r);
    }
    (out, p.stats())
}

/// The same through `records()` over a reader.
fn by_reader(data: &[u8], routine: Routine) -> (Vec<Record>, Stats) {
    let mut it = records(data, ParserOptions::default()).with_routine(routine);
    let out = it.by_ref().map(|r| r.expect("in memory")).collect();
    (out, it.stats())
}

/// Asserts the equivalence on `data`; returns the fast mode's routine stats.
fn check(name: &str, data: &[u8]) -> RoutineStats {
    let (full, full_stats, none, full_tally) = by_line(data, Routine::Keep);
    assert_eq!(none, RoutineStats::default(), "{name}: Keep drops nothing");
    assert_eq!(full_stats.records as usize, full.len(), "{name}");
    let expected: Vec<Record> = full.iter().filter(|r| auditor_keeps(r)).cloned().collect();
    for r in &full {
        assert_eq!(r.is_routine(), !auditor_keeps(r), "{name}: line {}", r.line);
    }

    let (fast, fast_stats, dropped, fast_tally) = by_line(data, Routine::Count);
    assert_eq!(sorted(&fast_tally), sorted(&full_tally), "{name}: tally");
    let with_object = full
        .iter()
        .filter(|r| r.object.is_some())
        .filter(|r| {
            matches!(
                r.kind,
                EventKind::HandlerSucceeded { .. }
                    | EventKind::CauseProcessed { .. }
                    | EventKind::HandlerFailedTemporarily {
                        final_attempt: false,
                        ..
                    }
                    | EventKind::HandlerFailedWithException {
                        outcome: kopf_log::ExceptionOutcome::Retry,
                        ..
                    }
            )
        })
        .count() as u64;
    let tallied: u64 = full_tally.iter().map(|t| t.count).sum();
    assert_eq!(
        tallied + full_tally.untallied,
        with_object,
        "{name}: every outcome is tallied"
    );
    assert_eq!(fast.len(), expected.len(), "{name}: kept records");
    for (a, b) in fast.iter().zip(&expected) {
        assert_eq!(a, b, "{name}: line {}", b.line);
    }
    assert_eq!(fast_stats, full_stats, "{name}: stats");
    let successes = full
        .iter()
        .filter(|r| matches!(r.kind, kopf_log::EventKind::HandlerSucceeded { .. }))
        .count();
    assert_eq!(
        full_stats.successes as usize, successes,
        "{name}: successes"
    );
    assert_eq!(fast_stats.lines, full_stats.lines);
    assert_eq!(fast_stats.kopf_lines, full_stats.kopf_lines);
    assert_eq!(
        (dropped.quick + dropped.built) as usize,
        full.len() - expected.len(),
        "{name}: every routine record is counted as dropped"
    );

    for size in [1 << 16, 4093, 97] {
        let (c_full, c_full_stats) = by_chunk(data, Routine::Keep, size);
        let (c_fast, c_fast_stats) = by_chunk(data, Routine::Count, size);
        let c_expected: Vec<Record> = c_full.into_iter().filter(auditor_keeps).collect();
        assert!(c_fast == c_expected, "{name}: push_chunk({size})");
        assert_eq!(
            c_fast_stats, c_full_stats,
            "{name}: push_chunk({size}) stats"
        );
    }
    let (r_full, r_full_stats) = by_reader(data, Routine::Keep);
    let (r_fast, r_fast_stats) = by_reader(data, Routine::Count);
    let r_expected: Vec<Record> = r_full.into_iter().filter(auditor_keeps).collect();
    assert!(r_fast == r_expected, "{name}: records()");
    assert_eq!(r_fast_stats, r_full_stats, "{name}: records() stats");
    dropped
}

#[test]
fn generated_log_fast_mode_keeps_the_same_records() {
    let mut data = Vec::new();
    generator::generate_into(&mut data, 3_000_000).expect("in memory");
    let dropped = check("generated", &data);
    // The fast path is the one taken: almost no routine record is built.
    assert!(
        dropped.built * 100 <= dropped.quick,
        "quick {} built {}",
        dropped.quick,
        dropped.built
    );
    assert!(dropped.quick > 10_000, "{dropped:?}");
}

#[test]
fn captured_logs_fast_mode_keeps_the_same_records() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut files = Vec::new();
    for dir in [root.join("captured"), root.clone()] {
        for e in std::fs::read_dir(&dir).expect("test data") {
            let path = e.expect("entry").path();
            if path.extension().is_some_and(|x| x == "log") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 19, "{files:?}");
    let mut quick = 0;
    for path in &files {
        let data = std::fs::read(path).expect("read");
        quick += check(&path.display().to_string(), &data).quick;
    }
    assert!(quick > 100, "{quick}");
}

#[test]
fn tricky_lines_fast_mode_keeps_the_same_records() {
    let lines: &[&str] = &[
        // A routine plain/full-ERROR record that a traceback with a denial attaches to.
        "[ns/n] Handler 'x' succeeded.",
        "Traceback (most recent call last):",
        "  File \"x.py\", line 1, in f",
        "kubernetes.ApiException: pods is forbidden: User \"u\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
        "[2026-11-30 02:41:55,039] my.logger            [ERROR   ] something went wrong",
        "Traceback (most recent call last):",
        "ValueError: boom",
        "Unclosed client session",
        "Traceback (most recent call last):",
        "  File \"y.py\", line 2, in g",
        "RuntimeError: pods is forbidden",
        // Routine INFO full record: a traceback after it is its own record.
        "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/n] Handler 'x' succeeded.",
        "Traceback (most recent call last):",
        "KeyError: 'spec'",
        // JSON shapes: escapes, numbers, nesting, duplicates, exc_info, non-ASCII, garbage.
        "{\"message\": \"Handler 'x' succeeded.\", \"severity\": \"info\"}",
        "{\"message\": \"Handler 'x' succeeded.\", \"n\": 1e400}",
        "{\"message\": \"Handler 'x' succ\\u0065eded.\"}",
        "{\"message\": \"a\", \"message\": \"Handler 'x' failed permanently: y\"}",
        "{\"message\": \"Handler 'x' succeeded.\", \"exc_info\": \"pods is forbidden\"}",
        "{\"message\": \"Handler 'é' succeeded.\", \"object\": {\"name\": \"n\", \"a\": [true, false, null, {}]}}",
        "{\"message\": \"Handler 'x' succeeded.\",}",
        "{\"message\": \"[ns/n] Creation is processed: 1 succeeded; 0 failed.\"} ",
        "{\"message\": null}",
        "{}",
        "{\"msg\": \"pods is forbidden\"}",
        "{\"message\": \"x has been initiated.\"",
        "x has been initiated.",
        "Creation is processed: 1 succeeded; 0 failed.",
        "Whatever is processed: 1 succeeded; 0 failed.",
        "Handler 'x' is invoked.",
        "/usr/lib/python3/site.py:1: FutureWarning: Absence of either namespaces or cluster-wide flag will become an error soon.",
        "\u{1b}[31m[ns/n] Handler 'x' succeeded.\u{1b}[0m",
        "2026-11-30T02:41:55.039412345Z [ns/n] Handler 'x' succeeded.",
        "2026-11-30T02:41:55.039412345Z Traceback (most recent call last):",
        "2026-11-30T02:41:55.039412345Z   File \"z.py\", line 3",
        "2026-11-30T02:41:55.039412345Z kopf.X: events is forbidden: quota",
        // The next line's traceback start coloured, or with CRLF endings.
        "[ns/n] Handler 'x' succeeded.",
        "\u{1b}[31mTraceback (most recent call last):\u{1b}[0m",
        "PermissionError: secrets is forbidden",
        "[ns/n] Handler 'y' succeeded.\r",
        "Traceback (most recent call last):  \r",
        "ValueError: pods is forbidden\r",
        "",
        "   ",
    ];
    let data = lines.join("\n");
    check("tricky", data.as_bytes());
}

//! Log scanning benchmark: parse + classify a generated ~100 MB kopf log
//! (three formats, kubelet timestamps, tracebacks, 403 retries, noise)
//! single-threaded in both modes (`Routine::Keep`: every record built;
//! `Routine::Count`: what the auditor keeps, routine lines only counted), and
//! time `grep -c -E` with the equivalent alternation over the same file in the
//! same run, the three contenders interleaved run by run.
//!
//! `cargo bench -p kopf-log --bench scan` (see BENCHMARKS.md).
//! Environment: `KOPF_BENCH_MB` (default 100), `KOPF_BENCH_RUNS` (default 5),
//! `KOPF_BENCH_FILE` (default `$CARGO_TARGET_TMPDIR/kopf-bench-<MB>mb-v2.log`),
//! `KOPF_BENCH_PROFILE=keep|count` (one parser mode only, for `perf`/`callgrind`).

use criterion::{Criterion, Throughput};
use kopf_log::{EventKind, Parser, ParserOptions, Record, Routine, RoutineStats, Stats};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::mem::{Discriminant, discriminant};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The classified templates as one POSIX ERE: what `grep` has to find to
/// count the same lines the parser classifies (grep only counts them; the
/// parser also extracts time, level, logger, object, handler, verb, ...).
const GREP_PATTERN: &str = concat!(
    " succeeded\\.|failed temporarily|failed with an exception|failed permanently",
    "|has timed out after|has exceeded [0-9]+ retries|is cancelled\\. Will escalate",
    "| is processed: [0-9]+ succeeded|Failed to post an event|finished with inconsistencies",
    "|Patching failed with inconsistencies|Request attempt #|is forbidden",
    "|Not enough permissions to|Unresolved resources cannot be served",
    "|Pausing operations in favour of|Pausing all operators|Possibly conflicting operators",
    "|Resuming operations after the pause|Watcher for .* has failed",
    "|Multidimensional multitasker has failed|Throttling for .* seconds due to",
    "|did not exit in time|Absence of either namespaces or cluster-wide flag",
);

#[path = "../tests/support/gen.rs"]
mod generator;

fn generate(path: &Path, target_bytes: u64) -> std::io::Result<()> {
    let w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    generator::generate_into(w, target_bytes)
}

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// (own user+system, children's user+system) CPU seconds from /proc (Linux; 0 elsewhere).
/// On a shared machine CPU time is steadier than wall time.
fn cpu_times() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the ")" of the command name: state is field 3; utime is 14.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let tick = 100.0; // USER_HZ on Linux
    let get = |i: usize| f.get(i - 3).copied().unwrap_or(0.0) / tick;
    (get(14) + get(15), get(16) + get(17))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// What one parse of the file gave.
struct Parsed {
    stats: Stats,
    routine: RoutineStats,
    /// Records returned, by kind name (`Other` included).
    kinds: BTreeMap<&'static str, u64>,
    /// Records returned that are not routine (what the auditor keeps).
    kept: u64,
    /// Records returned whose kind is not `Other` (the grep cross-check).
    classified: u64,
}

/// Reads the file as the auditor reads a log stream (`src/gather/logs.rs`):
/// whole buffered chunks given to `Parser::push_chunk`, the completed records
/// appended to a sink (here one that tallies and drops them).
fn parse_file(path: &Path, routine: Routine) -> Parsed {
    let file = File::open(path).expect("bench file");
    let mut reader = BufReader::with_capacity(64 << 10, file);
    let mut parser = Parser::new(ParserOptions::default()).with_routine(routine);
    let mut tally = Tally::default();
    loop {
        let n = match reader.fill_buf().expect("read") {
            [] => break,
            chunk => {
                parser.push_chunk(chunk, &mut tally);
                chunk.len()
            }
        };
        reader.consume(n);
    }
    while let Some(rec) = parser.finish() {
        tally.extend(Some(rec));
    }
    Parsed {
        stats: parser.stats(),
        routine: parser.routine_stats(),
        kinds: tally.by_name(),
        kept: tally.kept,
        classified: tally.classified,
    }
}

/// The bench's record sink: counts by kind, keeps nothing. As light as the
/// auditor's (which pushes each record to a `Vec`): a few kinds, found by
/// their discriminant, not a map keyed by name.
#[derive(Default)]
struct Tally {
    kinds: Vec<(Discriminant<EventKind>, &'static str, u64)>,
    kept: u64,
    classified: u64,
}

impl Extend<Record> for Tally {
    fn extend<I: IntoIterator<Item = Record>>(&mut self, records: I) {
        for rec in records {
            self.kept += u64::from(!rec.is_routine());
            self.classified += u64::from(rec.kind != EventKind::Other);
            let d = discriminant(&rec.kind);
            match self.kinds.iter_mut().find(|(k, _, _)| *k == d) {
                Some((_, _, n)) => *n += 1,
                None => self.kinds.push((d, rec.kind.name(), 1)),
            }
        }
    }
}

impl Tally {
    /// Records by kind name (`Other` included).
    fn by_name(&self) -> BTreeMap<&'static str, u64> {
        let mut by_name = BTreeMap::new();
        for &(_, name, n) in &self.kinds {
            *by_name.entry(name).or_default() += n;
        }
        by_name
    }
}

fn grep_count(path: &Path) -> Option<u64> {
    let out = Command::new("grep")
        .env("LC_ALL", "C")
        .arg("-c")
        .arg("-E")
        .arg(GREP_PATTERN)
        .arg(path)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Best wall time, all wall times and total CPU seconds of one contender.
#[derive(Default)]
struct Timing {
    walls: Vec<Duration>,
    cpu: f64,
}

impl Timing {
    fn best(&self) -> Duration {
        self.walls.iter().copied().min().unwrap_or(Duration::MAX)
    }
    fn worst(&self) -> Duration {
        self.walls.iter().copied().max().unwrap_or(Duration::ZERO)
    }
    fn median(&self) -> Duration {
        let mut w = self.walls.clone();
        w.sort();
        w.get(w.len() / 2).copied().unwrap_or(Duration::ZERO)
    }
    fn cpu_per_run(&self) -> f64 {
        self.cpu / self.walls.len().max(1) as f64
    }
    fn report(&self, what: &str, bytes: u64) {
        let cpu = self.cpu_per_run();
        println!(
            "{what}: best of {}: {:.3} s = {:.0} MB/s (median {:.0}, worst {:.0} MB/s); CPU {cpu:.3} s/run = {:.0} MB/s",
            self.walls.len(),
            self.best().as_secs_f64(),
            mbps(bytes, self.best()),
            mbps(bytes, self.median()),
            mbps(bytes, self.worst()),
            if cpu > 0.0 {
                bytes as f64 / 1e6 / cpu
            } else {
                0.0
            },
        );
    }
}

/// Times `f`, adding its wall time and its CPU time (own or children's) to `t`.
fn timed<T>(t: &mut Timing, children: bool, f: impl FnOnce() -> T) -> T {
    let c0 = cpu_times();
    let t0 = Instant::now();
    let v = f();
    t.walls.push(t0.elapsed());
    let c1 = cpu_times();
    t.cpu += if children { c1.1 - c0.1 } else { c1.0 - c0.0 };
    v
}

fn main() {
    let mb: u64 = std::env::var("KOPF_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let runs: usize = std::env::var("KOPF_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let path: PathBuf = std::env::var_os("KOPF_BENCH_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("kopf-bench-{mb}mb-v2.log"))
        });
    let target = mb * 1_000_000;
    if std::fs::metadata(&path)
        .map(|m| m.len() < target)
        .unwrap_or(true)
    {
        eprintln!("generating {} ...", path.display());
        generate(&path, target).expect("generate");
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if let Ok(mode) = std::env::var("KOPF_BENCH_PROFILE") {
        // One parser mode only, for `perf record` / `valgrind --tool=callgrind`.
        let routine = if mode == "count" {
            Routine::Count
        } else {
            Routine::Keep
        };
        for _ in 0..runs {
            let t0 = Instant::now();
            let p = parse_file(&path, routine);
            println!(
                "{routine:?}: {} lines, {} records returned, {:.0} MB/s",
                p.stats.lines,
                p.kinds.values().sum::<u64>(),
                mbps(bytes, t0.elapsed())
            );
        }
        return;
    }
    let load_before = loadavg();
    // Warm the page cache for all contenders.
    let _ = grep_count(&path);

    // Interleaved, so that a burst of load from other processes hits all three.
    let (mut t_keep, mut t_count, mut t_grep) =
        (Timing::default(), Timing::default(), Timing::default());
    let (mut keep, mut count, mut grep_lines) = (None, None, None);
    for _ in 0..runs {
        keep = Some(timed(&mut t_keep, false, || {
            parse_file(&path, Routine::Keep)
        }));
        count = Some(timed(&mut t_count, false, || {
            parse_file(&path, Routine::Count)
        }));
        grep_lines = timed(&mut t_grep, true, || grep_count(&path));
    }
    let (keep, count) = (keep.expect("one run"), count.expect("one run"));
    let load_after = loadavg();
    let grep_version = Command::new("grep")
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_default();

    println!(
        "file: {} ({:.1} MB, {} lines, {} kopf lines)",
        path.display(),
        bytes as f64 / 1e6,
        keep.stats.lines,
        keep.stats.kopf_lines
    );
    println!("load average (1, 5, 15 min): before {load_before}; after {load_after}");
    println!(
        "Keep: {} records, classified (kind != Other): {}, kept by the auditor: {}",
        keep.stats.records, keep.classified, keep.kept
    );
    for (k, n) in &keep.kinds {
        println!("  {k}: {n}");
    }
    println!(
        "Count: {} records returned (all kept by the auditor: {}), routine dropped: {} quick + {} built",
        count.kinds.values().sum::<u64>(),
        count.kept,
        count.routine.quick,
        count.routine.built
    );
    // Cross-checks: the fast mode returns what the auditor keeps, with the same counters.
    assert_eq!(count.stats, keep.stats, "both modes count the same");
    assert_eq!(
        count.kept, keep.kept,
        "the fast mode returns the kept records"
    );
    assert_eq!(count.kinds.values().sum::<u64>(), keep.kept);
    t_keep.report("kopf-log Routine::Keep (every record built)", bytes);
    t_count.report("kopf-log Routine::Count (the auditor's work)", bytes);
    match grep_lines {
        Some(n) => {
            t_grep.report(&format!("grep -c -E (LC_ALL=C, {grep_version})"), bytes);
            println!(
                "grep matching lines: {n} (parser, kind != Other: {})",
                keep.classified
            );
        }
        None => println!("grep: not available"),
    }
    let ratio = |a: &Timing| mbps(bytes, a.best()) / mbps(bytes, t_grep.best());
    let cpu_ratio = |a: &Timing| t_grep.cpu_per_run() / a.cpu_per_run().max(1e-9);
    println!(
        "ratio to grep (best wall / mean CPU): Keep {:.2}x / {:.2}x; Count {:.2}x / {:.2}x",
        ratio(&t_keep),
        cpu_ratio(&t_keep),
        ratio(&t_count),
        cpu_ratio(&t_count)
    );

    // Criterion, on an in-memory 16 MB prefix: tracks regressions of the parser alone.
    let data = std::fs::read(&path).expect("read");
    let cut = data.len().min(16 << 20);
    let cut = data[..cut]
        .iter()
        .rposition(|&b| b == b'\n')
        .map(|i| i + 1)
        .unwrap_or(cut);
    let slice = &data[..cut];
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Bytes(slice.len() as u64));
    for (name, routine) in [
        ("push_chunk_16MB", Routine::Keep),
        ("push_chunk_16MB_count", Routine::Count),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut p = Parser::default().with_routine(routine);
                let mut out = Vec::with_capacity(1024);
                let mut n = 0usize;
                for chunk in slice.chunks(64 << 10) {
                    p.push_chunk(chunk, &mut out);
                    n += out.len();
                    out.clear();
                }
                while p.finish().is_some() {
                    n += 1;
                }
                n
            })
        });
    }
    g.finish();
    c.final_summary();
}

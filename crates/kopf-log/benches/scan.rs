//! Log scanning benchmark: parse + classify a generated ~100 MB kopf log
//! (three formats, kubelet timestamps, tracebacks, 403 retries, noise)
//! single-threaded, and time `grep -c -E` with the equivalent alternation
//! over the same file in the same run.
//!
//! `cargo bench -p kopf-log --bench scan` (see BENCHMARKS.md).
//! Environment: `KOPF_BENCH_MB` (default 100), `KOPF_BENCH_RUNS` (default 5),
//! `KOPF_BENCH_FILE` (default `$CARGO_TARGET_TMPDIR/kopf-bench-<MB>mb-v2.log`).

use criterion::{Criterion, Throughput};
use kopf_log::{EventKind, LogFormat, Parser, ParserOptions, records};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
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

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const HANDLERS: &[&str] = &[
    "create_fn",
    "update_fn",
    "delete_fn",
    "resume_fn",
    "reconcile/sub1",
];
const NAMESPACES: &[&str] = &["default", "team-a", "team-b", "payments", "kube-ops"];

struct Gen {
    rng: Rng,
    t: u64,
}

impl Gen {
    /// One kopf record (possibly with traceback lines) in `fmt`, with the
    /// kubelet's timestamp prefix on every line.
    fn record(&mut self, fmt: LogFormat, out: &mut Vec<u8>) {
        self.t += 1 + self.rng.below(40);
        let ms = self.t;
        let (secs, millis) = (ms / 1000, ms % 1000);
        let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
        let kubelet = format!("2026-11-30T{h:02}:{m:02}:{s:02}.{millis:03}412345Z ");
        let ns = NAMESPACES[self.rng.below(NAMESPACES.len() as u64) as usize];
        let name = format!("example-{}", self.rng.below(500));
        let handler = HANDLERS[self.rng.below(HANDLERS.len() as u64) as usize];
        let roll = self.rng.below(1000);
        let sa = "system:serviceaccount:operators:kopf-example";
        // (level, logger, object?, message, traceback lines)
        let (level, logger, object, msg, tb): (&str, &str, bool, String, Vec<String>) = match roll {
            0..=599 => ("INFO", "kopf.objects", true, format!("Handler '{handler}' succeeded."), vec![]),
            600..=699 => (
                "INFO",
                "kopf.objects",
                true,
                format!("{} is processed: 1 succeeded; 0 failed.", ["Creation", "Updating", "Resuming"][(roll % 3) as usize]),
                vec![],
            ),
            700..=739 => ("INFO", "kopf.objects", true, "Timer 'tick' succeeded.".to_string(), vec![]),
            740..=779 => (
                "INFO",
                "my_operator.handlers",
                true,
                format!("Reconciled {} replicas for {name}; spec.size={}", self.rng.below(9), self.rng.below(100)),
                vec![],
            ),
            780..=839 => (
                "ERROR",
                "kopf.objects",
                true,
                format!("Handler '{handler}' failed temporarily: Waiting for the database {name}-db to become ready."),
                vec![],
            ),
            840..=859 => (
                "ERROR",
                "kopf.objects",
                true,
                format!("Handler '{handler}' failed with an exception and will try again in 60 seconds: 'spec'"),
                vec![
                    "Traceback (most recent call last):".into(),
                    "  File \"/usr/local/lib/python3.12/site-packages/kopf/_core/actions/execution.py\", line 277, in execute_handler_once".into(),
                    "    result = await invoke_handler(".into(),
                    "  File \"/app/handlers.py\", line 42, in create_fn".into(),
                    "    size = spec['size']".into(),
                    "KeyError: 'spec'".into(),
                ],
            ),
            860..=864 => ("ERROR", "kopf.objects", true, format!("Handler '{handler}' failed permanently: invalid spec.size"), vec![]),
            865..=874 => {
                let (n, of) = (1 + self.rng.below(9), 9);
                let what = if n == of { "escalating".to_string() } else { "will retry".to_string() };
                let m = format!("customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"{sa}\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope");
                (
                    "ERROR",
                    "kopf._cogs.clients.api",
                    false,
                    format!("Request attempt #{n}/{of} failed; {what}: GET https://10.96.0.1:443/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('{m}', {{'kind': 'Status', 'apiVersion': 'v1', 'metadata': {{}}, 'status': 'Failure', 'message': '{m}', 'reason': 'Forbidden', 'details': {{'group': 'apiextensions.k8s.io', 'kind': 'customresourcedefinitions'}}, 'code': 403}}, status=403)"),
                    vec![],
                )
            }
            875..=884 => (
                "WARNING",
                "kopf.objects",
                true,
                format!("Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden: User \"{sa}\" cannot create resource \"events\" in API group \"\" in the namespace \"{ns}\". Details: {{'kind': 'events'}}Event: type='Warning', reason='Logging', message='Handler failed.'."),
                vec![],
            ),
            885..=889 => (
                "WARNING",
                "kopf.objects",
                true,
                "Merge-patching finished with inconsistencies: (('remove', ('status',), {'create_fn': {'message': 'hello'}}, None),)".into(),
                vec![],
            ),
            890..=894 => (
                "WARNING",
                "kopf._core.engines.peering",
                false,
                "Possibly conflicting operators with the same priority: [Peer(id='other-host', priority=0)].".into(),
                vec![],
            ),
            895..=899 => (
                "DEBUG",
                "kopf.objects",
                true,
                format!("Merge-patching the resource with: {{'metadata': {{'annotations': {{'kopf.zalando.org/{handler}': '{{\"started\":\"2026-11-30T02:41:55.039412+00:00\",\"retries\":1,\"success\":false}}'}}}}}}"),
                vec![],
            ),
            _ => {
                // Not kopf's: prints, Python warnings, aiohttp noise.
                let noise = match roll % 4 {
                    0 => format!("print() from a handler: processing {name} in {ns}"),
                    1 => "/usr/local/lib/python3.12/site-packages/aiohttp/client.py:1025: DeprecationWarning: verify_ssl is deprecated, use ssl=False instead".into(),
                    2 => "Unclosed client session".into(),
                    _ => "client_session: <aiohttp.client.ClientSession object at 0x7f1c2b3d4e50>".into(),
                };
                out.extend_from_slice(kubelet.as_bytes());
                out.extend_from_slice(noise.as_bytes());
                out.push(b'\n');
                return;
            }
        };
        match fmt {
            LogFormat::Full => {
                let lg: String = format!("{logger:<20}").chars().take(20).collect();
                let obj = if object {
                    format!("[{ns}/{name}] ")
                } else {
                    String::new()
                };
                writeln!(out, "{kubelet}[2026-11-30 {h:02}:{m:02}:{s:02},{millis:03}] {lg} [{level:<8}] {obj}{msg}").ok();
                for l in &tb {
                    writeln!(out, "{kubelet}{l}").ok();
                }
            }
            LogFormat::Plain => {
                let obj = if object {
                    format!("[{ns}/{name}] ")
                } else {
                    String::new()
                };
                writeln!(out, "{kubelet}{obj}{msg}").ok();
                for l in &tb {
                    writeln!(out, "{kubelet}{l}").ok();
                }
            }
            LogFormat::Json => {
                let sev = match level {
                    "WARNING" => "warn".to_string(),
                    l => l.to_ascii_lowercase(),
                };
                let mut v = serde_json::json!({
                    "message": msg,
                    "timestamp": format!("2026-11-30T{h:02}:{m:02}:{s:02}.{millis:03}412+00:00"),
                    "severity": sev,
                });
                if !tb.is_empty() {
                    v["exc_info"] = serde_json::Value::String(tb.join("\n"));
                }
                if object {
                    v["object"] = serde_json::json!({
                        "apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": name,
                        "uid": format!("0d4a4f4e-2f0c-4a53-9d2b-{:012x}", self.rng.below(1 << 40)),
                        "namespace": ns,
                    });
                }
                writeln!(out, "{kubelet}{v}").ok();
            }
        }
    }
}

fn generate(path: &Path, target_bytes: u64) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut g = Gen {
        rng: Rng(0x5EED_0FC0_FFEE),
        t: 0,
    };
    let mut written = 0u64;
    let mut buf = Vec::with_capacity(1 << 16);
    while written < target_bytes {
        // Pods log in one format; a fleet mixes them: 50% full, 30% json, 20% plain,
        // in runs of 2000 records (one pod's window at a time).
        let fmt = match g.rng.below(10) {
            0..=4 => LogFormat::Full,
            5..=7 => LogFormat::Json,
            _ => LogFormat::Plain,
        };
        for _ in 0..2000 {
            buf.clear();
            g.record(fmt, &mut buf);
            w.write_all(&buf)?;
            written += buf.len() as u64;
        }
    }
    w.flush()
}

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let v = f();
        best = best.min(t0.elapsed());
        last = Some(v);
    }
    (best, last.expect("at least one run"))
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

fn parse_file(path: &Path) -> (u64, u64, BTreeMap<&'static str, u64>) {
    let file = File::open(path).expect("bench file");
    let mut it = records(
        BufReader::with_capacity(256 << 10, file),
        ParserOptions::default(),
    );
    let mut kinds: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut classified = 0u64;
    for rec in it.by_ref() {
        let rec = rec.expect("read");
        if rec.kind != EventKind::Other {
            classified += 1;
            *kinds.entry(rec.kind.name()).or_default() += 1;
        }
    }
    let stats = it.stats();
    (stats.lines, classified, kinds)
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

fn main() {
    let mb: u64 = std::env::var("KOPF_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let runs: usize = std::env::var("KOPF_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
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
    if std::env::var_os("KOPF_BENCH_PROFILE").is_some() {
        // Parser only, for `perf record`.
        for _ in 0..runs {
            let t0 = Instant::now();
            let (lines, classified, _) = parse_file(&path);
            println!(
                "{lines} lines, {classified} classified, {:.0} MB/s",
                mbps(bytes, t0.elapsed())
            );
        }
        return;
    }
    // Warm the page cache for both contenders.
    let _ = grep_count(&path);

    let (c0, _) = cpu_times();
    let (t_parse, (lines, classified, kinds)) = best(runs, || parse_file(&path));
    let (c1, g0) = cpu_times();
    let (t_grep, grep_lines) = best(runs, || grep_count(&path));
    let (_, g1) = cpu_times();
    let cpu_parse = (c1 - c0) / runs as f64;
    let cpu_grep = (g1 - g0) / runs as f64;
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
        "file: {} ({:.1} MB, {lines} lines)",
        path.display(),
        bytes as f64 / 1e6
    );
    println!("records classified (kind != Other): {classified}");
    for (k, n) in &kinds {
        println!("  {k}: {n}");
    }
    println!(
        "kopf-log parse+classify: best of {runs}: {:.3} s, {:.0} MB/s",
        t_parse.as_secs_f64(),
        mbps(bytes, t_parse)
    );
    match grep_lines {
        Some(n) => println!(
            "grep -c -E (LC_ALL=C, {grep_version}): best of {runs}: {:.3} s, {:.0} MB/s, {n} matching lines",
            t_grep.as_secs_f64(),
            mbps(bytes, t_grep)
        ),
        None => println!("grep: not available"),
    }
    println!(
        "ratio kopf-log / grep (wall, best runs): {:.2}x",
        mbps(bytes, t_parse) / mbps(bytes, t_grep)
    );
    if cpu_parse > 0.0 && cpu_grep > 0.0 {
        println!(
            "CPU time per run (mean): kopf-log {cpu_parse:.3} s = {:.0} MB/s; grep {cpu_grep:.3} s = {:.0} MB/s; ratio {:.2}x",
            bytes as f64 / 1e6 / cpu_parse,
            bytes as f64 / 1e6 / cpu_grep,
            cpu_grep / cpu_parse
        );
    }

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
    g.bench_function("push_chunk_16MB", |b| {
        b.iter(|| {
            let mut p = Parser::default();
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
    g.finish();
    c.final_summary();
}

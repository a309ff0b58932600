//! Redaction benchmark: `redact` and `excerpt` on what the auditor quotes
//! (kopf messages with no secret, the secrets corpus) and on the longest text
//! the parser may redact (a line at the parser's 64 KiB bound).
//!
//! `cargo bench -p kopf-log --bench redact` (see BENCHMARKS.md, "Redaction").

use criterion::{Criterion, Throughput};
use kopf_log::{MAX_BUFFERED_LINE_BYTES, excerpt, redact};
use std::hint::black_box;

const CORPUS: &str = include_str!("../tests/data/secrets/corpus.txt");

/// kopf's own messages: what most quoted text is.
const QUIET: &[&str] = &[
    "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ops/db-a] Handler 'create_fn' failed temporarily: Database is not ready yet.",
    "[ops/db-a] Handler 'create_fn' failed with an exception and will try again in 60 seconds: KeyError: 'spec'",
    "Request attempt #1/9 failed; will retry: GET https://10.96.0.1:443/apis/kopf.dev/v1/namespaces/ops/kopfexamples?watch=true -> APIForbiddenError('kopfexamples.kopf.dev is forbidden: User \"system:serviceaccount:ops:operator\" cannot watch resource \"kopfexamples\" in API group \"kopf.dev\" in the namespace \"ops\"', {'kind': 'Status'})",
    "Timer 'rotate-certificates' succeeded.",
    "uid 0b8a2c1e-5d4f-4e3a-9b2c-1a2b3c4d5e6f, pod my-operator-5d8f9c7b6-abcde, rv 123456789012",
    "Patching failed with inconsistencies: (('remove', ('status', 'create_fn'), {'message': 'ok'}, None),)",
    "  File \"/usr/local/lib/python3.12/site-packages/kopf/_core/actions/execution.py\", line 276, in execute_handler_once",
];

/// The corpus lines, markers removed (`⏎` too: the lines are joined with
/// line breaks anyway).
fn corpus() -> Vec<String> {
    CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.replace(['⟦', '⟧', '⏎'], ""))
        .collect()
}

/// `unit` lines repeated and joined with newlines up to about `bytes`.
fn text_of(unit: &[String], bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 1024);
    for line in unit.iter().cycle() {
        if out.len() >= bytes {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn main() {
    let quiet: Vec<String> = QUIET.iter().map(|s| s.to_string()).collect();
    let inputs = [
        ("quiet_4KiB", text_of(&quiet, 4096)),
        ("corpus_4KiB", text_of(&corpus(), 4096)),
        (
            "quiet_64KiB_line",
            text_of(&quiet, MAX_BUFFERED_LINE_BYTES).replace('\n', " "),
        ),
    ];
    let mut c = Criterion::default().sample_size(20).configure_from_args();
    let mut g = c.benchmark_group("redact");
    for (name, text) in &inputs {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(*name, |b| b.iter(|| redact(black_box(text))));
        g.bench_function(format!("excerpt_{name}"), |b| {
            b.iter(|| excerpt(black_box(text), 240))
        });
    }
    g.finish();
    c.final_summary();
}

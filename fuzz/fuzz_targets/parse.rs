//! Feeds arbitrary bytes to the kopf-log parser, line by line and in chunks,
//! and checks that it never panics and that its bounds and counters hold.
#![no_main]

use kopf_log::{Parser, ParserOptions, Record, Routine};
use libfuzzer_sys::fuzz_target;

fn check(records: &[Record], options: &ParserOptions) {
    for r in records {
        assert!(r.message.len() <= options.max_message_bytes);
        assert!(r.traceback.len() <= options.max_traceback_lines + 1);
        assert!(
            r.traceback
                .iter()
                .all(|l| l.len() <= options.max_traceback_line_bytes.max(32))
        );
    }
}

fuzz_target!(|data: &[u8]| {
    // Small bounds so that the fuzzer reaches them.
    let options = ParserOptions {
        refkey: Some("ref".into()),
        max_message_bytes: 64,
        max_traceback_lines: 4,
        max_traceback_line_bytes: 32,
        max_line_bytes: 256,
    };
    let mut by_line = Vec::new();
    let mut p = Parser::new(options.clone());
    for line in data.split(|&b| b == b'\n') {
        let line = &line[..line.len().min(options.max_line_bytes)];
        by_line.extend(p.push_line(line));
    }
    while let Some(r) = p.finish() {
        by_line.push(r);
    }
    assert_eq!(p.stats().records as usize, by_line.len());
    check(&by_line, &options);

    // Chunks split at an arbitrary point.
    let cut = data
        .first()
        .map(|&b| b as usize % (data.len() + 1))
        .unwrap_or(0);
    let mut q = Parser::new(options.clone());
    let mut by_chunk = Vec::new();
    q.push_chunk(&data[..cut], &mut by_chunk);
    assert!(q.buffered_bytes() <= q.line_bound());
    q.push_chunk(&data[cut..], &mut by_chunk);
    assert!(q.buffered_bytes() <= q.line_bound());
    while let Some(r) = q.finish() {
        by_chunk.push(r);
    }
    check(&by_chunk, &options);
    assert_eq!(q.stats().bytes as usize, data.len());

    // The auditor's fast mode keeps exactly the non-routine records, with the same stats.
    let mut f = Parser::new(options.clone()).with_routine(Routine::Count);
    let mut fast = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        fast.extend(f.push_line(&line[..line.len().min(options.max_line_bytes)]));
    }
    while let Some(r) = f.finish() {
        fast.push(r);
    }
    assert_eq!(f.stats(), p.stats());
    assert!(fast.iter().eq(by_line.iter().filter(|r| !r.is_routine())));

    // The fast mode through chunks: the auditor's path (per-chunk searches,
    // look-ahead at the next line).
    let mut g = Parser::new(options.clone()).with_routine(Routine::Count);
    let mut fast_chunk = Vec::new();
    g.push_chunk(&data[..cut], &mut fast_chunk);
    g.push_chunk(&data[cut..], &mut fast_chunk);
    while let Some(r) = g.finish() {
        fast_chunk.push(r);
    }
    assert_eq!(g.stats(), q.stats());
    assert!(
        fast_chunk
            .iter()
            .eq(by_chunk.iter().filter(|r| !r.is_routine()))
    );
});

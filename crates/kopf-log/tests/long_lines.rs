//! The parser's bound on one line ([`MAX_BUFFERED_LINE_BYTES`]): a huge line,
//! with or without its newline, in one chunk or many, never grows the
//! parser's buffer past the bound, is cut there (its record `truncated`), and
//! the lines after it parse as usual.

use kopf_log::{
    EventKind, LogFormat, MAX_BUFFERED_LINE_BYTES, Parser, ParserOptions, Record, Routine, records,
};
use std::io::BufReader;

const HEAD: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/name] Handler 'x' failed temporarily: ";
const NEXT: &str =
    "[2026-11-30 02:41:56,001] kopf.objects         [INFO    ] [ns/other] Handler 'y' succeeded.\n";

/// Pushes `data` in chunks of `size`, checking the buffer bound after each.
fn by_chunks(data: &[u8], size: usize, routine: Routine) -> (Vec<Record>, Parser) {
    let mut p = Parser::new(ParserOptions::default()).with_routine(routine);
    let mut out = Vec::new();
    let mut most = 0;
    for chunk in data.chunks(size) {
        p.push_chunk(chunk, &mut out);
        most = most.max(p.buffered_bytes());
        assert!(p.buffered_bytes() <= MAX_BUFFERED_LINE_BYTES);
    }
    while let Some(r) = p.finish() {
        out.push(r);
    }
    assert!(most <= MAX_BUFFERED_LINE_BYTES, "{most}");
    (out, p)
}

/// A 10 MiB line of a handler failure, with no newline for most of its length.
fn huge_line() -> Vec<u8> {
    let mut data = HEAD.as_bytes().to_vec();
    data.resize(10 << 20, b'y');
    data
}

#[test]
fn a_10_mib_line_in_many_chunks_stays_within_the_bound() {
    let mut data = huge_line();
    for size in [4096, 65_537, 1 << 20] {
        // Without its newline: the last record of the stream.
        let (v, p) = by_chunks(&data, size, Routine::Keep);
        assert_eq!(v.len(), 1, "{size}");
        assert!(v[0].truncated);
        assert!(v[0].message.len() <= ParserOptions::default().max_message_bytes);
        assert!(matches!(
            v[0].kind,
            EventKind::HandlerFailedTemporarily { .. }
        ));
        assert_eq!(p.stats().cut_lines, 1);
        assert_eq!(p.stats().bytes as usize, data.len());
    }
    // With its newline and a line after it.
    data.push(b'\n');
    data.extend_from_slice(NEXT.as_bytes());
    for routine in [Routine::Keep, Routine::Count] {
        let (v, p) = by_chunks(&data, 4096, routine);
        assert!(v[0].truncated);
        assert!(matches!(
            v[0].kind,
            EventKind::HandlerFailedTemporarily { .. }
        ));
        assert_eq!(v[0].object.as_ref().map(|o| o.name.as_str()), Some("name"));
        if routine == Routine::Keep {
            assert_eq!(v.len(), 2);
            assert!(!v[1].truncated);
            assert!(matches!(v[1].kind, EventKind::HandlerSucceeded { .. }));
            assert_eq!(v[1].object.as_ref().map(|o| o.name.as_str()), Some("other"));
            assert_eq!(v[1].line, 2);
        } else {
            assert_eq!(v.len(), 1);
        }
        assert_eq!(p.stats().lines, 2);
        assert_eq!(p.stats().records, 2);
        assert_eq!(p.stats().cut_lines, 1);
    }
}

#[test]
fn a_long_line_reads_the_same_in_one_chunk_in_many_and_from_a_reader() {
    let mut data = huge_line();
    data.truncate(3 * MAX_BUFFERED_LINE_BYTES);
    data.push(b'\n');
    // A JSON line cut at the bound is no longer JSON: its bounded text is kept.
    data.extend_from_slice(br#"{"message": ""#);
    data.resize(data.len() + 2 * MAX_BUFFERED_LINE_BYTES, b'z');
    data.extend_from_slice(b"\", \"severity\": \"error\"}\n");
    data.extend_from_slice(NEXT.as_bytes());
    let (whole, _) = by_chunks(&data, data.len(), Routine::Keep);
    for size in [1000, 4096, MAX_BUFFERED_LINE_BYTES + 1] {
        let (v, p) = by_chunks(&data, size, Routine::Keep);
        assert_eq!(v, whole, "{size}");
        assert_eq!(p.stats().cut_lines, 2);
    }
    let it = records(
        BufReader::with_capacity(8192, data.as_slice()),
        ParserOptions::default(),
    );
    let v: Vec<Record> = it.map(|r| r.expect("io")).collect();
    assert_eq!(v, whole);
    assert_eq!(whole.len(), 3);
    assert!(whole[0].truncated && whole[1].truncated && !whole[2].truncated);
    assert_ne!(whole[1].format, Some(LogFormat::Json));
    assert!(matches!(whole[2].kind, EventKind::HandlerSucceeded { .. }));
}

#[test]
fn a_line_at_the_bound_is_not_cut() {
    let mut line = HEAD.as_bytes().to_vec();
    line.resize(MAX_BUFFERED_LINE_BYTES, b'y');
    line.push(b'\n');
    let (v, p) = by_chunks(&line, 1000, Routine::Keep);
    assert_eq!(p.stats().cut_lines, 0);
    // Cut at the message bound, not at the line bound.
    assert!(v[0].truncated);
    let options = ParserOptions {
        max_message_bytes: usize::MAX,
        ..ParserOptions::default()
    };
    let mut p = Parser::new(options);
    let mut out = Vec::new();
    p.push_chunk(&line, &mut out);
    out.extend(p.finish());
    assert!(!out[0].truncated);
    let before_message = HEAD.find("Handler").expect("handler");
    assert_eq!(
        out[0].message.len(),
        MAX_BUFFERED_LINE_BYTES - before_message
    );
}

#[test]
fn a_larger_max_line_bytes_is_still_capped() {
    let options = ParserOptions {
        max_line_bytes: usize::MAX,
        ..ParserOptions::default()
    };
    let p = Parser::new(options);
    assert_eq!(p.line_bound(), MAX_BUFFERED_LINE_BYTES);
    let smaller = Parser::new(ParserOptions {
        max_line_bytes: 100,
        ..ParserOptions::default()
    });
    assert_eq!(smaller.line_bound(), 100);
}

//! The parser never panics and keeps its bounds on hostile input (in both
//! `Routine` modes, which must agree record for record): a
//! deterministic stand-in for the cargo-fuzz target (`fuzz/`), run by
//! `cargo test` everywhere (no nightly needed).

use kopf_log::{Parser, ParserOptions, Record, Routine, excerpt, redact};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// Fragments of real lines, cut and glued at random.
const FRAGMENTS: &[&str] = &[
    "[2026-11-30 02:41:55,039] ",
    "kopf.objects         ",
    "[ERROR   ] ",
    "[INFO    ] ",
    "[ns/name] ",
    "[name] ",
    "[",
    "]",
    "Handler '",
    "Timer \"",
    "x'",
    "' succeeded.",
    " failed temporarily: ",
    " failed with an exception and will try again in ",
    " failed with an exception. Will ",
    "Request attempt #",
    "9/9 failed; escalating: ",
    " is forbidden: User \"",
    "\" cannot ",
    "list resource \"",
    "\" in API group \"",
    "\" at the cluster scope",
    "\" in the namespace \"",
    "Failed to post an event. Ignoring and continuing. Code: ",
    "Status: 99999999999. ",
    "Watcher for ",
    "@none has failed: ",
    "Throttling for ",
    " seconds due to an unexpected error",
    "Creation is processed: ",
    " succeeded; ",
    " failed.",
    "Traceback (most recent call last):",
    "  File \"x.py\", line 1",
    "The above exception was the direct cause of the following exception:",
    "ValueError: boom",
    "\n",
    "\n\n",
    "\r\n",
    "{\"message\": \"",
    "\"}",
    "{\"message\": \"Handler 'x' succeeded.\", \"severity\": \"info\"}",
    ", \"object\": {\"name\": \"n\", \"a\": [null, true]}}",
    "Unclosed client session",
    "\", \"severity\": \"error\", \"object\": {\"name\": \"n\", \"namespace\": ",
    "\"exc_info\": [\"",
    "{",
    "}",
    "[",
    "]",
    "\\u00e9\\ud83d",
    "\"",
    ",",
    ":",
    "2026-11-30T02:41:55.039412345Z ",
    "2026-02-30T99:41:55Z ",
    "\u{1b}[31m",
    "\u{1b}]0;t\u{7}",
    "\u{1b}",
    "é",
    "\u{FFFD}",
    "Bearer ",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    "password=",
    "token: '",
    "https://u:p@h/",
    " ",
    "\t",
    "0",
    "1.5",
    "-",
];

fn check(records: &[Record], options: &ParserOptions) {
    for r in records {
        assert!(
            r.message.len() <= options.max_message_bytes,
            "{}",
            r.message.len()
        );
        assert!(r.traceback.len() <= options.max_traceback_lines + 1);
        for l in &r.traceback {
            assert!(l.len() <= options.max_traceback_line_bytes.max(32), "{l:?}");
        }
        if let Some(o) = &r.object {
            assert!(!o.name.is_empty());
        }
    }
}

fn run(data: &[u8], options: &ParserOptions, cut: usize) {
    let mut p = Parser::new(options.clone());
    let mut by_line = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        by_line.extend(p.push_line(line));
    }
    while let Some(r) = p.finish() {
        by_line.push(r);
    }
    assert_eq!(p.stats().records as usize, by_line.len());
    check(&by_line, options);

    let mut q = Parser::new(options.clone());
    let mut by_chunk = Vec::new();
    let cut = cut.min(data.len());
    q.push_chunk(&data[..cut], &mut by_chunk);
    q.push_chunk(&data[cut..], &mut by_chunk);
    while let Some(r) = q.finish() {
        by_chunk.push(r);
    }
    check(&by_chunk, options);
    assert_eq!(q.stats().bytes as usize, data.len());
    assert_eq!(q.stats().records as usize, by_chunk.len());

    // The fast mode: no panic, the same counters, the same non-routine records.
    let mut f = Parser::new(options.clone()).with_routine(Routine::Count);
    let mut fast = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        fast.extend(f.push_line(line));
    }
    while let Some(r) = f.finish() {
        fast.push(r);
    }
    assert_eq!(f.stats(), p.stats());
    let kept: Vec<&Record> = by_line.iter().filter(|r| !r.is_routine()).collect();
    assert_eq!(fast.iter().collect::<Vec<_>>(), kept);
    let mut g = Parser::new(options.clone()).with_routine(Routine::Count);
    let mut fast_chunk = Vec::new();
    g.push_chunk(&data[..cut], &mut fast_chunk);
    g.push_chunk(&data[cut..], &mut fast_chunk);
    while let Some(r) = g.finish() {
        fast_chunk.push(r);
    }
    assert_eq!(g.stats(), q.stats());
    let kept: Vec<&Record> = by_chunk.iter().filter(|r| !r.is_routine()).collect();
    assert_eq!(fast_chunk.iter().collect::<Vec<_>>(), kept);

    let text = String::from_utf8_lossy(data);
    let _ = redact(&text);
    assert!(excerpt(&text, 40).chars().count() <= 40);
}

#[test]
fn random_and_adversarial_inputs() {
    let small = ParserOptions {
        refkey: Some("ref".into()),
        max_message_bytes: 64,
        max_traceback_lines: 4,
        max_traceback_line_bytes: 32,
        max_line_bytes: 256,
    };
    let default = ParserOptions::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..3000 {
        let mut data: Vec<u8> = Vec::new();
        let parts = rng.below(40);
        for _ in 0..parts {
            match rng.below(10) {
                0 => {
                    // Raw random bytes (invalid UTF-8 included).
                    for _ in 0..rng.below(64) {
                        data.push(rng.next() as u8);
                    }
                }
                1 => {
                    // A byte from the interesting set.
                    let set = b"[]{}\"'\\/@:, \n\r\t#0123456789\x1b\xff\xc3";
                    data.push(set[rng.below(set.len())]);
                }
                _ => data.extend_from_slice(rng.pick(FRAGMENTS).as_bytes()),
            }
        }
        let options = if case % 2 == 0 { &small } else { &default };
        let cut = rng.below(data.len() + 1);
        run(&data, options, cut);
    }
}

#[test]
fn pathological_shapes() {
    let options = ParserOptions::default();
    let mut cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\n".to_vec(),
        vec![b'\n'; 10_000],
        vec![0xff; 1 << 20],
        vec![b'['; 1 << 20],
        vec![b'{'; 1 << 20],
        "{\"message\":".repeat(100_000).into_bytes(),
        "[".repeat(1 << 16).into_bytes(),
        "\u{1b}[".repeat(100_000).into_bytes(),
        "Traceback (most recent call last):\n"
            .repeat(10_000)
            .into_bytes(),
        " is forbidden".repeat(100_000).into_bytes(),
        "Handler '".repeat(100_000).into_bytes(),
        format!("{}\n", "é".repeat(1 << 19)).into_bytes(),
    ];
    // A 1 MB line of each format.
    cases.push(
        format!("[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/name] Handler 'x' failed temporarily: {}", "y".repeat(1 << 20)).into_bytes(),
    );
    cases.push(
        format!(
            "{{\"message\": \"{}\", \"severity\": \"error\"}}",
            "z".repeat(1 << 20)
        )
        .into_bytes(),
    );
    for (i, data) in cases.iter().enumerate() {
        run(data, &options, i * 7919);
    }
}

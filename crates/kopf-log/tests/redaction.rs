//! Redaction proven on a corpus (`tests/data/secrets/corpus.txt`): no secret
//! of it survives `redact()` or `excerpt()`, alone, through the parser
//! (messages and tracebacks, also where the parser cuts them), or glued at
//! random to noise; and evidence is plain text (no bidi control, zero-width
//! or control character).

use kopf_log::{MASK, Parser, ParserOptions, Record, excerpt, plain_text, redact};
use std::time::{Duration, Instant};

const CORPUS: &str = include_str!("data/secrets/corpus.txt");

/// One corpus case: the text (markers removed) and its marked secrets.
struct Case {
    text: String,
    secrets: Vec<String>,
}

impl Case {
    /// Whether the case spans several log lines (lines ending in `⏎`).
    fn is_multiline(&self) -> bool {
        self.text.contains('\n')
    }
}

/// The corpus cases: one per line, or per run of lines joined by a `⏎` at
/// the end of each but the last.
fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut joined = String::new();
    for l in CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        match l.strip_suffix('⏎') {
            Some(head) => {
                joined.push_str(head);
                joined.push('\n');
            }
            None => {
                joined.push_str(l);
                cases.push(case(&std::mem::take(&mut joined)));
            }
        }
    }
    assert!(joined.is_empty(), "the last corpus line ends in ⏎");
    cases
}

/// A case from its marked text.
fn case(marked: &str) -> Case {
    let mut text = String::new();
    let mut secrets = Vec::new();
    let mut rest = marked;
    while let Some(open) = rest.find('⟦') {
        text.push_str(&rest[..open]);
        let after = &rest[open + '⟦'.len_utf8()..];
        let close = after.find('⟧').expect("a closing ⟧");
        text.push_str(&after[..close]);
        secrets.push(after[..close].to_string());
        rest = &after[close + '⟧'.len_utf8()..];
    }
    text.push_str(rest);
    Case { text, secrets }
}

/// The parts of `secret` that must not survive: every 8-character window
/// without a backslash (JSON escapes differ between a raw line and its
/// parsed message), or the whole secret when shorter.
fn windows(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= 8 {
        return vec![secret.to_string()];
    }
    chars
        .windows(8)
        .filter(|w| !w.contains(&'\\'))
        .map(|w| w.iter().collect())
        .collect()
}

/// Panics when `out` still holds a part of one of `secrets`.
fn assert_masked(out: &str, secrets: &[String], what: &str, input: &str) {
    for s in secrets {
        for w in windows(s) {
            assert!(
                !out.contains(&w),
                "{what}: {w:?} of the secret {s:?} survived\n input: {input}\noutput: {out}"
            );
        }
    }
}

fn parse(text: &str) -> Vec<Record> {
    let mut p = Parser::new(ParserOptions::default());
    let mut out: Vec<Record> = text
        .lines()
        .filter_map(|l| p.push_line(l.as_bytes()))
        .collect();
    while let Some(r) = p.finish() {
        out.push(r);
    }
    out
}

#[test]
fn the_corpus_covers_every_shape() {
    let cases = corpus();
    let secrets: usize = cases.iter().map(|c| c.secrets.len()).sum();
    assert!(cases.len() >= 79, "{} cases", cases.len());
    assert!(secrets >= 95, "{secrets} secrets");
    for must in [
        "client-key-data",
        "client-certificate-data",
        "token: ",
        "-----BEGIN RSA PRIVATE KEY----- ",
        "AKIA",
        "'tls.key'",
        "'.dockerconfigjson'",
        "  password: ",
        "{\\\"password\\\"",
        "{b'password'",
        "password: horse battery staple",
        ":p@ss@",
        "\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n",
        "AccountKey=",
        "SharedAccessKey=",
        "Authorization: Basic ",
        "xoxb-",
        "ghp_",
        "github_pat_",
        "glpat-",
        "Bearer eyJ",
        "password=",
        "\"token\": \"ghp_",
        "https://user:",
        // Flags then a space; Python's reprs of argv lists and tuples; JSON arrays.
        "--password Pw0rd",
        "['psql', '--password', '",
        "'--password', \"",
        "(b'vault', b'login', b'--token', b'",
        "[\\\"restic\\\", \\\"--password\\\", \\\"",
        " -srcstorepass ",
        "--client-secret \"",
        // Vendors' tokens whose bodies no encoded-run rule catches (hex, lower case).
        "dop_v1_",
        "doo_v1_",
        "dor_v1_",
        "shpat_",
        "shpss_",
        "shpca_",
        "shppa_",
        "rk_live_",
        "whsec_",
        "glptt-",
        "hvs.",
        "ya29.",
        "sbp_",
        // PEM blocks over several lines of a traceback.
        "ValueError: cannot load the key:\n-----BEGIN PRIVATE KEY-----\n",
        "-----END CERTIFICATE----- -----BEGIN EC PRIVATE KEY-----\n",
    ] {
        assert!(
            cases.iter().any(|c| c.text.contains(must)),
            "no corpus line has {must:?}"
        );
    }
}

#[test]
fn no_corpus_secret_survives_redact_or_excerpt() {
    for case in corpus() {
        let red = redact(&case.text);
        assert_masked(&red, &case.secrets, "redact", &case.text);
        if !case.secrets.is_empty() {
            assert!(red.contains(MASK), "nothing masked in {}", case.text);
        }
        for max in [240, 80, 10_000] {
            let e = excerpt(&case.text, max);
            assert_masked(&e, &case.secrets, "excerpt", &case.text);
            assert!(e.chars().count() <= max);
        }
    }
}

/// Panics when a record holds a part of one of `secrets`: its traceback
/// lines (alone and together), and its `[ns/name] message` when `messages`.
fn assert_record_masked(r: &Record, secrets: &[String], messages: bool) {
    if messages {
        let quoted = format!(
            "{}{}",
            r.object
                .as_ref()
                .map(|o| format!("[{}] ", o.name))
                .unwrap_or_default(),
            r.message
        );
        assert_masked(&redact(&quoted), secrets, "record", &quoted);
        assert_masked(&excerpt(&quoted, 240), secrets, "record excerpt", &quoted);
    }
    for l in &r.traceback {
        assert_masked(&redact(l), secrets, "traceback", l);
    }
    let whole = r.traceback.join("\n");
    assert_masked(&redact(&whole), secrets, "traceback", &whole);
}

/// Each case parsed alone, and the whole corpus as one log (tracebacks
/// attach to records). A case over several lines becomes several records
/// when its lines are no traceback (kopf writes a message's line breaks as
/// they are): its routine records, which the auditor never keeps, are left
/// out, as are all routine records of the whole corpus.
#[test]
fn no_corpus_secret_survives_in_parsed_records() {
    let cases = corpus();
    for case in &cases {
        for r in parse(&case.text) {
            let messages = !case.is_multiline() || !r.is_routine();
            assert_record_masked(&r, &case.secrets, messages);
        }
    }
    let all: Vec<String> = cases.iter().flat_map(|c| c.secrets.clone()).collect();
    let whole: Vec<&str> = cases.iter().map(|c| c.text.as_str()).collect();
    for r in parse(&whole.join("\n")) {
        assert_record_masked(&r, &all, !r.is_routine());
    }
}

/// The bytes before a secret's `k`-th byte in `text`: where a cut at `k`
/// bytes into the secret falls; `None` off a char boundary.
fn cut_into(text: &str, secret: &str, k: usize) -> Option<usize> {
    let at = text.find(secret)? + k;
    text.is_char_boundary(at).then_some(at)
}

/// Spaces that put byte `at` of `text`, after them, at `bound`.
fn padding(bound: usize, at: usize) -> Option<String> {
    bound.checked_sub(at).map(|n| " ".repeat(n))
}

/// Every single-line case with each of its secrets straddling the parser's
/// message bound (4096 bytes, at every third byte of the secret): what is
/// left of the secret in the message, quoted as the auditor quotes it,
/// holds no part of it. Spaces pad the line, so that the quote (spaces
/// squeezed) still shows what the cut left.
#[test]
fn secrets_straddling_the_message_cut_never_survive() {
    let bound = ParserOptions::default().max_message_bytes;
    for case in corpus().iter().filter(|c| !c.is_multiline()) {
        for secret in &case.secrets {
            for k in (1..secret.len()).step_by(3) {
                let Some(pad) = cut_into(&case.text, secret, k).and_then(|at| padding(bound, at))
                else {
                    continue;
                };
                let line = format!("{pad}{}", case.text);
                for r in parse(&line) {
                    assert!(r.truncated, "{line}");
                    assert_record_masked(&r, std::slice::from_ref(secret), true);
                }
            }
        }
    }
}

/// The same for traceback lines, cut at 512 bytes: a case as the line of
/// an exception's message, each secret straddling the cut.
#[test]
fn secrets_straddling_a_traceback_line_cut_never_survive() {
    let bound = ParserOptions::default().max_traceback_line_bytes;
    let head = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/name] Handler 'x' failed with an exception and will try again in 60 seconds: boom\nTraceback (most recent call last):\n  File \"/app/op.py\", line 7, in x\nValueError: boom\n";
    for case in corpus().iter().filter(|c| !c.is_multiline()) {
        for secret in &case.secrets {
            for k in (1..secret.len()).step_by(3) {
                let Some(pad) =
                    cut_into(&case.text, secret, k).and_then(|at| padding(bound, at + 1))
                else {
                    continue;
                };
                let log = format!("{head} {pad}{}", case.text);
                let records = parse(&log);
                assert!(records[0].traceback.len() == 4, "{log}");
                for r in records {
                    assert_record_masked(&r, std::slice::from_ref(secret), false);
                }
            }
        }
    }
}

/// Deterministic xorshift64*.
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
}

/// Noise around the secrets: kopf's words, punctuation, keys that name no
/// secret, non-ASCII text, and invisible characters (removed before masking).
const NOISE: &[&str] = &[
    "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] ",
    "[ns/name] ",
    "Handler 'create_fn' failed temporarily: ",
    "Traceback (most recent call last):",
    "  File \"/app/op.py\", line 7, in create_fn",
    "user=bob",
    "host: db.ops",
    "KeyError: 'spec'",
    "{'a': 1}",
    "(",
    ")",
    "'",
    "\"",
    ",",
    ";",
    "=",
    ":",
    "@",
    "/",
    "\\",
    "\\n",
    "{",
    "}",
    "é€",
    "日本語",
    "x",
    "Y",
    "7",
    "\u{202E}",
    "\u{200B}",
    "\u{2066}",
    "\u{FEFF}",
    "\u{1b}[31m",
    "\u{7}",
    "-----END X-----",
];

const GLUE: &[&str] = &[" ", "  ", ", ", "; ", " | ", "\t", "\n", ""];

/// Random lines mixing corpus lines (their secrets with their context) with
/// noise, glued with spaces, punctuation or nothing: the output holds no
/// secret that the input held.
#[test]
fn secrets_mixed_with_noise_never_survive() {
    let cases = corpus();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..4_000 {
        let mut line = String::new();
        let mut secrets = Vec::new();
        for _ in 0..1 + rng.below(5) {
            line.push_str(GLUE[rng.below(GLUE.len())]);
            if rng.below(3) == 0 {
                let case = &cases[rng.below(cases.len())];
                line.push_str(&case.text);
                secrets.extend(case.secrets.iter().cloned());
            } else {
                line.push_str(NOISE[rng.below(NOISE.len())]);
            }
        }
        // Only the secrets the input still holds whole (noise cannot make one).
        secrets.retain(|s| line.contains(s.as_str()));
        assert_masked(&redact(&line), &secrets, "redact", &line);
        assert_masked(&excerpt(&line, 240), &secrets, "excerpt", &line);
    }
}

/// Random cuts of corpus lines: what is left of a secret is masked when the
/// rest of its context is (the parser redacts before it cuts; this holds of
/// the text before a secret, as a line read cut short ends).
#[test]
fn cut_corpus_lines_keep_their_secrets_masked() {
    for case in corpus().iter().filter(|c| !c.is_multiline()) {
        let chars: Vec<char> = case.text.chars().collect();
        for cut in (1..chars.len()).step_by(7) {
            let head: String = chars[..cut].iter().collect();
            let whole: Vec<String> = case
                .secrets
                .iter()
                .filter(|s| head.contains(s.as_str()))
                .cloned()
                .collect();
            assert_masked(&redact(&head), &whole, "cut", &head);
        }
    }
}

#[test]
fn long_lines_are_redacted_in_linear_time() {
    let unit_shapes = [
        "password: ",
        "'token': '",
        "\\\"secret\\\": \\\"",
        "a=b ",
        "-----BEGIN X-----",
        "https://u:p@h ",
        "Bearer ",
        "eyJhbGciOi.",
        "AbCdEf0123456789",
        "ghp_",
        "dop_v1_",
        "sk-",
        "--password ",
        "'--token', '",
        ", k: ",
        "é",
        "\u{202E}",
    ];
    for unit in unit_shapes {
        let line = unit.repeat(64 * 1024 / unit.len());
        let t = Instant::now();
        let out = redact(&line);
        let e = excerpt(&line, 240);
        let took = t.elapsed();
        assert!(e.chars().count() <= 240);
        assert!(out.len() <= 2 * line.len() + 8);
        // Generous for debug builds on a loaded machine; quadratic would be minutes.
        assert!(took < Duration::from_secs(5), "{unit:?}: {took:?}");
    }
    // All of them at once, mixed.
    let mixed: String = unit_shapes.iter().cycle().take(20_000).copied().collect();
    let t = Instant::now();
    let _ = redact(&mixed[..mixed.len().min(64 * 1024)]);
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn evidence_is_plain_text() {
    let line = "[ns/name] Handler 'x' failed temporarily: \u{202E}txt.exe\u{202C} \u{2066}isolated\u{2069} zero\u{200B}width \u{FEFF}bom \u{2060}joiner soft\u{AD}hyphen tag\u{E0041} bell\u{7} nul\u{0} del\u{7F} c1\u{9B}31m nel\u{85}line\ttab\r\nnext";
    let e = excerpt(line, 1000);
    for c in e.chars() {
        assert!(!c.is_control(), "{c:?} in {e:?}");
        let u = u32::from(c);
        assert!(
            !matches!(u, 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF | 0xAD | 0xE0000..=0xE007F),
            "{c:?} in {e:?}"
        );
    }
    assert_eq!(
        e,
        "[ns/name] Handler 'x' failed temporarily: txt.exe isolated zerowidth bom joiner softhyphen tag bell nul del c131m nel line tab next"
    );
    let r = redact(line);
    assert!(r.contains("zerowidth") && !r.contains('\u{202E}'));
    assert!(r.contains("nel\nline tab\nnext"), "{r:?}");
    assert_eq!(plain_text("a\u{202E}b\r\nc\rd\u{2028}e"), "ab\nc\nd\ne");
    // An invisible character does not hide a key or split a secret.
    assert_eq!(redact("pass\u{200B}word=hun\u{200D}ter2"), "password=***");
    assert_eq!(redact("\u{1b}[31mtoken\u{1b}[0m: abc"), "token: ***");
}

/// A corpus line between arbitrary text (any printable ASCII, non-ASCII,
/// controls, invisible characters), as the `redact` fuzz target builds it.
#[test]
fn corpus_lines_between_arbitrary_text_keep_their_secrets_masked() {
    let cases = corpus();
    let alphabet: Vec<char> = (0x20u8..0x7f)
        .map(char::from)
        .chain("\n\r\t\u{0}\u{1b}\u{7f}\u{85}é€日\u{202E}\u{200B}\u{FEFF}\u{2028}".chars())
        .collect();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for round in 0..6_000 {
        let case = &cases[round % cases.len()];
        let mut arbitrary = || -> String {
            (0..rng.below(12))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect()
        };
        let line = format!("{}{}{}", arbitrary(), case.text, arbitrary());
        assert_masked(&redact(&line), &case.secrets, "redact", &line);
    }
}

/// Real kopf output (every captured log: kopf 1.38 to 1.45, three formats,
/// tracebacks, RBAC denials) and the format samples: redaction changes none
/// of its lines beyond making them plain text. kopf's words, handler and
/// object names, timestamps, UIDs and URLs are never masked.
#[test]
fn real_kopf_logs_are_left_alone() {
    let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let captured = std::fs::read_dir(data.join("captured")).expect("captured logs");
    let mut files: Vec<_> = captured.map(|e| e.expect("entry").path()).collect();
    files.extend(["sample-full.log", "sample-json.log", "sample-plain.log"].map(|f| data.join(f)));
    let mut lines = 0;
    for path in files {
        let bytes = std::fs::read(&path).expect("a log");
        for line in String::from_utf8_lossy(&bytes).lines() {
            assert_eq!(redact(line), plain_text(line), "{}", path.display());
            lines += 1;
        }
    }
    assert!(lines > 1_500, "{lines} lines");
}

//! Making log text safe and short to quote as evidence: what reaches a
//! KopfAudit's status, a PolicyReport and Events, which anyone allowed to
//! read the KopfAudit sees.
//!
//! [`redact`] masks secrets on [`plain_text`]; [`excerpt`] also makes the
//! text one short line. The secret shapes are in three modules:
//! - [`shapes`]: PEM blocks, URL passwords, `Bearer`/`Basic` credentials,
//!   JWTs, long base64 and hex runs;
//! - [`tokens`]: vendors' token formats (`ghp_...`, `dop_v1_...`, ...);
//! - [`keys`]: values of keys that name a secret (`password`, `token`,
//!   `tls.key`, ...), in `k=v`, `k: v`, JSON, Python and escaped forms, and
//!   of command-line flags that name one (`--password x`, argv reprs).
//!
//! Masking too much is preferred to masking too little; the corpus test
//! (`tests/redaction.rs`, `tests/data/secrets/`) lists every shape covered.

mod keys;
mod shapes;
mod text;
mod tokens;

#[cfg(test)]
mod tests;

pub(crate) use text::strip_ansi_into;
pub use text::{is_invisible, plain_text, strip_ansi};

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// A byte range of the text to mask.
type Span = (usize, usize);

/// Masks secrets in `s`, after making it [`plain_text`] (ANSI escapes,
/// controls and invisible format characters removed; line breaks kept as
/// `\n`). Each secret becomes [`MASK`]:
/// - PEM blocks (`-----BEGIN ...-----` to `-----END`, the labels kept; to
///   the end of the text without an end marker);
/// - values of keys that name a secret (`password`, `passwd`, `pwd`,
///   `secret`, `token`, `credential`, `apikey`, `private_key`, `cookie`,
///   `authorization`, `dockerconfigjson`, `client-key-data`, `signature`,
///   and keys ending in `key`, `keys`, `auth`, `pass`, `pw`, any case) in
///   `k=v`, `k: v`, `"k": "v"`, `'k': 'v'`, `b'k': b'v'` and escaped
///   `\"k\": \"v\"` forms; an unquoted value runs to the end of the line
///   unless another key follows (`password=x user=bob`);
/// - values of command-line flags so named, after a space (`pg_dump
///   --password x`, `--token 'a b'`, `-storepass x`) or as the next element
///   of an argv list or tuple (`['psql', '--password', 'x']`, JSON arrays);
///   not after single-letter flags (`-p 5432`);
/// - `Bearer`/`Basic` credentials, JWTs (`eyJ...`);
/// - passwords in URLs (`https://user:p@ss@host/`: up to the last `@`);
/// - vendors' tokens by their prefix (GitHub `ghp_`/`github_pat_`, GitLab
///   `glpat-`, Slack `xoxb-`, AWS `AKIA`/`ASIA`, Google `AIza`/`ya29.`,
///   DigitalOcean `dop_v1_`, Shopify `shpat_`, Stripe `sk_live_`, Vault
///   `hvs.`, npm, PyPI, `sk-`, and more);
/// - encoded runs: base64 of 40 characters or more with both cases (a key,
///   a PEM's body line, an AWS secret access key), of 16 or more with both
///   cases and a digit, of 8 or more with `=` padding, hex of 32 or more,
///   and base64 of a PEM (`LS0tLS1CRUdJTi...`).
///
/// Exists because the auditor quotes log lines as evidence in the status of a
/// KopfAudit, readable by more people than the operator's own logs.
/// Linear in the length of `s` (a 64 KiB line takes milliseconds).
pub fn redact(s: &str) -> String {
    mask(&plain_text(s))
}

/// Masks the secrets of text that is already plain.
fn mask(s: &str) -> String {
    let b = s.as_bytes();
    let mut spans = Vec::new();
    shapes::pem(b, &mut spans);
    shapes::url_userinfo(b, &mut spans);
    shapes::schemes(b, &mut spans);
    shapes::jwt(b, &mut spans);
    tokens::vendor_tokens(b, &mut spans);
    shapes::encoded_runs(b, &mut spans);
    keys::values(b, &mut spans);
    apply(s, spans)
}

/// `s` with each union of overlapping or touching `spans` replaced by [`MASK`].
fn apply(s: &str, mut spans: Vec<Span>) -> String {
    if spans.is_empty() {
        return s.to_owned();
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    let mut spans = spans.into_iter().peekable();
    while let Some((start, mut end)) = spans.next() {
        while let Some(&(next_start, next_end)) = spans.peek() {
            if next_start > end {
                break;
            }
            end = end.max(next_end);
            spans.next();
        }
        // Spans start and end at ASCII bytes; stay on char boundaries anyway.
        let mut start = start.max(at).min(s.len());
        while !s.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = end.min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        if end <= start {
            continue;
        }
        out.push_str(&s[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&s[at..]);
    out
}

/// A short, single-line, redacted quote of `s` for evidence: [`redact`]ed
/// (so plain text: no ANSI code, control or invisible format character),
/// line breaks and runs of spaces made one space, trimmed, and cut to at
/// most `max_chars` characters (ending in `…` when cut).
///
/// Exists so that every finding quotes logs the same safe way.
pub fn excerpt(s: &str, max_chars: usize) -> String {
    if max_chars == 0 {
        return String::new();
    }
    let red = redact(s);
    let mut flat = String::with_capacity(red.len());
    for word in red.split_whitespace() {
        if !flat.is_empty() {
            flat.push(' ');
        }
        flat.push_str(word);
    }
    if flat.chars().count() <= max_chars {
        return flat;
    }
    let mut out: String = flat.chars().take(max_chars - 1).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

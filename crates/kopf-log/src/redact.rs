//! Making log text safe and short to quote in a KopfAudit's status, which
//! anyone allowed to read the KopfAudit sees.

/// Removes ANSI escape sequences (CSI such as colours `\x1b[31m`, OSC such as
/// titles/hyperlinks, and lone two-byte escapes) from `b`, appending to `out`.
pub(crate) fn strip_ansi_into(b: &[u8], out: &mut Vec<u8>) {
    out.reserve(b.len());
    let mut i = 0;
    while i < b.len() {
        let Some(off) = memchr::memchr(0x1b, &b[i..]) else {
            out.extend_from_slice(&b[i..]);
            return;
        };
        out.extend_from_slice(&b[i..i + off]);
        i += off + 1;
        match b.get(i) {
            Some(b'[') => {
                // CSI: parameters 0x30-0x3F, intermediates 0x20-0x2F, final 0x40-0x7E.
                i += 1;
                while i < b.len() && (0x20..=0x3f).contains(&b[i]) {
                    i += 1;
                }
                if i < b.len() && (0x40..=0x7e).contains(&b[i]) {
                    i += 1;
                }
            }
            Some(b']') => {
                // OSC: up to BEL or ESC \.
                i += 1;
                while i < b.len() {
                    if b[i] == 0x07 {
                        i += 1;
                        break;
                    }
                    if b[i] == 0x1b && b.get(i + 1) == Some(&b'\\') {
                        i += 2;
                        break;
                    }
                    i += 1;
                }
            }
            Some(c) if (0x40..=0x5f).contains(c) => i += 1,
            _ => {}
        }
    }
}

/// Removes ANSI escape sequences (colours etc.) from `s`.
/// Exists because some operators colour their logs (e.g. `colorlog`).
pub fn strip_ansi(s: &str) -> String {
    if !s.contains('\x1b') {
        return s.to_owned();
    }
    let mut out = Vec::with_capacity(s.len());
    strip_ansi_into(s.as_bytes(), &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

const MASK: &[u8] = b"***";

fn is_token_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')
}

/// Key names whose values are masked (matched case-insensitively as substrings).
const SENSITIVE_KEYS: &[&[u8]] = &[
    b"password",
    b"passwd",
    b"pwd",
    b"secret",
    b"token",
    b"apikey",
    b"api_key",
    b"api-key",
    b"access_key",
    b"accesskey",
    b"private_key",
    b"privatekey",
    b"credential",
    b"authorization",
    b"auth",
    b"cookie",
];

/// Well-known token prefixes masked wherever they appear (GitHub, GitLab, Slack, OpenAI-style, AWS).
const TOKEN_PREFIXES: &[&[u8]] = &[
    b"ghp_",
    b"gho_",
    b"ghs_",
    b"ghu_",
    b"github_pat_",
    b"glpat-",
    b"xoxb-",
    b"xoxp-",
    b"xoxa-",
    b"sk-",
    b"AKIA",
];

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len()
        && hay
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Masks secrets in `s`: `Authorization: Bearer ...`/`Basic ...` credentials,
/// JWT-looking strings (`eyJ...`), values of keys such as `password=`,
/// `token:`, `"secret": "..."`, `client_secret=` (also in JSON and Python
/// reprs), passwords in URLs (`https://user:pw@host`), and well-known token
/// formats (`ghp_...`, `AKIA...`). Each secret becomes `***`.
///
/// Exists because the auditor quotes log lines as evidence in the status of a
/// KopfAudit, readable by more people than the operator's own logs.
/// Over-masking is preferred to leaking.
pub fn redact(s: &str) -> String {
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let at_word_start = i == 0 || !is_key_byte(b[i - 1]);

        // Bearer/Basic credentials.
        if at_word_start && (c == b'B' || c == b'b') {
            let rest = &b[i..];
            let scheme = if rest.len() > 7 && rest[..7].eq_ignore_ascii_case(b"bearer ") {
                7
            } else if rest.len() > 6 && rest[..6].eq_ignore_ascii_case(b"basic ") {
                6
            } else {
                0
            };
            if scheme > 0 {
                let start = i + scheme;
                let mut j = start;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                let tok_start = j;
                while j < b.len() && is_token_byte(b[j]) {
                    j += 1;
                }
                let tok = &b[tok_start..j];
                let credible = if scheme == 7 {
                    tok.len() >= 6
                } else {
                    // "Basic setup" is prose; "Basic dXNlcjpwdw==" is a credential.
                    tok.len() >= 8
                        && tok
                            .iter()
                            .any(|c| c.is_ascii_digit() || matches!(c, b'=' | b'+' | b'/'))
                };
                if credible {
                    out.extend_from_slice(&b[i..tok_start]);
                    out.extend_from_slice(MASK);
                    i = j;
                    continue;
                }
            }
        }

        // JWTs: eyJ<header>.<payload>[.<signature>]
        if at_word_start && b[i..].starts_with(b"eyJ") {
            let mut j = i;
            let mut dots = 0;
            while j < b.len()
                && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'-' | b'_' | b'.'))
            {
                if b[j] == b'.' {
                    dots += 1;
                }
                j += 1;
            }
            if dots >= 1 && j - i >= 16 {
                out.extend_from_slice(MASK);
                i = j;
                continue;
            }
        }

        // Well-known token formats.
        if at_word_start && let Some(p) = TOKEN_PREFIXES.iter().find(|p| b[i..].starts_with(p)) {
            let mut j = i + p.len();
            while j < b.len() && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'-' | b'_')) {
                j += 1;
            }
            if j - i - p.len() >= 12 {
                out.extend_from_slice(MASK);
                i = j;
                continue;
            }
        }

        // URL credentials: scheme://user:password@host
        if c == b':' && b[i..].starts_with(b"://") {
            let start = i + 3;
            let mut j = start;
            while j < b.len() && !matches!(b[j], b'/' | b'@' | b' ' | b'\'' | b'"') {
                j += 1;
            }
            if j < b.len()
                && b[j] == b'@'
                && let Some(colon) = b[start..j].iter().position(|&x| x == b':')
            {
                out.extend_from_slice(&b[i..start + colon + 1]);
                out.extend_from_slice(MASK);
                out.push(b'@');
                i = j + 1;
                continue;
            }
        }

        // key=value / key: value / "key": "value" / 'key': 'value'
        if at_word_start && is_key_byte(c) {
            let mut j = i;
            while j < b.len() && is_key_byte(b[j]) {
                j += 1;
            }
            let key = &b[i..j];
            if key.len() <= 64
                && SENSITIVE_KEYS.iter().any(|k| contains_ci(key, k))
                && let Some((value_start, value_end)) = key_value(b, j)
            {
                out.extend_from_slice(&b[i..value_start]);
                let value = &b[value_start..value_end];
                let scheme = [&b"bearer "[..], &b"basic "[..], &b"token "[..]]
                    .into_iter()
                    .find(|s| value.len() > s.len() && value[..s.len()].eq_ignore_ascii_case(s));
                if let Some(s) = scheme {
                    out.extend_from_slice(&value[..s.len()]);
                }
                out.extend_from_slice(MASK);
                i = value_end;
                continue;
            }
            out.extend_from_slice(key);
            i = j;
            continue;
        }

        out.push(c);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// After a key ending at `j`: an optional closing quote, `=` or `:`, spaces,
/// an optional opening quote; returns the value's byte range (without quotes).
fn key_value(b: &[u8], mut j: usize) -> Option<(usize, usize)> {
    if j < b.len() && matches!(b[j], b'"' | b'\'') {
        j += 1;
    }
    while j < b.len() && b[j] == b' ' {
        j += 1;
    }
    if j >= b.len() || !matches!(b[j], b'=' | b':') {
        return None;
    }
    j += 1;
    while j < b.len() && b[j] == b' ' {
        j += 1;
    }
    let quote = match b.get(j) {
        Some(&q) if q == b'"' || q == b'\'' => {
            j += 1;
            Some(q)
        }
        _ => None,
    };
    let start = j;
    match quote {
        Some(q) => {
            while j < b.len() && b[j] != q {
                if b[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            j = j.min(b.len());
        }
        None => {
            // Bearer-style values keep their scheme word and mask the next token.
            let mut k = j;
            while k < b.len() && b[k].is_ascii_alphabetic() {
                k += 1;
            }
            let word = &b[j..k];
            if k < b.len()
                && b[k] == b' '
                && ["bearer", "basic", "token"]
                    .iter()
                    .any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
            {
                j = k + 1;
            }
            while j < b.len()
                && !matches!(
                    b[j],
                    b' ' | b','
                        | b';'
                        | b'&'
                        | b')'
                        | b'}'
                        | b']'
                        | b'"'
                        | b'\''
                        | b'\t'
                        | b'\n'
                        | b'\r'
                )
            {
                j += 1;
            }
        }
    }
    if j == start || b[start..j] == *MASK {
        return None;
    }
    Some((start, j))
}

/// A short, single-line, redacted quote of `s` for evidence: ANSI codes and
/// control characters removed (newlines and tabs become spaces), secrets
/// masked with [`redact`], and cut to at most `max_chars` characters (ending
/// in `…` when cut).
///
/// Exists so that every finding quotes logs the same safe way.
pub fn excerpt(s: &str, max_chars: usize) -> String {
    let clean = strip_ansi(s);
    let mut flat = String::with_capacity(clean.len().min(max_chars.saturating_mul(4) + 64));
    let mut last_space = false;
    for ch in clean.chars() {
        let ch = if matches!(ch, '\n' | '\r' | '\t') {
            ' '
        } else {
            ch
        };
        if ch.is_control() {
            continue;
        }
        if ch == ' ' && last_space {
            continue;
        }
        last_space = ch == ' ';
        flat.push(ch);
    }
    let red = redact(flat.trim());
    if max_chars == 0 {
        return String::new();
    }
    if red.chars().count() <= max_chars {
        return red;
    }
    let mut out: String = red.chars().take(max_chars - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_secrets() {
        let cases = [
            (
                "Authorization: Bearer abc.def-ghi",
                "Authorization: Bearer ***",
            ),
            (
                "headers={'Authorization': 'Bearer abc123'}",
                "headers={'Authorization': 'Bearer ***'}",
            ),
            ("password=hunter2 user=bob", "password=*** user=bob"),
            ("db_password: s3cr3t, host: x", "db_password: ***, host: x"),
            (
                "{\"token\": \"abc\\\"def\", \"a\": 1}",
                "{\"token\": \"***\", \"a\": 1}",
            ),
            ("https://u:pw@example.com/x", "https://u:***@example.com/x"),
            (
                "got eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl here",
                "got *** here",
            ),
            ("key ghp_abcdefghijklmnopqrstuvwx", "key ***"),
            ("?token=abc&x=1", "?token=***&x=1"),
            ("X-Auth-Token: abc", "X-Auth-Token: ***"),
            (
                "Handler 'create_secret' failed temporarily: boom",
                "Handler 'create_secret' failed temporarily: boom",
            ),
            ("nothing to see", "nothing to see"),
            ("", ""),
            ("token=", "token="),
            ("päss wörd secret=ü€", "päss wörd secret=***"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn excerpts() {
        assert_eq!(excerpt("a\n\tb  \x1b[31mred\x1b[0m", 100), "a b red");
        assert_eq!(excerpt("abcdef", 4), "abc…");
        assert_eq!(excerpt("password=x", 0), "");
        assert_eq!(excerpt("ééééé", 3), "éé…");
    }

    #[test]
    fn strips_ansi() {
        assert_eq!(strip_ansi("\x1b[1;31mERROR\x1b[0m x"), "ERROR x");
        assert_eq!(strip_ansi("\x1b]0;title\x07x"), "x");
        assert_eq!(strip_ansi("\x1b"), "");
        assert_eq!(strip_ansi("\x1b["), "");
    }
}

//! Values of keys that name a secret: `password=...`, `token: ...`,
//! `"secret": "..."`, `'tls.key': '...'`, `b'password': b'...'`,
//! `{\"password\": \"...\"}`, `AccountKey=...;`; and of command-line flags
//! that name one: `--password ...`, `['psql', '--password', '...']`.

use super::Span;

/// Key words masked wherever they appear in a key (any case):
/// `db_password`, `X-Auth-Token`, `client_secret`, `.dockerconfigjson`.
const ANYWHERE: &[&[u8]] = &[
    b"password",
    b"passwd",
    b"passphrase",
    b"pwd",
    b"secret",
    b"token",
    b"credential",
    b"apikey",
    b"api_key",
    b"api-key",
    b"private_key",
    b"privatekey",
    b"private-key",
    b"access_key",
    b"accesskey",
    b"access-key",
    b"authorization",
    b"cookie",
    b"dockerconfigjson",
    b"dockercfg",
    b"client-key-data",
    b"client-certificate-data",
    b"signature",
];

/// Key words masked at the end of a key (any case): `key`, `tls.key` (the
/// key `key`), `AccountKey`, `SharedAccessKey`, `x-api-key`, `basic_auth`,
/// `db-pass`; but `KeyError: 'spec'` is an exception, not a key.
const AT_END: &[&[u8]] = &[b"key", b"keys", b"auth", b"pass", b"pw"];

/// Keys masked only when they are the whole key: Azure SAS's `sig=`.
const WHOLE: &[&[u8]] = &[b"sig"];

/// Longest key looked at.
const MAX_KEY: usize = 64;

/// After this many keys in one text, everything from the next one to the end
/// is masked: each key's value is scanned, and a text that is nothing but
/// keys must not take quadratic time.
const MAX_KEYS: usize = 256;

fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')
}

/// Whether `key` names a secret (see [`ANYWHERE`], [`AT_END`], [`WHOLE`]).
pub(super) fn is_secret_key(key: &[u8]) -> bool {
    if key.len() > MAX_KEY {
        return false;
    }
    let mut lower = [0u8; MAX_KEY];
    let lower = &mut lower[..key.len()];
    lower.copy_from_slice(key);
    lower.make_ascii_lowercase();
    let lower = &*lower;
    ANYWHERE.iter().any(|w| contains(lower, w))
        || AT_END.iter().any(|w| lower.ends_with(w))
        || WHOLE.contains(&lower)
}

/// Whether `word` is in `key`: compared where their first bytes match only,
/// since every word of most text is looked up.
fn contains(key: &[u8], word: &[u8]) -> bool {
    let Some((&first, rest)) = word.split_first() else {
        return true;
    };
    key.len() >= word.len()
        && key[..=key.len() - word.len()]
            .iter()
            .enumerate()
            .any(|(i, &c)| c == first && key[i + 1..].starts_with(rest))
}

/// Appends the value of every secret-naming key in `b`.
///
/// A key is a run of `A-Za-z0-9-_` (so `tls.key` is read as `key`), then an
/// optional closing quote (`"`, `'`, or escaped: `\"`), spaces, `=` or `:`,
/// spaces, and the value:
/// - quoted (`"v"`, `'v'`, `b'v'`, escaped `\"v\"`): to the closing quote;
///   to the end of the text when there is none;
/// - unquoted: to the end of the line, or to the first `&`, closing bracket
///   or closing quote, or to a `,`, `;` or space followed by another key
///   (`password=x user=bob`, `pwd: x, host: y`); so `password: horse
///   battery staple` is masked whole;
/// - `{`, `[` or `(`: not masked itself, its own keys are.
///
/// A key that is a command-line flag (`--password`, `-storepass`) may also
/// take its value as the next word or element ([`flag_value`]).
///
/// A value that starts with `Bearer `, `Basic ` or `Token ` keeps that word.
/// Keys are looked for inside values too (`token=password: x` masks both).
pub(super) fn values(b: &[u8], spans: &mut Vec<Span>) {
    let mut memo = Memo::default();
    let mut found = 0;
    let mut i = 0;
    while i < b.len() {
        if !is_key_byte(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_key_byte(b[i]) {
            i += 1;
        }
        if !is_secret_key(&b[start..i]) {
            continue;
        }
        // `system:serviceaccount:sealed-secrets:operator` names a user, not a secret.
        let chained = start > 0 && b[start - 1] == b':';
        let Some((from, to)) =
            value_after(b, i, chained, &mut memo).or_else(|| flag_value(b, start, i))
        else {
            continue;
        };
        // Python's `None` holds no secret: aiohttp's `ConnectionKey(..., proxy_auth=None,
        // ...)` in every connection error kopf logs.
        if &b[from..to] == b"None" {
            continue;
        }
        found += 1;
        if found > MAX_KEYS {
            spans.push((from, b.len()));
            return;
        }
        spans.push((from, to));
        i = from;
    }
}

/// The end of the unquoted value scanned last: a value starting inside it
/// ends where it ends (see [`unquoted_end`]).
#[derive(Default)]
struct Memo {
    start: usize,
    end: usize,
}

/// `\`s then a quote at `j`: (backslashes, quote, the index after it).
fn quote_at(b: &[u8], j: usize) -> Option<(usize, u8, usize)> {
    let n = b[j.min(b.len())..]
        .iter()
        .take(8)
        .take_while(|&&c| c == b'\\')
        .count();
    match b.get(j + n) {
        Some(&q) if q == b'"' || q == b'\'' => Some((n, q, j + n + 1)),
        _ => None,
    }
}

/// The quote opening a string at `j`, after Python's string prefixes
/// (`b'...'`, `rb'...'`, `u'...'`): as [`quote_at`] tells it.
fn opening_quote(b: &[u8], j: usize) -> Option<(usize, u8, usize)> {
    let prefixed = b[j.min(b.len())..]
        .iter()
        .take(2)
        .take_while(|c| matches!(c, b'b' | b'B' | b'r' | b'R' | b'u' | b'U'))
        .count();
    quote_at(b, j + prefixed).or_else(|| quote_at(b, j))
}

fn skip_spaces(b: &[u8], mut j: usize) -> usize {
    while j < b.len() && matches!(b[j], b' ' | b'\t') {
        j += 1;
    }
    j
}

/// The value after a key that ends at `j`: its byte range. A `chained` key
/// (right after a `:`) followed by `:` and no space is a part of a
/// colon-separated name (`system:serviceaccount:NS:SA`), not a key.
fn value_after(b: &[u8], j: usize, chained: bool, memo: &mut Memo) -> Option<Span> {
    let mut j = j;
    if let Some((_, _, after)) = quote_at(b, j) {
        j = after;
    }
    j = skip_spaces(b, j);
    match b.get(j) {
        Some(b'=') => {}
        // `::` is a scope or an IPv6 address, not a key's separator.
        Some(b':')
            if b.get(j + 1) != Some(&b':')
                && !(chained && b.get(j + 1).is_some_and(|c| !matches!(c, b' ' | b'\t'))) => {}
        _ => return None,
    }
    j = skip_spaces(b, j + 1);
    let (start, end) = match opening_quote(b, j) {
        Some((escapes, q, start)) => (start, quoted_end(b, start, q, escapes)),
        None => {
            if matches!(b.get(j), None | Some(b'{' | b'[' | b'(' | b'\n' | b'\r')) {
                return None;
            }
            let start = j;
            let end = if memo.start <= start && start < memo.end {
                memo.end
            } else {
                unquoted_end(b, start)
            };
            *memo = Memo { start, end };
            (start, end)
        }
    };
    let start = start + scheme_len(&b[start..end]);
    (start < end).then_some((start, end))
}

/// A leading `Bearer `, `Basic ` or `Token ` (any case): kept, not a secret.
fn scheme_len(v: &[u8]) -> usize {
    [&b"bearer "[..], b"basic ", b"token "]
        .into_iter()
        .find(|s| v.len() > s.len() && v[..s.len()].eq_ignore_ascii_case(s))
        .map_or(0, |s| s.len())
}

/// The end of a quoted value starting at `start`: the next `q` (not escaped
/// with `\`) when it was opened by a bare quote; when opened by an escaped
/// one (`\"`), the next escaped `q`. The end of the text when there is none.
fn quoted_end(b: &[u8], start: usize, q: u8, escapes: usize) -> usize {
    let mut j = start;
    if escapes == 0 {
        while j < b.len() && b[j] != q {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        return j.min(b.len());
    }
    while let Some(k) = memchr::memchr(q, &b[j.min(b.len())..]).map(|k| j + k) {
        if k > start && b[k - 1] == b'\\' {
            let mut from = k - 1;
            while from > start && b[from - 1] == b'\\' {
                from -= 1;
            }
            return from;
        }
        j = k + 1;
    }
    b.len()
}

/// The end of an unquoted value starting at `start` (see [`values`]). Whether
/// a byte ends the value depends on that byte and what follows it only, so
/// a value starting inside another ends where that one ends.
fn unquoted_end(b: &[u8], start: usize) -> usize {
    let mut p = start;
    while p < b.len() {
        match b[p] {
            b'\n' | b'\r' | b'&' | b')' | b'}' | b']' => return p,
            b'"' | b'\'' => {
                // A closing quote: the end of the text or a delimiter after it.
                if matches!(
                    b.get(p + 1),
                    None | Some(
                        b' ' | b',' | b';' | b':' | b')' | b'}' | b']' | b'\n' | b'\r' | b'&'
                    )
                ) {
                    return p;
                }
            }
            b',' | b';' | b' ' | b'\t' if another_key(b, p + 1) => return p,
            _ => {}
        }
        p += 1;
    }
    b.len()
}

/// Whether a key and its separator start at `j` (after spaces): `user=`,
/// `host: `, `"a": `, `EndpointSuffix=`.
fn another_key(b: &[u8], j: usize) -> bool {
    let mut j = skip_spaces(b, j);
    if let Some((_, _, after)) = quote_at(b, j) {
        j = after;
    }
    let start = j;
    while j < b.len() && j - start <= MAX_KEY && (is_key_byte(b[j]) || b[j] == b'.') {
        j += 1;
    }
    if j == start || j - start > MAX_KEY {
        return false;
    }
    if let Some((_, _, after)) = quote_at(b, j) {
        j = after;
    }
    j = skip_spaces(b, j);
    matches!(b.get(j), Some(b'=' | b':'))
}

/// Whether `key` is a command-line flag: one or two dashes, then a letter.
fn is_flag(key: &[u8]) -> bool {
    let name = key.strip_prefix(b"-").unwrap_or(key);
    let name = name.strip_prefix(b"-").unwrap_or(name);
    key.first() == Some(&b'-') && name.first().is_some_and(u8::is_ascii_alphabetic)
}

/// The value of a flag that names a secret, the flag being `b[start..end]`:
/// - in an argv list or tuple printed by Python (`['psql', '--password',
///   'x']`, `("--token", "x")`, `b'--password', b'x'`) or in a JSON array
///   (also escaped: `[\"--token\", \"x\"]`): the element after the flag's;
/// - in a shell line (`pg_dump --password x`, `--token 'a b'`): the word or
///   the quoted string after the spaces.
///
/// A value starting with `-` is the next flag, not a value (psql's
/// `--password` takes none). Single-letter flags (`-p 5432`) are left alone:
/// their letter says nothing of a secret.
fn flag_value(b: &[u8], start: usize, end: usize) -> Option<Span> {
    if !is_flag(&b[start..end]) {
        return None;
    }
    if let Some((_, q, after)) = quote_at(b, end) {
        // Quoted like the elements of a list: the flag's opening quote is the same.
        if start == 0 || b[start - 1] != q {
            return None;
        }
        let j = skip_spaces(b, after);
        if b.get(j) != Some(&b',') {
            return None;
        }
        return quoted_value(b, skip_spaces(b, j + 1));
    }
    let j = skip_spaces(b, end);
    if j == end {
        return None;
    }
    quoted_value(b, j).or_else(|| bare_word(b, j))
}

/// A quoted string starting at `j` (Python's `b`/`r`/`u` prefixes allowed),
/// the quotes left out; none when it starts with `-` or is empty.
fn quoted_value(b: &[u8], j: usize) -> Option<Span> {
    let (escapes, q, start) = opening_quote(b, j)?;
    let end = quoted_end(b, start, q, escapes);
    (start < end && b[start] != b'-').then_some((start, end))
}

/// The word starting at `j`: to a space, a quote or a closing bracket; none
/// when it starts with `-` (another flag) or is empty.
fn bare_word(b: &[u8], j: usize) -> Option<Span> {
    if b.get(j).is_none_or(|&c| c == b'-') {
        return None;
    }
    let len = b[j..]
        .iter()
        .position(|&c| c.is_ascii_whitespace() || matches!(c, b'\'' | b'"' | b')' | b']' | b'}'))
        .unwrap_or(b.len() - j);
    (len > 0).then_some((j, j + len))
}

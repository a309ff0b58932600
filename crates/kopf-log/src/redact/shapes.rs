//! Secrets recognised by their shape, wherever they are: PEM blocks, URL
//! passwords, `Bearer`/`Basic` credentials, JWTs and long encoded runs
//! (base64, hex). Vendors' token formats are in [`super::tokens`].
//!
//! Each function appends the byte ranges to mask to `spans`; ranges may
//! overlap (they are merged afterwards). Each is linear in the text's length.

use super::Span;
use memchr::memmem;

const BEGIN: &[u8] = b"-----BEGIN";
const END: &[u8] = b"-----END";

/// `-----BEGIN LABEL-----` ... `-----END LABEL-----`: everything between the
/// two markers (the labels stay), also across `\n` escapes and real newlines.
/// A block with no end marker is masked to the end of the text; one with no
/// begin marker (its head cut away: kopf cuts an Event's message in the
/// middle) back to where its body starts ([`body_before`]).
pub(super) fn pem(b: &[u8], spans: &mut Vec<Span>) {
    let mut begins = Next::new(BEGIN);
    let mut ends = Next::new(END);
    let mut at = 0;
    loop {
        let end = ends.at_or_after(b, at);
        let begin = begins
            .at_or_after(b, at)
            .filter(|&i| end.is_none_or(|e| i < e));
        if let Some(i) = begin {
            let body = header_end(b, i);
            let Some(j) = ends.at_or_after(b, body) else {
                spans.push((body, b.len()));
                return;
            };
            spans.push((body, j));
            at = j + END.len();
        } else if let Some(e) = end {
            let start = body_before(b, at, e);
            if start < e {
                spans.push((start, e));
            }
            at = e + END.len();
        } else {
            return;
        }
    }
}

/// The next occurrence of a marker at or after a position, searched again
/// only once the position passes the one found: however many markers of the
/// other kind come between, the text is searched once.
struct Next<'n> {
    finder: memmem::Finder<'n>,
    from: usize,
    found: Option<usize>,
    searched: bool,
}

impl<'n> Next<'n> {
    fn new(marker: &'n [u8]) -> Self {
        Next {
            finder: memmem::Finder::new(marker),
            from: 0,
            found: None,
            searched: false,
        }
    }

    fn at_or_after(&mut self, b: &[u8], from: usize) -> Option<usize> {
        let known =
            self.searched && self.from <= from && self.found.is_none_or(|found| found >= from);
        if !known {
            self.found = self.finder.find(&b[from.min(b.len())..]).map(|i| from + i);
            self.from = from;
            self.searched = true;
        }
        self.found
    }
}

/// The end of the header a `-----BEGIN` at `i` starts: its closing dashes,
/// on the same line and near; right after `-----BEGIN` when there are none.
fn header_end(b: &[u8], i: usize) -> usize {
    let label = i + BEGIN.len();
    let near = &b[label..b.len().min(label + 80)];
    let near = &near[..memchr::memchr2(b'\n', b'\r', near).unwrap_or(near.len())];
    memmem::find(near, b"-----").map_or(label, |j| label + j + 5)
}

/// Where the body of a block ending at `e` starts when its begin marker is
/// not in the text: back over base64, spaces and line breaks (real, or
/// `\n` escapes), not before `floor`; the leading spaces and breaks stay.
fn body_before(b: &[u8], floor: usize, e: usize) -> usize {
    let in_body =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'\\' | b' ' | b'\n');
    let mut start = e;
    while start > floor && in_body(b[start - 1]) {
        start -= 1;
    }
    while start < e && matches!(b[start], b' ' | b'\n') {
        start += 1;
    }
    start
}

/// `scheme://user:password@host`: the password, up to the last `@` before
/// the URL ends (passwords may hold `@`, `/` and `:`). A user part without a
/// `:` of 16 characters or more (a token given as the user) is masked whole.
pub(super) fn url_userinfo(b: &[u8], spans: &mut Vec<Span>) {
    let mut url_end = 0;
    for i in memmem::find_iter(b, b"://") {
        let start = i + 3;
        if start < url_end {
            // Inside the URL before (`?next=https://...`): masked with it,
            // from its first `:` to its last `@`.
            continue;
        }
        let len = b[start..]
            .iter()
            .position(|&c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>'))
            .unwrap_or(b.len() - start);
        url_end = start + len;
        let url = &b[start..url_end];
        let Some(at) = memchr::memrchr(b'@', url) else {
            continue;
        };
        match memchr::memchr(b':', &url[..at]) {
            Some(colon) => spans.push((start + colon + 1, start + at)),
            None if at >= 16 => spans.push((start, start + at)),
            None => {}
        }
    }
}

fn is_token_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')
}

/// `Bearer TOKEN` (6 characters or more) and `Basic CREDENTIALS` (8 or more,
/// with a digit or one of `=+/`: `Basic setup` is prose), any case: the
/// credential, the scheme word kept.
pub(super) fn schemes(b: &[u8], spans: &mut Vec<Span>) {
    let mut i = 0;
    while i < b.len() {
        let Some(off) = memchr::memchr2(b'B', b'b', &b[i..]) else {
            return;
        };
        i += off;
        if i > 0 && is_word_byte(b[i - 1]) {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        let scheme = if rest.len() > 7 && rest[..7].eq_ignore_ascii_case(b"bearer ") {
            7
        } else if rest.len() > 6 && rest[..6].eq_ignore_ascii_case(b"basic ") {
            6
        } else {
            i += 1;
            continue;
        };
        let mut j = i + scheme;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let start = j;
        while j < b.len() && is_token_byte(b[j]) {
            j += 1;
        }
        let tok = &b[start..j];
        let credible = if scheme == 7 {
            tok.len() >= 6
        } else {
            tok.len() >= 8
                && tok
                    .iter()
                    .any(|c| c.is_ascii_digit() || matches!(c, b'=' | b'+' | b'/'))
        };
        if credible {
            spans.push((start, j));
        }
        i = j.max(i + 1);
    }
}

/// JWTs: `eyJ<header>.<payload>[.<signature>]`, 16 characters or more.
pub(super) fn jwt(b: &[u8], spans: &mut Vec<Span>) {
    let mut at = 0;
    while let Some(i) = memmem::find(&b[at..], b"eyJ").map(|i| at + i) {
        let mut j = i;
        let mut dots = 0;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'-' | b'_' | b'.')) {
            dots += usize::from(b[j] == b'.');
            j += 1;
        }
        if dots >= 1 && j - i >= 16 {
            spans.push((i, j));
        }
        at = j.max(i + 3);
    }
}

fn is_run_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

/// Runs of the base64 alphabets (`A-Za-z0-9+/-_`, with up to two `=` of
/// padding at the end) that look encoded rather than written:
/// - 40 characters or more with both upper and lower case letters (a base64
///   key, a PEM's body line, an AWS secret access key);
/// - 16 or more with upper and lower case letters and a digit;
/// - 8 or more ending in padding, with two of upper case, lower case and
///   digits (`cGFzc3dvcmQ=`, a Secret's value);
/// - 32 hexadecimal digits or more, letters and digits mixed;
/// - base64 of a PEM (`LS0tLS1CRUdJTi...`, 8 characters or more).
///
/// Words, Kubernetes names (lower case), paths with dots, UIDs (36
/// characters) and numbers do not match.
pub(super) fn encoded_runs(b: &[u8], spans: &mut Vec<Span>) {
    let mut i = 0;
    while i < b.len() {
        if !is_run_byte(b[i]) {
            i += 1;
            continue;
        }
        // A run's leading slashes are a path's or a URL's (`https://TOKEN@`), not its value's.
        while i < b.len() && b[i] == b'/' {
            i += 1;
        }
        let start = i;
        let (mut upper, mut lower, mut digit, mut hex) = (false, false, false, true);
        while i < b.len() && is_run_byte(b[i]) {
            let c = b[i];
            upper |= c.is_ascii_uppercase();
            lower |= c.is_ascii_lowercase();
            digit |= c.is_ascii_digit();
            hex &= c.is_ascii_hexdigit();
            i += 1;
        }
        let core = i - start;
        // Padding: one or two `=` not followed by more of a word (`k=v` is no padding).
        let pads = b[i..].iter().take(2).take_while(|&&c| c == b'=').count();
        let padded = pads > 0
            && !b
                .get(i + pads)
                .is_some_and(|&c| is_run_byte(c) || c == b'=');
        let end = if padded { i + pads } else { i };
        let classes = usize::from(upper) + usize::from(lower) + usize::from(digit);
        let encoded = (end - start >= 40 && upper && lower)
            || (core >= 16 && classes == 3)
            || (padded && end - start >= 8 && classes >= 2)
            || (hex && core >= 32 && digit && (upper || lower))
            || (core >= 8 && b[start..].starts_with(b"LS0tLS"));
        if encoded {
            spans.push((start, end));
        }
        i = end.max(i);
    }
}

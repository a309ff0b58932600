//! Plain text: ANSI escapes, control and invisible format characters removed.

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

/// Unicode's format characters (General Category `Cf`, Unicode 15.1): bidi
/// embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), zero
/// widths (U+200B-U+200F, U+2060, U+FEFF), the soft hyphen, tag characters,
/// ...; plus the few letters and marks that render as nothing (the combining
/// grapheme joiner U+034F, the Hangul fillers, the Khmer inherent vowels).
pub(super) const INVISIBLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0x3164, 0x3164),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether `c` renders as nothing: a Unicode format character (General
/// Category `Cf`: the bidi controls, zero widths, tag characters, ...) or one
/// of the few letters and marks that show nothing (the table `INVISIBLE`).
///
/// Exists so that text reaching readers by another path than [`plain_text`]
/// (a status field cut to a bound) is cleaned by the same definition.
pub fn is_invisible(c: char) -> bool {
    let c = u32::from(c);
    // Everything below the soft hyphen is ASCII or Latin-1: the common case.
    c >= 0xAD
        && INVISIBLE
            .binary_search_by(|&(lo, hi)| {
                if hi < c {
                    std::cmp::Ordering::Less
                } else if lo > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
}

/// `s` as plain text that shows what it says: ANSI escape sequences removed
/// ([`strip_ansi`]), Unicode format characters removed (General Category
/// `Cf`: the bidi controls U+202A-U+202E and U+2066-U+2069, the zero-width
/// characters U+200B-U+200F, U+2060 and U+FEFF, tag characters, ...), and
/// the C0 and C1 controls removed too, except that a tab becomes a space and
/// line breaks (`\n`, `\r\n`, a lone `\r`, U+0085, U+2028, U+2029) become `\n`.
///
/// Exists because evidence quoted from logs reaches a KopfAudit's status, a
/// PolicyReport and Events: a right-to-left override or a zero-width space in
/// a log line must not make the quoted text read otherwise than it is (nor
/// hide a secret's key from [`redact`](crate::redact()), which works on this
/// text). Removing rather than escaping them keeps the words they split whole.
pub fn plain_text(s: &str) -> String {
    let stripped;
    let s = if s.contains('\x1b') {
        stripped = strip_ansi(s);
        stripped.as_str()
    } else {
        s
    };
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => out.push('\n'),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\t' => out.push(' '),
            c if c.is_control() || is_invisible(c) => {}
            c => out.push(c),
        }
    }
    out
}

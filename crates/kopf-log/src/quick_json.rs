//! The serde-free reading of simple JSON log lines: about a third of a
//! fleet's lines are JSON, and proving that such a line is a routine kopf
//! record ([`Routine::Count`](crate::Routine::Count)), or reading the few
//! fields kopf writes from it, must cost far less than deserialising it.

use crate::Level;
/// Reads a simple JSON line, telling `v` its keys and values down to
/// [`Visit::DEPTH`]; `None` when the line is not simple or `v` refuses it.
///
/// Only simple lines are read, so that the answer is certain without serde:
/// no backslash (strings are then their raw bytes, and every quote delimits
/// one), no control character, valid UTF-8, no number (serde_json may reject
/// some), nesting of at most 32 (serde_json stops at 128), at most
/// [`MAX_LINE`] bytes. Every other line is left to serde.
pub(crate) fn walk<'a, V: Visit<'a>>(l: &'a [u8], v: &mut V) -> Option<()> {
    let mut quotes = [0u64; MAX_LINE / 64];
    let words = line_quotes(l, &mut quotes)?;
    walk_structure(l, &quotes[..words], v)
}

/// What a reader of simple JSON lines is told by [`walk`]; a `None` stops
/// the walk (the line is then left to serde).
pub(crate) trait Visit<'a> {
    /// The deepest keys told: 1 for the line's object, 2 for the objects in
    /// its members too.
    const DEPTH: u32;
    /// A key at `depth`; its value is told next (if it is a member's value).
    fn key(&mut self, depth: u32, key: &'a [u8]) -> Option<()>;
    /// The value of the last key told at `depth`.
    fn value(&mut self, depth: u32, value: Value<'a>) -> Option<()>;
}

/// A member's value, as far as a [`Visit`] needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// A string's raw bytes (there is no escape in the line).
    Str(&'a [u8]),
    Null,
    /// `true` or `false`.
    Bool,
    /// An object, whose members are told (within [`Visit::DEPTH`]) before
    /// the next key at this depth.
    Object,
    /// An array (its elements are not told).
    Array,
}

/// The raw message of [`json_head`], for the tests.
#[cfg(test)]
pub(crate) fn json_message(l: &[u8]) -> Option<&[u8]> {
    json_head(l).map(|(m, _)| m)
}

/// The raw `message` value of a JSON line that `Parser::json` accepts as
/// kopf's, with that message and no `exc_info`, and the level `Parser::json`
/// reads from the line (`severity`, else `levelname`/`level`); `None` when unsure.
pub(crate) fn json_head(l: &[u8]) -> Option<(&[u8], Option<Level>)> {
    let mut m = MessageOnly::default();
    walk(l, &mut m)?;
    let level = |v: Option<Option<&[u8]>>| {
        v.flatten()
            .and_then(|b| std::str::from_utf8(b).ok())
            .and_then(Level::parse)
    };
    let level = level(m.severity).or_else(|| level(m.levelname));
    Some((m.message?, level))
}

/// The [`Visit`] of [`json_head`]: one `message` key with a string value,
/// at most one `severity` and one `levelname` or `level` (serde keeps the
/// last of repeated keys: such lines are left to it).
#[derive(Default)]
struct MessageOnly<'a> {
    message: Option<&'a [u8]>,
    /// The value of `severity`: a string's bytes, or `None` for another value.
    severity: Option<Option<&'a [u8]>>,
    /// The value of `levelname` or `level`.
    levelname: Option<Option<&'a [u8]>>,
    /// The key whose value comes next.
    next: Next,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Next {
    #[default]
    Other,
    Message,
    Severity,
    Levelname,
}

impl<'a> Visit<'a> for MessageOnly<'a> {
    const DEPTH: u32 = 1;

    fn key(&mut self, _: u32, key: &'a [u8]) -> Option<()> {
        self.next = match key {
            b"message" if self.message.is_none() => Next::Message,
            b"message" | b"exc_info" => return None,
            b"severity" if self.severity.is_none() => Next::Severity,
            b"levelname" | b"level" if self.levelname.is_none() => Next::Levelname,
            b"severity" | b"levelname" | b"level" => return None,
            _ => Next::Other,
        };
        Some(())
    }

    fn value(&mut self, _: u32, value: Value<'a>) -> Option<()> {
        let text = match value {
            Value::Str(v) => Some(v),
            _ => None,
        };
        match std::mem::take(&mut self.next) {
            Next::Message => self.message = Some(text?),
            Next::Severity => self.severity = Some(text),
            Next::Levelname => self.levelname = Some(text),
            Next::Other => {}
        }
        Some(())
    }
}

/// The longest line [`walk`] reads (kopf's routine JSON lines are a
/// few hundred bytes; longer ones go to serde): its masks fit on the stack.
const MAX_LINE: usize = 2048;

/// The deepest nesting [`walk`] follows (serde_json allows 128).
const MAX_DEPTH: u32 = 32;

/// Sets, per 64-byte chunk of `l`, the bits of its quotes in `quotes` and
/// returns how many words it wrote; `None` when `l` has a backslash or a
/// control character, is not valid UTF-8, or is longer than `quotes` covers.
fn line_quotes(l: &[u8], quotes: &mut [u64]) -> Option<usize> {
    if l.len() > quotes.len() * 64 {
        return None;
    }
    let mut acc = Acc::default();
    let mut chunks = l.chunks_exact(64);
    let mut words = 0;
    for (chunk, word) in chunks.by_ref().zip(quotes.iter_mut()) {
        *word = acc.chunk(chunk.try_into().ok()?);
        words += 1;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // Padded with spaces, which are none of the bytes looked for.
        let mut padded = [b' '; 64];
        padded[..rest.len()].copy_from_slice(rest);
        *quotes.get_mut(words)? = acc.chunk(&padded);
        words += 1;
    }
    let (odd, non_ascii) = acc.finish();
    if odd || (non_ascii && std::str::from_utf8(l).is_err()) {
        return None;
    }
    Some(words)
}

/// What [`line_quotes`] gathers over the chunks besides the quotes: whether
/// any byte is a backslash or a control character (`odd`), or 0x80 or more.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[derive(Default)]
struct Acc {
    odd: safe_arch::m128i,
    high: safe_arch::m128i,
}

/// SSE2 (always there on x86_64): a few instructions per 16 bytes, and one
/// test per line for the odd and the non-ASCII bytes.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
impl Acc {
    /// The quote bits of a 64-byte chunk.
    fn chunk(&mut self, c: &[u8; 64]) -> u64 {
        use safe_arch::{
            cmp_eq_mask_i8_m128i, load_unaligned_m128i, min_u8_m128i, move_mask_i8_m128i,
            set_splat_i8_m128i,
        };
        let quote = set_splat_i8_m128i(b'"' as i8);
        let backslash = set_splat_i8_m128i(b'\\' as i8);
        let control = set_splat_i8_m128i(0x1f);
        let mut word = 0u64;
        for (k, block) in c.as_chunks::<16>().0.iter().enumerate() {
            let v = load_unaligned_m128i(block);
            let q = move_mask_i8_m128i(cmp_eq_mask_i8_m128i(v, quote)) as u16;
            word |= u64::from(q) << (16 * k);
            // Unsigned: a byte is a control character when min(byte, 0x1f) is itself.
            self.odd |= cmp_eq_mask_i8_m128i(v, backslash)
                | cmp_eq_mask_i8_m128i(min_u8_m128i(v, control), v);
            self.high |= v;
        }
        word
    }

    /// Whether an odd byte was seen, and whether a non-ASCII one was.
    fn finish(&self) -> (bool, bool) {
        use safe_arch::move_mask_i8_m128i;
        (
            move_mask_i8_m128i(self.odd) != 0,
            move_mask_i8_m128i(self.high) != 0,
        )
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
type Acc = PortableAcc;

/// The same byte by byte: elsewhere than x86_64, and the reference the SSE2
/// version is tested against.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[derive(Default)]
struct PortableAcc {
    odd: bool,
    high: bool,
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
impl PortableAcc {
    fn chunk(&mut self, c: &[u8; 64]) -> u64 {
        let mut word = 0u64;
        for (i, &b) in c.iter().enumerate() {
            if b == b'"' {
                word |= 1 << i;
            }
            self.odd |= b == b'\\' || b < 0x20;
            self.high |= b >= 0x80;
        }
        word
    }

    fn finish(&self) -> (bool, bool) {
        (self.odd, self.high)
    }
}

/// What the walk expects next outside strings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A key, or `}` right after `{`.
    KeyOrClose,
    /// A key (after a comma in an object).
    Key,
    /// The value of an object's member (after the colon).
    Member,
    /// An array's element, or `]` right after `[`.
    ElementOrClose,
    /// An array's element (after a comma).
    Element,
    /// A comma or the closing bracket of the container.
    Next,
}

/// Walks the structure of `l` (whose quotes are `quotes`), telling `v`.
/// Strings are skipped from quote to quote with the bit masks; only the few
/// bytes between them are looked at one by one, and the usual member,
/// `"key": "value",`, is read in one step.
fn walk_structure<'a, V: Visit<'a>>(l: &'a [u8], quotes: &[u64], v: &mut V) -> Option<()> {
    if l.first() != Some(&b'{') {
        return None;
    }
    // Bit `d` set: the container at depth `d + 1` is an object.
    let mut objects: u64 = 1;
    let mut depth = 1u32;
    let mut expect = Expect::KeyOrClose;
    let mut i = 1;
    while depth > 0 {
        let c = *l.get(i)?;
        i += 1;
        let told = depth <= V::DEPTH;
        match (expect, c) {
            (_, b' ') => {}
            (Expect::KeyOrClose | Expect::Key, b'"') => {
                // Members `"key": "value",` one after the other, without
                // going back to the dispatch above for each.
                loop {
                    let end = next_quote(quotes, i)?;
                    if told {
                        v.key(depth, l.get(i..end)?)?;
                    }
                    i = skip_spaces(l, end + 1);
                    if l.get(i) != Some(&b':') {
                        return None;
                    }
                    i = skip_spaces(l, i + 1);
                    if l.get(i) != Some(&b'"') {
                        expect = Expect::Member;
                        break;
                    }
                    let end = next_quote(quotes, i + 1)?;
                    if told {
                        v.value(depth, Value::Str(l.get(i + 1..end)?))?;
                    }
                    i = skip_spaces(l, end + 1);
                    if l.get(i) != Some(&b',') {
                        expect = Expect::Next;
                        break;
                    }
                    i = skip_spaces(l, i + 1);
                    if l.get(i) != Some(&b'"') {
                        expect = Expect::Key;
                        break;
                    }
                    i += 1;
                }
            }
            (Expect::Member | Expect::Element | Expect::ElementOrClose, b'"') => {
                let end = next_quote(quotes, i)?;
                if told && expect == Expect::Member {
                    v.value(depth, Value::Str(l.get(i..end)?))?;
                }
                i = end + 1;
                expect = Expect::Next;
            }
            (Expect::Member | Expect::Element | Expect::ElementOrClose, open @ (b'{' | b'[')) => {
                if depth == MAX_DEPTH {
                    return None;
                }
                let object = open == b'{';
                if told && expect == Expect::Member {
                    v.value(depth, if object { Value::Object } else { Value::Array })?;
                }
                if object {
                    objects |= 1 << depth;
                    expect = Expect::KeyOrClose;
                } else {
                    objects &= !(1 << depth);
                    expect = Expect::ElementOrClose;
                }
                depth += 1;
            }
            (Expect::Member | Expect::Element | Expect::ElementOrClose, b't' | b'f' | b'n') => {
                let (rest, value): (&[u8], _) = match c {
                    b't' => (b"rue", Value::Bool),
                    b'f' => (b"alse", Value::Bool),
                    _ => (b"ull", Value::Null),
                };
                if !l.get(i..)?.starts_with(rest) {
                    return None;
                }
                i += rest.len();
                if told && expect == Expect::Member {
                    v.value(depth, value)?;
                }
                expect = Expect::Next;
            }
            (Expect::Next, b',') => {
                expect = if objects & (1 << (depth - 1)) != 0 {
                    Expect::Key
                } else {
                    Expect::Element
                };
            }
            (Expect::Next | Expect::KeyOrClose, b'}')
            | (Expect::Next | Expect::ElementOrClose, b']')
                if (objects & (1 << (depth - 1)) != 0) == (c == b'}') =>
            {
                depth -= 1;
                expect = Expect::Next;
            }
            _ => return None,
        }
    }
    if !l.get(i..)?.iter().all(|&c| c == b' ') {
        return None;
    }
    Some(())
}

/// The position of the first byte at or after `i` that is not a space.
fn skip_spaces(l: &[u8], mut i: usize) -> usize {
    while l.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// The position of the first quote at or after `from`. Inlined: it runs
/// twice per member, and the call cost as much as the search.
#[inline(always)]
fn next_quote(quotes: &[u64], from: usize) -> Option<usize> {
    let mut word = from / 64;
    let mut bits = *quotes.get(word)? >> (from % 64);
    let mut base = from;
    while bits == 0 {
        word += 1;
        bits = *quotes.get(word)?;
        base = word * 64;
    }
    Some(base + bits.trailing_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_masks_agree_with_the_byte_by_byte_reference() {
        let mut next = crate::test_rng(0x853c_49e6_748f_ea9b);
        for _ in 0..50_000 {
            let mut chunk = [b' '; 64];
            // Mostly clean chunks, so that the accumulated flags stay informative.
            let clean = !next().is_multiple_of(4);
            for b in chunk.iter_mut() {
                let rng = next();
                // Bias towards the interesting bytes.
                *b = match (rng % 8, clean) {
                    (0, _) => b'"',
                    (1, false) => b'\\',
                    (2, false) => (rng >> 8) as u8 & 0x1f,
                    (3, false) => 0x80 | (rng >> 8) as u8,
                    (_, false) => (rng >> 16) as u8,
                    (_, true) => 0x20 + ((rng >> 16) as u8 % 0x60),
                };
            }
            let (mut fast, mut reference) = (Acc::default(), PortableAcc::default());
            assert_eq!(fast.chunk(&chunk), reference.chunk(&chunk), "{chunk:?}");
            assert_eq!(fast.finish(), reference.finish(), "{chunk:?}");
        }
    }

    #[test]
    fn messages_of_simple_lines_only() {
        let line = br#"{"message": "Handler 'x' succeeded.", "object": {"kind": "K", "namespace": null, "ok": [true, false]}, "severity": "info"}"#;
        assert_eq!(json_message(line), Some(&b"Handler 'x' succeeded."[..]));
        for bad in [
            &br#"{"message": "a\"b"}"#[..],
            br#"{"message": "x", "n": 1}"#,
            br#"{"message": "x", "exc_info": "t"}"#,
            br#"{"message": "x", "message": "y"}"#,
            br#"{"message": "x""#,
            br#"{"message": "x", "o": {"a": "b"}"#,
            b"{\"message\": \"x\ty\"}",
            b"{\"message\": \"\xff\"}",
            br#"{"a": "b"}"#,
            br#"["message", "x"]"#,
            br#"{"message": null}"#,
            br#"{"message": "x",}"#,
            br#"{"message": "x", "o": [1]}"#,
            br#"{"message": "x", "o": ["a",]}"#,
            br#"{"message": "x", "o": {"a": "b"]}"#,
            br#"{"message": "x", "o": ["a"}}"#,
            br#"{"message": "x", "o": {"a"}}"#,
            br#"{"message": "x", "o": tru}"#,
            br#"{"message": "x", "o": nulls}"#,
            br#"{"message" "x"}"#,
            br#"{"message": "x"} x"#,
            br#"{"message": "x"}}"#,
            br#" {"message": "x"}"#,
        ] {
            assert_eq!(json_message(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        for good in [
            &br#"{"message": "x"} "#[..],
            br#"{"message":"x","o":{},"a":[],"n":[[{"k":[null]}]]}"#,
            br#"{ "o" : { "message" : "y" } , "message" : "x" }"#,
        ] {
            assert_eq!(
                json_message(good),
                Some(&b"x"[..]),
                "{}",
                String::from_utf8_lossy(good)
            );
        }
        assert_eq!(
            json_message("{\"message\": \"caf\u{e9}\"}".as_bytes()),
            Some("caf\u{e9}".as_bytes())
        );
    }

    #[test]
    fn long_strings_and_lines_across_chunks() {
        let long = "m".repeat(300);
        let line = format!(
            r#"{{"a": "{}", "message": "{long}", "z": "{}"}}"#,
            "b".repeat(63),
            "c".repeat(64)
        );
        assert_eq!(json_message(line.as_bytes()), Some(long.as_bytes()));
        let too_long = format!(r#"{{"message": "{}"}}"#, "m".repeat(MAX_LINE));
        assert_eq!(json_message(too_long.as_bytes()), None);
        let at_most = format!(r#"{{"message": "{}"}}"#, "m".repeat(MAX_LINE - 15));
        assert_eq!(at_most.len(), MAX_LINE);
        assert!(json_message(at_most.as_bytes()).is_some());
    }

    /// Mutants of kopf's JSON lines: whatever [`json_message`] accepts,
    /// serde_json reads as an object with that message and no `exc_info`.
    #[test]
    fn accepted_lines_are_what_serde_reads() {
        let bases: [&[u8]; 3] = [
            br#"{"message": "Handler 'x' succeeded.", "object": {"apiVersion": "v1", "kind": "K", "name": "n", "namespace": null, "uid": "u"}, "severity": "info", "timestamp": "2026-11-30T00:00:00.017412+00:00"}"#,
            br#"{"message":"a","o":{},"a":[],"n":[[{"k":[null,true,false]}]]}"#,
            b"{ \"t\" : \"x\" , \"message\" : \"caf\xc3\xa9\" }  ",
        ];
        let alphabet = b"{}[]:,\" tfnrulase0123456789xm";
        let mut next = crate::test_rng(0x9e37_79b9_7f4a_7c15);
        let (mut accepted, mut refused) = (0, 0);
        for round in 0..60_000 {
            let mut l = bases[round % bases.len()].to_vec();
            let edits = 1 + next() % 3;
            crate::test_mutate(&mut l, alphabet, edits, &mut next);
            match json_message(&l) {
                Some(m) => {
                    accepted += 1;
                    let v: serde_json::Value = serde_json::from_slice(&l)
                        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&l)));
                    let o = v.as_object().expect("an object");
                    assert_eq!(
                        o.get("message").and_then(|m| m.as_str()).map(str::as_bytes),
                        Some(m),
                        "{}",
                        String::from_utf8_lossy(&l)
                    );
                    assert!(!o.contains_key("exc_info"));
                }
                None => refused += 1,
            }
        }
        // Both sides of the boundary were exercised.
        assert!(accepted > 5_000 && refused > 5_000, "{accepted} {refused}");
    }

    #[test]
    fn depth_is_bounded() {
        let nested = |d: usize| {
            format!(
                r#"{{"message": "x", "o": {}{}}}"#,
                "[".repeat(d),
                "]".repeat(d)
            )
        };
        assert!(json_message(nested(MAX_DEPTH as usize - 1).as_bytes()).is_some());
        assert_eq!(json_message(nested(MAX_DEPTH as usize).as_bytes()), None);
    }
}

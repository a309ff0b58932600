//! The serde-free reading of simple JSON log lines, for the quick path of
//! [`Routine::Count`](crate::Routine::Count): about a third of a fleet's lines
//! are JSON, and proving that such a line is a routine kopf record must cost
//! far less than deserialising it.

/// The raw `message` value of a JSON line that `Parser::json` accepts as
/// kopf's, with that message and no `exc_info`; `None` when unsure.
///
/// Only simple lines qualify, so that the answer is certain without serde:
/// no backslash (strings are then their raw bytes, and every quote delimits
/// one), no control character, valid UTF-8, no number (serde_json may reject
/// some), nesting of at most 32 (serde_json stops at 128), one `message` key
/// with a string value. `quotes` is scratch space, reused across lines.
pub(crate) fn json_message<'l>(l: &'l [u8], quotes: &mut Vec<u32>) -> Option<&'l [u8]> {
    find_quotes(l, quotes)?;
    let mut s = Scan {
        b: l,
        i: 0,
        quotes,
        q: 0,
    };
    s.eat(b'{')?;
    s.ws();
    let mut message = None;
    loop {
        s.ws();
        let key = s.string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        match key {
            b"message" if message.is_none() => message = Some(s.string()?),
            b"message" | b"exc_info" => return None,
            _ => s.value(0)?,
        }
        s.ws();
        match s.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    s.ws();
    if s.i != l.len() {
        return None;
    }
    message
}

/// Fills `quotes` with the offsets of every `"` in `l`, sixteen bytes per
/// step; `None` when `l` has a backslash or a control character, is not
/// valid UTF-8, or is too long to index with `u32`.
fn find_quotes(l: &[u8], quotes: &mut Vec<u32>) -> Option<()> {
    quotes.clear();
    u32::try_from(l.len()).ok()?;
    let mut non_ascii = false;
    let mut blocks = l.chunks_exact(16);
    let mut at = 0u32;
    for block in blocks.by_ref() {
        let mut a = [0u8; 16];
        a.copy_from_slice(block);
        non_ascii |= add_block(&a, at, quotes)?;
        at += 16;
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // Padded with spaces, which are none of the bytes looked for.
        let mut a = [b' '; 16];
        a[..rest.len()].copy_from_slice(rest);
        non_ascii |= add_block(&a, at, quotes)?;
    }
    if non_ascii && std::str::from_utf8(l).is_err() {
        return None;
    }
    Some(())
}

/// Adds the quotes of the block at offset `at`; whether it has non-ASCII
/// bytes; `None` at a backslash or a control character.
fn add_block(block: &[u8; 16], at: u32, quotes: &mut Vec<u32>) -> Option<bool> {
    let m = block_masks(block);
    if m.odd != 0 {
        return None;
    }
    let mut bits = m.quote;
    while bits != 0 {
        quotes.push(at + bits.trailing_zeros());
        bits &= bits - 1;
    }
    Some(m.high != 0)
}

/// One bit per byte of a 16-byte block.
#[derive(Debug, PartialEq, Eq)]
struct BlockMasks {
    /// `"`.
    quote: u16,
    /// `\\` or below 0x20.
    odd: u16,
    /// 0x80 or more.
    high: u16,
}

/// SSE2 (always there on x86_64): a few instructions per 16 bytes.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn block_masks(block: &[u8; 16]) -> BlockMasks {
    use safe_arch::{
        cmp_eq_mask_i8_m128i, cmp_lt_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let v = load_unaligned_m128i(block);
    let mask = |m| move_mask_i8_m128i(m) as u16;
    let quote = mask(cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'"' as i8)));
    let backslash = mask(cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'\\' as i8)));
    // Signed compare: bytes of 0x80 or more are negative, so they are "below"
    // 0x20 too and are taken out again.
    let below = mask(cmp_lt_mask_i8_m128i(v, set_splat_i8_m128i(0x20)));
    let high = mask(v);
    BlockMasks {
        quote,
        odd: backslash | (below & !high),
        high,
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn block_masks(block: &[u8; 16]) -> BlockMasks {
    portable_block_masks(block)
}

/// The same masks byte by byte: elsewhere than x86_64, and the reference
/// the SSE2 version is tested against.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
fn portable_block_masks(block: &[u8; 16]) -> BlockMasks {
    let mut m = BlockMasks {
        quote: 0,
        odd: 0,
        high: 0,
    };
    for (i, &c) in block.iter().enumerate() {
        let bit = 1u16 << i;
        if c == b'"' {
            m.quote |= bit;
        }
        if c == b'\\' || c < 0x20 {
            m.odd |= bit;
        }
        if c >= 0x80 {
            m.high |= bit;
        }
    }
    m
}

/// A cursor over a JSON line for [`json_message`].
struct Scan<'a, 'q> {
    b: &'a [u8],
    i: usize,
    /// Offsets of every quote of the line.
    quotes: &'q [u32],
    /// The next string's opening quote in `quotes`.
    q: usize,
}

impl<'a> Scan<'a, '_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    /// Spaces only: the other JSON whitespace are control characters, excluded.
    fn ws(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    /// A string: its raw bytes, between this quote and the next one (the
    /// line has no backslash, so no quote is escaped).
    fn string(&mut self) -> Option<&'a [u8]> {
        if self.peek()? != b'"' || self.quotes.get(self.q).copied()? as usize != self.i {
            return None;
        }
        let end = self.quotes.get(self.q + 1).copied()? as usize;
        self.q += 2;
        let s = self.b.get(self.i + 1..end)?;
        self.i = end + 1;
        Some(s)
    }

    fn literal(&mut self, w: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Some(())
        } else {
            None
        }
    }

    /// Skips a value: strings, objects, arrays, `true`, `false`, `null`.
    fn value(&mut self, depth: u32) -> Option<()> {
        if depth > 32 {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => {
                self.i += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => {}
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => {}
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_masks_agree_with_the_byte_by_byte_reference() {
        let mut rng: u64 = 0x853c_49e6_748f_ea9b;
        for _ in 0..200_000 {
            let mut block = [0u8; 16];
            for b in block.iter_mut() {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                // Bias towards the interesting bytes.
                *b = match rng % 8 {
                    0 => b'"',
                    1 => b'\\',
                    2 => (rng >> 8) as u8 & 0x1f,
                    3 => 0x80 | (rng >> 8) as u8,
                    _ => (rng >> 16) as u8,
                };
            }
            assert_eq!(
                block_masks(&block),
                portable_block_masks(&block),
                "{block:?}"
            );
        }
    }

    #[test]
    fn messages_of_simple_lines_only() {
        let mut q = Vec::new();
        let line = br#"{"message": "Handler 'x' succeeded.", "object": {"kind": "K", "namespace": null, "ok": [true, false]}, "severity": "info"}"#;
        assert_eq!(
            json_message(line, &mut q),
            Some(&b"Handler 'x' succeeded."[..])
        );
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
        ] {
            assert_eq!(
                json_message(bad, &mut q),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(
            json_message(br#"{"message": "x"} "#, &mut q),
            Some(&b"x"[..])
        );
        assert_eq!(
            json_message("{\"message\": \"caf\u{e9}\"}".as_bytes(), &mut q),
            Some("caf\u{e9}".as_bytes())
        );
    }
}

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
/// with a string value, at most [`MAX_LINE`] bytes.
pub(crate) fn json_message(l: &[u8]) -> Option<&[u8]> {
    let mut quotes = [0u16; MAX_LINE / 16];
    find_quotes(l, &mut quotes)?;
    let mut s = Scan {
        b: l,
        i: 0,
        quotes: &quotes,
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
            _ => s.value()?,
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

/// The longest line [`json_message`] reads (kopf's routine JSON lines are a
/// few hundred bytes; longer ones go to serde): its masks fit on the stack.
const MAX_LINE: usize = 2048;

/// The deepest nesting [`json_message`] follows (serde_json allows 128).
const MAX_DEPTH: u32 = 32;

/// Sets, per 16-byte block of `l`, the bits of its quotes in `quotes`;
/// `None` when `l` has a backslash or a control character, is not valid
/// UTF-8, or is longer than `quotes` covers.
fn find_quotes(l: &[u8], quotes: &mut [u16]) -> Option<()> {
    if l.len() > quotes.len() * 16 {
        return None;
    }
    let mut non_ascii = false;
    let mut blocks = l.chunks_exact(16);
    let mut slots = quotes.iter_mut();
    for block in blocks.by_ref() {
        let mut a = [0u8; 16];
        a.copy_from_slice(block);
        let m = block_masks(&a);
        if m.odd != 0 {
            return None;
        }
        non_ascii |= m.high != 0;
        *slots.next()? = m.quote;
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // Padded with spaces, which are none of the bytes looked for.
        let mut a = [b' '; 16];
        a[..rest.len()].copy_from_slice(rest);
        let m = block_masks(&a);
        if m.odd != 0 {
            return None;
        }
        non_ascii |= m.high != 0;
        *slots.next()? = m.quote;
    }
    if non_ascii && std::str::from_utf8(l).is_err() {
        return None;
    }
    Some(())
}

/// One bit per byte of a 16-byte block.
#[derive(Debug, PartialEq, Eq)]
struct BlockMasks {
    /// `"`.
    quote: u16,
    /// A backslash or a byte below 0x20.
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
    /// The quotes of the line: one bit per byte, one word per 16 bytes.
    quotes: &'q [u16],
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
        self.eat(b'"')?;
        let start = self.i;
        let mut at = start;
        let end = loop {
            let block = at / 16;
            let bits = self.quotes.get(block)? >> (at % 16);
            if bits != 0 {
                break at + bits.trailing_zeros() as usize;
            }
            at = (block + 1) * 16;
        };
        self.i = end + 1;
        self.b.get(start..end)
    }

    fn literal(&mut self, w: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Some(())
        } else {
            None
        }
    }

    /// Skips a value: strings, objects, arrays, `true`, `false`, `null`,
    /// nested at most [`MAX_DEPTH`] deep. A loop with a stack of bits (object
    /// or array per level) rather than recursion, so that the cursor stays in
    /// registers.
    fn value(&mut self) -> Option<()> {
        // Bit `d` set: the container at depth `d` is an object.
        let mut objects: u64 = 0;
        let mut depth = 0u32;
        loop {
            // A value starts here.
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                open @ (b'{' | b'[') => {
                    self.i += 1;
                    self.ws();
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                    } else {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        if open == b'{' {
                            objects |= 1 << depth;
                            self.member_key()?;
                        } else {
                            objects &= !(1 << depth);
                        }
                        depth += 1;
                        continue;
                    }
                }
                _ => return None,
            }
            // After a value: separators and closing brackets.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.ws();
                let in_object = objects & (1 << (depth - 1)) != 0;
                match (self.next()?, in_object) {
                    (b',', true) => {
                        self.ws();
                        self.member_key()?;
                        break;
                    }
                    (b',', false) => {
                        self.ws();
                        break;
                    }
                    (b'}', true) | (b']', false) => depth -= 1,
                    _ => return None,
                }
            }
        }
    }

    /// `"key" : ` up to the member's value.
    fn member_key(&mut self) -> Option<()> {
        self.string()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
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
        ] {
            assert_eq!(json_message(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(json_message(br#"{"message": "x"} "#), Some(&b"x"[..]));
        assert_eq!(
            json_message("{\"message\": \"caf\u{e9}\"}".as_bytes()),
            Some("caf\u{e9}".as_bytes())
        );
    }
}

//! Byte searches eight bytes at a time ("SWAR") for the short distances of
//! one line's fields (an object prefix, a handler id): `memchr`'s set-up
//! costs more than it saves over a few dozen bytes.

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The bytes of the word `w` equal to `b`, flagged in their high bit; the
/// lowest flag is the first match (higher ones may be false), eight bytes at
/// a time ("SWAR").
fn flag_equal(w: u64, b: u8) -> u64 {
    let x = w ^ (LOW_BITS * u64::from(b));
    x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS
}

/// The first byte in `hay` that `is` holds; `hits` flags such bytes in a
/// little-endian word of eight (its lowest flag must be a true one).
fn find_by(hay: &[u8], hits: impl Fn(u64) -> u64, is: impl Fn(u8) -> bool) -> Option<usize> {
    let mut words = hay.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let hit = hits(u64::from_le_bytes(w));
        if hit != 0 {
            return Some(at + (hit.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| is(c))
        .map(|i| at + i)
}

/// The first `needle` in `hay`, for the short distances of an object
/// prefix: eight bytes per step, without `memchr`'s set-up, which costs more
/// than it saves over a few dozen bytes.
pub(crate) fn find_near(needle: u8, hay: &[u8]) -> Option<usize> {
    find_by(hay, |w| flag_equal(w, needle), |c| c == needle)
}

/// The first `a` or `b` in `hay` (see [`find_near`]).
pub(crate) fn find_near2(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    // The lowest flag of each is a true match: the lowest of both is the first.
    find_by(
        hay,
        |w| flag_equal(w, a) | flag_equal(w, b),
        |c| c == a || c == b,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_match_as_a_byte_loop_finds_it() {
        let mut next = crate::test_rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let rng = next();
            let len = (rng % 40) as usize;
            let hay: Vec<u8> = (0..len)
                .map(|i| b"ab'\\\x00\x01\xff\x80"[((rng >> (i % 50)) % 8) as usize])
                .collect();
            assert_eq!(find_near(b'\'', &hay), hay.iter().position(|&c| c == b'\''));
            assert_eq!(
                find_near2(b'\'', b'\\', &hay),
                hay.iter().position(|&c| c == b'\'' || c == b'\\'),
                "{hay:?}"
            );
        }
    }
}

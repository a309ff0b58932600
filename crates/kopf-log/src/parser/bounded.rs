//! Bounded, lossy copies of line parts.

use crate::classify::own;

/// Lossy UTF-8 of at most `max` bytes (after replacement characters), cut on
/// a char boundary; true when cut.
pub(crate) fn bounded_lossy(b: &[u8], max: usize) -> (String, bool) {
    bounded(b, None, max)
}

/// [`bounded_lossy`] of a sub-slice of `whole` (copied without re-validation).
pub(super) fn bounded(b: &[u8], whole: Option<&str>, max: usize) -> (String, bool) {
    let mut cut = b.len() > max;
    let mut end = b.len().min(max);
    // Back off over UTF-8 continuation bytes (at most 3 for valid text).
    let mut steps = 0;
    while cut && end > 0 && steps < 3 && (b[end] & 0xC0) == 0x80 {
        end -= 1;
        steps += 1;
    }
    let mut s = own(whole, &b[..end]);
    // Invalid bytes become 3-byte replacement characters: re-apply the bound.
    cut |= truncate_string(&mut s, max);
    (s, cut)
}

pub(super) fn truncate_string(s: &mut String, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    true
}

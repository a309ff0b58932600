//! Bounded copies of the text a record quotes, redacted before they are cut.

use crate::classify::own;
use crate::redact;

/// Lossy UTF-8 of `b` (a sub-slice of `whole` when given: copied without
/// re-validation), at most `max` bytes, cut on a char boundary; true when cut.
///
/// A text longer than `max` is [`redact`]ed whole before it is cut, so that
/// what is kept never ends in the head of a secret whose shape needs its
/// tail (`https://user:pass` before the `@`, `ghp_` and a few characters, a
/// PEM block's first lines). A text within the bound is kept as it is:
/// whoever quotes it redacts it whole.
pub(super) fn bounded_redacted(b: &[u8], whole: Option<&str>, max: usize) -> (String, bool) {
    let mut s = own(whole, b);
    let cut = truncate_redacted(&mut s, max);
    (s, cut)
}

/// Cuts `s` to at most `max` bytes, [`redact`]ed whole first when it is
/// longer (see [`bounded_redacted`]); true when it was.
pub(super) fn truncate_redacted(s: &mut String, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    *s = redact(s);
    truncate_string(s, max);
    true
}

/// Cuts `s` to at most `max` bytes, on a char boundary; true when it was.
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

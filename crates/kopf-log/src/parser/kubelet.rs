//! The kubelet's `timestamps=true` prefix.

use crate::time::{HourCache, Timestamp, parse_rfc3339_cached};

/// Strips the kubelet's `timestamps=true` prefix (`2026-11-30T02:41:55.039412345Z `).
pub(super) fn strip_kubelet<'l>(l: &'l [u8], hours: &HourCache) -> (Option<Timestamp>, &'l [u8]) {
    // The kubelet's own form in the second of the line before: most lines.
    if let Some((ts, rest)) = hours.kubelet_prefix(l) {
        return (Some(ts), rest);
    }
    if l.len() >= 20
        && l[4] == b'-'
        && l[10] == b'T'
        && let Some((ts, n)) = parse_rfc3339_cached(l, hours)
    {
        if l.get(n) == Some(&b' ') {
            return (Some(ts), &l[n + 1..]);
        }
        if n == l.len() {
            return (Some(ts), &[]);
        }
    }
    (None, l)
}

#[cfg(test)]
mod tests;

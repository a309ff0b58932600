//! A small, dependency-free UTC timestamp: enough to order and window log
//! records without pulling a date-time crate into the parser.

use std::cell::Cell;
use std::fmt;

/// A point in time, UTC, as seconds since the Unix epoch plus nanoseconds.
///
/// Exists so that records carry a comparable time without a date-time
/// dependency; convert to `jiff`/`chrono` at the edges if needed
/// (`jiff::Timestamp::new(ts.secs, ts.nanos as i32)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z (negative before it).
    pub secs: i64,
    /// Nanoseconds within the second, `0..1_000_000_000`.
    pub nanos: u32,
}

impl Timestamp {
    /// Parses an RFC 3339 timestamp (`2026-11-30T02:41:55.039412345Z`,
    /// `2026-11-30T02:41:55.039412+00:00`, no fraction, or a space instead of
    /// `T`), as written by the kubelet and by kopf's JSON format.
    /// Returns `None` for anything else; never panics.
    pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
        let (ts, used) = parse_rfc3339_prefix(s.as_bytes())?;
        if used == s.len() { Some(ts) } else { None }
    }

    /// Parses kopf's `full` format time `2026-11-30 02:41:55,039`
    /// (Python's default `asctime`). The zone is not written in the log:
    /// it is taken as UTC, which is what containers run with by default.
    pub fn parse_asctime(s: &str) -> Option<Timestamp> {
        parse_asctime_bytes(s.as_bytes())
    }

    /// Milliseconds since the epoch (saturating), for quick arithmetic.
    pub fn as_millis(&self) -> i64 {
        self.secs
            .saturating_mul(1000)
            .saturating_add(i64::from(self.nanos / 1_000_000))
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC with nanoseconds when non-zero: `2026-11-30T02:41:55.039412345Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.secs.div_euclid(86_400);
        let sod = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            y,
            m,
            d,
            sod / 3600,
            (sod / 60) % 60,
            sod % 60
        )?;
        if self.nanos != 0 {
            // Like Go's RFC3339Nano: trailing zeros dropped.
            let mut n = self.nanos;
            let mut width = 9;
            while n.is_multiple_of(10) {
                n /= 10;
                width -= 1;
            }
            write!(f, ".{:0width$}", n, width = width)?;
        }
        f.write_str("Z")
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// [`Timestamp::parse_asctime`] on bytes (no UTF-8 check: non-ASCII fails anyway).
pub(crate) fn parse_asctime_bytes(b: &[u8]) -> Option<Timestamp> {
    parse_asctime_cached(b, &HourCache::default())
}

/// [`parse_asctime_bytes`] reusing the date and hour parsed last time.
pub(crate) fn parse_asctime_cached(b: &[u8], cache: &HourCache) -> Option<Timestamp> {
    if b.len() != 23 || b[19] != b',' {
        return None;
    }
    let secs = cache.parse(&b[..19], b' ')?;
    let millis = digits(&b[20..23])?;
    Some(Timestamp {
        secs,
        nanos: millis * 1_000_000,
    })
}

/// Parses an RFC 3339 timestamp at the start of `b`; returns it and the number
/// of bytes it used. Used to strip the kubelet's `timestamps=true` prefix.
pub(crate) fn parse_rfc3339_prefix(b: &[u8]) -> Option<(Timestamp, usize)> {
    parse_rfc3339_cached(b, &HourCache::default())
}

/// [`parse_rfc3339_prefix`] reusing the date and hour parsed last time.
pub(crate) fn parse_rfc3339_cached(b: &[u8], cache: &HourCache) -> Option<(Timestamp, usize)> {
    if b.len() < 20 {
        return None;
    }
    let sep = b[10];
    if sep != b'T' && sep != b't' && sep != b' ' {
        return None;
    }
    let mut secs = cache.parse(&b[..19], sep)?;
    let mut i = 19;
    let mut nanos: u32 = 0;
    if let Some((n, used)) = nine_digit_fraction(&b[19..]) {
        // The kubelet's own form (`.039412345Z`), on every line: no loop.
        nanos = n;
        i += used;
    } else if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return None;
        }
        for _ in n..9 {
            nanos *= 10;
        }
    }
    match b.get(i) {
        Some(b'Z') | Some(b'z') => i += 1,
        Some(&c) if c == b'+' || c == b'-' => {
            let off = b.get(i + 1..i + 6)?;
            if off[2] != b':' {
                return None;
            }
            let hh = i64::from(digits(&off[0..2])?);
            let mm = i64::from(digits(&off[3..5])?);
            if hh > 23 || mm > 59 {
                return None;
            }
            let offset = hh * 3600 + mm * 60;
            secs = if c == b'+' {
                secs - offset
            } else {
                secs + offset
            };
            i += 6;
        }
        _ => return None,
    }
    Some((Timestamp { secs, nanos }, i))
}

/// The length of the kubelet's form, `YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ`.
const KUBELET_FORM: usize = 30;

/// Eight ASCII digits read as one little-endian word (the first digit in the
/// lowest byte): their value, or `None` if a byte is not a digit. A few word
/// operations instead of a loop of eight multiplications.
fn eight_digits(w: u64) -> Option<u32> {
    const NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // 0x30..=0x3F, and still 0x3_ once 6 is added: 0x30..=0x39.
    if w & NIBBLES != ZEROS || w.wrapping_add(0x0606_0606_0606_0606) & NIBBLES != ZEROS {
        return None;
    }
    let d = w - ZEROS;
    // Pairs, then fours, then all eight (the most significant digit first).
    let pairs = d.wrapping_mul(10).wrapping_add(d >> 8);
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    let v = (pairs & MASK)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((pairs >> 16) & MASK).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    u32::try_from(v).ok()
}

/// `.NNNNNNNNN` followed by anything but a digit: the nanoseconds and 10.
fn nine_digit_fraction(b: &[u8]) -> Option<(u32, usize)> {
    let f: &[u8; 11] = b.get(..11)?.try_into().ok()?;
    if f[0] != b'.' || f[10].is_ascii_digit() {
        return None;
    }
    let mut n = 0u32;
    let mut all_digits = true;
    for &c in &f[1..10] {
        all_digits &= c.is_ascii_digit();
        n = n
            .wrapping_mul(10)
            .wrapping_add(u32::from(c.wrapping_sub(b'0')));
    }
    all_digits.then_some((n, 10))
}

/// The last second and the last hour parsed, with their seconds since the
/// epoch.
///
/// Exists because consecutive log lines almost always share the hour and
/// often the second: validating a date and converting it to days was about a
/// tenth of the scan's time, and a comparison of 19 (or 12) bytes replaces
/// it. The result is the same as parsing in full: only bytes that passed the
/// full validation are ever cached.
#[derive(Debug, Default)]
pub(crate) struct HourCache {
    /// `YYYY-MM-DD?HH:MM:SS` exactly as last seen (separator included), as
    /// integers: whole-word stores and loads, no byte-wise compare.
    second: Cell<Option<(SecondKey, i64)>>,
    /// `YYYY-MM-DD` and `HH` of the last full parse.
    hour: Cell<Option<([u8; 12], i64)>>,
}

impl HourCache {
    /// [`parse_date_time`] with the cache: seconds since the epoch.
    fn parse(&self, b: &[u8], sep: u8) -> Option<i64> {
        let b: &[u8; 19] = b.try_into().ok()?;
        let key = SecondKey::of(b);
        if let Some((seen, secs)) = self.second.get()
            && key == seen
        {
            return Some(secs);
        }
        let secs = self.parse_minute(b, sep)?;
        self.second.set(Some((key, secs)));
        Some(secs)
    }

    /// [`HourCache::kubelet_form`] followed by a space: the time and the
    /// rest of the line (what `strip_kubelet` strips from most lines).
    pub(crate) fn kubelet_prefix<'l>(&self, l: &'l [u8]) -> Option<(Timestamp, &'l [u8])> {
        let rest = l.get(KUBELET_FORM..)?.strip_prefix(b" ")?;
        Some((self.kubelet_form(l)?, rest))
    }

    /// The kubelet's form of a time in the second parsed last (consecutive
    /// lines mostly are): its bytes up to the second are compared, only the
    /// fraction is read. `None` for anything else (then parsed in full).
    ///
    /// Exists because the kubelet's prefix is on every line: this takes
    /// about a third of the general path's instructions.
    fn kubelet_form(&self, b: &[u8]) -> Option<Timestamp> {
        let b: &[u8; KUBELET_FORM] = b.get(..KUBELET_FORM)?.try_into().ok()?;
        let (key, secs) = self.second.get()?;
        let (head, tail) = b.split_at(19);
        if SecondKey::of(head.try_into().ok()?) != key || tail[0] != b'.' || tail[10] != b'Z' {
            return None;
        }
        let mut eight = [0u8; 8];
        eight.copy_from_slice(&tail[1..9]);
        let high = eight_digits(u64::from_le_bytes(eight))?;
        let last = tail[9];
        last.is_ascii_digit().then(|| Timestamp {
            secs,
            nanos: high * 10 + u32::from(last - b'0'),
        })
    }

    fn parse_minute(&self, b: &[u8; 19], sep: u8) -> Option<i64> {
        if let Some((key, base)) = self.hour.get()
            && b[..10] == key[..10]
            && b[11..13] == key[10..]
        {
            if b[10] != sep || b[13] != b':' || b[16] != b':' {
                return None;
            }
            let mi = i64::from(digits(&b[14..16])?);
            let ss = i64::from(digits(&b[17..19])?);
            if mi > 59 || ss > 60 {
                return None;
            }
            return Some(base + mi * 60 + ss.min(59));
        }
        let (days, secs) = parse_date_time(b, sep)?;
        let mut key = [0u8; 12];
        key[..10].copy_from_slice(&b[..10]);
        key[10..].copy_from_slice(&b[11..13]);
        let hh = i64::from(digits(&b[11..13])?);
        self.hour.set(Some((key, days * 86_400 + hh * 3600)));
        Some(secs)
    }
}

/// The 19 bytes of `YYYY-MM-DD?HH:MM:SS` as three overlapping words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SecondKey(u64, u64, u64);

impl SecondKey {
    fn of(b: &[u8; 19]) -> Self {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        SecondKey(word(0), word(8), word(11))
    }
}

/// `YYYY-MM-DD?HH:MM:SS` (19 bytes) to (days, seconds since epoch).
fn parse_date_time(b: &[u8], sep: u8) -> Option<(i64, i64)> {
    if b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != sep
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let y = i64::from(digits(&b[0..4])?);
    let m = digits(&b[5..7])?;
    let d = digits(&b[8..10])?;
    let hh = i64::from(digits(&b[11..13])?);
    let mi = i64::from(digits(&b[14..16])?);
    let ss = i64::from(digits(&b[17..19])?);
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) || hh > 23 || mi > 59 || ss > 60
    {
        return None;
    }
    let days = days_from_civil(y, m, d);
    Some((days, days * 86_400 + hh * 3600 + mi * 60 + ss.min(59)))
}

fn digits(b: &[u8]) -> Option<u32> {
    let mut v: u32 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_and_json_forms() {
        let a = Timestamp::parse_rfc3339("2026-11-30T02:41:55.039412345Z").expect("valid");
        assert_eq!(a.nanos, 39_412_345);
        assert_eq!(a.to_string(), "2026-11-30T02:41:55.039412345Z");
        let b = Timestamp::parse_rfc3339("2026-11-30T02:41:55.039412+00:00").expect("valid");
        assert_eq!(b.secs, a.secs);
        assert_eq!(b.nanos, 39_412_000);
        let c = Timestamp::parse_rfc3339("2026-11-30T04:41:55+02:00").expect("valid");
        assert_eq!(c.secs, a.secs);
        assert_eq!(
            Timestamp::parse_rfc3339("1970-01-01T00:00:00Z").map(|t| t.secs),
            Some(0)
        );
        let d = Timestamp::parse_asctime("2026-11-30 02:41:55,039").expect("valid");
        assert_eq!(d.secs, a.secs);
        assert_eq!(d.nanos, 39_000_000);
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "2026-13-30T02:41:55Z",
            "2026-02-30T02:41:55Z",
            "2026-11-30T24:41:55Z",
            "2026-11-30T02:41:55",
            "2026-11-30T02:41:55.Z",
            "2026-11-30T02:41:55+0000",
            "２０２６-11-30T02:41:55Z",
        ] {
            assert!(Timestamp::parse_rfc3339(s).is_none(), "{s}");
        }
    }

    #[test]
    fn the_cache_changes_no_result() {
        let cache = HourCache::default();
        let mut next = crate::test_rng(0x9e37_79b9_7f4a_7c15);
        let bases: [&[u8]; 4] = [
            b"2024-02-29T23:59:60.5Z",
            b"2026-11-30T02:41:55.039412345Z",
            b"2026-11-30T02:41:55.0394123456+01:00",
            b"2026-11-30T02:41:55.999999999Z ",
        ];
        for round in 0..40_000 {
            let mut b = bases[round % bases.len()].to_vec();
            // Mutate a few bytes to digits, separators or junk.
            for _ in 0..(next() % 4) {
                let i = (next() as usize) % b.len();
                b[i] = b"0123456789T -:x.Z+/\xb0"[(next() % 20) as usize];
            }
            assert_eq!(
                parse_rfc3339_cached(&b, &cache),
                parse_rfc3339_prefix(&b),
                "{}",
                String::from_utf8_lossy(&b)
            );
            let mut a = [0u8; 23];
            a.copy_from_slice(b"2026-11-30 02:41:55,039");
            a[..19].copy_from_slice(&b[..19]);
            a[10] = b' ';
            assert_eq!(parse_asctime_cached(&a, &cache), parse_asctime_bytes(&a));
        }
    }

    #[test]
    fn the_fraction_fast_path_agrees_with_the_loop() {
        // The general loop of `parse_rfc3339_cached`, restricted to 9 digits.
        let by_loop = |b: &[u8]| -> Option<(u32, usize)> {
            if b.first() != Some(&b'.') {
                return None;
            }
            let digits = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits != 9 {
                return None;
            }
            let n = b[1..10]
                .iter()
                .fold(0u32, |n, c| n * 10 + u32::from(c - b'0'));
            Some((n, 10))
        };
        let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..50_000 {
            let mut b = *b".039412345Z";
            for _ in 0..(rng % 3) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                b[(rng % 11) as usize] = b"0123456789.Z/:"[((rng >> 8) % 14) as usize];
            }
            rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            assert_eq!(nine_digit_fraction(&b), by_loop(&b), "{:?}", b);
        }
    }

    #[test]
    fn eight_digits_reads_every_number_and_refuses_non_digits() {
        for n in (0..100_000_000u32)
            .step_by(99_991)
            .chain([0, 1, 9, 10, 99_999_999])
        {
            let mut w = [0u8; 8];
            w.copy_from_slice(format!("{n:08}").as_bytes());
            assert_eq!(eight_digits(u64::from_le_bytes(w)), Some(n), "{n}");
        }
        for bad in [
            *b"1234567/",
            *b"1234567:",
            *b"a2345678",
            *b"1234 678",
            *b"\xb12345678",
            *b"\xb9\xb9345678",
        ] {
            assert_eq!(eight_digits(u64::from_le_bytes(bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn civil_roundtrip() {
        for days in [-800_000i64, -1, 0, 1, 59, 365, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}

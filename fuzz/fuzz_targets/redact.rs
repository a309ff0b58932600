//! `redact` and `excerpt` on arbitrary text: no panics, bounded output.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let r = kopf_log::redact(&s);
    assert!(r.len() <= s.len() * 2 + 8);
    let e = kopf_log::excerpt(&s, 40);
    assert!(e.chars().count() <= 40);
    let _ = kopf_log::strip_ansi(&s);
    let _ = kopf_log::parse_forbidden(&s);
    let _ = kopf_log::classify_message(&s);
});

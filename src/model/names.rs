//! Names of the objects the auditor writes for a KopfAudit (its Events, its
//! PolicyReport), derived from the KopfAudit's name. That name may itself be 253
//! characters long, the API's bound, so a derived name that would pass the bound keeps a
//! readable prefix of it and a stable hash of the whole.

/// The API's bound on object names (a DNS subdomain, RFC 1123).
pub(crate) const MAX_OBJECT_NAME: usize = 253;

/// Hex digits of the hash that stands for the part of a name left out.
const HASH_DIGITS: usize = 16;

/// `prefix`, `name` and `suffix` joined, when that fits in `max` bytes; otherwise the
/// longest prefix of `name` that fits, then `-` and the 64-bit FNV-1a hash of the whole
/// `name` in hex, then `suffix`. The hash is stable across processes and releases, so
/// that one KopfAudit always gets the same name (its PolicyReport is applied in place);
/// the cut drops trailing `-` and `.`, so that a DNS-subdomain name stays one.
pub(crate) fn derived(prefix: &str, name: &str, suffix: &str, max: usize) -> String {
    if prefix.len() + name.len() + suffix.len() <= max {
        return format!("{prefix}{name}{suffix}");
    }
    let hash = format!("{:016x}", fnv1a64(name.as_bytes()));
    let room = max.saturating_sub(prefix.len() + suffix.len() + HASH_DIGITS + 1);
    let mut end = room.min(name.len());
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let kept = name[..end].trim_end_matches(['-', '.']);
    if kept.is_empty() {
        format!("{prefix}{hash}{suffix}")
    } else {
        format!("{prefix}{kept}-{hash}{suffix}")
    }
}

/// FNV-1a, 64 bits: a fixed, documented algorithm (unlike `std`'s `DefaultHasher`,
/// which may change between Rust releases).
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// Whether `name` is a DNS subdomain as the API server checks object names: at most
/// 253 characters, dot-separated labels of lowercase letters, digits and `-`, each
/// starting and ending with a letter or digit.
#[cfg(test)]
pub(crate) fn is_dns_subdomain(name: &str) -> bool {
    let label_ok = |label: &str| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b.first() != Some(&b'-')
            && b.last() != Some(&b'-')
    };
    name.len() <= MAX_OBJECT_NAME && name.split('.').all(label_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 253-character KopfAudit names, cut by the derivations at `-`, `.` and letters.
    fn long_names() -> Vec<String> {
        let mut names = vec!["a".repeat(253), format!("{}end", "long-name-".repeat(25))];
        for i in 0..40 {
            let mut name = format!("{}x", "ab.c-d".repeat(42));
            name.truncate(253 - i);
            let name = name.trim_end_matches(['-', '.']).to_string();
            names.push(format!("{name}{}", "z".repeat(253 - name.len())));
        }
        names
    }

    #[test]
    fn fnv1a64_matches_the_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn short_names_are_kept_whole() {
        assert_eq!(derived("kopf-audit-", "op", "", 253), "kopf-audit-op");
        assert_eq!(derived("", "op", ".17f", 253), "op.17f");
    }

    #[test]
    fn long_names_become_valid_stable_and_distinct() {
        let names = long_names();
        for name in &names {
            assert!(is_dns_subdomain(name), "the test's own name {name}");
            for (prefix, suffix) in [("kopf-audit-", ""), ("", ".181d5a3e2b9c4f00")] {
                let got = derived(prefix, name, suffix, MAX_OBJECT_NAME);
                assert!(is_dns_subdomain(&got), "{got} ({} bytes)", got.len());
                assert!(
                    got.starts_with(&format!("{prefix}{}", &name[..100])),
                    "{got}"
                );
                assert!(got.ends_with(suffix));
                assert_eq!(got, derived(prefix, name, suffix, MAX_OBJECT_NAME));
            }
        }
        let mut other = names[0].clone();
        other.replace_range(252.., "b");
        assert_ne!(
            derived("kopf-audit-", &names[0], "", MAX_OBJECT_NAME),
            derived("kopf-audit-", &other, "", MAX_OBJECT_NAME),
            "names that differ past the cut differ by their hash"
        );
    }

    #[test]
    fn the_grammar_check_refuses_what_the_api_refuses() {
        for bad in [
            "", "a.", ".a", "a..b", "-a", "a-", "a.-b", "a-.b", "A", "a_b",
        ] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        assert!(!is_dns_subdomain(&"a".repeat(254)));
        assert!(is_dns_subdomain("a-b.c0.d"));
    }
}

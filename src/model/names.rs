//! Kubernetes name grammars, and the encodings that keep a string from the cluster or a
//! tenant inside the part of a request it was meant for.
//!
//! kube 5.0 builds request paths by plain formatting (`kube-core` `request.rs`:
//! `format!("{}/{}", url_path, name)`, and `ApiResource` group, version, plural and
//! namespace the same way), and a field selector is one query value whose `,` starts
//! another term. So a name such as `v1/pods?` or `x,metadata.namespace!=y` would
//! steer the request elsewhere. The schema refuses such values in a KopfAudit; names
//! that come from elsewhere (container args, RBAC rules, other objects) are checked
//! here before they reach a path, or encoded.
//!
//! It also derives the names of the objects the auditor writes for a KopfAudit (its
//! Events, its PolicyReport) from the KopfAudit's name, which may itself be 253
//! characters long: a derived name that would pass the bound keeps a readable prefix
//! and a stable hash of the whole.

use crate::api::KopfAuditSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::borrow::Cow;

/// The longest DNS label (RFC 1123): namespaces, versions, resource names.
pub(crate) const DNS_LABEL_MAX: usize = 63;
/// The longest DNS subdomain (RFC 1123): most object names and API groups.
pub(crate) const DNS_SUBDOMAIN_MAX: usize = 253;

/// Whether `text` is an RFC 1123 DNS label (what a namespace name must be).
pub(crate) fn is_dns_label(text: &str) -> bool {
    text.len() <= DNS_LABEL_MAX && is_label_shaped(text)
}

/// Lowercase letters, digits and `-`, starting and ending with a letter or digit.
fn is_label_shaped(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}

/// Whether `text` is an RFC 1123 DNS subdomain as Kubernetes checks object names and
/// API groups (apimachinery `IsDNS1123Subdomain`: at most 253 characters in all, no
/// bound per label).
pub(crate) fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= DNS_SUBDOMAIN_MAX && text.split('.').all(is_label_shaped)
}

/// Whether a handled resource's group, version and plural may be put into a request
/// path as they are: an empty (core) group or a DNS subdomain, and DNS labels.
pub(crate) fn is_resource_path(group: &str, version: &str, plural: &str) -> bool {
    (group.is_empty() || is_dns_subdomain(group)) && is_dns_label(version) && is_dns_label(plural)
}

/// Whether `text` is a label value (and, so, the name part of a label key): at most
/// 63 characters, alphanumerics with `-`, `_` and `.` inside; empty for a value.
fn is_label_value(text: &str) -> bool {
    let bytes = text.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    bytes.len() <= DNS_LABEL_MAX
        && bytes.iter().all(inner)
        && bytes.first().is_none_or(u8::is_ascii_alphanumeric)
        && bytes.last().is_none_or(u8::is_ascii_alphanumeric)
}

/// Whether `text` is a label key: `[prefix/]name`, the prefix a DNS subdomain.
fn is_label_key(text: &str) -> bool {
    let (prefix, name) = match text.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    !name.is_empty() && is_label_value(name) && prefix.is_none_or(is_dns_subdomain)
}

/// What is wrong with a label selector's keys and values, if anything: they go into
/// the `labelSelector` of a request, where `,` or `)` would add terms of their own.
fn selector_problem(selector: &LabelSelector) -> Option<String> {
    for (key, value) in selector.match_labels.iter().flatten() {
        if !is_label_key(key) {
            return Some(format!(
                "matchLabels has the key {key:?}, which is no label key"
            ));
        }
        if !is_label_value(value) {
            return Some(format!(
                "matchLabels.{key} is {value:?}, which is no label value"
            ));
        }
    }
    for expression in selector.match_expressions.iter().flatten() {
        if !is_label_key(&expression.key) {
            let key = &expression.key;
            return Some(format!(
                "matchExpressions has the key {key:?}, which is no label key"
            ));
        }
        if let Some(bad) = expression
            .values
            .iter()
            .flatten()
            .find(|v| !is_label_value(v))
        {
            return Some(format!(
                "matchExpressions has the value {bad:?}, which is no label value"
            ));
        }
    }
    None
}

/// What in a KopfAudit's spec is no valid name where a name goes into a request, if
/// anything: the schema refuses all of it at apply time, so this is only met by specs
/// that did not pass the API server (the CLI's), or an older CRD. Quoted values are
/// cut short.
pub(crate) fn spec_problem(spec: &KopfAuditSpec) -> Option<String> {
    let target = &spec.target;
    let short = |text: &str| text.chars().take(DNS_LABEL_MAX).collect::<String>();
    if let Some(name) = target
        .deployment
        .as_deref()
        .filter(|n| !is_dns_subdomain(n))
    {
        return Some(format!(
            "spec.target.deployment {:?} is no Deployment name",
            short(name)
        ));
    }
    if let Some(ns) = target.namespace.as_deref().filter(|n| !is_dns_label(n)) {
        return Some(format!(
            "spec.target.namespace {:?} is no namespace name",
            short(ns)
        ));
    }
    if let Some(c) = target.container.as_deref().filter(|n| !is_dns_label(n)) {
        return Some(format!(
            "spec.target.container {:?} is no container name",
            short(c)
        ));
    }
    if let Some(problem) = target.selector.as_ref().and_then(selector_problem) {
        return Some(format!("spec.target.selector: {problem}"));
    }
    spec.handled_resources
        .iter()
        .find(|h| !is_resource_path(&h.group, &h.version, &h.plural))
        .map(|h| {
            format!(
                "spec.handledResources has {{group: {:?}, version: {:?}, plural: {:?}}}: the group must be empty or a DNS subdomain, the version and the plural DNS labels",
                short(&h.group),
                short(&h.version),
                short(&h.plural)
            )
        })
}

/// The API's bound on object names (a DNS subdomain, RFC 1123).
pub(crate) const MAX_OBJECT_NAME: usize = DNS_SUBDOMAIN_MAX;

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

/// Eight hex digits of a stable hash of `text` (of `text` and `salt` when `salt` is not
/// 0): a short tag that tells apart two names that would otherwise be equal.
pub(crate) fn short_hash(text: &str, salt: u32) -> String {
    let hash = match salt {
        0 => fnv1a64(text.as_bytes()),
        // `#` is in no object name, so no other text hashes alike.
        n => fnv1a64(format!("{text}#{n}").as_bytes()),
    };
    format!("{:08x}", hash >> 32)
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

/// One path segment, percent-encoded where a byte is not unreserved (RFC 3986), for
/// names the API server accepted by a looser grammar (a role name may hold `:`; a
/// path-segment name may hold `?` or `#`). The API server decodes it back.
pub(crate) fn path_segment(name: &str) -> Cow<'_, str> {
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    if name.bytes().all(unreserved) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for b in name.bytes() {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Cow::Owned(out)
}

/// A value for a field selector term (`metadata.name=VALUE`), escaped as
/// apimachinery's `fields.EscapeValue` does (`\`, `,` and `=`), so that it cannot end
/// its term and start another.
pub(crate) fn field_selector_value(value: &str) -> Cow<'_, str> {
    if !value.contains(['\\', ',', '=']) {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 4);
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// The field selector that matches one object by name.
pub(crate) fn name_selector(name: &str) -> String {
    format!("metadata.name={}", field_selector_value(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels_and_subdomains() {
        for good in ["a", "v1", "v1beta1", "kopf-audit", "0", "a-b-c"] {
            assert!(is_dns_label(good), "{good}");
        }
        let long = "a".repeat(64);
        for bad in [
            "",
            "-a",
            "a-",
            "A",
            "a.b",
            "a/b",
            "v1/pods?",
            "a b",
            long.as_str(),
        ] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        assert!(is_dns_subdomain("kopf.dev"));
        assert!(is_dns_subdomain("example.com"));
        assert!(!is_dns_subdomain("example..com"));
        assert!(!is_dns_subdomain(".com"));
        assert!(!is_dns_subdomain(&"a.".repeat(130)));
        assert!(is_dns_subdomain(&"a".repeat(253)));
    }

    #[test]
    fn a_resource_path_is_a_group_a_version_and_a_plural() {
        assert!(is_resource_path("", "v1", "secrets"));
        assert!(is_resource_path("kopf.dev", "v1", "kopfpeerings"));
        assert!(!is_resource_path("", "v1/pods?", "x"));
        assert!(!is_resource_path("", "v1", "pods/log"));
        assert!(!is_resource_path("a/b", "v1", "x"));
        assert!(!is_resource_path("kopf.dev", "", "x"));
    }

    #[test]
    fn path_segments_are_encoded_only_where_needed() {
        assert_eq!(path_segment("operator-0"), "operator-0");
        assert_eq!(
            path_segment("system:auth-delegator"),
            "system%3Aauth-delegator"
        );
        assert_eq!(path_segment("view?watch=1"), "view%3Fwatch%3D1");
        assert_eq!(path_segment("../x"), "..%2Fx");
        assert_eq!(path_segment("é"), "%C3%A9");
    }

    fn spec(value: serde_json::Value) -> KopfAuditSpec {
        serde_json::from_value(value).expect("a spec")
    }

    #[test]
    fn specs_with_names_that_would_steer_a_request_are_refused() {
        let good = spec(serde_json::json!({
            "target": {"selector": {"matchLabels": {"app.kubernetes.io/name": "op"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b_c"]}]},
                "namespace": "team", "container": "operator"},
            "handledResources": [{"group": "", "version": "v1", "plural": "secrets"},
                {"group": "example.com", "version": "v1beta1", "plural": "widgets"}]
        }));
        assert_eq!(spec_problem(&good), None);
        for bad in [
            serde_json::json!({"target": {"deployment": "op?x=1"}}),
            serde_json::json!({"target": {"deployment": "op", "namespace": "a/b"}}),
            serde_json::json!({"target": {"deployment": "op", "container": "A B"}}),
            serde_json::json!({"target": {"selector": {"matchLabels": {"app": "x,name!=y"}}}}),
            serde_json::json!({"target": {"selector": {"matchLabels": {"a b": "x"}}}}),
            serde_json::json!({"target": {"selector": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["a)"]}]}}}),
            serde_json::json!({"target": {"deployment": "op"}, "handledResources": [{"version": "v1/pods?", "plural": "x"}]}),
            serde_json::json!({"target": {"deployment": "op"}, "handledResources": [{"group": "a/b", "version": "v1", "plural": "x"}]}),
        ] {
            assert!(spec_problem(&spec(bad.clone())).is_some(), "{bad}");
        }
    }

    #[test]
    fn field_selector_values_cannot_start_a_term() {
        assert_eq!(name_selector("op"), "metadata.name=op");
        assert_eq!(
            name_selector("x,metadata.namespace!=y"),
            r"metadata.name=x\,metadata.namespace!\=y"
        );
        assert_eq!(field_selector_value(r"a\b"), r"a\\b");
    }

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

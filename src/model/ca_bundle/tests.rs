use super::*;
use std::net::IpAddr;

const KOPF_EXPIRED: &[u8] = include_bytes!("../../../tests/fixtures/ca_bundle/kopf-expired.pem");
const CA_VALID: &[u8] = include_bytes!("../../../tests/fixtures/ca_bundle/ca-valid.pem");
const LEAF_VALID: &[u8] = include_bytes!("../../../tests/fixtures/ca_bundle/leaf-valid.pem");
/// Made by kopf 1.45.2's own `WebhookServer.build_certificate` (make_kopf_built.py).
const KOPF_BUILT: &[u8] = include_bytes!("../../../tests/fixtures/ca_bundle/kopf-built.pem");

fn ts(s: &str) -> Timestamp {
    s.parse().expect("a timestamp")
}

fn certs(bundle: CaBundle) -> Vec<BundleCert> {
    match bundle {
        CaBundle::Read { certs, .. } => certs,
        other => panic!("not read: {other:?}"),
    }
}

#[test]
fn kopf_s_self_signed_certificate_is_read_with_its_validity() {
    let read = certs(CaBundle::parse(Some(KOPF_EXPIRED)));
    assert_eq!(read.len(), 1);
    let cert = &read[0];
    assert_eq!(cert.subject, "CN=webhooks.operators.svc");
    assert_eq!(cert.not_before, ts("2024-01-10T12:00:00Z"));
    assert_eq!(cert.not_after, ts("2025-01-09T12:00:00Z"));
    assert!(cert.kopf_generated);
}

/// What kopf itself built (certbuilder, RSA, IPs also written as DNS names, the
/// unspecified address dropped) has the shape the model calls kopf's, and its names
/// cover the Service host it was made for.
#[test]
fn a_certificate_kopf_itself_built_is_recognised() {
    let read = certs(CaBundle::parse(Some(KOPF_BUILT)));
    assert_eq!(read.len(), 1);
    let cert = &read[0];
    assert!(cert.kopf_generated, "{cert:?}");
    assert!(cert.is_ca);
    assert_eq!(cert.subject, "CN=kopf-op.ops.svc");
    assert_eq!(cert.not_before, ts("2026-12-07T19:19:48Z"));
    assert_eq!(cert.not_after, ts("2027-12-07T19:19:48Z"));
    let names = cert.names.as_ref().expect("names read");
    let mut dns = names.dns.clone();
    dns.sort();
    assert_eq!(dns, ["127.0.0.1", "kopf-op.ops.svc", "localhost"]);
    assert_eq!(names.ips, [IpAddr::from([127, 0, 0, 1])]);
    assert!(names.cover("kopf-op.ops.svc"));
    assert!(names.cover("127.0.0.1"));
    assert!(!names.cover("kopf-op.other.svc"));
    assert!(!names.cover("0.0.0.0"));
}

#[test]
fn a_ca_without_kopf_s_extended_key_usages_is_not_kopf_s() {
    let read = certs(CaBundle::parse(Some(CA_VALID)));
    assert_eq!(read[0].subject, "CN=operators-webhook-ca");
    assert!(!read[0].kopf_generated);
}

#[test]
fn a_bundle_of_several_keeps_their_order_and_skips_blocks_that_do_not_decode() {
    let junk = b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
    let bundle = [CA_VALID, junk.as_slice(), KOPF_EXPIRED].concat();
    let read = certs(CaBundle::parse(Some(&bundle)));
    assert_eq!(read.len(), 2);
    assert!(!read[0].kopf_generated && read[1].kopf_generated);
}

#[test]
fn no_bundle_is_absent() {
    assert_eq!(CaBundle::parse(None), CaBundle::Absent);
    assert_eq!(CaBundle::parse(Some(b"")), CaBundle::Absent);
}

#[test]
fn hostile_bundles_are_unreadable_and_never_panic() {
    let huge = vec![b'A'; MAX_BUNDLE_BYTES + 1];
    assert_eq!(
        CaBundle::parse(Some(&huge)),
        CaBundle::Unreadable(BundleProblem::TooLarge {
            bytes: MAX_BUNDLE_BYTES + 1
        })
    );
    assert_eq!(
        CaBundle::parse(Some(b"\x1b[31mnot base64 at all \xff\xfe")),
        CaBundle::Unreadable(BundleProblem::NotPem)
    );
    for hostile in [
        b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----".as_slice(),
        b"-----BEGIN CERTIFICATE-----\nMIIB".as_slice(),
        b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----".as_slice(),
        // A real certificate cut in half.
        &KOPF_EXPIRED[..KOPF_EXPIRED.len() / 2],
    ] {
        match CaBundle::parse(Some(hostile)) {
            CaBundle::Unreadable(BundleProblem::NotCertificate { reason }) => {
                assert!(!reason.is_empty());
                assert!(reason.chars().all(|c| !c.is_control()), "{reason:?}");
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(hostile)),
        }
    }
}

#[test]
fn at_most_max_certs_are_decoded() {
    let many = CA_VALID.repeat(MAX_CERTS * 3);
    match CaBundle::parse(Some(&many)) {
        CaBundle::Read { certs, more } => {
            assert_eq!(certs.len(), MAX_CERTS);
            assert!(more);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn subject_alternative_names_and_ca_are_read() {
    let kopf = &certs(CaBundle::parse(Some(KOPF_EXPIRED)))[0];
    assert!(kopf.is_ca);
    let names = kopf.names.as_ref().expect("names read");
    assert_eq!(names.dns, ["webhooks.operators.svc"]);
    assert!(names.ips.is_empty());

    let leaf = &certs(CaBundle::parse(Some(LEAF_VALID)))[0];
    assert!(!leaf.is_ca && !leaf.kopf_generated);
    let names = leaf.names.as_ref().expect("names read");
    assert_eq!(names.dns, ["webhooks.operators.svc"]);
    assert_eq!(names.ips, [IpAddr::from([10, 0, 0, 7])]);
    assert_eq!(names.listed(5), ["webhooks.operators.svc", "10.0.0.7"]);
}

/// As Go's crypto/x509 `VerifyHostname` matches: IPs against IP names only, DNS names
/// in any case, a wildcard for exactly one leading label.
#[test]
fn which_hosts_the_names_cover() {
    let names = SubjectNames {
        dns: vec!["webhooks.operators.svc".into(), "*.example.com".into()],
        ips: vec![IpAddr::from([10, 0, 0, 7]), "::1".parse().expect("an IPv6")],
    };
    for (host, covered) in [
        ("webhooks.operators.svc", true),
        ("Webhooks.Operators.SVC", true),
        ("webhooks.operators.svc.", true),
        ("webhooks.other.svc", false),
        ("hook.example.com", true),
        ("a.hook.example.com", false),
        ("example.com", false),
        ("10.0.0.7", true),
        ("10.0.0.8", false),
        ("::1", true),
        ("127.0.0.1", false),
    ] {
        assert_eq!(names.cover(host), covered, "{host}");
    }
    // An IP written as a DNS name covers no IP host.
    let dns_ip = SubjectNames {
        dns: vec!["127.0.0.1".into()],
        ips: Vec::new(),
    };
    assert!(!dns_ip.cover("127.0.0.1"));
}

/// A name is compared as written: a hex-like label (which the redactor masks in text)
/// still covers its host.
#[test]
fn names_are_kept_as_written_for_matching() {
    let names = SubjectNames {
        dns: vec!["0123456789abcdef0123456789abcdef.hooks.svc".into()],
        ips: Vec::new(),
    };
    assert!(names.cover("0123456789abcdef0123456789abcdef.hooks.svc"));
    assert!(is_dns_name("*.hooks.svc") && is_dns_name("a_b.svc"));
    assert!(!is_dns_name("a b.svc") && !is_dns_name("x\u{1b}]0;pwned") && !is_dns_name(""));
}

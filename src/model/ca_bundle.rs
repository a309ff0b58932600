//! The `caBundle` of an admission webhook, reduced to what decides whether the API
//! server can still call the webhook: each certificate's subject and validity, and
//! whether kopf generated it. The bytes come from a cluster object anyone allowed to
//! patch the configuration writes, so they are bounded before they are read, at most
//! [`MAX_CERTS`] certificates are decoded, and nothing from them is printed uncleaned.
//!
//! kopf writes the bundle itself (kopf 1.37.5 to 1.45.2, `_kits/webhooks.py`
//! `WebhookServer._build_ssl`): the `cafile`/`cadata` given to the server, else the
//! `certfile` it serves, else the self-signed certificate it generates at every start
//! (`build_certificate`, made with `certbuilder`: a CA, valid for 365 days from the
//! moment it is made).

use super::bounded::clean;
use jiff::{SignedDuration, Timestamp};
use memchr::memmem;
use std::net::IpAddr;
use x509_cert::Certificate;
use x509_cert::der::DecodePem;
use x509_cert::der::oid::ObjectIdentifier;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, KeyUsages, SubjectAltName,
};

/// Above this many bytes a bundle is not read: a bundle of a few CAs is a few KiB.
pub(crate) const MAX_BUNDLE_BYTES: usize = 64 * 1024;
/// At most this many certificates of a bundle are decoded.
pub(crate) const MAX_CERTS: usize = 8;
/// Longest subject kept, cleaned.
const MAX_SUBJECT_BYTES: usize = 200;
/// At most this many subject alternative names of a certificate are kept; a
/// certificate with more is not judged for the host it covers.
pub(crate) const MAX_SANS: usize = 32;
/// Longest DNS name kept (RFC 1035: 253 characters).
const MAX_DNS_NAME_BYTES: usize = 253;
/// How long `certbuilder` makes a certificate valid when kopf does not say
/// (`certbuilder` 0.14 `CertificateBuilder.build`: `begin_date + timedelta(365)`).
const KOPF_VALIDITY: SignedDuration = SignedDuration::from_hours(365 * 24);

const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
const END: &[u8] = b"-----END CERTIFICATE-----";
/// `id-kp-serverAuth` (RFC 5280).
const SERVER_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.1");
/// `id-kp-clientAuth` (RFC 5280).
const CLIENT_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.2");

/// A webhook's `clientConfig.caBundle`, as far as it could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CaBundle {
    /// None is set: the API server trusts its own roots (kopf's ngrok tunnel).
    Absent,
    /// The certificates decoded, in the bundle's order.
    Read {
        /// At most [`MAX_CERTS`] of them.
        certs: Vec<BundleCert>,
        /// Whether the bundle holds more PEM blocks than were decoded.
        more: bool,
    },
    /// Set, but no certificate could be read from it.
    Unreadable(BundleProblem),
}

/// Why no certificate could be read from a bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BundleProblem {
    /// Larger than [`MAX_BUNDLE_BYTES`]: not read.
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// Not PEM: no `BEGIN CERTIFICATE` block in it.
    NotPem,
    /// PEM blocks, none of which decodes as an X.509 certificate.
    NotCertificate {
        /// The decoder's reason for the first, cleaned.
        reason: String,
    },
}

/// One certificate of a bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BundleCert {
    /// Its subject (RFC 4514), cleaned and bounded.
    pub(crate) subject: String,
    /// notBefore.
    pub(crate) not_before: Timestamp,
    /// notAfter.
    pub(crate) not_after: Timestamp,
    /// Whether it has the shape of the certificate kopf generates when the webhook
    /// server is given no `certfile` (see [`kopf_generated`]).
    pub(crate) kopf_generated: bool,
    /// Whether it is a CA (basicConstraints `CA:TRUE`): one that is not can only be
    /// trusted as the very certificate the server presents.
    pub(crate) is_ca: bool,
    /// The hosts it is valid for; `None` when it names more than [`MAX_SANS`], or a DNS
    /// name of other characters than a DNS name's.
    pub(crate) names: Option<SubjectNames>,
}

/// A certificate's subject alternative names: the hosts a TLS client (Go's, in the API
/// server) accepts it for. The common name is not one of them: Go 1.15 and later
/// ignore it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SubjectNames {
    /// DNS names, lowercase (`*.` wildcards kept).
    pub(crate) dns: Vec<String>,
    /// IP addresses.
    pub(crate) ips: Vec<IpAddr>,
}

impl SubjectNames {
    /// Whether a client verifying `host` (a DNS name or an IP address, as in a URL
    /// without brackets) accepts the certificate: an IP matches IP names only; a DNS
    /// name matches a name equal to it (any case) or a `*.` wildcard covering its
    /// first label (crypto/x509 `VerifyHostname`).
    pub(crate) fn cover(&self, host: &str) -> bool {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return self.ips.contains(&ip);
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.dns.iter().any(|name| {
            let name = name.trim_end_matches('.');
            match name.strip_prefix("*.") {
                Some(parent) => host
                    .split_once('.')
                    .is_some_and(|(label, rest)| !label.is_empty() && rest == parent),
                None => name == host,
            }
        })
    }

    /// The names, for a message: DNS names then IPs, at most `max`.
    pub(crate) fn listed(&self, max: usize) -> Vec<String> {
        self.dns
            .iter()
            .cloned()
            .chain(self.ips.iter().map(IpAddr::to_string))
            .take(max)
            .collect()
    }
}

impl CaBundle {
    /// The bundle of a webhook's client config, read within the bounds.
    pub(crate) fn parse(bytes: Option<&[u8]>) -> CaBundle {
        let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
            return CaBundle::Absent;
        };
        if bytes.len() > MAX_BUNDLE_BYTES {
            return CaBundle::Unreadable(BundleProblem::TooLarge { bytes: bytes.len() });
        }
        let blocks = pem_blocks(bytes);
        if blocks.is_empty() {
            return CaBundle::Unreadable(BundleProblem::NotPem);
        }
        let more = blocks.len() > MAX_CERTS;
        let mut certs = Vec::new();
        let mut first_error = None;
        for block in blocks.into_iter().take(MAX_CERTS) {
            match read_cert(block) {
                Ok(cert) => certs.push(cert),
                Err(reason) => {
                    first_error.get_or_insert(reason);
                }
            }
        }
        // Like the API server (Go's `AppendCertsFromPEM`), blocks that do not decode
        // are skipped; only a bundle with none that does is unusable.
        match first_error {
            Some(reason) if certs.is_empty() => {
                CaBundle::Unreadable(BundleProblem::NotCertificate { reason })
            }
            _ => CaBundle::Read { certs, more },
        }
    }
}

/// The `BEGIN CERTIFICATE` ... `END CERTIFICATE` blocks of a bundle, at most one more
/// than [`MAX_CERTS`] (enough to tell that there are more).
fn pem_blocks(bytes: &[u8]) -> Vec<&[u8]> {
    let mut blocks = Vec::new();
    let mut rest = bytes;
    while blocks.len() <= MAX_CERTS {
        let Some(start) = memmem::find(rest, BEGIN) else {
            break;
        };
        let from = &rest[start..];
        let Some(end) = memmem::find(from, END) else {
            // An unterminated block: kept, so that its decoder names the problem.
            blocks.push(from);
            break;
        };
        let stop = end + END.len();
        blocks.push(&from[..stop]);
        rest = &from[stop..];
    }
    blocks
}

/// One PEM block decoded and reduced, or the decoder's reason, cleaned.
fn read_cert(block: &[u8]) -> Result<BundleCert, String> {
    let cert = Certificate::from_pem(block).map_err(|e| clean(&e.to_string(), 120))?;
    let tbs = cert.tbs_certificate();
    let validity = tbs.validity();
    let at = |t: x509_cert::time::Time| {
        let secs = i64::try_from(t.to_unix_duration().as_secs()).ok()?;
        Timestamp::from_second(secs).ok()
    };
    let (Some(not_before), Some(not_after)) = (at(validity.not_before), at(validity.not_after))
    else {
        return Err("a validity date outside the range the auditor reads".into());
    };
    Ok(BundleCert {
        subject: clean(&tbs.subject().to_string(), MAX_SUBJECT_BYTES),
        not_before,
        not_after,
        kopf_generated: kopf_generated(&cert, not_before, not_after),
        is_ca: matches!(
            tbs.get_extension::<BasicConstraints>(),
            Ok(Some((_, bc))) if bc.ca
        ),
        names: subject_names(&cert),
    })
}

/// The certificate's subject alternative names, bounded; an empty set when it has
/// none; `None` when it has more than [`MAX_SANS`] or one is not readable.
fn subject_names(cert: &Certificate) -> Option<SubjectNames> {
    let Ok(found) = cert.tbs_certificate().get_extension::<SubjectAltName>() else {
        return None;
    };
    let Some((_, san)) = found else {
        return Some(SubjectNames::default());
    };
    if san.0.len() > MAX_SANS {
        return None;
    }
    let mut names = SubjectNames::default();
    for name in &san.0 {
        match name {
            GeneralName::DnsName(dns) => {
                // Kept as written, to compare with a host: the redactor would mask a
                // hex-like label and make it match nothing. Only a name of DNS
                // characters is kept, so none can carry anything else to a message.
                let dns = dns.to_string();
                if dns.len() > MAX_DNS_NAME_BYTES || !is_dns_name(&dns) {
                    return None;
                }
                names.dns.push(dns.to_ascii_lowercase());
            }
            GeneralName::IpAddress(ip) => match *ip.as_bytes() {
                [a, b, c, d] => names.ips.push(IpAddr::from([a, b, c, d])),
                ref v6 if v6.len() == 16 => {
                    let mut octets = [0u8; 16];
                    octets.copy_from_slice(v6);
                    names.ips.push(IpAddr::from(octets));
                }
                _ => {}
            },
            _ => {}
        }
    }
    Some(names)
}

/// Whether `name` is made of the characters of a DNS name or a wildcard pattern.
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'*' | b'_'))
}

/// Whether a certificate has the shape `WebhookServer.build_certificate` gives it
/// (kopf 1.37.5 to 1.45.2 `_kits/webhooks.py`): self-signed, a subject of one common
/// name, a CA, key usages digitalSignature, keyEncipherment, keyCertSign and cRLSign,
/// extended key usages serverAuth and clientAuth, valid for exactly 365 days.
/// cert-manager's CAs carry no extended key usage by default, and its leaf
/// certificates are no CA.
fn kopf_generated(cert: &Certificate, not_before: Timestamp, not_after: Timestamp) -> bool {
    let tbs = cert.tbs_certificate();
    let one_cn =
        tbs.subject().iter().count() == 1 && tbs.subject().common_name().ok().flatten().is_some();
    let is_ca = matches!(
        tbs.get_extension::<BasicConstraints>(),
        Ok(Some((_, bc))) if bc.ca
    );
    let usages = matches!(
        tbs.get_extension::<KeyUsage>(),
        Ok(Some((_, ku))) if [
            KeyUsages::DigitalSignature,
            KeyUsages::KeyEncipherment,
            KeyUsages::KeyCertSign,
            KeyUsages::CRLSign,
        ].into_iter().all(|u| ku.0.contains(u))
    );
    let extended = matches!(
        tbs.get_extension::<ExtendedKeyUsage>(),
        Ok(Some((_, eku))) if eku.0.contains(&SERVER_AUTH) && eku.0.contains(&CLIENT_AUTH)
    );
    let year = not_after.duration_since(not_before) == KOPF_VALIDITY;
    tbs.issuer() == tbs.subject() && one_cn && is_ca && usages && extended && year
}

#[cfg(test)]
mod tests;

//! `runtime.api-tls-failure`: the operator does not trust the API server's certificate;
//! the finding names the host and the failing step the log shows.

use super::faults::{fault_quote, names};
use super::{on_log, task_name};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use kopf_log::{EventKind, Fault, Record};

/// Decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `host:port` of an aiohttp connection error (`Cannot connect to host H:P ssl:...`,
/// `ConnectionKey(host='H', port=P, ...)`) or of a request's URL
/// (`GET https://H:P/path`).
fn tls_host(text: &str) -> Option<String> {
    if let Some(rest) = text.split_once("Cannot connect to host ").map(|(_, r)| r) {
        return rest.split_whitespace().next().map(clean_host);
    }
    let (_, rest) = text.split_once("https://")?;
    rest.split(['/', ' ', '?']).next().map(clean_host)
}

/// A host as a message may say it: printable, bounded.
fn clean_host(host: &str) -> String {
    kopf_log::excerpt(host.trim_end_matches([',', ')', '\'']), 100)
}

/// The request that failed (`GET /api`), from `Request attempt #N/M failed; ...: GET
/// URL -> ...` (kopf 1.38.0 and 1.45.2 `_cogs/clients/api.py`).
fn tls_request(text: &str) -> Option<String> {
    let (_, rest) = text.split_once(": ")?;
    let (method, rest) = rest.split_once(' ')?;
    if !matches!(method, "GET" | "POST" | "PATCH" | "PUT" | "DELETE") {
        return None;
    }
    let url = rest.split_whitespace().next()?;
    let path = url
        .strip_prefix("https://")
        .and_then(|u| u.find('/').map(|at| &u[at..]))
        .unwrap_or(url);
    let path = path.split('?').next().unwrap_or(path);
    Some(format!("{method} {}", kopf_log::excerpt(path, 120)))
}

/// OpenSSL's reason after `certificate verify failed: ` (`self-signed certificate`,
/// `unable to get local issuer certificate`, `IP address mismatch, ...`).
fn tls_reason(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("certificate verify failed: ")?;
    let end = rest
        .find(" (_ssl")
        .or_else(|| rest.find(['\'', '\n']))
        .unwrap_or(rest.len());
    Some(kopf_log::excerpt(&rest[..end], 100))
}

/// What failed on it: the request, else the background task, else the handler.
fn tls_step(records: &[&Record]) -> Option<String> {
    if let Some(request) = records.iter().find_map(|r| {
        matches!(r.kind, EventKind::RequestRetry { .. })
            .then(|| tls_request(&r.message))
            .flatten()
    }) {
        return Some(format!("at the request `{request}`"));
    }
    records.iter().find_map(|r| {
        if r.kind.background_task().is_some() {
            Some(format!("in kopf's {}", task_name(r)))
        } else {
            r.kind.handler().map(|h| format!("in {h}"))
        }
    })
}

/// `runtime.api-tls-failure`: the operator does not trust the API server's
/// certificate (OpenSSL's `CERTIFICATE_VERIFY_FAILED`, in `ssl.SSLCertVerificationError`
/// and aiohttp's `ClientConnectorCertificateError`): kopf 1.37.5 to 1.45.2 retry the
/// request (`_cogs/clients/api.py`), then the watcher, observer or handler fails.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let fault = Fault::CertificateVerifyFailed;
    let records: Vec<&Record> = logs.all_records().filter(|r| names(r, fault)).collect();
    let first = *records.first()?;
    let text = |r: &Record| {
        std::iter::once(r.message.as_str())
            .chain(r.traceback.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let host = records.iter().find_map(|r| tls_host(&text(r)));
    let reason = records.iter().find_map(|r| tls_reason(&text(r)));
    let step = tls_step(&records);
    let mut what = match &host {
        Some(h) => format!("The operator does not trust the certificate of the API server at {h}"),
        None => "The operator does not trust the API server's certificate".to_string(),
    };
    if let Some(reason) = reason {
        what.push_str(&format!(" ({reason})"));
    }
    if let Some(step) = step {
        what.push_str(&format!(", {step}"));
    }
    let mut f = finding(
        CheckId::RuntimeApiTlsFailure,
        target,
        format!(
            "{what}: kopf retries, then its watchers and handlers fail (kopf 1.37 to 1.45), so nothing is handled. Give the login the cluster's CA: kopf's own logins read the ServiceAccount's ca.crt or the kubeconfig's certificate-authority; a custom @kopf.on.login must pass ca_path or ca_data to kopf.ConnectionInfo. Behind a proxy that re-signs TLS, trust the proxy's CA. Do not set insecure=True."
        ),
        Some(fault_quote(first, fault)),
    );
    f.fix = Some(TLS_FIX.into());
    Some(f)
}

/// A login handler that passes the in-cluster CA bundle (kopf.ConnectionInfo's
/// `ca_path`, kopf 1.37.5 to 1.45.2 `_cogs/structs/credentials.py`).
const TLS_FIX: &str = "import kopf\n\n@kopf.on.login()\ndef login(**kwargs):\n    # The ServiceAccount's ca.crt, else the kubeconfig's certificate-authority; a\n    # custom login passes ca_path= (or ca_data=) to kopf.ConnectionInfo instead.\n    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)\n";

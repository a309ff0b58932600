//! `runtime.webhook-certificate`: the `caBundle` of a kopf-managed admission webhook
//! expired, expires soon, or no longer matches the certificate the operator serves.
//! The API server verifies the webhook server with that bundle, so once it fails,
//! every create or update of the handled kind fails cluster-wide (with kopf's default
//! `failurePolicy: Fail`).
//!
//! What kopf does (kopf 1.37.5, 1.38.0, 1.44.6 and 1.45.2, `_kits/webhooks.py`
//! `WebhookServer`, `_core/engines/admission.py` `configuration_manager`): the server
//! yields a client config whose `caBundle` is its `cafile`/`cadata`, else its
//! `certfile`, else a self-signed certificate it generates at every start (valid 365
//! days, never renewed while the process runs); with `settings.admission.managed` set,
//! every instance patches that config into the configuration. kopf 1.44.6 and 1.45.2
//! re-read `certfile`, `pkeyfile` and `cafile` every `file_check_interval` (60 s) and
//! patch again when they change; kopf 1.38.0 and older read them once, at start.
//!
//! The mismatch is decided from what the cluster already shows, never by connecting
//! to the webhook: its `clientConfig.url` is written by whoever may patch the
//! configuration, and a request from the auditor to it would be a request to any
//! address a tenant names (server-side request forgery). A certificate of kopf's
//! self-signed shape can only be served by the instance that generated it, at its
//! start: one generated before every running instance started is served by none, and
//! with several running instances each serves its own.

use super::alone;
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::workload::{dev_tunnel, serves_this_operator};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::bounded::{MAX_EVIDENCE_BYTES, MAX_LISTED, clean, listed};
use crate::model::ca_bundle::{BundleCert, BundleProblem, CaBundle, MAX_BUNDLE_BYTES, MAX_SANS};
use crate::model::evidence::{KopfEvidence, TargetEvidence, Webhook, WebhookConfig};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;

/// A bundle whose last usable certificate expires within this window is a warning:
/// two weeks leave time to renew it (or restart the operator) in working days.
pub(crate) const EXPIRY_WARNING: SignedDuration = SignedDuration::from_hours(14 * 24);
/// How much earlier than a container's start kopf's certificate may say it was made
/// (the kubelet's clock against the pod's) and still count as made by that container.
const START_SLACK: SignedDuration = SignedDuration::from_secs(120);

/// What is wrong with a webhook's bundle, from least to most severe.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    /// Larger than the auditor reads: not judged.
    TooLarge(usize),
    /// No certificate could be read from it.
    Unreadable(BundleProblem),
    /// Its last usable certificate expires within [`EXPIRY_WARNING`].
    ExpiresSoon(BundleCert),
    /// kopf's self-signed certificate, generated before every running instance started.
    OlderThanInstances(BundleCert),
    /// kopf's self-signed certificate while several instances run, each with its own.
    ManyInstances(BundleCert, usize),
    /// The bundle is the very certificate the server presents (kopf's self-signed one,
    /// or one that is no CA), and it is not valid for the host the API server calls.
    HostNotCovered(BundleCert, String),
    /// Every certificate is past its notAfter.
    Expired(BundleCert),
    /// No certificate is valid yet (notBefore in the future).
    NotYetValid(BundleCert),
}

impl Verdict {
    fn severity(&self) -> Severity {
        match self {
            Verdict::TooLarge(_) => Severity::Info,
            Verdict::Unreadable(_) | Verdict::ExpiresSoon(_) => Severity::Warning,
            _ => Severity::Error,
        }
    }

    /// The certificate the verdict is about, if one.
    fn cert(&self) -> Option<&BundleCert> {
        match self {
            Verdict::ExpiresSoon(c)
            | Verdict::OlderThanInstances(c)
            | Verdict::ManyInstances(c, _)
            | Verdict::HostNotCovered(c, _)
            | Verdict::Expired(c)
            | Verdict::NotYetValid(c) => Some(c),
            Verdict::TooLarge(_) | Verdict::Unreadable(_) => None,
        }
    }
}

/// The running instances of the operator: when each kopf container started.
pub(crate) fn running_starts(pods: &[Pod], container: &str) -> Vec<Timestamp> {
    pods.iter()
        .flat_map(|p| p.status.iter())
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter(|cs| cs.name == container)
        .filter_map(|cs| cs.state.as_ref()?.running.as_ref()?.started_at.as_ref())
        .map(|t| t.0)
        .collect()
}

/// `runtime.webhook-certificate`, decided live from the webhook configurations and the
/// pods at the audit's time; not from the log.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    alone(decide(input.target, input.kopf, input.settings.now))
}

/// One finding per configuration of this operator whose webhooks' bundles fail, at
/// `now`.
pub(super) fn decide(target: &TargetEvidence, kopf: &KopfEvidence, now: Timestamp) -> Vec<Finding> {
    let (Ok(handled), Ok(configs)) = (&kopf.handled, &kopf.webhooks) else {
        return Vec::new();
    };
    let starts = running_starts(&target.pods, &kopf.run.container);
    configs
        .iter()
        .filter_map(|config| {
            let judged: Vec<(&Webhook, Verdict)> = config
                .webhooks
                .iter()
                .filter(|w| serves_this_operator(w, target.namespace(), handled))
                .filter_map(|w| Some((w, verdict(w, &starts, now)?)))
                .collect();
            config_finding(target, config, &judged)
        })
        .collect()
}

/// What is wrong with one webhook's bundle at `now`, if anything.
fn verdict(webhook: &Webhook, starts: &[Timestamp], now: Timestamp) -> Option<Verdict> {
    let certs = match &webhook.ca_bundle {
        CaBundle::Absent => return None,
        CaBundle::Unreadable(BundleProblem::TooLarge { bytes }) => {
            return Some(Verdict::TooLarge(*bytes));
        }
        CaBundle::Unreadable(problem) => return Some(Verdict::Unreadable(problem.clone())),
        CaBundle::Read { certs, .. } => certs,
    };
    let usable = certs
        .iter()
        .filter(|c| c.not_before <= now && now < c.not_after)
        .max_by_key(|c| c.not_after);
    let Some(last) = usable else {
        let pending = certs
            .iter()
            .filter(|c| c.not_before > now)
            .min_by_key(|c| c.not_before);
        return match pending {
            Some(c) => Some(Verdict::NotYetValid(c.clone())),
            None => certs
                .iter()
                .max_by_key(|c| c.not_after)
                .map(|c| Verdict::Expired(c.clone())),
        };
    };
    if let Some(uncovered) = host_not_covered(webhook, certs) {
        return Some(uncovered);
    }
    if let Some(stale) = mismatch(webhook, certs, starts) {
        return Some(stale);
    }
    (last.not_after.duration_since(now) <= EXPIRY_WARNING)
        .then(|| Verdict::ExpiresSoon(last.clone()))
}

/// A bundle of kopf's one self-signed certificate that no running instance serves.
/// A webhook that calls a development tunnel or local address is served from outside
/// the Deployment, whose pods then say nothing about it.
fn mismatch(webhook: &Webhook, certs: &[BundleCert], starts: &[Timestamp]) -> Option<Verdict> {
    let [cert] = certs else {
        return None;
    };
    let tunnel = webhook.url.as_deref().and_then(dev_tunnel).is_some();
    let oldest = starts.iter().min()?;
    if !cert.kopf_generated || tunnel {
        return None;
    }
    if cert.not_before.checked_add(START_SLACK).ok()? < *oldest {
        Some(Verdict::OlderThanInstances(cert.clone()))
    } else if starts.len() > 1 {
        Some(Verdict::ManyInstances(cert.clone(), starts.len()))
    } else {
        None
    }
}

/// A bundle of one certificate that must be the one the server presents, not valid for
/// the host the API server calls. A CA may have signed a server certificate with other
/// names, so only kopf's self-signed certificate (kopf serves the one it generated) and
/// a certificate that is no CA (Go's verifier trusts it only as the leaf itself) are
/// judged. kopf's generated certificate names `host=` (or the address it listens on),
/// so this is a URL or Service changed after kopf wrote it, or a `certfile=` issued
/// for another name.
fn host_not_covered(webhook: &Webhook, certs: &[BundleCert]) -> Option<Verdict> {
    let [cert] = certs else {
        return None;
    };
    let tunnel = webhook.url.as_deref().and_then(dev_tunnel).is_some();
    if tunnel || (cert.is_ca && !cert.kopf_generated) {
        return None;
    }
    let host = webhook.host.as_deref()?;
    let names = cert.names.as_ref()?;
    (!names.cover(host)).then(|| Verdict::HostNotCovered(cert.clone(), host.to_string()))
}

/// The finding for one configuration: its worst verdict, the webhooks that have it.
fn config_finding(
    target: &TargetEvidence,
    config: &WebhookConfig,
    judged: &[(&Webhook, Verdict)],
) -> Option<Finding> {
    let (_, worst) = judged.iter().max_by_key(|(_, v)| v.severity())?;
    let names: Vec<&str> = judged
        .iter()
        .filter(|(_, v)| v == worst)
        .map(|(w, _)| w.name.as_str())
        .collect();
    let object = format!("{} {}", config.kind.as_str(), config.name);
    let hooks = listed(&names, ", ", MAX_LISTED);
    let mut f = finding(
        CheckId::RuntimeWebhookCertificate,
        target.name(),
        message(worst, &object, &hooks),
        Some(evidence(worst, judged)),
    );
    f.severity = worst.severity();
    f.fix = Some(fix(worst, target));
    Some(f)
}

/// What the verdict means for the API server's calls.
fn message(verdict: &Verdict, object: &str, hooks: &str) -> String {
    const BREAKS: &str = "the API server cannot verify the webhook server, so every create or update of the handled kind fails cluster-wide while failurePolicy is Fail (kopf's default)";
    match verdict {
        Verdict::TooLarge(bytes) => format!(
            "The caBundle of {object} (webhooks {hooks}) is {bytes} bytes, more than the {MAX_BUNDLE_BYTES} the auditor reads: its expiry is not judged."
        ),
        Verdict::Unreadable(problem) => format!(
            "The caBundle of {object} (webhooks {hooks}) holds no certificate the auditor can read ({}): the API server reads the same bytes, and if it cannot either, {BREAKS}.",
            describe(problem)
        ),
        Verdict::ExpiresSoon(c) => format!(
            "The caBundle of {object} (webhooks {hooks}) expires at {} (within {} days): after that {BREAKS}.",
            c.not_after,
            EXPIRY_WARNING.as_hours() / 24
        ),
        Verdict::Expired(c) => format!(
            "The caBundle of {object} (webhooks {hooks}) expired at {}: {BREAKS}.",
            c.not_after
        ),
        Verdict::NotYetValid(c) => format!(
            "The caBundle of {object} (webhooks {hooks}) is not valid before {}: until then {BREAKS}.",
            c.not_before
        ),
        Verdict::OlderThanInstances(c) => format!(
            "The caBundle of {object} (webhooks {hooks}) is a self-signed certificate kopf generated at {}, before every running instance of the operator started; kopf generates a new one at each start, so the running webhook server serves a certificate the caBundle does not hold: {BREAKS}. The configuration was not patched since (settings.admission.managed unset, or the patch refused).",
            c.not_before
        ),
        Verdict::HostNotCovered(c, host) => format!(
            "The caBundle of {object} (webhooks {hooks}) is the certificate the webhook server presents, and it is not valid for {host}, the host the API server calls ({}): the API server's TLS verification fails, so every create or update of the handled kind fails cluster-wide while failurePolicy is Fail (kopf's default).",
            covered_names(c)
        ),
        Verdict::ManyInstances(_, n) => format!(
            "The caBundle of {object} (webhooks {hooks}) is a self-signed certificate kopf generated, while {n} instances of the operator run: each generates its own at start and patches it in, so the caBundle matches at most one of them and the API server's calls to the others fail verification (failing the writes they admit while failurePolicy is Fail)."
        ),
    }
}

/// The names a certificate is valid for, as a message says them.
fn covered_names(cert: &BundleCert) -> String {
    match &cert.names {
        Some(names) if names.dns.is_empty() && names.ips.is_empty() => "it names no subject alternative name, and Go's TLS client ignores the common name since Go 1.15".into(),
        Some(names) => format!(
            "it is valid for {}",
            listed(&names.listed(MAX_SANS), ", ", MAX_LISTED)
        ),
        None => "it names more subject alternative names than the auditor reads".into(),
    }
}

/// A bundle problem as a message says it.
fn describe(problem: &BundleProblem) -> String {
    match problem {
        BundleProblem::TooLarge { bytes } => format!("{bytes} bytes, not read"),
        BundleProblem::NotPem => "no PEM `BEGIN CERTIFICATE` block".into(),
        BundleProblem::NotCertificate { reason } => {
            format!("its PEM blocks are no X.509 certificate: {reason}")
        }
    }
}

/// The certificate each judged webhook's bundle names, bounded.
fn evidence(worst: &Verdict, judged: &[(&Webhook, Verdict)]) -> String {
    let shown: Vec<String> = judged
        .iter()
        .filter(|(_, v)| v == worst)
        .map(|(w, v)| match v.cert() {
            Some(c) => format!(
                "{}: {}, notBefore {}, notAfter {}{}",
                w.name,
                c.subject,
                c.not_before,
                c.not_after,
                if c.kopf_generated {
                    ", kopf's self-signed shape"
                } else {
                    ""
                }
            ),
            None => format!("{}: caBundle unreadable", w.name),
        })
        .collect();
    clean(&listed(&shown, "; ", 3), MAX_EVIDENCE_BYTES)
}

/// How to rotate, by what made the bundle.
fn fix(verdict: &Verdict, target: &TargetEvidence) -> String {
    let restart = format!(
        "kubectl rollout restart deployment/{} -n {}",
        target.name(),
        target.namespace()
    );
    let kopf_made = verdict.cert().is_some_and(|c| c.kopf_generated);
    match verdict {
        Verdict::ManyInstances(..) => "Give every instance the same certificate: a cert-manager Certificate mounted from its Secret and passed to kopf.WebhookServer as certfile=/pkeyfile= (and cafile= its CA), or run one replica.".into(),
        Verdict::HostNotCovered(_, host) if kopf_made => format!(
            "kopf puts the webhook server's host= (else the address it listens on) and extra_sans= into the certificate it generates: pass kopf.WebhookServer(host=\"{host}\") or extra_sans=[\"{host}\"], or call the webhook at a host the certificate names, then restart the operator ({restart})."
        ),
        Verdict::HostNotCovered(_, host) => format!(
            "Reissue the certificate passed as certfile= with {host} in its subjectAltName (cert-manager: the Certificate's dnsNames or ipAddresses), or call the webhook at a host it names; kopf 1.44.6 and newer re-read certfile= every 60 s, older versions need a restart ({restart})."
        ),
        Verdict::TooLarge(_) | Verdict::Unreadable(_) => format!(
            "Let kopf write the caBundle again: with settings.admission.managed set it patches it at start ({restart}); a configuration kopf does not manage needs the PEM CA of the webhook server's certificate in every webhook's clientConfig.caBundle (cert-manager's cainjector: the cert-manager.io/inject-ca-from annotation)."
        ),
        _ if kopf_made => format!(
            "kopf generates a new self-signed certificate at every start when its webhook server has no certfile=, and with settings.admission.managed set patches it into the configuration: restart the operator ({restart}). Its certificate lives 365 days and is not renewed while the process runs: for a long-running operator pass certfile=/pkeyfile= from a cert-manager Certificate instead. Check that settings.admission.managed names this configuration and that the operator may patch it."
        ),
        _ => format!(
            "Renew the certificate behind cafile=/certfile= (cert-manager: check the Certificate's Ready condition, `cmctl renew NAME -n NAMESPACE`). kopf 1.44.6 and newer re-read those files every 60 s and patch the new caBundle when settings.admission.managed is set; kopf 1.38 and older read them once, so restart the operator after the renewal ({restart}). A configuration kopf does not manage needs the new CA written into its caBundle (cert-manager's cert-manager.io/inject-ca-from annotation)."
        ),
    }
}

#[cfg(test)]
mod tests;

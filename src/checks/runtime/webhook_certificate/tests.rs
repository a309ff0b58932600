//! Tests of `runtime.webhook-certificate`, on committed PEM fixtures
//! (`tests/fixtures/ca_bundle`, made by its `make.py`) at a fixed "now".

use super::*;
use crate::model::evidence::WebhookKind;
use crate::model::kopf_run::{Peering, Scope};
use crate::model::testing::{run, widget};
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStatus, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const KOPF_EXPIRED: &[u8] = include_bytes!("../../../../tests/fixtures/ca_bundle/kopf-expired.pem");
const KOPF_CURRENT: &[u8] = include_bytes!("../../../../tests/fixtures/ca_bundle/kopf-current.pem");
const KOPF_SOON: &[u8] = include_bytes!("../../../../tests/fixtures/ca_bundle/kopf-soon.pem");
const CA_VALID: &[u8] = include_bytes!("../../../../tests/fixtures/ca_bundle/ca-valid.pem");
const CA_EXPIRED: &[u8] = include_bytes!("../../../../tests/fixtures/ca_bundle/ca-expired.pem");
const LEAF_VALID: &[u8] = include_bytes!("../../../../tests/fixtures/ca_bundle/leaf-valid.pem");
/// Made by kopf 1.45.2's own `WebhookServer.build_certificate` on 2026-12-07 19:19:48
/// for kopf-op.ops.svc, localhost and 127.0.0.1.
const KOPF_BUILT: &[u8] = include_bytes!("../../../../tests/fixtures/ca_bundle/kopf-built.pem");

fn ts(s: &str) -> Timestamp {
    s.parse().expect("a timestamp")
}

/// 2026-12-07: kopf-current.pem was made 2026-11-02 09:30, kopf-soon.pem expires
/// 2026-12-12 08:00, kopf-expired.pem and ca-expired.pem have expired, ca-valid.pem
/// lasts until 2035.
fn now() -> Timestamp {
    ts("2026-12-07T08:00:00Z")
}

/// A running pod of the operator whose kopf container started at `started`.
fn pod(started: &str) -> Pod {
    Pod {
        status: Some(PodStatus {
            container_statuses: Some(vec![ContainerStatus {
                name: "operator".into(),
                state: Some(ContainerState {
                    running: Some(ContainerStateRunning {
                        started_at: Some(Time(ts(started))),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn webhook(bundle: Option<&[u8]>) -> Webhook {
    Webhook {
        name: "validate-widget.auto.kopf.dev".into(),
        fails_closed: true,
        spares_kube_system: false,
        url: Some("https://webhooks.operators.svc:443/validate-widget".into()),
        service_namespace: None,
        host: Some("webhooks.operators.svc".into()),
        resources: vec![("example.com".into(), "widgets".into())],
        ca_bundle: CaBundle::parse(bundle),
    }
}

/// The operator `operators/op` with these pods, handling widgets, and one validating
/// configuration `auto.kopf.dev` of these webhooks.
fn evidence(pods: Vec<Pod>, webhooks: Vec<Webhook>) -> (TargetEvidence, KopfEvidence) {
    let mut t = TargetEvidence::default();
    t.deployment.metadata.name = Some("op".into());
    t.deployment.metadata.namespace = Some("operators".into());
    t.pods = pods;
    let mut k = KopfEvidence::unread(run(Scope::ClusterWide, Peering::Auto));
    k.handled = Ok(vec![widget(true, true)]);
    k.webhooks = Ok(vec![WebhookConfig {
        kind: WebhookKind::Validating,
        name: "auto.kopf.dev".into(),
        webhooks,
    }]);
    (t, k)
}

fn judge(pods: Vec<Pod>, bundle: &[u8]) -> Vec<Finding> {
    let (t, k) = evidence(pods, vec![webhook(Some(bundle))]);
    decide(&t, &k, now())
}

fn one(found: Vec<Finding>) -> Finding {
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().expect("one finding")
}

#[test]
fn an_expired_ca_bundle_is_an_error_naming_the_configuration_and_webhook() {
    let f = one(judge(vec![pod("2026-11-02T09:29:00Z")], CA_EXPIRED));
    assert_eq!(f.check, CheckId::RuntimeWebhookCertificate);
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains(
            "The caBundle of ValidatingWebhookConfiguration auto.kopf.dev (webhooks validate-widget.auto.kopf.dev) expired at 2026-03-01T00:00:00Z"
        ),
        "{}",
        f.message
    );
    assert_eq!(
        f.evidence.as_deref(),
        Some(
            "validate-widget.auto.kopf.dev: CN=operators-webhook-ca, notBefore 2023-01-01T00:00:00Z, notAfter 2026-03-01T00:00:00Z"
        )
    );
    let fix = f.fix.expect("a fix");
    assert!(fix.contains("cert-manager"), "{fix}");
    assert!(
        fix.contains("kubectl rollout restart deployment/op -n operators"),
        "{fix}"
    );
}

#[test]
fn kopf_s_expired_self_signed_certificate_says_to_restart_the_operator() {
    let f = one(judge(vec![pod("2024-01-10T11:59:30Z")], KOPF_EXPIRED));
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("expired at 2025-01-09T12:00:00Z"),
        "{}",
        f.message
    );
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.contains("kopf's self-signed shape"))
    );
    let fix = f.fix.expect("a fix");
    assert!(
        fix.contains("generates a new self-signed certificate at every start"),
        "{fix}"
    );
    assert!(fix.contains("365 days"), "{fix}");
}

#[test]
fn a_valid_twin_gives_no_finding() {
    // The same operator, with a CA valid until 2035 or the certificate its one
    // running instance generated at start.
    assert!(judge(vec![pod("2026-11-02T09:29:00Z")], CA_VALID).is_empty());
    assert!(judge(vec![pod("2026-11-02T09:29:00Z")], KOPF_CURRENT).is_empty());
    // No caBundle (kopf's ngrok tunnel: the API server's own roots).
    let (t, k) = evidence(vec![pod("2026-11-02T09:29:00Z")], vec![webhook(None)]);
    assert!(decide(&t, &k, now()).is_empty());
}

#[test]
fn a_certificate_expiring_within_14_days_is_a_warning() {
    let f = one(judge(vec![pod("2025-12-12T07:59:00Z")], KOPF_SOON));
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message
            .contains("expires at 2026-12-12T08:00:00Z (within 14 days)"),
        "{}",
        f.message
    );
    // Fifteen days earlier it is no finding yet.
    let (t, k) = evidence(
        vec![pod("2025-12-12T07:59:00Z")],
        vec![webhook(Some(KOPF_SOON))],
    );
    let earlier = ts("2026-11-27T07:59:00Z");
    assert!(decide(&t, &k, earlier).is_empty());
}

#[test]
fn a_bundle_that_still_holds_a_valid_ca_is_no_finding() {
    // A rotation in progress: the old CA expired, the new one is good.
    let bundle = [CA_EXPIRED, CA_VALID].concat();
    assert!(judge(vec![pod("2026-11-02T09:29:00Z")], &bundle).is_empty());
}

#[test]
fn kopf_s_certificate_made_before_every_running_instance_is_a_mismatch() {
    // kopf-current.pem was made 2026-11-02 09:30; the only instance started a day later
    // and generated its own, which the configuration does not hold.
    let f = one(judge(vec![pod("2026-11-03T10:00:00Z")], KOPF_CURRENT));
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message
            .contains("before every running instance of the operator started"),
        "{}",
        f.message
    );
    // Within the clock slack of the start, it is that instance's own.
    assert!(judge(vec![pod("2026-11-02T09:31:00Z")], KOPF_CURRENT).is_empty());
    // A plain CA made long before the pod started is a CA, not kopf's certificate.
    assert!(judge(vec![pod("2026-11-03T10:00:00Z")], CA_VALID).is_empty());
    // No running instance: nothing to compare with.
    assert!(judge(Vec::new(), KOPF_CURRENT).is_empty());
}

#[test]
fn kopf_s_certificate_with_several_instances_matches_at_most_one() {
    let pods = vec![pod("2026-11-02T09:29:00Z"), pod("2026-11-02T09:29:30Z")];
    let f = one(judge(pods, KOPF_CURRENT));
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("while 2 instances of the operator run"),
        "{}",
        f.message
    );
    assert!(
        f.fix
            .is_some_and(|fix| fix.contains("the same certificate"))
    );
}

#[test]
fn a_dev_tunnel_is_served_from_outside_the_deployment() {
    let mut hook = webhook(Some(KOPF_CURRENT));
    hook.url = Some("https://host.k3d.internal:9443/validate-widget".into());
    let (t, k) = evidence(vec![pod("2026-11-03T10:00:00Z")], vec![hook]);
    assert!(decide(&t, &k, now()).is_empty());
}

#[test]
fn hostile_bundles_give_a_note_and_no_panic() {
    let pods = || vec![pod("2026-11-02T09:29:00Z")];
    let garbage = one(judge(pods(), b"\x1b]0;pwned\x07 not base64, not PEM \xff"));
    assert_eq!(garbage.severity, Severity::Warning);
    assert!(
        garbage
            .message
            .contains("no certificate the auditor can read (no PEM `BEGIN CERTIFICATE` block)"),
        "{}",
        garbage.message
    );
    assert!(!garbage.message.contains('\x1b') && !garbage.message.contains("pwned"));

    let not_cert = b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
    let f = one(judge(pods(), not_cert));
    assert!(
        f.message
            .contains("its PEM blocks are no X.509 certificate"),
        "{}",
        f.message
    );

    let huge = vec![b'A'; MAX_BUNDLE_BYTES * 4];
    let f = one(judge(pods(), &huge));
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.contains("its expiry is not judged"),
        "{}",
        f.message
    );
}

#[test]
fn the_worst_webhook_of_a_configuration_is_reported_once() {
    let mut other = webhook(Some(CA_EXPIRED));
    other.name = "mutate-widget.auto.kopf.dev".into();
    let hooks = vec![webhook(Some(KOPF_SOON)), other, webhook(Some(CA_VALID))];
    let (t, k) = evidence(vec![pod("2025-12-12T07:59:00Z")], hooks);
    let f = one(decide(&t, &k, now()));
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("(webhooks mutate-widget.auto.kopf.dev)"),
        "{}",
        f.message
    );
    // Another operator's webhook (a resource this one does not handle) is not judged.
    let mut theirs = webhook(Some(CA_EXPIRED));
    theirs.resources = vec![("example.com".into(), "gadgets".into())];
    let (t, k) = evidence(vec![pod("2026-11-02T09:29:00Z")], vec![theirs]);
    assert!(decide(&t, &k, now()).is_empty());
}

/// The webhook of `bundle` called at `url`, its host as the gatherer derives it.
fn called_at(bundle: &[u8], url: &str) -> Webhook {
    let mut hook = webhook(Some(bundle));
    hook.url = Some(url.into());
    hook.host = crate::model::evidence::webhook_host(Some(url), None);
    hook
}

#[test]
fn a_served_certificate_not_valid_for_the_called_host_is_an_error() {
    let pods = || vec![pod("2026-11-02T09:29:00Z")];
    // kopf's own certificate, the URL changed to an address it does not name.
    let (t, k) = evidence(
        pods(),
        vec![called_at(
            KOPF_CURRENT,
            "https://10.0.0.9:443/validate-widget",
        )],
    );
    let f = one(decide(&t, &k, now()));
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("not valid for 10.0.0.9, the host the API server calls (it is valid for webhooks.operators.svc)"),
        "{}",
        f.message
    );
    let fix = f.fix.expect("a fix");
    assert!(
        fix.contains(r#"kopf.WebhookServer(host="10.0.0.9")"#),
        "{fix}"
    );

    // A certificate that is no CA is the served one: its IP name covers the IP host.
    let (t, k) = evidence(
        pods(),
        vec![called_at(LEAF_VALID, "https://10.0.0.7:8443/validate")],
    );
    assert!(decide(&t, &k, now()).is_empty());
    let (t, k) = evidence(
        pods(),
        vec![called_at(LEAF_VALID, "https://[fd00::7]:8443/validate")],
    );
    let f = one(decide(&t, &k, now()));
    assert!(f.message.contains("not valid for fd00::7"), "{}", f.message);
    assert!(f.fix.is_some_and(|fix| fix.contains("subjectAltName")));

    // A CA may have signed a server certificate for any name: not judged.
    let (t, k) = evidence(
        pods(),
        vec![called_at(CA_VALID, "https://10.0.0.9:443/validate")],
    );
    assert!(decide(&t, &k, now()).is_empty());
}

/// A certificate kopf itself built, called at each of its names and at another.
#[test]
fn kopf_s_own_certificate_covers_the_hosts_it_was_built_for() {
    let later = ts("2026-12-08T00:00:00Z");
    let pods = || vec![pod("2026-12-07T19:19:00Z")];
    for url in [
        "https://kopf-op.ops.svc:443/validate-widget",
        "https://127.0.0.1:9443/validate-widget",
        "https://localhost:9443/validate-widget",
    ] {
        let (t, k) = evidence(pods(), vec![called_at(KOPF_BUILT, url)]);
        let found = decide(&t, &k, later);
        assert!(found.is_empty(), "{url}: {found:#?}");
    }
    let (t, k) = evidence(
        pods(),
        vec![called_at(
            KOPF_BUILT,
            "https://kopf-op.other.svc:443/validate",
        )],
    );
    let f = one(decide(&t, &k, later));
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("not valid for kopf-op.other.svc"),
        "{}",
        f.message
    );
}

#[test]
fn the_host_is_the_url_s_or_the_service_s() {
    use crate::model::evidence::webhook_host;
    assert_eq!(
        webhook_host(Some("https://Hooks.Example.com:8443/x?y=1"), None).as_deref(),
        Some("hooks.example.com")
    );
    assert_eq!(
        webhook_host(Some("https://[fd00::7]/x"), None).as_deref(),
        Some("fd00::7")
    );
    assert_eq!(
        webhook_host(None, Some(("webhooks", "operators"))).as_deref(),
        Some("webhooks.operators.svc")
    );
    assert_eq!(webhook_host(Some("not a url"), None), None);
    assert_eq!(webhook_host(None, None), None);
}

//! No secret reaches what a KopfAudit's readers can read: a real kopf operator prints
//! the cases of the redaction corpus and fails with each; its status, PolicyReport and
//! the auditor's Events hold no part of any corpus secret. Two runs: every case (more
//! than the 50 findings a status keeps), and the sections of flags, argv reprs,
//! vendors' tokens and PEM blocks over several lines, each case quoted, the flags' also
//! with their secret across the auditor's 4096-byte cut of a message.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopf_audit::api::KopfAudit;
use kopf_audit::catalog::REPORTING_CONTROLLER;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::time::Duration;

/// The corpus cases as the leaky operator reads them (its `corpus()`): (section
/// title, text with its secrets marked); lines ending in `⏎` join the next.
fn corpus_cases() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(
        support::repo().join("crates/kopf-log/tests/data/secrets/corpus.txt"),
    )
    .expect("the corpus");
    let (mut out, mut section, mut joined, mut in_title) =
        (Vec::new(), String::new(), String::new(), false);
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = if in_title {
                format!("{section} {title}")
            } else {
                title.to_string()
            };
            in_title = true;
            continue;
        }
        in_title = false;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        match line.strip_suffix('⏎') {
            Some(part) => {
                joined.push_str(part);
                joined.push('\n');
            }
            None => {
                joined.push_str(line);
                out.push((section.clone(), std::mem::take(&mut joined)));
            }
        }
    }
    out
}

/// The secrets of a marked text (between ⟦ and ⟧).
fn secrets_of(marked: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = marked;
    while let Some(open) = rest.find('⟦') {
        let after = &rest[open + '⟦'.len_utf8()..];
        let Some(close) = after.find('⟧') else {
            break;
        };
        out.push(after[..close].to_string());
        rest = &after[close + '⟧'.len_utf8()..];
    }
    out
}

/// The secrets of the whole corpus.
fn corpus_secrets() -> Vec<String> {
    corpus_cases()
        .iter()
        .flat_map(|(_, marked)| secrets_of(marked))
        .collect()
}

/// An environment variable of a fixture's Deployment, from its manifests.
fn fixture_env(fixture: &str, name: &str) -> Option<String> {
    let path = support::repo().join(format!("tests/fixtures/kopf/{fixture}/manifests.yaml"));
    let text = std::fs::read_to_string(path).expect("manifests");
    serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|doc| <serde_yaml_ng::Value as serde::Deserialize>::deserialize(doc).ok())
        .filter(|doc| doc["kind"].as_str() == Some("Deployment"))
        .flat_map(|doc| {
            doc["spec"]["template"]["spec"]["containers"][0]["env"]
                .as_sequence()
                .cloned()
                .unwrap_or_default()
        })
        .find(|var| var["name"].as_str() == Some(name))
        .and_then(|var| var["value"].as_str().map(str::to_string))
}

/// Section titles' starts, as the leaky operator reads LEAKY_SECTIONS and LEAKY_CUT.
fn title_starts(value: &str) -> Vec<String> {
    value
        .split('|')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// How many timers the leaky operator of `fixture` fails: one per case of its
/// sections, one more per one-line case with a secret in its cut sections (the
/// operator's `straddling`), and `argv` when the flags' section is among its own.
fn failing_timers(fixture: &str) -> usize {
    let wanted = fixture_env(fixture, "LEAKY_SECTIONS").map(|v| title_starts(&v));
    let cut = fixture_env(fixture, "LEAKY_CUT")
        .map(|v| title_starts(&v))
        .unwrap_or_default();
    let in_sections =
        |section: &str, starts: &[String]| starts.iter().any(|s| section.starts_with(s.as_str()));
    let cases: Vec<(String, String)> = corpus_cases()
        .into_iter()
        .filter(|(section, _)| wanted.as_ref().is_none_or(|w| in_sections(section, w)))
        .collect();
    let straddling = cases
        .iter()
        .enumerate()
        .filter(|(_, (section, marked))| in_sections(section, &cut) && !marked.contains('\n'))
        .filter(|(i, (_, marked))| {
            let Some(start) = marked.find('⟦') else {
                return false;
            };
            let secret = secrets_of(marked).first().map_or(0, String::len);
            let head = format!("Timer 'cut-{i}' failed temporarily: ");
            head.len() + start + secret / 2 < 4096
        })
        .count();
    let argv = cases.iter().any(|(section, marked)| {
        section.starts_with("Secrets after a flag") && marked.contains('⟦')
    });
    cases.len() + straddling + usize::from(argv)
}

/// The 8-character windows of a secret (the whole of a shorter one), backslashes aside
/// (escapes differ between a raw line and JSON).
fn windows(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= 8 {
        return vec![secret.to_string()];
    }
    chars
        .windows(8)
        .filter(|w| !w.contains(&'\\'))
        .map(|w| w.iter().collect())
        .collect()
}

/// Runs the leaky operator of `fixture` (its Deployment `deployment`) and an auditor,
/// waits until the status quotes `failures` handler failures, one more audit interval,
/// and checks that no part of any corpus secret is in the status, the PolicyReport or
/// the auditor's Events.
async fn no_corpus_secret_reaches_readers(fixture: &str, deployment: &str, failures: usize) {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "policyreports.wgpolicyk8s.io"},
        "spec": {"group": "wgpolicyk8s.io", "scope": "Namespaced",
            "names": {"kind": "PolicyReport", "plural": "policyreports", "singular": "policyreport"},
            "versions": [{"name": "v1alpha2", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("CRD");
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            "policyreports.wgpolicyk8s.io",
            &PatchParams::apply("kopf-audit-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .expect("PolicyReport CRD");
    let ns = TestNamespace::create(&client, fixture).await;
    let _kopf = Fixture::start(fixture, &ns.name, None);
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": "leaky"},
        "spec": {"target": {"deployment": deployment}, "interval": "30s"}
    }))
    .expect("KopfAudit");
    let audits: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    audits
        .create(&PostParams::default(), &audit)
        .await
        .expect("creating the KopfAudit");
    wait_for(
        &format!("{failures} failures of the leaky operator quoted"),
        Duration::from_secs(240),
        || {
            let audits = audits.clone();
            async move {
                let status = audits.get("leaky").await.ok()?.status?;
                let quoted = status
                    .findings
                    .iter()
                    .filter(|f| f.check.as_str() == "runtime.handler-failures")
                    .count();
                (quoted >= failures).then_some(())
            }
        },
    )
    .await;
    // One more interval, so that Events and the PolicyReport follow.
    tokio::time::sleep(Duration::from_secs(35)).await;

    let status = serde_json::to_string(&audits.get("leaky").await.expect("audit").status)
        .expect("status JSON");
    let reports = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &ns.name,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("wgpolicyk8s.io", "v1alpha2", "PolicyReport"),
            "policyreports",
        ),
    )
    .list(&ListParams::default())
    .await
    .expect("policy reports");
    assert!(!reports.items.is_empty(), "a PolicyReport was written");
    let reports = serde_json::to_string(&reports.items).expect("reports JSON");
    let events: Vec<k8s_openapi::api::events::v1::Event> =
        Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .filter(|e| e.reporting_controller.as_deref() == Some(REPORTING_CONTROLLER))
            .collect();
    assert!(!events.is_empty(), "the auditor posted its Events");
    let events = serde_json::to_string(&events).expect("events JSON");
    let secrets = corpus_secrets();
    assert!(secrets.len() > 40, "the corpus: {}", secrets.len());
    for (what, text) in [
        ("status", &status),
        ("PolicyReport", &reports),
        ("Events", &events),
    ] {
        for secret in &secrets {
            for w in windows(secret) {
                assert!(
                    !text.contains(&w),
                    "{what} holds {w:?} of the secret {secret:?}:\n{text}"
                );
            }
        }
    }
    say(format!(
        "no part of {} corpus secrets in the status, PolicyReport or Events",
        secrets.len()
    ));
}

#[tokio::test]
async fn no_secret_an_operator_prints_reaches_status_policy_report_or_events() {
    // More cases than a status keeps findings (50): the first 20 quoted suffice.
    no_corpus_secret_reaches_readers("leaky", "leaky-operator", 20).await;
}

/// A secret after a flag (`--password x`) or in an argv repr, a vendor's token with a
/// hex body (DigitalOcean, Shopify, ...), a PEM block over several lines, and a secret
/// across the 4096-byte cut of a message: every such case quoted, none leaked.
#[tokio::test]
async fn no_secret_after_a_flag_in_a_token_or_a_split_pem_reaches_readers() {
    let failures = failing_timers("leaky-classes");
    assert!(failures >= 25, "{failures} failing timers");
    assert!(
        failures <= 40,
        "{failures} failing timers: a status keeps 50 findings"
    );
    no_corpus_secret_reaches_readers("leaky-classes", "leaky-classes-operator", failures).await;
}

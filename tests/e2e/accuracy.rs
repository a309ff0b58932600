//! Right about the right operator, in a noisy shared cluster: five real kopf operators
//! side by side (cluster-wide on a cluster-scoped resource, on a namespace pattern,
//! flooding Logging Events, retrying with a Warning each time, flooding `default` with
//! the Logging Events of a cluster-scoped resource), plus noise: objects of
//! other kinds sharing their names, same-kind objects in namespaces they do not serve,
//! over 2,000 Events, repeated kubelet-style BackOff Warnings. Every finding names only
//! the operator's own objects, and the expected findings are all there.

use crate::operator::ensure_crd;
use crate::support::{self, Auditor, Fixture, TestNamespace, expectations, say, wait_for};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kopf_audit::api::{KopfAudit, KopfAuditStatus};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use std::collections::BTreeSet;
use std::time::Duration;

/// Written into every noise object and Event: it must never reach a finding.
const NOISE: &str = "NOISE-not-the-operators";

fn pattern_widgets() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("pattern.fixtures.kopf-audit.dev", "v1", "Widget"),
        "widgets",
    )
}

async fn create_widget(client: &Client, ns: &str, name: &str, annotations: serde_json::Value) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &pattern_widgets());
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "pattern.fixtures.kopf-audit.dev/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"size": 1}
    }))
    .expect("widget");
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating widget {ns}/{name}: {e}"));
}

async fn create_config_map(client: &Client, ns: &str, name: &str) {
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns,
            "annotations": {"kopf.zalando.org/reconcile": format!("{{\"note\": \"{NOISE}\"}}")}},
        "data": {"noise": NOISE}
    }))
    .expect("configmap");
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap_or_else(|e| panic!("creating configmap {ns}/{name}: {e}"));
}

/// One noise Event about an object, posted as `component`.
fn noise_event(
    ns: &str,
    (api_version, kind, object_ns, name): (&str, &str, &str, &str),
    (type_, reason, component): (&str, &str, &str),
    message: &str,
) -> Event {
    let mut involved = serde_json::json!({"apiVersion": api_version, "kind": kind, "name": name});
    if !object_ns.is_empty() {
        involved["namespace"] = serde_json::json!(object_ns);
    }
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": "noise-", "namespace": ns},
        "involvedObject": involved,
        "type": type_, "reason": reason, "message": message,
        "source": {"component": component}, "reportingComponent": component,
        "count": 5,
        "firstTimestamp": jiff::Timestamp::now().to_string(),
        "lastTimestamp": jiff::Timestamp::now().to_string(),
    }))
    .expect("event")
}

/// Posts the noise Events, 16 at a time.
async fn post_events(client: &Client, events: Vec<Event>) {
    let total = events.len();
    futures::stream::iter(events)
        .map(|e| {
            let api: Api<Event> = Api::namespaced(
                client.clone(),
                e.metadata.namespace.as_deref().unwrap_or("default"),
            );
            async move { api.create(&PostParams::default(), &e).await.map(|_| ()) }
        })
        .buffer_unordered(16)
        .for_each(|r| async move {
            if let Err(e) = r {
                panic!("posting a noise Event: {e}");
            }
        })
        .await;
    say(format!("{total} noise Events posted"));
}

fn checks_of(status: &KopfAuditStatus) -> BTreeSet<String> {
    status
        .findings
        .iter()
        .map(|f| f.check.as_str().to_string())
        .collect()
}

/// Every string a finding shows.
fn finding_text(status: &KopfAuditStatus) -> String {
    status
        .findings
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f.check,
                f.message,
                f.evidence.as_deref().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn in_a_noisy_shared_cluster_every_finding_is_about_the_operators_own_objects() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "noisy").await;
    let served = TestNamespace::named(&client, &format!("{}-served-a", ns.name)).await;
    let other = TestNamespace::named(&client, &format!("{}-other", ns.name)).await;
    let fixtures = [
        "clusterwide-gizmos",
        "pattern-widgets",
        "logging-flood",
        "cluster-scoped-posted",
        "cluster-scoped-default",
    ];
    let running: Vec<Fixture> = fixtures
        .iter()
        .map(|f| Fixture::start(f, &ns.name, None))
        .collect();

    say(
        "noise: same-kind Widgets where the pattern does not match, other kinds with the operators' names",
    );
    let progress = serde_json::json!({
        "kopf.zalando.org/reconcile": format!("{{\"started\": \"2026-01-01T00:00:00Z\", \"note\": \"{NOISE}\"}}"),
    });
    create_widget(&client, &served.name, "alpha", serde_json::json!({})).await;
    create_widget(&client, &other.name, "alpha", progress.clone()).await;
    create_widget(&client, &other.name, "noise-widget", progress).await;
    let gizmo = format!("{}-gizmo", ns.name);
    let gadget = format!("{}-gadget", ns.name);
    for (where_, name) in [
        (&other.name, &gizmo),
        (&ns.name, &gizmo),
        (&other.name, &gadget),
    ] {
        create_config_map(&client, where_, name).await;
    }

    say("noise: over 2,000 Events by kubelet, other controllers and kopf about other kinds");
    let long = format!("{NOISE} {}...{}", "x".repeat(600), "y".repeat(420));
    let mut events = Vec::new();
    for i in 0..600 {
        // Kubelet BackOff Warnings about pods named like the operators' objects.
        let pod = if i % 2 == 0 { "alpha" } else { gizmo.as_str() };
        for where_ in [&other.name, &served.name] {
            events.push(noise_event(
                where_,
                ("v1", "Pod", where_, pod),
                ("Warning", "BackOff", "kubelet"),
                &format!("{NOISE}: Back-off restarting failed container"),
            ));
        }
    }
    for i in 0..400 {
        // kopf's Logging Events and truncated messages about ConfigMaps of the same names.
        events.push(noise_event(
            &ns.name,
            ("v1", "ConfigMap", &ns.name, &gizmo),
            ("Normal", "Logging", "kopf"),
            &format!("{NOISE} {i}"),
        ));
        events.push(noise_event(
            &other.name,
            ("v1", "ConfigMap", &other.name, &gadget),
            ("Warning", "Failed", "kopf"),
            &long,
        ));
    }
    for _ in 0..300 {
        // Another controller repeating itself about same-kind Widgets it is not served.
        events.push(noise_event(
            &other.name,
            (
                "pattern.fixtures.kopf-audit.dev/v1",
                "Widget",
                &other.name,
                "alpha",
            ),
            ("Normal", "Synced", "other-controller"),
            &format!("{NOISE}: synced"),
        ));
    }
    post_events(&client, events).await;

    let _auditor = Auditor::start(
        &support::kubeconfig_path(),
        &ns.name,
        &["--allow-cross-namespace"],
    );
    let audits: Api<KopfAudit> = Api::namespaced(client.clone(), &ns.name);
    for fixture in &running {
        let deployment = fixture_deployment_name(&client, &ns.name, &fixture.name).await;
        let audit: KopfAudit = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": fixture.name},
            "spec": {"target": {"deployment": deployment}, "interval": "30s"}
        }))
        .expect("KopfAudit");
        audits
            .create(&PostParams::default(), &audit)
            .await
            .expect("creating a KopfAudit");
    }

    for fixture in &running {
        let expect = expectations(&fixture.name);
        let must: BTreeSet<String> = expect.must.iter().cloned().collect();
        let name = fixture.name.clone();
        let status = wait_for(
            &format!("{name}: its expected findings {must:?}"),
            Duration::from_secs(240),
            || {
                let (audits, name, must) = (audits.clone(), name.clone(), must.clone());
                async move {
                    let status = audits.get(&name).await.ok()?.status?;
                    let ready = status
                        .conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True");
                    (ready && must.is_subset(&checks_of(&status))).then_some(status)
                }
            },
        )
        .await;
        let found = checks_of(&status);
        for id in &expect.must_not {
            assert!(
                !found.contains(id),
                "{name}: {id} is caused by others' objects or Events: {:#?}",
                status.findings
            );
        }
        let text = finding_text(&status);
        for foreign in [NOISE, other.name.as_str(), "kubelet", "BackOff"] {
            assert!(
                !text.contains(foreign),
                "{name}: a finding names {foreign:?}, which is not the operator's:\n{text}"
            );
        }
        assert!(
            status.targets.iter().all(|t| !t.events_truncated),
            "{name}: the Event read was cut"
        );
        say(format!("{name}: {found:?}"));
    }
}

/// The Deployment a fixture created in a shared namespace (by the fixture's name prefix).
async fn fixture_deployment_name(client: &Client, ns: &str, fixture: &str) -> String {
    let manifests = std::fs::read_to_string(
        support::repo().join(format!("tests/fixtures/kopf/{fixture}/manifests.yaml")),
    )
    .expect("manifests");
    let names: Vec<String> = serde_yaml_ng::Deserializer::from_str(&manifests)
        .filter_map(|doc| <serde_yaml_ng::Value as serde::Deserialize>::deserialize(doc).ok())
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Deployment"))
        .filter_map(|v| v["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let deployments = Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), ns)
        .list(&Default::default())
        .await
        .expect("deployments");
    deployments
        .items
        .iter()
        .map(|d| d.name_any())
        .find(|n| names.contains(n))
        .unwrap_or_else(|| panic!("{fixture}: no Deployment of {names:?} in {ns}"))
}

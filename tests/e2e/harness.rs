//! The harness itself, against the real API server: pods run and serve their logs,
//! RBAC is enforced on real kopf operators, and kopf leaves its real marks.

use crate::support::{self, Fixture, TestNamespace, say, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, DynamicObject, ListParams, LogParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::time::Duration;

/// Reads a pod's log through the API server (served by kwok from the fixture's file).
async fn pod_log(client: &kube::Client, ns: &str, pod: &str, previous: bool) -> String {
    let params = LogParams {
        previous,
        ..Default::default()
    };
    Api::<Pod>::namespaced(client.clone(), ns)
        .logs(pod, &params)
        .await
        .unwrap_or_default()
}

#[tokio::test]
async fn a_deployment_pod_runs_and_its_log_is_read_through_the_api() {
    let client = support::admin_client().await;
    let ns = TestNamespace::create(&client, "pod-log").await;
    let fixture = Fixture::start("good", &ns.name, None);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let pod = pods
        .get(&fixture.pod)
        .await
        .expect("the fixture's pod exists");
    let phase = pod.status.and_then(|s| s.phase).unwrap_or_default();
    assert_eq!(phase, "Running", "kwok runs the Deployment's pod");
    let log = wait_for(
        "kopf's output in the pod log",
        Duration::from_secs(90),
        || {
            let client = client.clone();
            let (ns, pod) = (ns.name.clone(), fixture.pod.clone());
            async move {
                let log = pod_log(&client, &ns, &pod, false).await;
                log.contains("succeeded").then_some(log)
            }
        },
    )
    .await;
    assert!(
        log.lines()
            .any(|l| l.contains("] kopf.") && l.contains("[INFO    ]")),
        "full-format kopf lines: {log}"
    );
    say("pod log served through the API");
}

/// A client acting as a ServiceAccount, through a TokenRequest token.
async fn client_as(admin: &kube::Client, ns: &str, account: &str) -> kube::Client {
    support::client_for(&support::token_kubeconfig(admin, ns, account).await).await
}

async fn service_account_of(client: &kube::Client, ns: &str) -> String {
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("deployments");
    deployments.items[0]
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into())
}

#[tokio::test]
async fn missing_events_create_is_refused_and_kopf_logs_the_403() {
    let client = support::admin_client().await;
    let ns = TestNamespace::create(&client, "no-events").await;
    let fixture = Fixture::start("no-events-create", &ns.name, None);
    let account = service_account_of(&client, &ns.name).await;
    let as_operator = client_as(&client, &ns.name, &account).await;
    let event: Event = serde_json::from_value(serde_json::json!({
        "metadata": {"generateName": "probe-"},
        "involvedObject": {"kind": "Pod", "name": fixture.pod, "namespace": ns.name},
        "reason": "Probe", "message": "probe", "type": "Normal"
    }))
    .expect("event");
    let refused = Api::<Event>::namespaced(as_operator, &ns.name)
        .create(&PostParams::default(), &event)
        .await;
    match refused {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("creating an event as {account} should be forbidden, got {other:?}"),
    }
    let log = wait_for(
        "`Failed to post an event` in the pod log",
        Duration::from_secs(120),
        || {
            let client = client.clone();
            let (ns, pod) = (ns.name.clone(), fixture.pod.clone());
            async move {
                let log = pod_log(&client, &ns, &pod, false).await;
                log.contains("Failed to post an event").then_some(log)
            }
        },
    )
    .await;
    let line = log
        .lines()
        .find(|l| l.contains("Failed to post an event"))
        .unwrap_or_default();
    assert!(line.contains("403"), "the line names the code: {line}");
}

#[tokio::test]
async fn posting_loggers_at_info_produce_logging_events() {
    let client = support::admin_client().await;
    let ns = TestNamespace::create(&client, "flood").await;
    let _fixture = Fixture::start("logging-flood", &ns.name, None);
    let events: Api<Event> = Api::namespaced(client.clone(), &ns.name);
    let found = wait_for(
        "a Logging event posted by kopf",
        Duration::from_secs(90),
        || {
            let events = events.clone();
            async move {
                let list = events.list(&ListParams::default()).await.ok()?;
                list.items.into_iter().find(|e| {
                    e.reason.as_deref() == Some("Logging")
                        && e.type_.as_deref() == Some("Normal")
                        && e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("kopf")
                })
            }
        },
    )
    .await;
    let kind = found.involved_object.kind.unwrap_or_default();
    assert_ne!(kind, "", "the event is about a handled object");
    say(format!("Logging event on a {kind}"));
}

/// The first CustomResourceDefinition of a fixture's manifests, as an ApiResource.
fn fixture_resource(fixture: &str) -> ApiResource {
    let path = support::repo().join(format!("tests/fixtures/kopf/{fixture}/manifests.yaml"));
    let text = std::fs::read_to_string(path).expect("manifests");
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let value = match <serde_yaml_ng::Value as serde::Deserialize>::deserialize(doc) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
            continue;
        }
        let spec = &value["spec"];
        let group = spec["group"].as_str().unwrap_or_default();
        let kind = spec["names"]["kind"].as_str().unwrap_or_default();
        let plural = spec["names"]["plural"].as_str().unwrap_or_default();
        let version = spec["versions"][0]["name"].as_str().unwrap_or_default();
        return ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, kind),
            plural,
        );
    }
    panic!("fixture {fixture} has no CRD");
}

#[tokio::test]
async fn default_persistence_leaves_kopf_annotations() {
    let client = support::admin_client().await;
    let ns = TestNamespace::create(&client, "annotations").await;
    let _fixture = Fixture::start("annotations-storage", &ns.name, None);
    let resource = fixture_resource("annotations-storage");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &resource);
    let keys = wait_for(
        "kopf's diff-base annotation on a handled object",
        Duration::from_secs(90),
        || {
            let api = api.clone();
            async move {
                let list = api.list(&ListParams::default()).await.ok()?;
                let keys: Vec<String> = list
                    .items
                    .iter()
                    .flat_map(|o| o.metadata.annotations.iter().flatten())
                    .map(|(k, _)| k.clone())
                    .filter(|k| k.starts_with("kopf.zalando.org/"))
                    .collect();
                // kopf writes its progress annotations first and the diff-base in a
                // later patch: wait for the diff-base itself.
                keys.iter()
                    .any(|k| k == "kopf.zalando.org/last-handled-configuration")
                    .then_some(keys)
            }
        },
    )
    .await;
    say(format!("kopf annotations: {keys:?}"));
    assert!(
        keys.iter()
            .any(|k| k == "kopf.zalando.org/last-handled-configuration"),
        "the diff-base annotation: {keys:?}"
    );
}

//! Reading Events against a fake API server: where kopf files those of cluster-scoped
//! objects, and what the reach leaves unread.

use super::*;
use crate::model::evidence::HandledSource;
use crate::model::kopf_run::Peering;
use crate::model::testing::{ns, run};
use crate::testing::{FakeApi, json};
use http::{Method, StatusCode};

fn reach(own: &str, cross_namespace: bool) -> Reach {
    Reach {
        own: own.into(),
        cross_namespace,
        reader: format!("{own}/audit"),
    }
}

/// The cluster-scoped Gadgets of `gadgets.example.com`.
fn gadgets() -> HandledResource {
    HandledResource {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "gadgets".into(),
        kind: Some("Gadget".into()),
        namespaced: false,
        crd: None,
        source: HandledSource::RbacWatch,
    }
}

/// A kopf Event about Gadget `g1`, filed in `namespace` (kopf writes it into
/// `involvedObject.namespace` too).
fn kopf_event(namespace: &str, reason: &str, type_: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("kopf-event-{reason}"), "namespace": namespace},
        "involvedObject": {"apiVersion": "example.com/v1", "kind": "Gadget", "name": "g1",
            "uid": "u1", "namespace": namespace},
        "type": type_, "reason": reason, "message": "Handler 'reconcile' succeeded.",
        "source": {"component": "kopf"}, "reportingComponent": "kopf",
        "lastTimestamp": jiff::Timestamp::now().to_string(),
    })
}

/// Events list answers: `default` holds kopf's Logging Event, `ops` holds `at_home`.
fn answer(
    at_home: Vec<serde_json::Value>,
) -> impl Fn(&Method, &str, &serde_json::Value) -> http::Response<kube::client::Body> {
    move |method, path, _| {
        assert_eq!(method, Method::GET, "{path}");
        let items = if path.starts_with("/api/v1/namespaces/default/events") {
            vec![kopf_event("default", "Logging", "Normal")]
        } else if path.starts_with("/api/v1/namespaces/ops/events") {
            at_home.clone()
        } else {
            panic!("unexpected read {path}")
        };
        json(
            StatusCode::OK,
            serde_json::json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": items}),
        )
    }
}

async fn read(
    at_home: Vec<serde_json::Value>,
    cross_namespace: bool,
) -> (EventEvidence, Vec<String>) {
    let (client, api) = FakeApi::start("ops", answer(at_home));
    let r = run(ns(&["ops"]), Peering::Standalone);
    let events = gather(
        &client,
        &r,
        &[gadgets()],
        "ops",
        &reach("ops", cross_namespace),
        jiff::Timestamp::now(),
        std::time::Duration::from_secs(600),
    )
    .await
    .expect("events");
    let paths = api.take().into_iter().map(|s| s.path).collect();
    (events, paths)
}

#[tokio::test]
async fn events_of_cluster_scoped_objects_are_read_in_default_too() {
    // kopf logged in through the kubernetes client files them in `default`.
    let (events, paths) = read(Vec::new(), true).await;
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("/api/v1/namespaces/default/events")),
        "{paths:?}"
    );
    assert_eq!(events.events.len(), 1, "{events:#?}");
    let e = &events.events[0];
    assert_eq!(
        (
            e.reason.as_str(),
            e.object_namespace.as_str(),
            e.filed_in.as_str()
        ),
        ("Logging", "", "default")
    );
    assert!(events.unread.is_empty());
}

#[tokio::test]
async fn without_the_allowance_default_is_named_unread_not_read() {
    let (events, paths) = read(Vec::new(), false).await;
    assert!(
        paths
            .iter()
            .all(|p| p.starts_with("/api/v1/namespaces/ops/events")),
        "{paths:?}"
    );
    assert!(events.events.is_empty());
    let unread: Vec<&String> = events.unread.keys().collect();
    assert_eq!(unread, vec!["default"]);
    let why = &events.unread["default"];
    assert_eq!(why.why, crate::model::evidence::Obstacle::OutsideNamespace);
    assert!(
        why.message.contains("--allow-cross-namespace"),
        "{}",
        why.message
    );
    // kopf is seen filing them at home: one login, one namespace, nothing is missing.
    let (events, _) = read(vec![kopf_event("ops", "Provisioned", "Normal")], false).await;
    assert_eq!(events.events.len(), 1);
    assert!(events.unread.is_empty(), "{:?}", events.unread);
}

#[tokio::test]
async fn default_refused_to_the_auditor_is_named_unread_and_the_rest_counts() {
    // A namespaced install with the allowance: its Role does not reach `default`.
    let refuse_default = |method: &Method, path: &str, body: &serde_json::Value| {
        if path.starts_with("/api/v1/namespaces/default/events") {
            return json(
                StatusCode::FORBIDDEN,
                serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "Forbidden", "code": 403, "message": "events is forbidden"}),
            );
        }
        answer(Vec::new())(method, path, body)
    };
    let (client, _api) = FakeApi::start("ops", refuse_default);
    let r = run(ns(&["ops"]), Peering::Standalone);
    let events = gather(
        &client,
        &r,
        &[gadgets()],
        "ops",
        &reach("ops", true),
        jiff::Timestamp::now(),
        std::time::Duration::from_secs(600),
    )
    .await
    .expect("the area is read, `default` aside");
    let why = &events.unread["default"];
    assert_eq!(why.why, crate::model::evidence::Obstacle::Forbidden);
    assert!(
        why.message.contains("list on events in namespace default"),
        "{}",
        why.message
    );
}

#[test]
fn an_operator_living_in_default_reads_it_once_and_misses_nothing() {
    let r = run(ns(&["default"]), Peering::Standalone);
    let places = event_namespaces(&r, &[gadgets()], "default", &reach("default", false));
    assert_eq!(
        places.required,
        Namespaces::Only(BTreeSet::from(["default".to_string()]))
    );
    assert_eq!(places.fallback, None);
    assert!(places.unread.is_empty());
}

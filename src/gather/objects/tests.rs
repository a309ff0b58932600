//! Sampling objects against a fake API server that pages as the real one does.

use super::*;
use crate::model::handled::HandledSource;
use crate::testing::FakeApi;
use http::{Method, Response};
use k8s_openapi::api::core::v1::Container;
use kube::client::Body;

/// A list of `total` objects in namespace `ns`, served `limit` at a time from the
/// `continue` token (the index of the next object).
fn pages(total: usize) -> impl Fn(&Method, &str, &serde_json::Value) -> Response<Body> {
    move |method, path, _| {
        assert_eq!(method, Method::GET, "{path}");
        let param = |name: &str| {
            path.split(['?', '&'])
                .find_map(|p| p.strip_prefix(&format!("{name}=")))
                .and_then(|v| v.parse::<usize>().ok())
        };
        let limit = param("limit").unwrap_or(usize::MAX);
        let from = param("continue").unwrap_or(0);
        let to = total.min(from.saturating_add(limit));
        let items: Vec<serde_json::Value> = (from..to)
            .map(|i| {
                serde_json::json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": format!("w{i}"), "namespace": "ns",
                                 "annotations": {"kopf.zalando.org/last-handled-configuration": "{\"spec\":{\"size\":1}}"}},
                    "spec": {"size": if i % 2 == 0 { 1 } else { 2 }}
                })
            })
            .collect();
        let next = if to < total {
            to.to_string()
        } else {
            String::new()
        };
        let body = serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "WidgetList",
            "metadata": {"continue": next}, "items": items
        });
        Response::new(Body::from(body.to_string().into_bytes()))
    }
}

fn run() -> KopfRun {
    let container: Container = serde_json::from_value(serde_json::json!({
        "name": "operator", "command": ["kopf", "run", "--namespace=ns", "op.py"]
    }))
    .expect("container");
    crate::model::kopf_run::parse_in_namespace(&container, Some("ns")).expect("kopf")
}

fn widgets() -> HandledResource {
    HandledResource {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        kind: Some("Widget".into()),
        namespaced: true,
        crd: None,
        source: HandledSource::Spec,
    }
}

fn reach() -> Reach {
    Reach {
        own: "ns".into(),
        cross_namespace: false,
        reader: "ns/audit".into(),
    }
}

/// The `limit` of each request seen.
fn limits(api: &FakeApi) -> Vec<usize> {
    api.take()
        .iter()
        .map(|s| {
            s.path
                .split(['?', '&'])
                .find_map(|p| p.strip_prefix("limit="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(usize::MAX)
        })
        .collect()
}

#[tokio::test]
async fn a_crowded_namespace_is_read_in_pages_and_no_further_than_the_sample() {
    let (client, api) = FakeApi::start("ns", pages(500));
    let samples = gather(
        &client,
        &run(),
        &[widgets()],
        "ns",
        &reach(),
        &ObjectPages::default(),
    )
    .await
    .expect("sampled")
    .samples;
    assert_eq!(samples.len(), SAMPLE_PER_RESOURCE as usize);
    let limits = limits(&api);
    assert_eq!(
        limits,
        vec![SAMPLE_PAGE as usize; (SAMPLE_PER_RESOURCE / SAMPLE_PAGE) as usize],
        "pages of {SAMPLE_PAGE}, none past the sample"
    );
    // Read whole, one page at a time: each object is where the fake put it.
    assert_eq!(samples[0].name, "w0");
    assert_eq!(samples[49].name, "w49");
    assert!(samples[1].handling.differs && !samples[0].handling.differs);
}

#[tokio::test]
async fn a_few_objects_take_one_request_and_a_short_last_page_stops() {
    let (client, api) = FakeApi::start("ns", pages(7));
    let samples = gather(
        &client,
        &run(),
        &[widgets()],
        "ns",
        &reach(),
        &ObjectPages::default(),
    )
    .await
    .expect("sampled")
    .samples;
    assert_eq!(samples.len(), 7);
    assert_eq!(limits(&api), vec![SAMPLE_PAGE as usize]);

    let (client, api) = FakeApi::start("ns", pages(23));
    let samples = gather(
        &client,
        &run(),
        &[widgets()],
        "ns",
        &reach(),
        &ObjectPages::default(),
    )
    .await
    .expect("sampled")
    .samples;
    assert_eq!(samples.len(), 23);
    assert_eq!(limits(&api).len(), 3, "10 + 10 + 3");
}

#[tokio::test]
async fn the_process_holds_no_more_pages_than_its_permits() {
    let (client, api) = FakeApi::start("ns", pages(30));
    let pages = ObjectPages::default();
    let held: Vec<_> = (0..PAGES_IN_FLIGHT)
        .map(|_| pages.0.try_acquire().expect("a free permit"))
        .collect();
    let (run, handled, reach) = (run(), [widgets()], reach());
    let mut sampling = Box::pin(gather(&client, &run, &handled, "ns", &reach, &pages));
    assert!(futures::poll!(&mut sampling).is_pending());
    assert!(api.take().is_empty(), "no page is listed without a permit");
    drop(held);
    let samples = sampling.await.expect("sampled").samples;
    assert_eq!(samples.len(), 30);
    assert_eq!(api.take().len(), 3);
    assert_eq!(
        pages.0.available_permits(),
        PAGES_IN_FLIGHT,
        "every permit given back"
    );
}

/// Widgets `tiny`, `annotated` and `usual`: the first's spec, then the second's diff-base
/// annotation, are tiny maps whose parse would cost more than one object's budget.
fn hostile(_: &Method, _: &str, _: &serde_json::Value) -> Response<Body> {
    let tiny = vec![serde_json::json!({"a": 0}); 600_000];
    let base = serde_json::json!({"spec": {"items": vec![serde_json::json!({"a": 0}); 30_000]}});
    let widget = |name: &str, spec: serde_json::Value, base: String| {
        serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "ns",
                         "annotations": {"kopf.zalando.org/last-handled-configuration": base}},
            "spec": spec
        })
    };
    let small = "{\"spec\":{\"size\":1}}".to_string();
    let items = [
        widget("tiny", serde_json::json!({"items": tiny}), small.clone()),
        widget(
            "annotated",
            serde_json::json!({"size": 1}),
            base.to_string(),
        ),
        widget("usual", serde_json::json!({"size": 2}), small),
    ];
    let body = serde_json::json!({"metadata": {"continue": ""}, "items": items});
    Response::new(Body::from(body.to_string().into_bytes()))
}

#[tokio::test]
async fn an_object_over_its_parse_budget_is_named_not_compared() {
    let (client, _api) = FakeApi::start("ns", hostile);
    let objects = gather(
        &client,
        &run(),
        &[widgets()],
        "ns",
        &reach(),
        &ObjectPages::default(),
    )
    .await
    .expect("sampled");
    assert_eq!(objects.over_budget, ["ns/tiny", "ns/annotated"]);
    let [usual] = &objects.samples[..] else {
        panic!("one sample: {:?}", objects.samples)
    };
    assert_eq!(usual.name, "usual");
    assert!(usual.handling.diffbase && usual.handling.differs);
}

fn secrets() -> HandledResource {
    HandledResource {
        group: String::new(),
        version: "v1".into(),
        plural: "secrets".into(),
        kind: Some("Secret".into()),
        namespaced: true,
        crd: None,
        source: HandledSource::Events,
    }
}

#[tokio::test]
async fn secrets_are_never_listed_and_the_other_resources_keep_their_index() {
    let (client, api) = FakeApi::start("ns", pages(3));
    let samples = gather(
        &client,
        &run(),
        &[secrets(), widgets()],
        "ns",
        &reach(),
        &ObjectPages::default(),
    )
    .await
    .expect("sampled");
    let paths: Vec<String> = api.take().into_iter().map(|s| s.path).collect();
    assert!(
        paths.iter().all(|p| !p.contains("secrets")),
        "no Secret is read: {paths:?}"
    );
    assert_eq!(paths.len(), 1, "{paths:?}");
    assert_eq!(samples.samples.len(), 3);
    assert!(
        samples.samples.iter().all(|s| s.resource == 1),
        "indexed as in handled"
    );
}

#[tokio::test]
async fn secrets_alone_read_nothing_and_need_no_reach() {
    let (client, api) = FakeApi::start("ns", pages(3));
    // Served everywhere, without the cross-namespace allowance: there is nothing to read.
    let container: Container = serde_json::from_value(serde_json::json!({
        "name": "operator", "command": ["kopf", "run", "-A", "op.py"]
    }))
    .expect("container");
    let run = crate::model::kopf_run::parse_in_namespace(&container, Some("ns")).expect("kopf");
    let samples = gather(
        &client,
        &run,
        &[secrets()],
        "ns",
        &reach(),
        &ObjectPages::default(),
    )
    .await
    .expect("nothing to sample is no obstacle");
    assert!(samples.samples.is_empty() && samples.over_budget.is_empty());
    assert!(api.take().is_empty(), "no request at all");
}

#[tokio::test]
async fn with_nothing_handled_the_reach_still_decides() {
    let (client, api) = FakeApi::start("ns", pages(3));
    let container: Container = serde_json::from_value(serde_json::json!({
        "name": "operator", "command": ["kopf", "run", "-A", "op.py"]
    }))
    .expect("container");
    let run = crate::model::kopf_run::parse_in_namespace(&container, Some("ns")).expect("kopf");
    let refused = gather(&client, &run, &[], "ns", &reach(), &ObjectPages::default())
        .await
        .expect_err("every namespace is beyond the reach");
    assert_eq!(
        refused.why,
        crate::model::evidence::Obstacle::OutsideNamespace
    );
    assert!(api.take().is_empty());
}

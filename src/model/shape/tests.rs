//! The bounded parse against serde_json's, on usual objects and hostile shapes.

use super::*;
use crate::testing::heap_peak;
use serde_json::json;

/// A list page of `items`, as the API server writes it.
fn page(items: &[Value], token: &str) -> String {
    json!({"apiVersion": "example.com/v1", "kind": "WidgetList",
        "metadata": {"resourceVersion": "9", "continue": token}, "items": items})
    .to_string()
}

/// Every item parsed, unreduced.
fn parse_all(text: &str, budget: usize) -> Page<ParsedObject> {
    list(text, budget, Some).expect("a list")
}

/// A Widget whose spec holds `n` tiny maps: 8 bytes of JSON each.
fn tiny_maps(name: &str, n: usize) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"items": vec![json!({"a": 0}); n]}})
}

#[test]
fn a_usual_object_parses_as_serde_json_does_less_its_managed_fields() {
    let object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "labels": {"app": "w"},
            "annotations": {"team": "a"}, "finalizers": ["x/y"],
            "deletionTimestamp": "2026-12-02T10:00:00Z",
            "managedFields": [
                {"manager": "kopf", "operation": "Update", "time": "2026-12-02T09:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:size": {}}}},
                {"manager": "kubectl", "time": "not a time", "subresource": "status"}]},
        "spec": {"size": 1.5, "list": [1, "two", null, true, {"k": []}]},
        "status": {"kopf": {"progress": {}}}});
    let parsed = parse_all(
        &page(std::slice::from_ref(&object), "next"),
        OBJECT_BUDGET_BYTES,
    );
    assert_eq!(parsed.continue_token.as_deref(), Some("next"));
    let [one] = &parsed.items[..] else {
        panic!("one item: {:?}", parsed.items)
    };
    let mut expected = object;
    expected["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("managedFields");
    assert_eq!(one.body, expected);
    assert!(!one.budget.is_over());
    assert_eq!((one.name.as_str(), one.namespace.as_str()), ("w", "ns"));
    assert_eq!(one.managed.len(), 2);
    assert_eq!(one.managed[0].manager.as_deref(), Some("kopf"));
    assert_eq!(
        one.managed[0].at(),
        Some("2026-12-02T09:00:00Z".parse().expect("time"))
    );
    assert_eq!(one.managed[1].at(), None, "a bad time is no time");
    assert_eq!(one.managed[1].subresource.as_deref(), Some("status"));
}

#[test]
fn the_reduction_sees_each_object_and_keeps_what_it_returns() {
    let items: Vec<Value> = (0..4).map(|i| tiny_maps(&format!("w{i}"), 1)).collect();
    let mut seen = Vec::new();
    let page = list(&page(&items, ""), OBJECT_BUDGET_BYTES, |o| {
        seen.push(o.name.clone());
        (o.name != "w2").then_some(o.name)
    })
    .expect("a list");
    assert_eq!(seen, ["w0", "w1", "w2", "w3"]);
    assert_eq!(page.items, ["w0", "w1", "w3"]);
    assert_eq!(page.continue_token.as_deref(), Some(""));
    let empty = list(r#"{"metadata": {}, "items": null}"#, 1, Some).expect("a list");
    assert!(empty.items.is_empty() && empty.continue_token.is_none());
    assert!(list("[1]", 1, Some).is_err(), "not a list");
}

/// 1.3 MiB of tiny maps: serde_json's `Value` holds about 85 times its JSON; the
/// bounded parse keeps the object's name, marks it over budget and holds the JSON text
/// and at most its budget (with a B-tree node's slack) at once.
#[test]
fn tiny_maps_are_over_budget_and_their_parse_holds_its_budget() {
    // Written as text: building it as a `Value` first would cost what is measured.
    let n = 1_300 * 1024 / 8;
    let maps = vec![r#"{"a":0}"#; n].join(",");
    let small = tiny_maps("small", 3);
    let text = format!(
        r#"{{"metadata": {{"continue": ""}}, "items": [{{"metadata": {{"name": "big", "namespace": "ns"}}, "spec": {{"items": [{maps}]}}}}, {small}]}}"#
    );
    drop(maps);
    let before = peak_rss();
    let (page, bounded) = heap_peak(|| parse_all(&text, OBJECT_BUDGET_BYTES));
    let rss_bounded = peak_rss();
    let [big, small] = &page.items[..] else {
        panic!("two items")
    };
    assert!(big.budget.is_over());
    assert_eq!((big.name.as_str(), big.namespace.as_str()), ("big", "ns"));
    assert!(!small.budget.is_over());
    assert_eq!(
        small.body["spec"]["items"].as_array().map(Vec::len),
        Some(3)
    );
    drop(page);
    let (value, naive) = heap_peak(|| serde_json::from_str::<Value>(&text).expect("json"));
    drop(value);
    let rss_naive = peak_rss();
    let (dynamic, kube) = heap_peak(|| {
        serde_json::from_str::<kube::core::ObjectList<kube::api::DynamicObject>>(&text)
            .expect("a list")
    });
    drop(dynamic);
    let rss_kube = peak_rss();
    let mib = |b: usize| b as f64 / f64::from(1 << 20);
    eprintln!(
        "JSON {:.1} MiB; heap peak: bounded parse {:.1} MiB, serde_json Value {:.1} MiB, kube ObjectList<DynamicObject> {:.1} MiB",
        mib(text.len()),
        mib(bounded),
        mib(naive),
        mib(kube)
    );
    // Process-wide: telling only when this test runs alone (`--test-threads=1`).
    eprintln!(
        "VmHWM (peak RSS) of the process: {} before, {} after the bounded parse, {} after serde_json's Value, {} after kube's DynamicObject",
        rss(before),
        rss(rss_bounded),
        rss(rss_naive),
        rss(rss_kube)
    );
    assert!(bounded < 2 * OBJECT_BUDGET_BYTES, "{bounded}");
    assert!(naive > 20 * bounded, "{naive} vs {bounded}");
}

/// The process's VmHWM in bytes, where `/proc` tells it.
fn peak_rss() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn rss(bytes: Option<usize>) -> String {
    bytes.map_or("unknown".to_string(), |b| format!("{} MiB", b >> 20))
}

#[test]
fn deep_nesting_is_over_budget_where_serde_json_fails_the_page() {
    let deep = "[".repeat(200) + &"]".repeat(200);
    let object = format!(
        r#"{{"metadata": {{"name": "deep", "namespace": "ns"}}, "spec": {{"x": {deep}}}}}"#
    );
    let text = format!(r#"{{"items": [{object}, {{"metadata": {{"name": "ok"}}}}]}}"#);
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "recursion limit"
    );
    let page = parse_all(&text, OBJECT_BUDGET_BYTES);
    assert!(page.items[0].budget.is_over());
    assert_eq!(page.items[0].name, "deep");
    assert!(!page.items[1].budget.is_over());
    let nested = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    let budget = Budget::new(OBJECT_BUDGET_BYTES);
    assert!(
        value_within(&nested, &budget).is_some(),
        "{MAX_DEPTH} levels fit"
    );
}

#[test]
fn a_value_within_a_budget_and_its_cost() {
    let value = json!({"a": [1, "xy", {"b": null}], "c": {}});
    let text = value.to_string();
    let cost = Budget::cost(&value);
    assert_eq!(value_within(&text, &Budget::new(cost)), Some(value.clone()));
    let short = Budget::new(cost / 2);
    assert_eq!(value_within(&text, &short), None);
    assert!(short.is_over());
    let roomy = Budget::new(usize::MAX);
    assert_eq!(value_within("{not json", &roomy), None);
    assert!(!roomy.is_over(), "bad JSON is not a budget spent");
}

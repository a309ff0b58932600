//! kopf's diff-base ("last handled configuration"), reimplemented from outside: the
//! essence kopf stores after handling an object and compares the object with to decide
//! whether it changed (kopf 1.38-1.45 `_cogs/configs/diffbase.py`
//! `DiffBaseStorage.build`, `_cogs/configs/progress.py` `SmartProgressStorage.clear`,
//! `_cogs/structs/diffs.py` `diff`). An object whose essence differs from its stored
//! diff-base has not been handled since it changed.

use super::shape::{self, Budget};
use serde_json::{Map, Value};

use super::kopf_marks::{DIFFBASE_KEY as KEY, PREFIX};
/// kubectl's annotation, which kopf leaves out of the essence.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The diff-base kopf stored on an object, if any: the annotation (its `-ofDRS`
/// variant for ReplicaSets of Deployments), else `status.kopf.last-handled-configuration`
/// (StatusDiffBaseStorage); both hold JSON of the essence.
#[cfg(test)]
pub(crate) fn stored(body: &Value) -> Option<Value> {
    stored_within(body, &Budget::new(usize::MAX))
}

/// The stored diff-base, parsed within what is left of the object's `budget`: `None` (and the
/// budget over) when it does not fit.
pub(crate) fn stored_within(body: &Value, budget: &Budget) -> Option<Value> {
    let prefix = prefix(body);
    let annotation = format!("{prefix}/{KEY}");
    let annotations = body.pointer("/metadata/annotations");
    let text = [annotation.clone(), format!("{annotation}-ofDRS")]
        .iter()
        .find_map(|k| annotations.and_then(|a| a.get(k.as_str())))
        .or_else(|| body.pointer("/status/kopf/last-handled-configuration"))
        .and_then(Value::as_str)?;
    shape::value_within(text.trim(), budget).map(|e| clear(e, &prefix))
}

/// The annotation prefix kopf stores under on this object: kopf's default, or the one
/// an `AnnotationsDiffBaseStorage(prefix=...)` setting chose (the prefix of a
/// `<prefix>/last-handled-configuration` annotation).
pub(crate) fn prefix(body: &Value) -> String {
    match body.pointer("/metadata/annotations") {
        Some(Value::Object(annotations)) => {
            super::kopf_marks::prefix(annotations.keys().map(String::as_str))
        }
        _ => PREFIX.to_string(),
    }
}

/// The essence of an object as kopf builds it: everything but `apiVersion`, `kind`,
/// `metadata` and `status`, plus the labels and the annotations that are not kopf's
/// (nor kubectl's last-applied). Fields a handler adds with `field=` and
/// `ignored_fields` of a custom storage are invisible from outside; the stored essence
/// tells which extra fields to add back (`extra`).
pub(crate) fn essence(body: &Value, extra: &[Vec<String>]) -> Value {
    let mut e = match body {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for k in ["apiVersion", "kind", "metadata", "status"] {
        e.remove(k);
    }
    let mut metadata = Map::new();
    if let Some(labels) = body.pointer("/metadata/labels").filter(|v| !v.is_null()) {
        metadata.insert("labels".into(), labels.clone());
    }
    if let Some(Value::Object(annotations)) = body.pointer("/metadata/annotations") {
        let mut marked = marked_prefixes(annotations.keys());
        marked.push(prefix(body));
        let kept: Map<String, Value> = annotations
            .iter()
            .filter(|(k, _)| {
                k.as_str() != LAST_APPLIED
                    && !marked.iter().any(|p| k.starts_with(&format!("{p}/")))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        metadata.insert("annotations".into(), Value::Object(kept));
    }
    e.insert("metadata".into(), Value::Object(metadata));
    let mut e = Value::Object(e);
    for path in extra {
        if let Some(v) = resolve(body, path) {
            ensure(&mut e, path, v.clone());
        }
    }
    drop_empty(&mut e);
    clear(e, &prefix(body))
}

/// The extra fields a stored essence carries beyond what [`essence`] builds: the paths
/// under `status` and under `metadata` other than labels and annotations (a handler's
/// `field=`).
pub(crate) fn extra_fields(stored: &Value) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    if let Some(Value::Object(status)) = stored.get("status") {
        out.extend(status.keys().map(|k| vec!["status".to_string(), k.clone()]));
    }
    if let Some(Value::Object(metadata)) = stored.get("metadata") {
        out.extend(
            metadata
                .keys()
                .filter(|k| *k != "labels" && *k != "annotations")
                .map(|k| vec!["metadata".to_string(), k.clone()]),
        );
    }
    out
}

/// Whether kopf's diff of two essences is empty: Python equality (`1 == 1.0`), and a
/// key missing on one side equals `null` on the other.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.keys().chain(y.keys()).all(|k| {
            same(
                x.get(k).unwrap_or(&Value::Null),
                y.get(k).unwrap_or(&Value::Null),
            )
        }),
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Bool(x), Value::Number(y)) | (Value::Number(y), Value::Bool(x)) => {
            y.as_f64() == Some(if *x { 1.0 } else { 0.0 })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| python_eq(p, q))
        }
        _ => a == b,
    }
}

/// Python's `==` inside lists (lists compare whole: a `null` is not a missing item).
fn python_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| python_eq(v, w)))
        }
        (Value::Array(_), Value::Array(_)) | (Value::Number(_), _) | (Value::Bool(_), _) => {
            same(a, b)
        }
        _ => a == b,
    }
}

/// The prefixes of annotations that belong to kopf-based operators: kopf's own, and any
/// marked with `<prefix>/kopf-managed`.
fn marked_prefixes<'a>(keys: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = keys
        .filter_map(|k| k.split_once('/'))
        .filter(|(prefix, name)| {
            *name == "kopf-managed" || *prefix == PREFIX || prefix.ends_with(&format!(".{PREFIX}"))
        })
        .map(|(prefix, _)| prefix.to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// SmartProgressStorage.clear: drops kopf's annotations (under its prefix) and
/// `status.kopf.progress`.
fn clear(mut e: Value, prefix: &str) -> Value {
    if let Some(Value::Object(annotations)) = e.pointer_mut("/metadata/annotations") {
        annotations.retain(|k, _| {
            !k.starts_with(&format!("{PREFIX}/")) && !k.starts_with(&format!("{prefix}/"))
        });
    }
    drop_empty(&mut e);
    if let Some(Value::Object(kopf)) = e.pointer_mut("/status/kopf") {
        kopf.remove("progress");
    }
    prune(&mut e, &["status", "kopf"]);
    drop_empty(&mut e);
    e
}

/// Removes `status.kopf` when emptied.
fn prune(e: &mut Value, path: &[&str]) {
    let pointer = format!("/{}", path.join("/"));
    if e.pointer(&pointer)
        .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
        && let Some(Value::Object(parent)) =
            e.pointer_mut(&format!("/{}", path[..path.len() - 1].join("/")))
    {
        parent.remove(path[path.len() - 1]);
    }
}

/// Drops empty labels, annotations, metadata and status.
fn drop_empty(e: &mut Value) {
    if let Some(Value::Object(m)) = e.get_mut("metadata") {
        for k in ["annotations", "labels"] {
            if m.get(k)
                .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
            {
                m.remove(k);
            }
        }
    }
    if let Value::Object(root) = e {
        for k in ["metadata", "status"] {
            if root
                .get(k)
                .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
            {
                root.remove(k);
            }
        }
    }
}

fn resolve<'a>(body: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(body, |v, k| v.get(k))
}

fn ensure(e: &mut Value, path: &[String], value: Value) {
    let mut at = e;
    for k in &path[..path.len().saturating_sub(1)] {
        let Value::Object(m) = at else { return };
        at = m
            .entry(k.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if let (Value::Object(m), Some(last)) = (at, path.last()) {
        m.insert(last.clone(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kopf_marks::DIFFBASE_ANNOTATION as ANNOTATION;
    use serde_json::json;

    fn widget(spec: Value, annotations: Value) -> Value {
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "labels": {"app": "w"},
                "annotations": annotations, "resourceVersion": "7", "finalizers": ["x/finalizer"]},
            "spec": spec, "status": {"phase": "Ready", "kopf": {"progress": {"h": {}}}}
        })
    }

    #[test]
    fn a_handled_object_matches_its_diff_base() {
        let handled = json!({"spec": {"size": 1}, "metadata": {"labels": {"app": "w"},
            "annotations": {"team": "a"}}});
        let body = widget(
            json!({"size": 1.0}),
            json!({
                (ANNOTATION): serde_json::to_string(&handled).expect("json") + "\n",
                "kopf.zalando.org/touch-dummy": "2026",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
                "team": "a",
            }),
        );
        let base = stored(&body).expect("a diff-base");
        let now = essence(&body, &extra_fields(&base));
        assert!(same(&base, &now), "{base}\n{now}");
    }

    #[test]
    fn a_changed_spec_or_label_differs_but_a_null_does_not() {
        let handled = json!({"spec": {"size": 1}, "metadata": {"labels": {"app": "w"}}});
        let text = serde_json::to_string(&handled).expect("json");
        let body = widget(json!({"size": 2}), json!({(ANNOTATION): text.clone()}));
        let base = stored(&body).expect("a diff-base");
        assert!(!same(&base, &essence(&body, &[])));
        let same_but_null = widget(
            json!({"size": 1, "extra": null}),
            json!({(ANNOTATION): text}),
        );
        assert!(same(&base, &essence(&same_but_null, &[])));
        let mut relabelled = same_but_null.clone();
        relabelled["metadata"]["labels"]["app"] = json!("other");
        assert!(!same(&base, &essence(&relabelled, &[])));
    }

    #[test]
    fn status_storage_and_extra_fields() {
        let handled = json!({"spec": {"size": 1}, "metadata": {"labels": {"app": "w"}},
            "status": {"phase": "Ready"}});
        let mut body = widget(json!({"size": 1}), json!({}));
        body["status"]["kopf"]["last-handled-configuration"] =
            json!(serde_json::to_string(&handled).expect("json"));
        let base = stored(&body).expect("from status");
        let extra = extra_fields(&base);
        assert_eq!(extra, vec![vec!["status".to_string(), "phase".to_string()]]);
        assert!(same(&base, &essence(&body, &extra)));
        assert!(stored(&widget(json!({}), json!({}))).is_none());
    }

    #[test]
    fn a_custom_annotation_prefix_is_kopf_s_too() {
        let handled = json!({"spec": {"size": 1}, "metadata": {"labels": {"app": "w"}}});
        let mut body = widget(json!({"size": 1}), json!({}));
        body["metadata"]["annotations"] = json!({
            "my-op.example.com/last-handled-configuration": serde_json::to_string(&handled).expect("json"),
            "my-op.example.com/reconcile": "{\"started\": \"2026-12-01T10:00:00\"}",
        });
        assert_eq!(prefix(&body), "my-op.example.com");
        let base = stored(&body).expect("under the custom prefix");
        assert!(same(&base, &essence(&body, &extra_fields(&base))));
        body["spec"]["size"] = json!(2);
        assert!(!same(&base, &essence(&body, &extra_fields(&base))));
    }
}

//! Tests of the persistence checks.

use super::*;
use crate::catalog::Severity;
use crate::model::evidence::{CrdInfo, HandledSource, LogEvidence, TargetEvidence};
use crate::model::kopf_marks::{DEFAULT_FINALIZER, DIFFBASE_ANNOTATION as DIFFBASE};
use kopf_log::{KopfVersion, VersionRange};
use std::collections::BTreeMap;

fn object(annotations: &[(&str, usize)], finalizers: &[&str]) -> ObjectSample {
    ObjectSample {
        resource: 0,
        namespace: "ns".into(),
        name: "a".into(),
        annotations: annotations
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect::<BTreeMap<_, _>>(),
        finalizers: finalizers.iter().map(|s| s.to_string()).collect(),
        deletion_timestamp: None,
        status_kopf_keys: Vec::new(),
        handling: Default::default(),
    }
}

fn resource(status: bool, preserves: bool) -> HandledResource {
    HandledResource {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        kind: Some("Widget".into()),
        namespaced: true,
        crd: Some(CrdInfo {
            name: "widgets.example.com".into(),
            status_subresource: status,
            status_preserves_unknown_fields: preserves,
        }),
        source: HandledSource::Spec,
    }
}

#[test]
fn annotations_storage_and_default_finalizer() {
    let objs = [object(
        &[
            ("kopf.zalando.org/reconcile", 100),
            (DIFFBASE, 300),
            ("app", 10),
        ],
        &[DEFAULT_FINALIZER],
    )];
    assert!(progress_annotations::live_on("op", &objs).is_some());
    assert!(diffbase_annotation::live_on("op", &objs).is_some());
    assert!(default_finalizer::live_on("op", &objs).is_some());
    let clean = [object(&[("app", 10)], &["example.com/finalizer"])];
    assert!(progress_annotations::live_on("op", &clean).is_none());
    assert!(diffbase_annotation::live_on("op", &clean).is_none());
    assert!(default_finalizer::live_on("op", &clean).is_none());
    let only_diffbase = [object(&[(DIFFBASE, 300)], &[])];
    assert!(progress_annotations::live_on("op", &only_diffbase).is_none());
}

#[test]
fn pruning_status_schema_is_an_error_when_status_storage_is_used() {
    let mut with_status = object(&[], &[]);
    with_status.status_kopf_keys = vec!["progress".into()];
    let f = status_schema::live_on("op", &[resource(true, false)], &[with_status], None, false);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Error);
    let annotated = object(&[(DIFFBASE, 10)], &[]);
    let f = status_schema::live_on("op", &[resource(false, false)], &[annotated], None, false);
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(status_schema::live_on("op", &[resource(true, true)], &[], None, false).is_empty());
}

#[test]
fn status_storage_declared_in_the_source_makes_a_pruning_schema_an_error() {
    // From files there are no objects: the source's storage settings decide.
    let declared = status_schema::live_on("op", &[resource(true, false)], &[], None, true);
    assert_eq!(declared[0].severity, Severity::Error);
    let default = status_schema::live_on("op", &[resource(true, false)], &[], None, false);
    assert_eq!(default[0].severity, Severity::Warning);
}

#[test]
fn a_schema_that_keeps_status_is_fine_without_a_status_subresource() {
    // kopf 1.45 patches status with the object when there is no status subresource
    // (`_cogs/clients/patching.py`): what the schema keeps stays, nothing is pruned.
    let mut with_status = object(&[], &[]);
    with_status.status_kopf_keys = vec!["progress".into()];
    let kept = status_schema::live_on("op", &[resource(false, true)], &[with_status], None, false);
    assert_eq!(kept, Vec::new());
}

#[test]
fn stuck_deletion_and_annotation_size() {
    let now = jiff::Timestamp::from_second(10_000).expect("ts");
    let mut deleting = object(&[], &["example.com/finalizer"]);
    deleting.deletion_timestamp = Some(jiff::Timestamp::from_second(10_000 - 11 * 60).expect("ts"));
    assert!(stuck_finalizer::live_on("op", std::slice::from_ref(&deleting), now).is_some());
    deleting.deletion_timestamp = Some(jiff::Timestamp::from_second(10_000 - 60).expect("ts"));
    assert!(stuck_finalizer::live_on("op", &[deleting], now).is_none());
    let big = [object(&[(DIFFBASE, 240_000)], &[])];
    assert_eq!(
        annotation_size::live_on("op", &big)
            .expect("finding")
            .severity,
        Severity::Error
    );
    let half = [object(&[(DIFFBASE, 140_000)], &[])];
    assert_eq!(
        annotation_size::live_on("op", &half)
            .expect("finding")
            .severity,
        Severity::Warning
    );
    assert!(annotation_size::live_on("op", &[object(&[(DIFFBASE, 1000)], &[])]).is_none());
}

// --- persistence.orphaned-finalizers ---------------------------------------------------

/// Deployment `op` in `home` with `replicas` and pods whose kopf container is in `state`.
fn operator(replicas: i32, states: &[serde_json::Value]) -> TargetEvidence {
    let deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "op", "namespace": "home"},
        "spec": {"replicas": replicas, "selector": {}, "template": {"spec": {"containers": [
            {"name": "operator", "command": ["kopf", "run"], "args": ["-A", "/app/op.py"]}
        ]}}},
    }))
    .expect("a deployment");
    let pods = states
        .iter()
        .enumerate()
        .map(|(i, state)| {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("op-7d9f8c6b5-pod{i}"), "namespace": "home"},
                "status": {"containerStatuses": [{"name": "operator", "image": "", "imageID": "",
                    "ready": state.get("running").is_some(), "restartCount": 3, "state": state}]},
            }))
            .expect("a pod")
        })
        .collect();
    TargetEvidence::new(deployment, pods, None)
}

fn finalized(namespace: &str, name: &str, finalizer: &str) -> ObjectSample {
    ObjectSample {
        namespace: namespace.into(),
        name: name.into(),
        ..object(&[], &[finalizer])
    }
}

fn running() -> serde_json::Value {
    serde_json::json!({"running": {"startedAt": "2026-12-01T10:00:00Z"}})
}

fn crash_looping() -> serde_json::Value {
    serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}})
}

#[test]
fn finalized_objects_of_a_stopped_operator_are_orphaned() {
    let handled = [resource(true, true)];
    let objects = [
        finalized("apps", "w1", DEFAULT_FINALIZER),
        finalized("apps", "w2", "example.com/finalizer"),
        finalized("apps", "plain", "kubernetes.io/pvc-protection"),
    ];
    for (target, why) in [
        (operator(0, &[]), "scaled to 0 replicas"),
        (operator(1, &[]), "has no pods"),
        (
            operator(2, &[crash_looping(), crash_looping()]),
            "every pod of it crash-loops",
        ),
    ] {
        let found = orphaned_finalizers::live_on(&target, &handled, &objects);
        assert_eq!(found.len(), 1, "{why}: {found:#?}");
        let f = &found[0];
        assert_eq!(f.severity, Severity::Error);
        assert!(f.message.contains(why), "{}", f.message);
        assert!(f.message.contains("apps/w1, apps/w2"), "{}", f.message);
        assert!(
            !f.message.contains("plain"),
            "not kopf's finalizer: {}",
            f.message
        );
    }
    // One running pod releases them.
    let alive = operator(2, &[crash_looping(), running()]);
    assert!(orphaned_finalizers::live_on(&alive, &handled, &objects).is_empty());
    // Without kopf's finalizer there is nothing to orphan.
    let plain = [finalized("apps", "plain", "kubernetes.io/pvc-protection")];
    assert!(orphaned_finalizers::live_on(&operator(0, &[]), &handled, &plain).is_empty());
}

#[test]
fn finalizing_objects_in_the_operator_s_own_namespace_is_worth_knowing() {
    let handled = [resource(true, true)];
    let objects = [
        finalized("home", "w1", DEFAULT_FINALIZER),
        finalized("apps", "w2", DEFAULT_FINALIZER),
    ];
    let found = orphaned_finalizers::live_on(&operator(1, &[running()]), &handled, &objects);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].severity, Severity::Info);
    assert!(
        found[0].message.contains("own namespace home"),
        "{}",
        found[0].message
    );
    assert!(found[0].message.contains("home/w1"), "{}", found[0].message);
    assert!(
        !found[0].message.contains("apps/w2"),
        "{}",
        found[0].message
    );
}

#[test]
fn the_status_schema_message_says_what_this_kopf_writes() {
    let old = VersionRange {
        at_least: None,
        at_most: Some(KopfVersion::new(1, 43, 0)),
    };
    let new = VersionRange {
        at_least: Some(KopfVersion::new(1, 45, 2)),
        at_most: None,
    };
    let annotated = object(&[(DIFFBASE, 100)], &[]);
    let said = |v| {
        status_schema::live_on(
            "op",
            &[resource(true, false)],
            std::slice::from_ref(&annotated),
            Some(v),
            false,
        )[0]
        .message
        .clone()
    };
    assert!(
        said(old).contains("up to kopf 1.43, its progress to status.kopf.progress"),
        "{}",
        said(old)
    );
    assert!(
        said(new).contains("from kopf 1.44 its progress goes to annotations"),
        "{}",
        said(new)
    );
}

/// The log with one line, parsed as the gatherer does.
fn logged(line: &str) -> LogEvidence {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records: Vec<kopf_log::Record> =
        parser.push_line(line.as_bytes()).into_iter().collect();
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    LogEvidence {
        records,
        ..Default::default()
    }
}

/// Core Secrets, as spec.handledResources names them (no CRD).
fn secrets() -> HandledResource {
    HandledResource {
        group: String::new(),
        version: "v1".into(),
        plural: "secrets".into(),
        kind: Some("Secret".into()),
        namespaced: true,
        crd: None,
        source: HandledSource::Spec,
    }
}

const INCONSISTENT: &str = "[2026-12-02 11:30:00,000] kopf.objects         [WARNING ] [ns/a] Merge-patching finished with inconsistencies: (('remove', ('status',), {'kopf': {'progress': {}}}, None),)";
const INCONSISTENT_JSON: &str = r#"{"message": "Merge-patching finished with inconsistencies: (('remove', ('status',), {'reconcile': {'ok': True}}, None),)", "timestamp": "2026-12-02T11:30:00.000000+00:00", "severity": "warn", "object": {"apiVersion": "v1", "kind": "Secret", "name": "b", "uid": "u", "namespace": "ns"}}"#;

#[test]
fn inconsistencies_on_a_built_in_kind_say_what_is_true_there() {
    // A Secret has no status: kopf's status.kopf and handler results are dropped by
    // the API server, which no CRD schema can change.
    let objects = [object(&[], &[])];
    let mixed = [resource(true, false), secrets()];
    let mut sample = object(&[], &[]);
    sample.resource = 1;
    for (handled, objects, line) in [
        (vec![secrets()], &objects[..], INCONSISTENT),
        (mixed.to_vec(), std::slice::from_ref(&sample), INCONSISTENT),
        (mixed.to_vec(), &[][..], INCONSISTENT_JSON),
    ] {
        let f = patch_inconsistencies::live_on("op", &logged(line), &handled, objects)
            .expect("finding");
        assert_eq!(f.severity, Severity::Warning, "{}", f.message);
        assert!(
            f.message.contains("Secret objects, a built-in kind"),
            "{}",
            f.message
        );
        assert!(f.message.contains("annotations"), "{}", f.message);
        assert!(!f.message.contains("CRD"), "{}", f.message);
    }
}

#[test]
fn inconsistencies_on_a_custom_resource_name_its_crd_and_stay_errors() {
    let objects = [object(&[], &[])];
    let f = patch_inconsistencies::live_on(
        "op",
        &logged(INCONSISTENT),
        &[resource(true, false)],
        &objects,
    )
    .expect("finding");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("CRD widgets.example.com"),
        "{}",
        f.message
    );
    // Several built-in kinds handled, the object unknown: still a built-in kind.
    let configmaps = HandledResource {
        plural: "configmaps".into(),
        kind: Some("ConfigMap".into()),
        ..secrets()
    };
    let f =
        patch_inconsistencies::live_on("op", &logged(INCONSISTENT), &[secrets(), configmaps], &[])
            .expect("finding");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message.contains("status of its objects, a built-in kind"),
        "{}",
        f.message
    );
    // Nothing known of the object: both fixes, at the check's severity.
    let f = patch_inconsistencies::live_on("op", &logged(INCONSISTENT), &[], &[]).expect("finding");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("custom resource") && f.message.contains("built-in kind"),
        "{}",
        f.message
    );
}

#[test]
fn progress_marks_follow_kopfs_one_rule_whatever_the_prefix() {
    // The diff-base of a Deployment's ReplicaSets (`-ofDRS`) is no progress mark.
    let drs = [object(
        &[("kopf.zalando.org/last-handled-configuration-ofDRS", 10)],
        &[],
    )];
    assert!(progress_annotations::live_on("op", &drs).is_none());
    // Progress under a prefix the operator's storage settings chose is found.
    let custom = [object(
        &[
            ("my-op.example.com/last-handled-configuration", 10),
            ("my-op.example.com/create_fn", 10),
        ],
        &[],
    )];
    let found = progress_annotations::live_on("op", &custom).expect("custom prefix progress");
    assert!(
        found
            .evidence
            .as_deref()
            .unwrap_or("")
            .contains("my-op.example.com/create_fn"),
        "{:?}",
        found.evidence
    );
}

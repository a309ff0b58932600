//! Tests of the persistence checks.

use super::*;
use crate::model::evidence::{CrdInfo, HandledSource};
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
    assert!(progress_annotations("op", &objs).is_some());
    assert!(diffbase_annotation("op", &objs).is_some());
    assert!(default_finalizer("op", &objs).is_some());
    let clean = [object(&[("app", 10)], &["example.com/finalizer"])];
    assert!(progress_annotations("op", &clean).is_none());
    assert!(diffbase_annotation("op", &clean).is_none());
    assert!(default_finalizer("op", &clean).is_none());
    let only_diffbase = [object(&[(DIFFBASE, 300)], &[])];
    assert!(progress_annotations("op", &only_diffbase).is_none());
}

#[test]
fn pruning_status_schema_is_an_error_when_status_storage_is_used() {
    let mut with_status = object(&[], &[]);
    with_status.status_kopf_keys = vec!["progress".into()];
    let f = status_schema("op", &[resource(true, false)], &[with_status]);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Error);
    let annotated = object(&[(DIFFBASE, 10)], &[]);
    let f = status_schema("op", &[resource(false, false)], &[annotated]);
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(status_schema("op", &[resource(true, true)], &[]).is_empty());
}

#[test]
fn stuck_deletion_and_annotation_size() {
    let now = jiff::Timestamp::from_second(10_000).expect("ts");
    let mut deleting = object(&[], &["example.com/finalizer"]);
    deleting.deletion_timestamp = Some(jiff::Timestamp::from_second(10_000 - 11 * 60).expect("ts"));
    assert!(stuck_finalizer("op", std::slice::from_ref(&deleting), now).is_some());
    deleting.deletion_timestamp = Some(jiff::Timestamp::from_second(10_000 - 60).expect("ts"));
    assert!(stuck_finalizer("op", &[deleting], now).is_none());
    let big = [object(&[(DIFFBASE, 240_000)], &[])];
    assert_eq!(
        annotation_size("op", &big).expect("finding").severity,
        Severity::Error
    );
    let half = [object(&[(DIFFBASE, 140_000)], &[])];
    assert_eq!(
        annotation_size("op", &half).expect("finding").severity,
        Severity::Warning
    );
    assert!(annotation_size("op", &[object(&[(DIFFBASE, 1000)], &[])]).is_none());
}

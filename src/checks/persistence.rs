//! Persistence checks (`persistence.*`): what kopf leaves on handled objects (annotations,
//! finalizers, status) and whether their CRDs keep what kopf writes into status.

use super::runtime::quote;
use super::{CheckId, Severity, finding};
use crate::api::Finding;
use crate::evaluate::CheckConfig;
use crate::evidence::{HandledResource, ObjectSample, TargetEvidence};
use crate::kopf_mode::KopfRun;
use kopf_log::EventKind;

/// kopf's annotation prefix for progress, diff-base and touch-dummy.
pub const KOPF_PREFIX: &str = "kopf.zalando.org/";
/// kopf's diff-base annotation.
pub const DIFFBASE: &str = "kopf.zalando.org/last-handled-configuration";
/// kopf's default finalizer.
pub const DEFAULT_FINALIZER: &str = "kopf.zalando.org/KopfFinalizerMarker";
/// The API server's limit on the total size of an object's annotations.
pub const ANNOTATIONS_LIMIT: usize = 262_144;
/// Deleting for longer than this with a finalizer is stuck.
pub const STUCK_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

/// Runs every persistence check on one kopf target.
pub fn check(target: &TargetEvidence, _run: &KopfRun, config: &CheckConfig) -> Vec<Finding> {
    let (Some(handled), Some(objects)) = (target.handled.ready(), target.objects.ready()) else {
        return Vec::new();
    };
    let name = super::workload::target_name(target);
    let mut out = Vec::new();
    out.extend(progress_annotations(name, objects));
    out.extend(diffbase_annotation(name, objects));
    out.extend(default_finalizer(name, objects));
    out.extend(status_schema(name, handled, objects));
    out.extend(stuck_finalizer(name, objects, config.now));
    out.extend(annotation_size(name, objects));
    if let Some(logs) = target.logs.ready() {
        let record = logs
            .records
            .iter()
            .chain(logs.previous.iter())
            .find(|r| matches!(r.kind, EventKind::PatchInconsistencies));
        out.extend(record.map(|r| {
            finding(
                CheckId::PersistencePatchInconsistencies,
                name,
                "kopf's patches did not stick (`Merge-patching finished with inconsistencies`): the CRD's schema prunes what kopf writes; add `x-kubernetes-preserve-unknown-fields: true` under status (or declare the fields).".to_string(),
                Some(quote(r)),
            )
        }));
    }
    out
}

fn object_name(o: &ObjectSample) -> String {
    if o.namespace.is_empty() {
        o.name.clone()
    } else {
        format!("{}/{}", o.namespace, o.name)
    }
}

fn is_progress_annotation(key: &str) -> bool {
    key.strip_prefix(KOPF_PREFIX)
        .is_some_and(|rest| rest != "last-handled-configuration" && rest != "touch-dummy")
}

fn progress_annotations(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
    let (object, key) = objects.iter().find_map(|o| {
        o.annotations
            .keys()
            .find(|k| is_progress_annotation(k))
            .map(|k| (o, k))
    })?;
    Some(finding(
        CheckId::PersistenceProgressAnnotations,
        target,
        "Handled objects carry kopf's progress in kopf.zalando.org/<handler-id> annotations: set settings.persistence.progress_storage = kopf.StatusProgressStorage() in a startup handler (the CRD's status must preserve unknown fields).".to_string(),
        Some(format!("{} has annotation {key}", object_name(object))),
    ))
}

fn diffbase_annotation(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
    let object = objects
        .iter()
        .find(|o| o.annotations.contains_key(DIFFBASE))?;
    Some(finding(
        CheckId::PersistenceDiffbaseAnnotation,
        target,
        "Handled objects carry kopf's diff-base in the kopf.zalando.org/last-handled-configuration annotation: set settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage() in a startup handler.".to_string(),
        Some(format!("{} has annotation {DIFFBASE}", object_name(object))),
    ))
}

fn default_finalizer(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
    let object = objects
        .iter()
        .find(|o| o.finalizers.iter().any(|f| f == DEFAULT_FINALIZER))?;
    Some(finding(
        CheckId::PersistenceDefaultFinalizer,
        target,
        "Handled objects use kopf's default finalizer kopf.zalando.org/KopfFinalizerMarker: name it after your group with settings.persistence.finalizer = '<group>/finalizer'.".to_string(),
        Some(format!("{} has finalizer {DEFAULT_FINALIZER}", object_name(object))),
    ))
}

fn status_schema(
    target: &str,
    handled: &[HandledResource],
    objects: &[ObjectSample],
) -> Vec<Finding> {
    handled
        .iter()
        .enumerate()
        .filter_map(|(index, resource)| {
            let crd = resource.crd.as_ref()?;
            let problem = if !crd.status_subresource {
                "has no status subresource"
            } else if !crd.status_preserves_unknown_fields {
                "has a status schema that prunes unknown fields"
            } else {
                return None;
            };
            // Status storage in use: kopf's keys in status, and no progress annotations.
            let mine = objects.iter().filter(|o| o.resource == index);
            let status_storage = mine.clone().any(|o| !o.status_kopf_keys.is_empty())
                || mine.clone().count() > 0
                    && !mine.clone().any(|o| o.annotations.keys().any(|k| k.starts_with(KOPF_PREFIX)));
            let mut f = finding(
                CheckId::PersistenceStatusSchema,
                target,
                format!(
                    "CRD {} {problem}, so kopf's progress and diff-base in status.kopf are dropped silently: enable the status subresource and add `x-kubernetes-preserve-unknown-fields: true` under status in the CRD's schema.",
                    crd.name
                ),
                Some(format!("CRD {}: {problem}", crd.name)),
            );
            f.severity = if status_storage { Severity::Error } else { Severity::Warning };
            Some(f)
        })
        .collect()
}

fn stuck_finalizer(
    target: &str,
    objects: &[ObjectSample],
    now: jiff::Timestamp,
) -> Option<Finding> {
    let object = objects.iter().find(|o| {
        !o.finalizers.is_empty()
            && o.deletion_timestamp
                .is_some_and(|t| now.duration_since(t) > STUCK_AFTER)
    })?;
    Some(finding(
        CheckId::PersistenceStuckFinalizer,
        target,
        "A handled object has been deleting for over 10 minutes and still carries a finalizer: its deletion handler keeps failing or the operator is down; read the operator's log for that object (removing the finalizer by hand skips the cleanup).".to_string(),
        Some(format!("{} finalizers {:?}", object_name(object), object.finalizers)),
    ))
}

fn annotation_size(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
    let (object, size) = objects
        .iter()
        .map(|o| (o, o.annotations.values().sum::<usize>()))
        .max_by_key(|(_, size)| *size)?;
    let severity = if size * 10 > ANNOTATIONS_LIMIT * 9 {
        Severity::Error
    } else if size * 2 > ANNOTATIONS_LIMIT {
        Severity::Warning
    } else {
        return None;
    };
    let mut f = finding(
        CheckId::PersistenceAnnotationSize,
        target,
        format!(
            "{}'s annotations approach the API server's {ANNOTATIONS_LIMIT}-byte limit (kopf's diff-base is the usual culprit): past it kopf cannot patch and finalizers get stuck; move the diff-base to status with kopf.StatusDiffBaseStorage().",
            object_name(object)
        ),
        Some(format!(
            "{} annotations over half the limit",
            object_name(object)
        )),
    );
    f.severity = severity;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{CrdInfo, HandledSource};
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
        deleting.deletion_timestamp =
            Some(jiff::Timestamp::from_second(10_000 - 11 * 60).expect("ts"));
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
}

//! Persistence checks (`persistence.*`): what kopf leaves on handled objects (annotations,
//! finalizers, status) and whether their CRDs keep what kopf writes into status.

use super::finding;
use super::runtime::quote;
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::evidence::{
    HandledResource, KopfEvidence, LogEvidence, ObjectSample, TargetEvidence,
};
use crate::model::settings::CheckSettings;
use kopf_log::EventKind;

/// kopf's annotation prefix for progress, diff-base and touch-dummy.
pub(crate) const KOPF_PREFIX: &str = "kopf.zalando.org/";
/// kopf's diff-base annotation.
pub(crate) const DIFFBASE: &str = "kopf.zalando.org/last-handled-configuration";
/// kopf's default finalizer.
pub(crate) const DEFAULT_FINALIZER: &str = "kopf.zalando.org/KopfFinalizerMarker";
/// The API server's limit on the total size of an object's annotations.
pub(crate) const ANNOTATIONS_LIMIT: usize = 262_144;
/// Deleting for longer than this with a finalizer is stuck.
pub(crate) const STUCK_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

/// Runs every persistence check on one kopf target.
pub(crate) fn check(
    target: &TargetEvidence,
    kopf: &KopfEvidence,
    settings: &CheckSettings,
) -> Vec<Finding> {
    let (Ok(handled), Ok(objects)) = (&kopf.handled, &kopf.objects) else {
        return Vec::new();
    };
    let name = target.name();
    let mut out = Vec::new();
    out.extend(progress_annotations(name, objects));
    out.extend(diffbase_annotation(name, objects));
    out.extend(default_finalizer(name, objects));
    out.extend(status_schema(name, handled, objects));
    out.extend(stuck_finalizer(name, objects, settings.now));
    out.extend(annotation_size(name, objects));
    if let Ok(logs) = &kopf.logs {
        out.extend(patch_inconsistencies(name, logs));
    }
    out
}

/// `persistence.patch-inconsistencies`: kopf's patches did not stick.
fn patch_inconsistencies(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let record = logs
        .all_records()
        .find(|r| matches!(r.kind, EventKind::PatchInconsistencies))?;
    Some(finding(
        CheckId::PersistencePatchInconsistencies,
        target,
        "kopf's patches did not stick (`Merge-patching finished with inconsistencies`): the CRD's schema prunes what kopf writes; add `x-kubernetes-preserve-unknown-fields: true` under status (or declare the fields).".to_string(),
        Some(quote(record)),
    ))
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
        Some(format!("{} has annotation {key}", object.qualified_name())),
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
        Some(format!("{} has annotation {DIFFBASE}", object.qualified_name())),
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
        Some(format!("{} has finalizer {DEFAULT_FINALIZER}", object.qualified_name())),
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
        Some(format!("{} finalizers {:?}", object.qualified_name(), object.finalizers)),
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
            object.qualified_name()
        ),
        Some(format!(
            "{} annotations over half the limit",
            object.qualified_name()
        )),
    );
    f.severity = severity;
    Some(f)
}

#[cfg(test)]
mod tests;

//! `persistence.status-schema`: a handled CRD's schema prunes what kopf writes into
//! status. Reads the CRDs' schemas, and the sampled objects to tell status storage in use.

use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{HandledResource, ObjectSample};
use crate::model::kopf_marks;
use kopf_log::{KopfVersion, VersionRange};

/// The live decider the registry lists: [`live_on`] on the handled resources, with the
/// sampled objects if they were read (from files the CRDs' schemas are known, the objects
/// are not).
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    let kopf = input.kopf;
    let Ok(handled) = &kopf.handled else {
        return Vec::new();
    };
    let objects = kopf
        .objects
        .as_ref()
        .map_or(&[][..], |objects| objects.samples.as_slice());
    let version = kopf.logs.as_ref().ok().map(|l| l.version);
    let declared_status = kopf.declared_storage.is_some_and(|s| s.uses_status());
    live_on(
        input.target.name(),
        handled,
        objects,
        version,
        declared_status,
    )
    .into_iter()
    .map(Raised::alone)
    .collect()
}

/// The first release whose default progress storage writes annotations only (kopf 1.44
/// `_cogs/configs/progress.py` SmartProgressStorage); up to 1.43 it also wrote
/// `status.kopf.progress`.
const PROGRESS_ANNOTATIONS_ONLY: KopfVersion = KopfVersion::new(1, 44, 0);

/// What kopf of this version writes into status by default, for the message.
fn status_writes(version: Option<VersionRange>) -> &'static str {
    let version = version.unwrap_or_default();
    if version
        .at_least
        .is_some_and(|v| v >= PROGRESS_ANNOTATIONS_ONLY)
    {
        "kopf writes handler results to status.<handler id> (from kopf 1.44 its progress goes to annotations unless StatusProgressStorage is chosen)"
    } else if version
        .at_most
        .is_some_and(|v| v < PROGRESS_ANNOTATIONS_ONLY)
    {
        "kopf writes handler results to status.<handler id> and, up to kopf 1.43, its progress to status.kopf.progress"
    } else {
        "kopf writes handler results to status.<handler id> (and up to kopf 1.43 its progress to status.kopf.progress)"
    }
}

/// One finding per handled CRD whose status schema prunes unknown fields: an error
/// when status storage is in use (declared, or seen on the objects), else a warning.
pub(crate) fn live_on(
    target: &str,
    handled: &[HandledResource],
    objects: &[ObjectSample],
    version: Option<VersionRange>,
    declared_status: bool,
) -> Vec<Finding> {
    handled
        .iter()
        .enumerate()
        .filter_map(|(index, resource)| {
            let crd = resource.crd.as_ref()?;
            // Without a status subresource kopf patches status with the object itself
            // (kopf 1.45 `_cogs/clients/patching.py`): only the schema decides.
            if crd.status_preserves_unknown_fields {
                return None;
            }
            let problem = "has a status schema that prunes unknown fields";
            // Status storage in use: kopf's keys in status, and no progress annotations.
            let mine = objects.iter().filter(|o| o.resource == index);
            let status_storage = declared_status
                || mine.clone().any(|o| !o.status_kopf_keys.is_empty())
                || mine.clone().count() > 0 && !mine.clone().any(has_kopf_annotations);
            let mut f = finding(
                CheckId::PersistenceStatusSchema,
                target,
                format!(
                    "CRD {} {problem}: {}, and with status storage its progress and diff-base under status.kopf; what the schema does not keep is dropped silently. Add `x-kubernetes-preserve-unknown-fields: true` under status in the CRD's schema (or under status.kopf, declaring the handlers' result fields).",
                    crd.name,
                    status_writes(version)
                ),
                Some(format!("CRD {}: {problem}", crd.name)),
            );
            f.severity = if status_storage { Severity::Error } else { Severity::Warning };
            Some(f)
        })
        .collect()
}

/// Whether an object carries annotations under kopf's prefix (its own or the one its
/// storage settings chose).
fn has_kopf_annotations(object: &ObjectSample) -> bool {
    let prefix = kopf_marks::prefix(object.annotations.keys().map(String::as_str));
    let under = format!("{prefix}/");
    object.annotations.keys().any(|k| k.starts_with(&under))
}

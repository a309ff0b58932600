//! `persistence.patch-inconsistencies`: kopf's patches did not stick. Reads the log,
//! and the handled resources and sampled objects to tell what was patched.

use super::on_objects;
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::runtime::quote;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{HandledResource, LogEvidence, ObjectSample};
use kopf_log::EventKind;

/// The live decider the registry lists: [`live_on`] on the log, the handled resources
/// and the sampled objects.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    let Ok(logs) = &input.kopf.logs else {
        return Vec::new();
    };
    on_objects(input, |name, handled, objects| {
        live_on(name, logs, handled, objects)
    })
}

/// What the object of an inconsistent patch is, as far as the evidence tells.
enum Patched<'a> {
    /// An object of a custom resource, with its CRD.
    Custom(&'a HandledResource),
    /// An object of a built-in kind (no CRD), that one when known: its status is typed,
    /// or absent (a Secret, a ConfigMap), so the API server drops what kopf writes there.
    BuiltIn(Option<&'a HandledResource>),
    /// Not known.
    Unknown,
}

/// The handled resource of the object a log record is about: by its kind (JSON format),
/// else by the sampled object of that name, else the only resource handled (or a
/// built-in kind when every one handled is).
fn patched<'a>(
    record: &kopf_log::Record,
    handled: &'a [HandledResource],
    objects: &[ObjectSample],
) -> Patched<'a> {
    let of = |h: &'a HandledResource| match h.crd {
        Some(_) => Patched::Custom(h),
        None => Patched::BuiltIn(Some(h)),
    };
    let object = record.object.as_ref();
    let by_kind = object
        .and_then(|o| o.kind.as_deref())
        .and_then(|kind| handled.iter().find(|h| h.kind.as_deref() == Some(kind)));
    let by_name = || {
        let o = object?;
        let sample = objects.iter().find(|s| {
            s.name == o.name && s.namespace == o.namespace.as_deref().unwrap_or_default()
        })?;
        handled.get(sample.resource)
    };
    if let Some(h) = by_kind.or_else(by_name) {
        return of(h);
    }
    match handled {
        [only] => of(only),
        [] => Patched::Unknown,
        several if several.iter().all(|h| h.crd.is_none()) => Patched::BuiltIn(None),
        _ => Patched::Unknown,
    }
}

/// `persistence.patch-inconsistencies`: kopf's patches did not stick. On a custom
/// resource its CRD's schema pruned them (error: kopf's own progress and diff-base may
/// be lost); on a built-in kind no schema can keep them, the fix is where kopf stores
/// its state and what handlers return (warning).
pub(crate) fn live_on(
    target: &str,
    logs: &LogEvidence,
    handled: &[HandledResource],
    objects: &[ObjectSample],
) -> Option<Finding> {
    let record = logs
        .all_records()
        .find(|r| matches!(r.kind, EventKind::PatchInconsistencies))?;
    let line = "kopf's patches did not stick (`Merge-patching finished with inconsistencies`)";
    let (message, severity) = match patched(record, handled, objects) {
        Patched::Custom(h) => (
            format!(
                "{line}: the schema of CRD {} prunes what kopf writes; add `x-kubernetes-preserve-unknown-fields: true` under status (or declare the fields).",
                h.crd
                    .as_ref()
                    .map_or(h.plural.as_str(), |c| c.name.as_str())
            ),
            CheckId::PersistencePatchInconsistencies.default_severity(),
        ),
        Patched::BuiltIn(h) => (
            format!(
                "{line}: kopf wrote into the status of {objects}, a built-in kind, and the API server dropped it: a built-in kind keeps only its own typed status (a Secret or a ConfigMap has none at all), and no schema can change that. Keep kopf's progress and diff-base in annotations for it (the defaults since kopf 1.44; not StatusProgressStorage or StatusDiffBaseStorage), and return nothing from its handlers (kopf stores a return value in status.<handler id>).",
                objects = h.map_or("its objects".to_string(), |h| format!(
                    "{} objects",
                    h.kind.as_deref().unwrap_or(h.plural.as_str())
                ))
            ),
            Severity::Warning,
        ),
        Patched::Unknown => (
            format!(
                "{line}: what kopf writes into status was dropped. On a custom resource its CRD's schema prunes it: add `x-kubernetes-preserve-unknown-fields: true` under status (or declare the fields). On a built-in kind (a Secret has no status at all) nothing can keep it: keep kopf's progress and diff-base in annotations and return nothing from its handlers."
            ),
            CheckId::PersistencePatchInconsistencies.default_severity(),
        ),
    };
    let mut f = finding(
        CheckId::PersistencePatchInconsistencies,
        target,
        message,
        Some(quote(record)),
    );
    f.severity = severity;
    Some(f)
}

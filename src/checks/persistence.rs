//! Persistence checks (`persistence.*`): what kopf leaves on handled objects (annotations,
//! finalizers, status) and whether their CRDs keep what kopf writes into status.

use super::finding;
use super::runtime::quote;
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::bounded::{MAX_LISTED, listed};
use crate::model::evidence::{
    HandledResource, KopfEvidence, LogEvidence, ObjectSample, TargetEvidence,
};
use crate::model::kopf_marks;
use crate::model::settings::CheckSettings;
use kopf_log::{EventKind, KopfVersion, VersionRange};

pub(crate) mod default_finalizer;
pub(crate) mod diffbase_annotation;
pub(crate) mod progress_annotations;
mod storage;

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
    let Ok(handled) = &kopf.handled else {
        return Vec::new();
    };
    let name = target.name();
    let version = kopf.logs.as_ref().ok().map(|l| l.version);
    let declared_status = kopf.declared_storage.is_some_and(|s| s.uses_status());
    let Ok(objects) = &kopf.objects else {
        // From files: the CRDs' schemas are known, the objects are not.
        return status_schema(name, handled, &[], version, declared_status);
    };
    let objects = &objects.samples;
    let mut out = Vec::new();
    out.extend(progress_annotations::live(name, objects));
    out.extend(diffbase_annotation::live(name, objects));
    out.extend(default_finalizer::live(name, objects));
    out.extend(status_schema(
        name,
        handled,
        objects,
        version,
        declared_status,
    ));
    out.extend(stuck_finalizer(name, objects, settings.now));
    out.extend(annotation_size(name, objects));
    out.extend(orphaned_finalizers(target, handled, objects));
    if let Ok(logs) = &kopf.logs {
        out.extend(patch_inconsistencies(name, logs, handled, objects));
    }
    out
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
fn patch_inconsistencies(
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

/// Whether an object carries annotations under kopf's prefix (its own or the one its
/// storage settings chose).
fn has_kopf_annotations(object: &ObjectSample) -> bool {
    let prefix = kopf_marks::prefix(object.annotations.keys().map(String::as_str));
    let under = format!("{prefix}/");
    object.annotations.keys().any(|k| k.starts_with(&under))
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

fn status_schema(
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
        Some(format!(
            "{} finalizers {}",
            object.qualified_name(),
            listed(&object.finalizers, ", ", MAX_LISTED)
        )),
    ))
}

/// At most this many objects are named in a finding.
const NAMED_OBJECTS: usize = 5;

/// `persistence.orphaned-finalizers`: objects carry the operator's finalizer while no
/// instance of it runs to release them (error), or live in the operator's own
/// namespace, which cannot be deleted cleanly (info).
fn orphaned_finalizers(
    target: &TargetEvidence,
    handled: &[HandledResource],
    objects: &[ObjectSample],
) -> Vec<Finding> {
    let finalized: Vec<&ObjectSample> = objects
        .iter()
        .filter(|o| {
            let group = handled.get(o.resource).map(|h| h.group.as_str());
            o.finalizers
                .iter()
                .any(|f| kopf_marks::is_kopf_finalizer(f, group))
        })
        .collect();
    if finalized.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(down) = operator_down(target) {
        let deleting = finalized
            .iter()
            .filter(|o| o.deletion_timestamp.is_some())
            .count();
        let already = match deleting {
            0 => String::new(),
            _ => " Some are being deleted already and hang.".to_string(),
        };
        out.push(finding(
            CheckId::PersistenceOrphanedFinalizers,
            target.name(),
            format!(
                "Handled objects carry the operator's finalizer while {down}, so deleting any of them hangs until the operator runs again: {}.{already} Bring the operator back (or, to give the objects up for good, remove its finalizer from them).",
                named(&finalized)
            ),
            Some(format!(
                "finalizers {}",
                listed(&finalized[0].finalizers, ", ", MAX_LISTED)
            )),
        ));
    }
    let at_home: Vec<&ObjectSample> = finalized
        .iter()
        .copied()
        .filter(|o| o.namespace == target.namespace())
        .collect();
    if !at_home.is_empty() {
        let mut f = finding(
            CheckId::PersistenceOrphanedFinalizers,
            target.name(),
            format!(
                "The operator finalizes objects in its own namespace {}: deleting that namespace removes the operator before it can release them, and the namespace hangs in Terminating: {}. Delete such objects before the namespace, or keep them elsewhere (common and usually fine).",
                target.namespace(),
                named(&at_home)
            ),
            None,
        );
        f.severity = Severity::Info;
        out.push(f);
    }
    out
}

/// Why no instance of the operator runs, if none does: scaled to zero, no pods, or every
/// pod's kopf container crash-looping.
fn operator_down(target: &TargetEvidence) -> Option<String> {
    if target.deployment.spec.replicas == Some(0) {
        return Some("its Deployment is scaled to 0 replicas".into());
    }
    if target.pods.is_empty() {
        return Some("its Deployment has no pods".into());
    }
    let container = target.kopf.as_ref().map(|k| k.run.container.as_str())?;
    let crash_looping = target.pods.iter().all(|p| {
        p.status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .filter(|cs| cs.name == container)
            .any(|cs| {
                cs.state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.as_deref())
                    == Some("CrashLoopBackOff")
            })
    });
    crash_looping.then(|| "every pod of it crash-loops".into())
}

/// `ns/a, ns/b and 3 more`.
fn named(objects: &[&ObjectSample]) -> String {
    let mut names: Vec<String> = objects.iter().map(|o| o.qualified_name()).collect();
    names.sort();
    let more = match names.len().saturating_sub(NAMED_OBJECTS) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    names.truncate(NAMED_OBJECTS);
    format!("{}{more}", names.join(", "))
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

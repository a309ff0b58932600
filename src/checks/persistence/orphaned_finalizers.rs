//! `persistence.orphaned-finalizers`: objects carry the operator's finalizer while no
//! instance of it runs, or live in its own namespace. Reads the sampled objects'
//! finalizers, and the Deployment and its pods.

use super::on_objects;
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::bounded::{MAX_LISTED, listed};
use crate::model::evidence::{HandledResource, ObjectSample, TargetEvidence};
use crate::model::kopf_marks;

/// The live decider the registry lists: [`live_on`] on the target, the handled
/// resources and the sampled objects.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_objects(input, |_, handled, objects| {
        live_on(input.target, handled, objects)
    })
}

/// At most this many objects are named in a finding.
const NAMED_OBJECTS: usize = 5;

/// `persistence.orphaned-finalizers`: objects carry the operator's finalizer while no
/// instance of it runs to release them (error), or live in the operator's own
/// namespace, which cannot be deleted cleanly (info).
pub(crate) fn live_on(
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

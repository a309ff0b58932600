//! `persistence.diffbase-annotation`: handled objects carry kopf's diff-base in a
//! `<prefix>/last-handled-configuration` annotation. Live, from the annotation on the
//! objects; from the source, from change handlers whose diff-base storage is
//! annotations (kopf 1.45 `_cogs/configs/diffbase.py`, AnnotationsDiffBaseStorage by
//! default).

use super::on_objects;
use super::storage::{annotations_chosen, at_setting_or, first_change_handler};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::source::{SourceFinding, handler_target};
use crate::checks::{LiveInput, Raised, Wording};
use crate::model::evidence::ObjectSample;
use crate::model::kopf_marks::DIFFBASE_ANNOTATION as DIFFBASE;
use crate::model::source::{SourceFacts, StorageKind};

/// What the check says and the fix it gives, whichever decided.
pub(crate) const WORDING: Wording = Wording {
    check: CheckId::PersistenceDiffbaseAnnotation,
    advice: "after its change handlers succeed, kopf stores the object's diff-base, a copy of its whole spec, in a `<prefix>/last-handled-configuration` annotation, which has pushed objects past the API server's annotation limit. Set settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage() in an @kopf.on.startup handler.",
    fix,
};

/// The startup handler that moves the diff-base to status.
fn fix() -> String {
    crate::checks::startup_settings(&[
        "settings.persistence.diffbase_storage = kopf.StatusDiffBaseStorage()",
    ])
}

/// The live decider the registry lists: [`live_on`] on the sampled objects.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_objects(input, |name, _, objects| live_on(name, objects))
}

/// Live: a sampled object carries kopf's diff-base annotation.
pub(crate) fn live_on(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
    let object = objects
        .iter()
        .find(|o| o.annotations.contains_key(DIFFBASE))?;
    Some(WORDING.finding(
        target,
        &format!("Handled objects carry kopf's diff-base annotation {DIFFBASE}"),
        Some(format!(
            "{} has annotation {DIFFBASE}",
            object.qualified_name()
        )),
    ))
}

/// From the source: change handlers of a custom resource, and annotations as the
/// diff-base storage. At the setting when a startup handler writes it, else at the
/// handler.
pub(crate) fn source(facts: &SourceFacts) -> Option<SourceFinding> {
    let h = first_change_handler(facts)?;
    if facts.storage().diffbase != StorageKind::Annotations {
        return None;
    }
    let how = annotations_chosen(
        facts,
        "persistence.diffbase_storage",
        "AnnotationsDiffBaseStorage",
    );
    let seen = format!(
        "The handled objects of change handlers like {}() will carry kopf's diff-base annotation ({how})",
        h.function
    );
    Some(SourceFinding::at(
        WORDING.finding(&handler_target(h), &seen, None),
        &at_setting_or(facts, "persistence.diffbase_storage", h),
    ))
}

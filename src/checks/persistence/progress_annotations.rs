//! `persistence.progress-annotations`: handled objects carry kopf's progress in
//! `<prefix>/<handler-id>` annotations. Live, from the marks on the objects; from the
//! source, from change handlers whose progress storage is annotations (kopf 1.45
//! `_cogs/configs/progress.py`: SmartProgressStorage, annotations only since 1.44).

use super::on_objects;
use super::storage::{at_setting_or, first_change_handler};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::source::{SourceFinding, handler_target};
use crate::checks::{LiveInput, Raised, Wording};
use crate::model::evidence::ObjectSample;
use crate::model::kopf_marks;
use crate::model::source::{SourceFacts, StorageKind};

/// What the check says and the fix it gives, whichever decided.
pub(crate) const WORDING: Wording = Wording {
    check: CheckId::PersistenceProgressAnnotations,
    advice: "while a handler retries, kopf keeps its progress in `<prefix>/<handler-id>` annotations (`kopf.zalando.org` unless a storage names another prefix) on each object. Set settings.persistence.progress_storage = kopf.StatusProgressStorage() in an @kopf.on.startup handler (the CRD's status must preserve unknown fields).",
    fix,
};

/// The startup handler that moves the progress to status.
fn fix() -> String {
    crate::checks::startup_settings(&[
        "settings.persistence.progress_storage = kopf.StatusProgressStorage()",
    ])
}

/// The live decider the registry lists: [`live_on`] on the sampled objects.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_objects(input, |name, _, objects| live_on(name, objects))
}

/// Live: a sampled object carries a progress annotation under kopf's prefix (its own or
/// the one its storage settings chose).
pub(crate) fn live_on(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
    let (object, key) = objects.iter().find_map(|o| {
        let prefix = kopf_marks::prefix(o.annotations.keys().map(String::as_str));
        o.annotations
            .keys()
            .find(|k| kopf_marks::is_progress_annotation(k, &prefix))
            .map(|k| (o, k))
    })?;
    Some(WORDING.finding(
        target,
        "Handled objects carry kopf's progress annotations",
        Some(format!("{} has annotation {key}", object.qualified_name())),
    ))
}

/// From the source: change handlers of a custom resource, and annotations as the
/// progress storage (kopf's default, or chosen at startup). At the setting when a
/// startup handler writes it, else at the handler.
pub(crate) fn source(facts: &SourceFacts) -> Option<SourceFinding> {
    let h = first_change_handler(facts)?;
    if facts.storage().progress != StorageKind::Annotations {
        return None;
    }
    let how = match facts.setting("persistence.progress_storage") {
        None => {
            "kopf's default SmartProgressStorage writes them (annotations only since kopf 1.44)"
        }
        Some(_) => "the startup settings choose annotations",
    };
    let seen = format!(
        "The handled objects of change handlers like {}() will carry kopf's progress annotations ({how})",
        h.function
    );
    Some(SourceFinding::at(
        WORDING.finding(&handler_target(h), &seen, None),
        &at_setting_or(facts, "persistence.progress_storage", h),
    ))
}

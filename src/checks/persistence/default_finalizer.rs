//! `persistence.default-finalizer`: handled objects carry kopf's default finalizer
//! `kopf.zalando.org/KopfFinalizerMarker`, shared by every kopf operator that names
//! none. Live, from the finalizers on the objects; from the source, from a handler that
//! makes kopf add its finalizer (kopf 1.45 `on.py`, `requires_finalizer`) and no
//! `persistence.finalizer` setting.

use super::on_objects;
use super::storage::registrations;
use super::storage::requires_finalizer;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::source::{SourceFinding, handler_target};
use crate::checks::{LiveInput, Raised, Wording};
use crate::model::evidence::ObjectSample;
use crate::model::kopf_marks::DEFAULT_FINALIZER;
use crate::model::source::SourceFacts;

/// What the check says and the fix it gives, whichever decided.
pub(crate) const WORDING: Wording = Wording {
    check: CheckId::PersistenceDefaultFinalizer,
    advice: "kopf.zalando.org/KopfFinalizerMarker is shared by every kopf operator that does not name its own. Name it after your group with settings.persistence.finalizer = '<group>/finalizer' in an @kopf.on.startup handler.",
    fix,
};

/// The startup handler that names the finalizer.
fn fix() -> String {
    crate::checks::startup_settings(&["settings.persistence.finalizer = '<group>/finalizer'"])
}

/// The live decider the registry lists: [`live_on`] on the sampled objects.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_objects(input, |name, _, objects| live_on(name, objects))
}

/// Live: a sampled object carries kopf's default finalizer.
pub(crate) fn live_on(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
    let object = objects
        .iter()
        .find(|o| o.finalizers.iter().any(|f| f == DEFAULT_FINALIZER))?;
    Some(WORDING.finding(
        target,
        &format!("Handled objects use kopf's default finalizer {DEFAULT_FINALIZER}"),
        Some(format!(
            "{} has finalizer {DEFAULT_FINALIZER}",
            object.qualified_name()
        )),
    ))
}

/// From the source: a handler that makes kopf add its finalizer, and no
/// `persistence.finalizer` setting. At the handler.
pub(crate) fn source(facts: &SourceFacts) -> Option<SourceFinding> {
    if facts.setting("persistence.finalizer").is_some() {
        return None;
    }
    let (h, decorator) = facts.handlers.iter().find_map(|h| {
        registrations(h)
            .find(|(d, text)| requires_finalizer(d, text))
            .map(|(d, _)| (h, d))
    })?;
    let seen = format!(
        "{}() is an @kopf.{decorator} handler, so kopf puts its finalizer on the handled objects, and no startup handler names it: they will carry kopf's default finalizer",
        h.function
    );
    Some(SourceFinding::at(
        WORDING.finding(&handler_target(h), &seen, None),
        &h.location,
    ))
}

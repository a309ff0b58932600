//! `persistence.stuck-finalizer`: a handled object deleting for long with a finalizer.
//! Reads the sampled objects' finalizers and deletion timestamps.

use super::on_objects;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::bounded::{MAX_LISTED, listed};
use crate::model::evidence::ObjectSample;

/// The live decider the registry lists: [`live_on`] on the sampled objects, at the
/// audit's now.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_objects(input, |name, _, objects| {
        live_on(name, objects, input.settings.now)
    })
}

/// Deleting for longer than this with a finalizer is stuck.
pub(crate) const STUCK_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

/// The first sampled object deleting for over [`STUCK_AFTER`] with a finalizer.
pub(crate) fn live_on(
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

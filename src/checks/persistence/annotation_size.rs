//! `persistence.annotation-size`: a handled object's annotations approach the API
//! server's limit. Reads the sampled objects' annotation sizes.

use super::on_objects;
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::ObjectSample;

/// The live decider the registry lists: [`live_on`] on the sampled objects.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_objects(input, |name, _, objects| live_on(name, objects))
}

/// The API server's limit on the total size of an object's annotations.
pub(crate) const ANNOTATIONS_LIMIT: usize = 262_144;

/// The object with the most annotation bytes, if they pass half the limit (an error
/// past nine tenths).
pub(crate) fn live_on(target: &str, objects: &[ObjectSample]) -> Option<Finding> {
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

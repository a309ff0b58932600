//! Persistence checks (`persistence.*`): what kopf leaves on handled objects (annotations,
//! finalizers, status) and whether their CRDs keep what kopf writes into status.
//!
//! Each check has its module (`persistence/<name>.rs`) with its live decider, which the
//! registry lists and [`super::run_area`] runs (and, for the marks kopf's defaults leave,
//! its source decider); this one holds what several share.

use super::{LiveInput, Raised};
use crate::api::Finding;
use crate::model::evidence::{HandledResource, ObjectSample};

pub(crate) mod annotation_size;
pub(crate) mod default_finalizer;
pub(crate) mod diffbase_annotation;
pub(crate) mod orphaned_finalizers;
pub(crate) mod patch_inconsistencies;
pub(crate) mod progress_annotations;
pub(crate) mod status_schema;
mod storage;
pub(crate) mod stuck_finalizer;

/// Runs a persistence decider on the handled resources and the sampled objects, the
/// precondition every persistence check but `persistence.status-schema` shares: without
/// both, none decides. `decide` gets the target's name too.
fn on_objects<'a, I: IntoIterator<Item = Finding>>(
    input: &LiveInput<'a>,
    decide: impl FnOnce(&'a str, &'a [HandledResource], &'a [ObjectSample]) -> I,
) -> Vec<Raised> {
    let (Ok(handled), Ok(objects)) = (&input.kopf.handled, &input.kopf.objects) else {
        return Vec::new();
    };
    decide(input.target.name(), handled, &objects.samples)
        .into_iter()
        .map(Raised::alone)
        .collect()
}

#[cfg(test)]
mod tests;

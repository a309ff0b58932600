//! `source.syntax-error`: a Python file of the operator that does not parse. Reads the
//! parse problems of the source facts; nothing in such a file is linted.

use super::{SourceFinding, raise};
use crate::catalog::CheckId;
use crate::model::source::SourceFacts;

/// The decider: one finding per file that does not parse, at the problem.
pub(crate) fn source(facts: &SourceFacts) -> Vec<SourceFinding> {
    facts
        .problems
        .iter()
        .map(|p| {
            raise(
                CheckId::SourceSyntaxError,
                &p.location.file,
                &p.location,
                format!(
                    "{} does not parse: {}. Nothing in it was linted; fix the syntax (kopf would fail to import it).",
                    p.location.file, p.message
                ),
            )
        })
        .collect()
}

//! `runtime.kopf-version`: the kopf version the log's wording shows; below 1.44 a
//! watch can freeze silently.

use super::{describe_version, on_log};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use crate::model::source::kopf_version::BOOKMARKS;

/// The log's version: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// `runtime.kopf-version`: the version the log's wording shows; below 1.44 a watch can
/// freeze silently.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let v = &logs.version;
    if v.is_unbounded() || v.is_empty() {
        return None;
    }
    let old = v.at_most.is_some_and(|hi| hi < BOOKMARKS);
    let mut f = finding(
        CheckId::RuntimeKopfVersion,
        target,
        if old {
            format!(
                "The log's wording shows {}: before 1.44 a watch stream can freeze silently (a load balancer or proxy drops it and kopf never notices), and the operator stops handling while it looks healthy. Upgrade kopf, or set settings.watching.server_timeout and client_timeout (e.g. 300 s) in a startup handler.",
                describe_version(v)
            )
        } else {
            format!(
                "The log's wording shows {}; findings that depend on kopf's version assume it.",
                describe_version(v)
            )
        },
        None,
    );
    if old {
        f.severity = Severity::Warning;
    }
    Some(f)
}

#[cfg(test)]
mod tests;

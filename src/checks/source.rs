//! The `source.*` checks, pure: what only an operator's Python source shows, for
//! `kopf-audit lint`. Each finding points at a file and line. Each check is a module of
//! its own, `source/<name>.rs`, with its decider, message and fix; this file holds what
//! several share: the finding and its location, how one is raised, and what a finding
//! says when the kopf versions allowed leave it undecided.

use super::finding;
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::source::kopf_version::KopfVersion;
use crate::model::source::{Handler, KopfPin, Location};

pub(crate) mod blocking_call;
mod call_graph;
pub(crate) mod daemon_ignores_stop;
pub(crate) mod handler_kwargs;
pub(crate) mod index_worker_limit;
pub(crate) mod module_logger;
pub(crate) mod no_resume;
mod posted;
pub(crate) mod posting_flood;
pub(crate) mod settings_outside_startup;
pub(crate) mod silent_failure;
pub(crate) mod sync_daemon_pool;
pub(crate) mod syntax_error;
pub(crate) mod timer_posting;
pub(crate) mod unfiltered_builtin;
pub(crate) mod watch_timeouts;

/// A finding of the source, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SourceFinding {
    /// The finding; its target names the handler or file.
    pub(crate) finding: Finding,
    /// Where it is.
    pub(crate) location: Location,
    /// Lines that, inserted before the location's line, fix it (also in the finding's
    /// `fix`): what SARIF can carry as a fix.
    pub(crate) insert_before: Option<String>,
}

impl SourceFinding {
    /// A finding of the source at `location`, with no lines to insert.
    pub(crate) fn at(finding: Finding, location: &Location) -> SourceFinding {
        SourceFinding {
            finding,
            location: location.clone(),
            insert_before: None,
        }
    }
}

/// A finding of `check` on `target` at `location`, with no fix yet: how every
/// `source.*` check raises one.
fn raise(check: CheckId, target: &str, location: &Location, message: String) -> SourceFinding {
    SourceFinding {
        finding: finding(check, target, message, None),
        location: location.clone(),
        insert_before: None,
    }
}

/// The name findings give a handler: `file:function`.
pub(crate) fn handler_target(h: &Handler) -> String {
    format!("{}:{}", h.location.file, h.function)
}

/// The versions a requirement allows, as an undecided finding names them.
fn allowed(pin: &KopfPin, boundary: KopfVersion) -> String {
    format!(
        "kopf {} (required at {}: {}) allows versions before and from {}.{}",
        pin.shown(),
        pin.location,
        pin.range,
        boundary.major,
        boundary.minor
    )
}

/// A finding the kopf versions allowed do not decide: info.
fn undecided(mut found: SourceFinding) -> SourceFinding {
    found.finding.severity = Severity::Info;
    found
}

#[cfg(test)]
pub(super) mod tests;

#[cfg(test)]
mod daemon_tests;

//! The pure half of an audit: one module per condition area, each a set of functions
//! from gathered evidence to findings. Nothing here performs I/O.

mod catalog;
pub mod events;
pub mod persistence;
pub mod quantity;
pub mod rbac;
pub mod runtime;
pub mod workload;

pub use catalog::{Area, CheckId, Severity};

use crate::api::Finding;

/// A finding at the check's default severity; `since` is filled in when merging status.
pub fn finding(check: CheckId, target: &str, message: String, evidence: Option<String>) -> Finding {
    Finding {
        check,
        severity: check.default_severity(),
        target: target.to_string(),
        message,
        evidence,
        since: None,
    }
}

//! What the gather phase hands to the pure checks: plain data, no clients.

use crate::checks::Area;
use crate::conditions::Reason;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use std::collections::BTreeMap;

/// Everything gathered about one target Deployment.
#[derive(Clone, Debug, Default)]
pub struct TargetEvidence {
    /// The Deployment as the watch cache has it.
    pub deployment: Deployment,
    /// Its pods (matched by the Deployment's selector).
    pub pods: Vec<Pod>,
    /// The first lines of the previous container's log, per pod, for restarted pods.
    pub previous_logs: BTreeMap<String, PreviousLog>,
    /// Areas whose evidence could not be gathered, and why.
    pub unavailable: BTreeMap<Area, Unavailable>,
}

/// The head of a previous container's log, or why it could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreviousLog {
    /// The first lines, already redacted.
    Lines(Vec<String>),
    /// The auditor could not read it (the message names the permission or error).
    Unreadable(String),
}

/// Why an area could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The condition reason (e.g. `Forbidden`).
    pub reason: Reason,
    /// What a person can act on (e.g. the permission to grant the auditor).
    pub message: String,
}

/// The clock and the target set of one audit.
#[derive(Clone, Debug)]
pub struct Evidence {
    /// When the evidence was gathered.
    pub now: Timestamp,
    /// One entry per target Deployment.
    pub targets: Vec<TargetEvidence>,
}

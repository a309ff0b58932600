//! Runtime checks (`runtime.*`): what the operator's logs say about its own health.

use crate::api::Finding;
use crate::evaluate::CheckConfig;
use crate::evidence::TargetEvidence;
use crate::kopf_mode::KopfRun;

/// Runs every check of this area on one kopf target.
pub fn check(_target: &TargetEvidence, _run: &KopfRun, _config: &CheckConfig) -> Vec<Finding> {
    Vec::new()
}

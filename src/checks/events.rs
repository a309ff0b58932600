//! Events checks (`events.*`): how the operator surfaces state as Events, read from its logs and its objects' Events side by side.

use crate::api::Finding;
use crate::evaluate::CheckConfig;
use crate::evidence::TargetEvidence;
use crate::kopf_mode::KopfRun;

/// Runs every check of this area on one kopf target.
pub fn check(_target: &TargetEvidence, _run: &KopfRun, _config: &CheckConfig) -> Vec<Finding> {
    Vec::new()
}

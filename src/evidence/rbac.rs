//! What the operator's ServiceAccount may do, as the API server answered.

/// The RBAC evidence of one target (filled by the RBAC gatherer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RbacEvidence {}

//! Per-object back-off bookkeeping, outside the reconcile: consecutive failures per
//! KopfAudit, reset on success, pruned when the audit is deleted.

use super::memory::AuditMemory;
use crate::api::KopfAudit;
use std::time::Duration;

/// The first retry after an error; doubles per consecutive failure.
const BASE: Duration = Duration::from_secs(5);
/// The longest wait between retries.
const CAP: Duration = Duration::from_secs(300);

/// Consecutive failures per KopfAudit, kept in the [`AuditMemory`].
impl AuditMemory {
    /// Records a success: the next failure starts from the base delay again.
    pub(crate) fn succeeded(&self, audit: &KopfAudit) {
        self.with(audit, |m| m.failures = 0);
    }

    /// Records a failure; returns the consecutive count and the delay before the retry.
    pub(crate) fn failed(&self, audit: &KopfAudit) -> (u32, Duration) {
        let attempts = self.with(audit, |m| {
            m.failures = m.failures.saturating_add(1);
            m.failures
        });
        (attempts, delay(attempts, rand::random::<f64>()))
    }
}

/// The delay before retry `attempts` (1-based); `jitter` in [0, 1) spreads it ±20%.
pub(crate) fn delay(attempts: u32, jitter: f64) -> Duration {
    let exp = BASE.saturating_mul(1u32 << attempts.saturating_sub(1).min(16));
    exp.min(CAP).mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::audit_of;

    #[test]
    fn delay_grows_and_is_capped() {
        assert_eq!(delay(1, 0.5), Duration::from_secs(5));
        assert_eq!(delay(2, 0.5), Duration::from_secs(10));
        assert_eq!(delay(30, 0.5), Duration::from_secs(300));
        assert!(delay(3, 0.0) < delay(3, 0.99));
    }

    #[test]
    fn counts_reset_on_success_and_are_pruned_on_delete() {
        let b = AuditMemory::default();
        let (a, c) = (
            audit_of("ns", "a", "op", None),
            audit_of("ns", "c", "op", None),
        );
        assert_eq!(b.failed(&a).0, 1);
        assert_eq!(b.failed(&a).0, 2);
        b.succeeded(&a);
        assert_eq!(b.failed(&a).0, 1);
        b.failed(&c);
        b.retain(&std::collections::HashSet::from([
            kube::runtime::reflector::ObjectRef::from_obj(&c),
        ]));
        assert_eq!(b.len(), 1);
        assert_eq!(b.failed(&c).0, 2);
    }
}

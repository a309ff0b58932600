//! What the auditor remembers of each KopfAudit between two of its runs: the
//! consecutive failures (back-off), the status it wrote last, the Events and the
//! PolicyReport it still owes, and the targets its last run read. One map holds it all,
//! keyed by the KopfAudit's namespace and name and tagged with its UID, so a KopfAudit
//! deleted and created again under the same name starts from nothing, and a deleted
//! one is forgotten in one step. The parts are written in their own modules (`backoff`,
//! `written`, `owed`, `targets`) as methods on [`AuditMemory`].

use crate::api::{KopfAudit, KopfAuditStatus};
use crate::model::rbac::ServiceAccountRef;
use crate::publish::OutgoingEvent;
use kube::ResourceExt;
use kube::core::Selector;
use kube::runtime::reflector::ObjectRef;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// Everything remembered of one KopfAudit.
#[derive(Default)]
pub(super) struct Remembered {
    /// The KopfAudit's UID: a new KopfAudit of the same name inherits nothing.
    uid: Option<String>,
    /// Consecutive failed reconciles, reset on success.
    pub(super) failures: u32,
    /// The status this instance wrote last, until the watch shows it.
    pub(super) written: Option<WrittenStatus>,
    /// What is still to be published.
    pub(super) owed: Owed,
    /// The targets as the last run read them.
    pub(super) targets: Vec<SeenTarget>,
    /// The last read of the target's Deployments and pods, reused while the watches
    /// show no change (`targets`).
    pub(super) kept: Option<KeptTarget>,
    /// When the last audit started, and for which generation: a request for another
    /// audit of the same generation sooner than the least gap waits (`requests`).
    pub(super) last_run: Option<(std::time::Instant, Option<i64>)>,
}

impl Remembered {
    /// Whether nothing is remembered (the entry is then dropped).
    fn is_empty(&self) -> bool {
        self.failures == 0
            && self.written.is_none()
            && self.owed.is_empty()
            && self.targets.is_empty()
            && self.kept.is_none()
            && self.last_run.is_none()
    }
}

/// What one audit still has to publish.
#[derive(Debug, Default)]
pub(super) struct Owed {
    /// Its Events not yet delivered, oldest first.
    pub(super) events: VecDeque<OutgoingEvent>,
    /// Whether its PolicyReport is to be written again.
    pub(super) policy_report: bool,
}

impl Owed {
    /// Whether nothing is owed.
    pub(super) fn is_empty(&self) -> bool {
        self.events.is_empty() && !self.policy_report
    }
}

/// One audit's last written status and the resourceVersions older than it.
pub(super) struct WrittenStatus {
    pub(super) older: Vec<String>,
    pub(super) last: Option<String>,
    pub(super) status: KopfAuditStatus,
}

/// The last read of an audit's target Deployments and pods, as JSON (a few KiB per
/// audit; parsed objects take two to three times that), with what decides whether it
/// is still what a read would find.
pub(super) struct KeptTarget {
    /// The KopfAudit's generation it was read for: a new spec reads again.
    pub(super) generation: Option<i64>,
    /// The watches' clock when the read began.
    pub(super) mark: crate::gather::changes::Mark,
    /// When it was read.
    pub(super) at: std::time::Instant,
    /// The Deployments and pods read, as JSON.
    pub(super) json: Box<[u8]>,
}

/// One target Deployment as the last audit read it.
#[derive(Clone, Debug)]
pub(super) struct SeenTarget {
    pub(super) namespace: String,
    pub(super) pods: Option<Selector>,
    pub(super) account: ServiceAccountRef,
    /// Where a RoleBinding can change its audit ([`needs::binding_namespaces`]); empty
    /// when it runs no kopf (no RBAC is audited then).
    pub(super) binding_namespaces: BTreeSet<String>,
}

/// What is remembered of every KopfAudit, shared by the reconciles and the watches'
/// mappers.
#[derive(Default)]
pub(crate) struct AuditMemory {
    by_audit: Mutex<HashMap<ObjectRef<KopfAudit>, Remembered>>,
}

impl AuditMemory {
    /// The map; a panic elsewhere cannot leave an entry half-written, so poison is
    /// ignored.
    fn lock(&self) -> MutexGuard<'_, HashMap<ObjectRef<KopfAudit>, Remembered>> {
        self.by_audit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `change` to what is remembered of `audit` (nothing, when the entry under
    /// its name belonged to a deleted KopfAudit of that name), and drops the entry once
    /// it holds nothing.
    pub(super) fn with<T>(
        &self,
        audit: &KopfAudit,
        change: impl FnOnce(&mut Remembered) -> T,
    ) -> T {
        let key = ObjectRef::from_obj(audit);
        let uid = audit.uid();
        let mut by_audit = self.lock();
        let remembered = by_audit.entry(key.clone()).or_default();
        if remembered.uid != uid {
            *remembered = Remembered {
                uid,
                ..Remembered::default()
            };
        }
        let out = change(remembered);
        if remembered.is_empty() {
            by_audit.remove(&key);
        }
        out
    }

    /// Visits what is remembered of every audit (under the lock: keep `visit` short).
    pub(super) fn each(&self, mut visit: impl FnMut(&ObjectRef<KopfAudit>, &Remembered)) {
        for (audit, remembered) in self.lock().iter() {
            visit(audit, remembered);
        }
    }

    /// Forgets every audit not in `live`.
    pub(crate) fn retain(&self, live: &HashSet<ObjectRef<KopfAudit>>) {
        self.lock().retain(|audit, _| live.contains(audit));
    }

    /// How many audits have something remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::audit_of;

    #[test]
    fn a_namesake_inherits_nothing_and_a_deleted_audit_is_forgotten_at_once() {
        let memory = AuditMemory::default();
        let first = audit_of("ns", "audit", "op", Some("u-1"));
        memory.failed(&first);
        memory.owe_policy_report(&first, true);
        let namesake = audit_of("ns", "audit", "op", Some("u-2"));
        assert_eq!(memory.failed(&namesake).0, 1, "no back-off inherited");
        assert!(
            !memory.policy_report_owed(&namesake),
            "nothing owed inherited"
        );
        memory.succeeded(&namesake);
        assert_eq!(memory.len(), 0, "nothing kept once nothing is remembered");
        memory.failed(&namesake);
        memory.retain(&HashSet::new());
        assert_eq!(memory.len(), 0, "nor for a deleted audit");
    }
}

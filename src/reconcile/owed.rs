//! What each audit still has to publish after its status was written: the transition
//! Events whose POST failed (refused, throttled, unavailable, timed out) and a
//! PolicyReport whose write failed. The next audit compares with the written status and sees no
//! transition, so without this they would be lost; it delivers them first, in order,
//! each Event under the name it was first tried with (a retry that the API server had
//! already taken is AlreadyExists: delivered once). Kept in memory per audit, bounded,
//! and dropped with the audit.

use crate::api::KopfAudit;
use crate::publish::OutgoingEvent;
use kube::ResourceExt;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// The most Events one audit may owe; beyond it the oldest are given up (and counted).
/// An audit plans a handful per transition, so this many means the Events API has
/// refused it for many audits in a row.
pub(crate) const MAX_OWED_EVENTS: usize = 50;

/// What one audit still has to publish.
#[derive(Debug, Default)]
struct Owed {
    /// The KopfAudit's UID: a new KopfAudit of the same name owes nothing of the old.
    uid: Option<String>,
    /// Its Events not yet delivered, oldest first.
    events: VecDeque<OutgoingEvent>,
    /// Whether its PolicyReport is to be written again.
    policy_report: bool,
}

impl Owed {
    /// Whether nothing is owed.
    fn is_empty(&self) -> bool {
        self.events.is_empty() && !self.policy_report
    }
}

/// The key of one audit.
type AuditKey = (String, String);

/// What every audit owes. Each step of a delivery is recorded here as it happens, so
/// that a delivery cut short (its future dropped between two POSTs) leaves the rest
/// owed, not lost with it.
#[derive(Default)]
pub(crate) struct Outbox {
    by_audit: Mutex<HashMap<AuditKey, Owed>>,
}

fn key_of(audit: &KopfAudit) -> AuditKey {
    (audit.namespace().unwrap_or_default(), audit.name_any())
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, HashMap<AuditKey, Owed>> {
        self.by_audit
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `change` to what `audit` owes (nothing, when what is kept under its name
    /// was owed by a deleted KopfAudit of that name), and forgets it once it owes
    /// nothing.
    fn with<T>(&self, audit: &KopfAudit, change: impl FnOnce(&mut Owed) -> T) -> T {
        let key = key_of(audit);
        let uid = audit.uid();
        let mut by_audit = self.lock();
        let owed = by_audit.entry(key.clone()).or_default();
        if owed.uid != uid {
            *owed = Owed {
                uid,
                ..Owed::default()
            };
        }
        let out = change(owed);
        if owed.is_empty() {
            by_audit.remove(&key);
        }
        out
    }

    /// Queues `events` behind those `audit` owes (every transition is news: a later one
    /// does not make an earlier one untrue, a finding raised then resolved is both);
    /// returns how many of the oldest were given up to stay within [`MAX_OWED_EVENTS`].
    pub(crate) fn queue(
        &self,
        audit: &KopfAudit,
        events: impl IntoIterator<Item = OutgoingEvent>,
    ) -> usize {
        self.with(audit, |owed| {
            owed.events.extend(events);
            let over = owed.events.len().saturating_sub(MAX_OWED_EVENTS);
            owed.events.drain(..over);
            over
        })
    }

    /// The oldest Event `audit` owes.
    pub(crate) fn next_event(&self, audit: &KopfAudit) -> Option<OutgoingEvent> {
        self.with(audit, |owed| owed.events.front().cloned())
    }

    /// Drops the Event named `name` from what `audit` owes: delivered, or given up.
    pub(crate) fn settle_event(&self, audit: &KopfAudit, name: &str) {
        self.with(audit, |owed| owed.events.retain(|e| e.name() != name));
    }

    /// How many Events `audit` owes.
    pub(crate) fn events_owed(&self, audit: &KopfAudit) -> usize {
        self.with(audit, |owed| owed.events.len())
    }

    /// Records whether `audit`'s PolicyReport is to be written again.
    pub(crate) fn owe_policy_report(&self, audit: &KopfAudit, owed: bool) {
        self.with(audit, |o| o.policy_report = owed);
    }

    /// Whether `audit`'s PolicyReport is to be written again.
    pub(crate) fn policy_report_owed(&self, audit: &KopfAudit) -> bool {
        self.with(audit, |owed| owed.policy_report)
    }

    /// Forgets the audits not in `live` (namespace, name).
    pub(crate) fn retain(&self, live: &BTreeSet<(String, String)>) {
        self.lock().retain(|k, _| live.contains(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::EventReason;
    use crate::evaluate::events::PlannedEvent;

    fn event(i: usize) -> OutgoingEvent {
        let at = jiff::Timestamp::from_second(1_800_000_000).expect("a valid time");
        let planned = PlannedEvent {
            warning: false,
            reason: EventReason::FindingResolved,
            note: format!("finding {i} is resolved."),
        };
        OutgoingEvent::new("audit", planned, at, i)
    }

    fn audit(uid: &str) -> KopfAudit {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
            "metadata": {"name": "audit", "namespace": "ns", "uid": uid},
            "spec": {"target": {"deployment": "op"}}
        }))
        .expect("audit")
    }

    #[test]
    fn owed_events_keep_their_order_and_the_oldest_go_beyond_the_bound() {
        let outbox = Outbox::default();
        let a = audit("u-1");
        assert_eq!(outbox.queue(&a, (0..30).map(event)), 0);
        assert_eq!(outbox.queue(&a, (30..60).map(event)), 10);
        assert_eq!(outbox.events_owed(&a), MAX_OWED_EVENTS);
        assert_eq!(outbox.next_event(&a), Some(event(10)));
        outbox.settle_event(&a, event(10).name());
        assert_eq!(outbox.next_event(&a), Some(event(11)));
    }

    #[test]
    fn what_is_owed_stays_with_its_audit_until_delivered_or_deleted() {
        let outbox = Outbox::default();
        let first = audit("u-1");
        outbox.queue(&first, [event(0)]);
        outbox.owe_policy_report(&first, true);
        assert!(outbox.policy_report_owed(&first));
        let namesake = audit("u-2");
        assert_eq!(
            (
                outbox.events_owed(&namesake),
                outbox.policy_report_owed(&namesake)
            ),
            (0, false),
            "a new KopfAudit of the same name owes nothing of the old"
        );
        outbox.queue(&namesake, [event(1)]);
        outbox.settle_event(&namesake, event(1).name());
        assert!(
            outbox.lock().is_empty(),
            "nothing kept once nothing is owed"
        );
        outbox.queue(&namesake, [event(2)]);
        outbox.retain(&BTreeSet::new());
        assert!(outbox.lock().is_empty(), "nor for a deleted audit");
    }
}

//! What each audit still has to publish after its status was written: the transition
//! Events whose POST failed (refused, throttled, unavailable, timed out) and a
//! PolicyReport whose write failed. The next audit compares with the written status and sees no
//! transition, so without this they would be lost; it delivers them first, in order,
//! each Event under the name it was first tried with (a retry that the API server had
//! already taken is AlreadyExists: delivered once). Kept in the
//! [`AuditMemory`] per audit, bounded, and dropped with the audit.

use super::memory::AuditMemory;
use crate::api::KopfAudit;
use crate::publish::OutgoingEvent;

/// The most Events one audit may owe; beyond it the oldest are given up (and counted).
/// An audit plans a handful per transition, so this many means the Events API has
/// refused it for many audits in a row.
pub(crate) const MAX_OWED_EVENTS: usize = 50;

/// What every audit owes, kept in the [`AuditMemory`]. Each step of a delivery is
/// recorded there as it happens, so that a delivery cut short (its future dropped
/// between two POSTs) leaves the rest owed, not lost with it.
impl AuditMemory {
    /// Queues `events` behind those `audit` owes (every transition is news: a later one
    /// does not make an earlier one untrue, a finding raised then resolved is both);
    /// returns how many of the oldest were given up to stay within [`MAX_OWED_EVENTS`].
    pub(crate) fn queue(
        &self,
        audit: &KopfAudit,
        events: impl IntoIterator<Item = OutgoingEvent>,
    ) -> usize {
        self.with(audit, |m| {
            m.owed.events.extend(events);
            let over = m.owed.events.len().saturating_sub(MAX_OWED_EVENTS);
            m.owed.events.drain(..over);
            over
        })
    }

    /// The oldest Event `audit` owes.
    pub(crate) fn next_event(&self, audit: &KopfAudit) -> Option<OutgoingEvent> {
        self.with(audit, |m| m.owed.events.front().cloned())
    }

    /// Drops the Event named `name` from what `audit` owes: delivered, or given up.
    pub(crate) fn settle_event(&self, audit: &KopfAudit, name: &str) {
        self.with(audit, |m| m.owed.events.retain(|e| e.name() != name));
    }

    /// How many Events `audit` owes.
    pub(crate) fn events_owed(&self, audit: &KopfAudit) -> usize {
        self.with(audit, |m| m.owed.events.len())
    }

    /// Records whether `audit`'s PolicyReport is to be written again.
    pub(crate) fn owe_policy_report(&self, audit: &KopfAudit, owed: bool) {
        self.with(audit, |m| m.owed.policy_report = owed);
    }

    /// Whether `audit`'s PolicyReport is to be written again.
    pub(crate) fn policy_report_owed(&self, audit: &KopfAudit) -> bool {
        self.with(audit, |m| m.owed.policy_report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::EventReason;
    use crate::evaluate::events::PlannedEvent;
    use crate::testing::audit_of;

    fn event(i: usize) -> OutgoingEvent {
        let at = jiff::Timestamp::from_second(1_800_000_000).expect("a valid time");
        let planned = PlannedEvent {
            warning: false,
            reason: EventReason::FindingResolved,
            note: format!("finding {i} is resolved."),
        };
        OutgoingEvent::new("audit", planned, at, i)
    }

    #[test]
    fn owed_events_keep_their_order_and_the_oldest_go_beyond_the_bound() {
        let outbox = AuditMemory::default();
        let a = audit_of("ns", "audit", "op", Some("u-1"));
        assert_eq!(outbox.queue(&a, (0..30).map(event)), 0);
        assert_eq!(outbox.queue(&a, (30..60).map(event)), 10);
        assert_eq!(outbox.events_owed(&a), MAX_OWED_EVENTS);
        assert_eq!(outbox.next_event(&a), Some(event(10)));
        outbox.settle_event(&a, event(10).name());
        assert_eq!(outbox.next_event(&a), Some(event(11)));
    }

    #[test]
    fn what_is_owed_stays_with_its_audit_until_delivered_or_deleted() {
        let outbox = AuditMemory::default();
        let first = audit_of("ns", "audit", "op", Some("u-1"));
        outbox.queue(&first, [event(0)]);
        outbox.owe_policy_report(&first, true);
        assert!(outbox.policy_report_owed(&first));
        let namesake = audit_of("ns", "audit", "op", Some("u-2"));
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
        assert_eq!(outbox.len(), 0, "nothing kept once nothing is owed");
        outbox.queue(&namesake, [event(2)]);
        outbox.retain(&std::collections::HashSet::new());
        assert_eq!(outbox.len(), 0, "nor for a deleted audit");
    }
}

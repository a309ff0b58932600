//! `kopf-audit audit-now` asks for an audit by writing a new value of the KopfAudit's
//! `kopfaudit.dev/requested-at` annotation. Whoever may edit the KopfAudit may write it
//! as often as they like, and each audit lists, reads logs and writes status: so a
//! request sooner than the least gap (`--audit-now-min-interval`) after the last audit
//! of the same generation waits for the gap's end, the wait is echoed in
//! `status.requestDeferredUntil`, and every request before then is answered by that one
//! audit. A change of the spec (a new generation) is never held back.

use super::memory::AuditMemory;
use crate::api::{KopfAudit, KopfAuditStatus};
use std::time::{Duration, Instant};

impl AuditMemory {
    /// Remembers that an audit of `audit` starts at `now`.
    pub(super) fn audit_started(&self, audit: &KopfAudit, now: Instant) {
        let generation = audit.metadata.generation;
        self.with(audit, |r| r.last_run = Some((now, generation)));
    }

    /// How long a requested audit of `audit` must wait at `now`, if at all: only a new
    /// request (one `stored` has not answered) of the generation the last audit ran
    /// for, within `gap` of that audit's start.
    pub(super) fn request_wait(
        &self,
        audit: &KopfAudit,
        stored: &KopfAuditStatus,
        requested: Option<&str>,
        gap: Duration,
        now: Instant,
    ) -> Option<Duration> {
        crate::evaluate::unanswered_request(stored, requested)?;
        let generation = audit.metadata.generation;
        let last = self.with(audit, |r| r.last_run)?;
        wait(last, generation, gap, now)
    }
}

/// The rest of `gap` after the `last` audit (its start and generation), when an audit
/// of `generation` at `now` comes within it.
fn wait(
    last: (Instant, Option<i64>),
    generation: Option<i64>,
    gap: Duration,
    now: Instant,
) -> Option<Duration> {
    let (started, ran_for) = last;
    if ran_for != generation {
        return None;
    }
    gap.checked_sub(now.saturating_duration_since(started))
        .filter(|rest| !rest.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::audit_of;

    fn requested(value: &str) -> KopfAudit {
        let mut a = audit_of("ns", "a", "op", Some("uid-a"));
        a.metadata.generation = Some(1);
        a.metadata.annotations = Some(
            [(
                crate::catalog::REQUESTED_AT_ANNOTATION.to_string(),
                value.to_string(),
            )]
            .into(),
        );
        a
    }

    #[test]
    fn a_burst_of_requests_within_the_gap_waits_for_one_audit() {
        let memory = AuditMemory::default();
        let gap = Duration::from_secs(10);
        let start = Instant::now();
        let stored = KopfAuditStatus::default();
        let first = requested("t1");
        assert_eq!(
            memory.request_wait(&first, &stored, Some("t1"), gap, start),
            None
        );
        memory.audit_started(&first, start);
        let answered = KopfAuditStatus {
            last_handled_requested_at: Some("t1".into()),
            ..KopfAuditStatus::default()
        };
        // The same request again is no new request.
        assert_eq!(
            memory.request_wait(&first, &answered, Some("t1"), gap, start),
            None
        );
        // New values every second wait for the rest of the gap.
        for second in 1..10 {
            let at = start + Duration::from_secs(second);
            let next = requested(&format!("r{second}"));
            let wait = memory.request_wait(&next, &answered, Some(&format!("r{second}")), gap, at);
            assert_eq!(
                wait,
                Some(Duration::from_secs(10 - second)),
                "after {second} s"
            );
        }
        // After the gap, the request runs.
        let late = start + gap;
        assert_eq!(
            memory.request_wait(&first, &answered, Some("t10"), gap, late),
            None
        );
    }

    #[test]
    fn a_new_generation_and_a_first_audit_never_wait() {
        let memory = AuditMemory::default();
        let gap = Duration::from_secs(10);
        let start = Instant::now();
        let stored = KopfAuditStatus::default();
        let mut a = requested("t1");
        memory.audit_started(&a, start);
        a.metadata.generation = Some(2);
        assert_eq!(
            memory.request_wait(&a, &stored, Some("t2"), gap, start),
            None
        );
        let other = audit_of("ns", "b", "op", Some("uid-b"));
        assert_eq!(
            memory.request_wait(&other, &stored, Some("t2"), gap, start),
            None
        );
        assert_eq!(
            memory.request_wait(&requested("x"), &stored, None, gap, start),
            None,
            "no request, no wait"
        );
    }
}

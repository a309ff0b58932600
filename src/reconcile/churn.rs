//! A bound on how often the RBAC churn of one namespace re-runs an audit. Anyone who
//! may edit a RoleBinding in their own namespace can change it in a loop; each change
//! that can matter to an audit re-runs it (its SubjectAccessReviews, log read, status
//! write). So the changes from one source (a namespace, or the cluster's own
//! ClusterRoles and ClusterRoleBindings) re-run a given audit at most once per
//! [`CHURN_PERIOD`]: the first change at once, and every later change within the period
//! coalesced into one re-run at its end, so that the last state is always audited.

use crate::api::KopfAudit;
use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use kube::runtime::reflector::ObjectRef;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// The shortest time between two re-runs of one audit caused by one source's RBAC
/// changes.
pub(crate) const CHURN_PERIOD: Duration = Duration::from_secs(30);

/// Where an RBAC change comes from: the Roles and RoleBindings of one namespace, or the
/// cluster-scoped ClusterRoles and ClusterRoleBindings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Source {
    /// A Role or RoleBinding in this namespace.
    Namespace(String),
    /// A ClusterRole or ClusterRoleBinding.
    Cluster,
}

/// One (source, audit) pair whose re-runs are bounded together.
type Key = (Source, ObjectRef<KopfAudit>);

/// The last re-run of one audit caused by one source.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// When it was re-run (or released to re-run).
    last_run: Instant,
    /// Whether a re-run at the end of the period is already due.
    deferred: bool,
}

/// What to do with one audit a change re-runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    /// Re-run it now.
    Now,
    /// Re-run it at this instant, the end of its period.
    At(Instant),
    /// A re-run at the end of its period is already due: this change joins it.
    Joined,
}

/// Decides for one (source, audit) pair, updating its slot (`None`: not re-run by this
/// source within a period).
fn decide(slot: &mut Option<Slot>, now: Instant, period: Duration) -> Decision {
    match slot {
        Some(s) if s.deferred => Decision::Joined,
        Some(s) if now < s.last_run + period => {
            s.deferred = true;
            Decision::At(s.last_run + period)
        }
        _ => {
            *slot = Some(Slot {
                last_run: now,
                deferred: false,
            });
            Decision::Now
        }
    }
}

/// The slots of every pair that re-ran within its period, and when they were last
/// swept of the others.
struct Slots {
    by_key: HashMap<Key, Slot>,
    swept: Instant,
}

/// A re-run held back to the end of its period.
struct Deferred {
    key: Key,
    at: Instant,
}

/// The bound: which pairs re-ran lately, and the channel of the re-runs held back.
pub(super) struct ChurnBound {
    period: Duration,
    slots: Mutex<Slots>,
    deferred: mpsc::UnboundedSender<Deferred>,
}

impl ChurnBound {
    /// A bound of `period`, and the stream of the re-runs it holds back (each at the end
    /// of its period), for the controller to run.
    pub(super) fn new(
        period: Duration,
    ) -> (
        Arc<ChurnBound>,
        impl Stream<Item = ObjectRef<KopfAudit>> + Send + 'static,
    ) {
        let (sender, receiver) = mpsc::unbounded();
        let bound = Arc::new(ChurnBound {
            period,
            slots: Mutex::new(Slots {
                by_key: HashMap::new(),
                swept: Instant::now(),
            }),
            deferred: sender,
        });
        let released = {
            let bound = bound.clone();
            // At most one re-run per pair is held back at a time, so this many sleeps at
            // most: one per (source, audit) pair that changed within its period.
            receiver
                .map(|d: Deferred| async move {
                    tokio::time::sleep_until(d.at).await;
                    d.key
                })
                .buffer_unordered(usize::MAX)
                .map(move |key| bound.release(key, Instant::now()))
        };
        (bound, released)
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The audits a change from `source` re-runs now; the others are held back to the
    /// end of their period (one re-run however many changes come meanwhile).
    pub(super) fn admit(
        &self,
        source: &Source,
        audits: Vec<ObjectRef<KopfAudit>>,
        now: Instant,
    ) -> Vec<ObjectRef<KopfAudit>> {
        let mut slots = self.lock();
        self.sweep(&mut slots, now);
        let mut run_now = Vec::with_capacity(audits.len());
        let mut held = 0usize;
        for audit in audits {
            let key = (source.clone(), audit);
            let mut slot = slots.by_key.remove(&key);
            match decide(&mut slot, now, self.period) {
                Decision::Now => run_now.push(key.1.clone()),
                Decision::At(at) => {
                    held += 1;
                    // Fails only once the controller is gone, when nothing runs anyway.
                    let _ = self.deferred.unbounded_send(Deferred {
                        key: key.clone(),
                        at,
                    });
                }
                Decision::Joined => held += 1,
            }
            if let Some(slot) = slot {
                slots.by_key.insert(key, slot);
            }
        }
        if held > 0 {
            tracing::debug!(
                ?source,
                held,
                "RBAC churn: re-runs held back to the end of their period"
            );
        }
        run_now
    }

    /// A held-back re-run is due: it counts as the pair's last run.
    fn release(&self, key: Key, now: Instant) -> ObjectRef<KopfAudit> {
        let mut slots = self.lock();
        slots.by_key.insert(
            key.clone(),
            Slot {
                last_run: now,
                deferred: false,
            },
        );
        key.1
    }

    /// Drops, once a period, the pairs whose period is over with nothing held back:
    /// they are as if never seen.
    fn sweep(&self, slots: &mut Slots, now: Instant) {
        if now < slots.swept + self.period {
            return;
        }
        let period = self.period;
        slots
            .by_key
            .retain(|_, slot| slot.deferred || now < slot.last_run + period);
        slots.swept = now;
    }

    /// How many pairs are remembered.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.lock().by_key.len()
    }
}

#[cfg(test)]
mod tests;

//! What makes a ClusterKopfAudit discover again before its interval: a Deployment that
//! appears, changes its pod template (its generation) or its labels, or goes. A kopf
//! operator installed a minute ago is then audited a few seconds later, not at the next
//! interval.
//!
//! It is fed by the KopfAudit controller's Deployment watch (metadata only, one watch
//! for both controllers), and keeps a hash of each Deployment's uid and of its
//! generation and labels: about 40 bytes a Deployment. Changes are coalesced: a
//! discovery is asked for [`SETTLE`] after a change, and then none for [`MIN_GAP`],
//! however many Deployments change: a tenant who churns its Deployments can make
//! discovery run at most once a minute, not once per change.

use futures::Stream;
use k8s_openapi::api::apps::v1::Deployment;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// How long after a change discovery is asked for: the changes of one `kubectl apply`
/// or `helm install` arrive within it.
pub(super) const SETTLE: Duration = Duration::from_secs(5);

/// The least time between two discoveries asked for by Deployment changes.
pub(super) const MIN_GAP: Duration = Duration::from_secs(60);

/// The Deployments seen, and whether one changed since discovery last ran.
#[derive(Debug, Default)]
pub(super) struct DeploymentChanges {
    state: Mutex<Seen>,
    /// Set once the watch's first list is complete: what it lists then is no change.
    primed: AtomicBool,
    notify: Notify,
}

/// Each Deployment's uid hash to the hash of its generation and labels; during a
/// re-list, the uids listed so far.
#[derive(Debug, Default)]
struct Seen {
    deployments: HashMap<u64, u64>,
    relisting: Option<HashSet<u64>>,
}

fn hash<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// A Deployment's identity (its uid) and what of it can change discovery's answer
/// (its generation, which moves with its pod template, and its labels, which a
/// ClusterKopfAudit's selector reads).
fn key_and_content(d: &PartialObjectMeta<Deployment>) -> Option<(u64, u64)> {
    let uid = d.metadata.uid.as_deref()?;
    Some((
        hash(uid),
        hash(&(d.metadata.generation, &d.metadata.labels)),
    ))
}

impl DeploymentChanges {
    fn state(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes one event of the Deployment watch into account.
    pub(super) fn observe(&self, event: &watcher::Event<PartialObjectMeta<Deployment>>) {
        let changed = match event {
            watcher::Event::Init => {
                self.state().relisting = Some(HashSet::new());
                false
            }
            watcher::Event::InitApply(d) => self.listed(d),
            watcher::Event::InitDone => self.relisted(),
            watcher::Event::Apply(d) => self.applied(d),
            watcher::Event::Delete(d) => self.deleted(d),
        };
        if changed && self.primed.load(Ordering::Relaxed) {
            self.notify.notify_one();
        }
    }

    /// A Deployment applied: new, or its generation or labels changed.
    fn applied(&self, d: &PartialObjectMeta<Deployment>) -> bool {
        let Some((uid, content)) = key_and_content(d) else {
            return false;
        };
        self.state().deployments.insert(uid, content) != Some(content)
    }

    /// A Deployment of a (re-)list: a change when it is new or changed since.
    fn listed(&self, d: &PartialObjectMeta<Deployment>) -> bool {
        let Some((uid, content)) = key_and_content(d) else {
            return false;
        };
        let mut state = self.state();
        if let Some(listed) = state.relisting.as_mut() {
            listed.insert(uid);
        }
        state.deployments.insert(uid, content) != Some(content)
    }

    /// A (re-)list is complete: the Deployments it did not list are gone.
    fn relisted(&self) -> bool {
        let first = !self.primed.swap(true, Ordering::Relaxed);
        let mut state = self.state();
        let Some(listed) = state.relisting.take() else {
            return false;
        };
        let before = state.deployments.len();
        state.deployments.retain(|uid, _| listed.contains(uid));
        !first && state.deployments.len() != before
    }

    fn deleted(&self, d: &PartialObjectMeta<Deployment>) -> bool {
        key_and_content(d).is_some_and(|(uid, _)| self.state().deployments.remove(&uid).is_some())
    }

    /// How many Deployments are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.state().deployments.len()
    }

    /// One item `settle` after a change, then none for `gap`: the changes of that time
    /// are answered by one item after it.
    pub(super) fn triggers(
        self: std::sync::Arc<Self>,
        settle: Duration,
        gap: Duration,
    ) -> impl Stream<Item = ()> + Send + Sync + 'static {
        futures::stream::unfold((self, true), move |(changes, first)| async move {
            if !first {
                tokio::time::sleep(gap).await;
            }
            changes.notify.notified().await;
            tokio::time::sleep(settle).await;
            Some(((), (changes, false)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::future::Future;
    use std::sync::Arc;

    fn deployment(uid: &str, generation: i64, label: &str) -> PartialObjectMeta<Deployment> {
        let mut d = PartialObjectMeta::<Deployment>::default();
        d.metadata.uid = Some(uid.to_string());
        d.metadata.generation = Some(generation);
        d.metadata.labels = Some([("app".to_string(), label.to_string())].into());
        d
    }

    /// Whether a trigger is waiting (with no time passing).
    fn pending(changes: &DeploymentChanges) -> bool {
        let notified = changes.notify.notified();
        futures::pin_mut!(notified);
        let waker = futures::task::noop_waker();
        notified
            .as_mut()
            .poll(&mut std::task::Context::from_waker(&waker))
            .is_ready()
    }

    fn first_list(changes: &DeploymentChanges, deployments: &[PartialObjectMeta<Deployment>]) {
        changes.observe(&watcher::Event::Init);
        for d in deployments {
            changes.observe(&watcher::Event::InitApply(d.clone()));
        }
        changes.observe(&watcher::Event::InitDone);
    }

    #[test]
    fn the_first_list_is_no_change() {
        let changes = DeploymentChanges::default();
        first_list(
            &changes,
            &[deployment("a", 1, "x"), deployment("b", 1, "x")],
        );
        assert!(!pending(&changes));
        assert_eq!(changes.len(), 2);
    }

    #[test]
    fn a_new_deployment_a_rollout_a_label_or_a_deletion_is_a_change() {
        let changes = DeploymentChanges::default();
        first_list(&changes, &[deployment("a", 1, "x")]);
        for (event, what) in [
            (watcher::Event::Apply(deployment("b", 1, "x")), "new"),
            (watcher::Event::Apply(deployment("a", 2, "x")), "rollout"),
            (watcher::Event::Apply(deployment("a", 2, "y")), "label"),
            (watcher::Event::Delete(deployment("b", 1, "x")), "deleted"),
        ] {
            changes.observe(&event);
            assert!(pending(&changes), "{what}");
        }
        // A status update (same generation and labels) is none.
        changes.observe(&watcher::Event::Apply(deployment("a", 2, "y")));
        assert!(!pending(&changes));
    }

    #[test]
    fn a_relist_forgets_what_went_meanwhile_and_says_so() {
        let changes = DeploymentChanges::default();
        first_list(
            &changes,
            &[deployment("a", 1, "x"), deployment("b", 1, "x")],
        );
        first_list(&changes, &[deployment("a", 1, "x")]);
        assert!(pending(&changes), "b went while the watch was down");
        assert_eq!(changes.len(), 1);
        first_list(&changes, &[deployment("a", 1, "x")]);
        assert!(!pending(&changes), "nothing changed");
    }

    #[tokio::test(start_paused = true)]
    async fn churn_asks_for_one_discovery_a_gap() {
        let changes = Arc::new(DeploymentChanges::default());
        first_list(&changes, &[]);
        let (settle, gap) = (Duration::from_secs(5), Duration::from_secs(60));
        let mut triggers = Box::pin(changes.clone().triggers(settle, gap));
        let churn = |from: usize| {
            for i in from..from + 100 {
                changes.observe(&watcher::Event::Apply(deployment(&format!("d{i}"), 1, "x")));
            }
        };
        let start = tokio::time::Instant::now();
        churn(0);
        assert_eq!(triggers.next().await, Some(()));
        assert_eq!(start.elapsed(), settle, "a quiet cluster's change: soon");
        churn(100);
        assert_eq!(triggers.next().await, Some(()));
        assert_eq!(
            start.elapsed(),
            settle + gap + settle,
            "changes right after one: after the gap"
        );
        let next = tokio::time::timeout(Duration::from_secs(3600), triggers.next()).await;
        assert!(
            next.is_err(),
            "one discovery for each burst of a hundred changes"
        );
    }
}

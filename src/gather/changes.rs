//! What the operator's watches of Deployments and pods have seen change, per namespace,
//! so that an audit can tell whether what it read of a namespace before can still be
//! its answer: a target's Deployments and pods, the kopf operators discovery found. A
//! read is marked with the clock when it begins ([`WatchedChanges::mark`]); it stays good
//! while no change in its namespace came after the mark, both watches have listed
//! everything since, and it is younger than [`KEPT_FOR`].
//!
//! The watches feed it ([`WatchedChanges::changed`] and the rest), the one way in. Until
//! they are listed, and in the CLI where there are none, nothing is reused: every audit
//! reads again. It keeps one counter per namespace that changed (16 bytes each).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::Duration;

/// How long a read is reused at most, even when no change came: what the watches could
/// miss (a change they were never told of) lasts no longer than this.
pub(crate) const KEPT_FOR: Duration = Duration::from_secs(3600);

/// The two watches whose changes count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Watched {
    /// The Deployments (metadata only).
    Deployments,
    /// The pods.
    Pods,
}

/// The clock at the start of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark(u64);

/// The changes seen, by namespace, and whether the watches can be trusted.
#[derive(Debug, Default)]
pub(crate) struct WatchedChanges {
    state: Mutex<Clock>,
}

#[derive(Debug, Default)]
struct Clock {
    /// Ticks on every change.
    now: u64,
    /// When a watch last started over (a re-list, an error): what it missed meanwhile
    /// is not known, so nothing read before counts.
    restarted_at: u64,
    /// When a Deployment changed last, anywhere (for reads of the whole cluster).
    deployment_changed_at: u64,
    /// When something changed last, per namespace (hashed).
    by_namespace: HashMap<u64, u64>,
    /// Which watches have listed everything since they (re)started.
    deployments_listed: bool,
    pods_listed: bool,
    /// The namespace the watches are limited to (a namespaced install); `None`: all.
    only: Option<String>,
}

fn namespace_key(namespace: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    namespace.hash(&mut hasher);
    hasher.finish()
}

impl WatchedChanges {
    fn clock(&self) -> std::sync::MutexGuard<'_, Clock> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Changes fed by watches limited to `namespace` (`None`: the whole cluster): a read
    /// elsewhere is never reused.
    pub(crate) fn watching(namespace: Option<&str>) -> WatchedChanges {
        let changes = WatchedChanges::default();
        changes.clock().only = namespace.map(str::to_string);
        changes
    }

    /// The clock now, to mark a read that begins.
    pub(crate) fn mark(&self) -> Mark {
        Mark(self.clock().now)
    }

    /// Something of `which` in `namespace` changed (created, changed, deleted).
    pub(crate) fn changed(&self, which: Watched, namespace: &str) {
        let mut clock = self.clock();
        clock.now += 1;
        let now = clock.now;
        clock.by_namespace.insert(namespace_key(namespace), now);
        if which == Watched::Deployments {
            clock.deployment_changed_at = now;
        }
    }

    /// `which` starts over (a re-list): until it has listed everything again,
    /// nothing is reused, and nothing read before counts.
    pub(crate) fn restarted(&self, which: Watched) {
        let mut clock = self.clock();
        clock.now += 1;
        clock.restarted_at = clock.now;
        match which {
            Watched::Deployments => clock.deployments_listed = false,
            Watched::Pods => clock.pods_listed = false,
        }
    }

    /// A watch failed: it resumes from where it was (or lists again, and says so), but
    /// nothing read before counts.
    pub(crate) fn failed(&self) {
        let mut clock = self.clock();
        clock.now += 1;
        clock.restarted_at = clock.now;
    }

    /// `which` has listed everything: from now on it tells every change.
    pub(crate) fn listed(&self, which: Watched) {
        let mut clock = self.clock();
        match which {
            Watched::Deployments => clock.deployments_listed = true,
            Watched::Pods => clock.pods_listed = true,
        }
    }

    /// Whether what was read of `namespace` (`None`: the Deployments of the whole
    /// cluster) from `mark` on, `age` ago, is still what a read would find.
    pub(crate) fn unchanged_since(
        &self,
        namespace: Option<&str>,
        mark: Mark,
        age: Duration,
    ) -> bool {
        let clock = self.clock();
        let trusted = clock.deployments_listed
            && clock.pods_listed
            && clock.restarted_at <= mark.0
            && age < KEPT_FOR;
        if !trusted {
            return false;
        }
        match (namespace, clock.only.as_deref()) {
            (Some(ns), only) if only.is_none_or(|o| o == ns) => clock
                .by_namespace
                .get(&namespace_key(ns))
                .is_none_or(|at| *at <= mark.0),
            (None, None) => clock.deployment_changed_at <= mark.0,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Duration = Duration::ZERO;

    fn listed() -> WatchedChanges {
        let changes = WatchedChanges::default();
        changes.listed(Watched::Deployments);
        changes.listed(Watched::Pods);
        changes
    }

    #[test]
    fn nothing_is_reused_until_both_watches_have_listed() {
        let changes = WatchedChanges::default();
        let mark = changes.mark();
        assert!(!changes.unchanged_since(Some("a"), mark, NOW));
        changes.listed(Watched::Deployments);
        assert!(!changes.unchanged_since(Some("a"), mark, NOW));
        changes.listed(Watched::Pods);
        assert!(changes.unchanged_since(Some("a"), mark, NOW));
    }

    #[test]
    fn a_change_in_the_namespace_after_the_mark_spoils_the_read_and_elsewhere_not() {
        let changes = listed();
        changes.changed(Watched::Pods, "a");
        let mark = changes.mark();
        assert!(
            changes.unchanged_since(Some("a"), mark, NOW),
            "a change before the read began was read"
        );
        changes.changed(Watched::Pods, "b");
        assert!(changes.unchanged_since(Some("a"), mark, NOW));
        assert!(!changes.unchanged_since(Some("b"), mark, NOW));
        changes.changed(Watched::Deployments, "a");
        assert!(!changes.unchanged_since(Some("a"), mark, NOW));
    }

    #[test]
    fn the_whole_cluster_follows_the_deployments_anywhere() {
        let changes = listed();
        let mark = changes.mark();
        changes.changed(Watched::Pods, "a");
        assert!(
            changes.unchanged_since(None, mark, NOW),
            "pods do not count"
        );
        changes.changed(Watched::Deployments, "b");
        assert!(!changes.unchanged_since(None, mark, NOW));
    }

    #[test]
    fn a_restart_spoils_every_read_before_it_until_listed_again() {
        let changes = listed();
        let mark = changes.mark();
        changes.restarted(Watched::Pods);
        assert!(!changes.unchanged_since(Some("a"), mark, NOW));
        changes.listed(Watched::Pods);
        assert!(
            !changes.unchanged_since(Some("a"), mark, NOW),
            "what the restart may have missed came after the read"
        );
        let later = changes.mark();
        assert!(changes.unchanged_since(Some("a"), later, NOW));
    }

    #[test]
    fn a_read_is_reused_for_at_most_an_hour() {
        let changes = listed();
        let mark = changes.mark();
        assert!(changes.unchanged_since(Some("a"), mark, KEPT_FOR - Duration::from_secs(1)));
        assert!(!changes.unchanged_since(Some("a"), mark, KEPT_FOR));
    }

    #[test]
    fn watches_of_one_namespace_vouch_for_nothing_else() {
        let changes = WatchedChanges::watching(Some("a"));
        changes.listed(Watched::Deployments);
        changes.listed(Watched::Pods);
        let mark = changes.mark();
        assert!(changes.unchanged_since(Some("a"), mark, NOW));
        assert!(!changes.unchanged_since(Some("b"), mark, NOW));
        assert!(!changes.unchanged_since(None, mark, NOW));
    }
}

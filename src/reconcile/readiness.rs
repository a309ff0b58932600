//! Whether the process is ready, with one owner per transition: a standby waiting for
//! the Lease is ready (it has nothing to sync until it leads, and a rollout must not
//! wait for it to win); a leader, or a single instance, is ready once every watch cache
//! has synced. `/readyz` reads it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

const STARTING: u8 = 0;
const STANDBY: u8 = 1;
const SYNCED: u8 = 2;

/// The shared readiness of the process.
#[derive(Clone, Debug, Default)]
pub(crate) struct Readiness {
    state: Arc<AtomicU8>,
    /// The caches not synced yet, named, for `/readyz` and the log.
    waiting: Arc<Mutex<Vec<&'static str>>>,
}

/// A future that resolves to whether one cache synced.
pub(crate) type SyncFuture = Pin<Box<dyn Future<Output = bool> + Send>>;

/// How often the caches still waited for are logged.
const WAITING_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl Readiness {
    /// Whether `/readyz` answers 200.
    pub(crate) fn is_ready(&self) -> bool {
        self.state.load(Ordering::SeqCst) != STARTING
    }

    /// A standby waits for the Lease: ready.
    pub(crate) fn standby(&self) {
        self.state.store(STANDBY, Ordering::SeqCst);
    }

    /// Leading: not ready until the caches sync again.
    pub(crate) fn leading(&self) {
        self.state.store(STARTING, Ordering::SeqCst);
    }

    /// The caches not synced yet (empty once synced).
    pub(crate) fn waiting_for(&self) -> Vec<&'static str> {
        self.waiting.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Marks ready once every named cache has synced; logs it, and every 30 s the
    /// caches still waited for (a missing CRD or a forbidden list shows there).
    pub(crate) async fn when_synced(self, caches: Vec<(&'static str, SyncFuture)>) {
        self.set_waiting(caches.iter().map(|(name, _)| *name).collect());
        let each = caches.into_iter().map(|(name, synced)| {
            let me = self.clone();
            async move {
                let ok = synced.await;
                if ok {
                    me.set_waiting(
                        me.waiting_for()
                            .into_iter()
                            .filter(|n| *n != name)
                            .collect(),
                    );
                }
                ok
            }
        });
        let all = futures::future::join_all(each);
        tokio::pin!(all);
        let results = loop {
            tokio::select! {
                results = &mut all => break results,
                _ = tokio::time::sleep(WAITING_LOG_EVERY) => {
                    tracing::warn!(caches = ?self.waiting_for(), "still waiting for the first list of these watch caches");
                }
            }
        };
        if results.into_iter().all(|ok| ok) {
            self.state.store(SYNCED, Ordering::SeqCst);
            tracing::info!("caches synced");
        }
    }

    fn set_waiting(&self, names: Vec<&'static str>) {
        if let Ok(mut w) = self.waiting.lock() {
            *w = names;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ready_only_after_every_cache_synced() {
        let r = Readiness::default();
        assert!(!r.is_ready());
        r.clone()
            .when_synced(vec![
                ("pods", Box::pin(async { true })),
                ("roles", Box::pin(async { false })),
            ])
            .await;
        assert!(!r.is_ready(), "one cache never synced");
        assert_eq!(r.waiting_for(), vec!["roles"]);
        r.clone()
            .when_synced(vec![
                ("pods", Box::pin(async { true })),
                ("roles", Box::pin(async { true })),
            ])
            .await;
        assert!(r.is_ready());
        assert!(r.waiting_for().is_empty());
        r.leading();
        assert!(!r.is_ready());
        r.standby();
        assert!(r.is_ready());
    }
}

//! Whether the process is ready, with one owner per transition: a standby waiting for
//! the Lease is ready (it has nothing to sync until it leads, and a rollout must not
//! wait for it to win); a leader, or a single instance, is ready once every watch cache
//! has synced. `/readyz` reads it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

const STARTING: u8 = 0;
const STANDBY: u8 = 1;
const SYNCED: u8 = 2;

/// The shared readiness of the process.
#[derive(Clone, Debug, Default)]
pub(crate) struct Readiness {
    state: Arc<AtomicU8>,
}

/// A future that resolves to whether one cache synced.
pub(crate) type SyncFuture = Pin<Box<dyn Future<Output = bool> + Send>>;

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

    /// Marks ready once every cache has synced; logs it.
    pub(crate) async fn when_synced(self, caches: Vec<SyncFuture>) {
        for synced in caches {
            if !synced.await {
                return;
            }
        }
        self.state.store(SYNCED, Ordering::SeqCst);
        tracing::info!("caches synced");
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
            .when_synced(vec![Box::pin(async { true }), Box::pin(async { false })])
            .await;
        assert!(!r.is_ready(), "one cache never synced");
        r.clone()
            .when_synced(vec![Box::pin(async { true }), Box::pin(async { true })])
            .await;
        assert!(r.is_ready());
        r.leading();
        assert!(!r.is_ready());
        r.standby();
        assert!(r.is_ready());
    }
}

//! Leader election with a Lease, so that with several replicas exactly one instance
//! writes status and Events. A standby waits; a leader that loses its Lease stops its
//! controller and the process exits, to be restarted as a standby.

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use std::future::Future;
use tokio::sync::watch;

/// How long a Lease lasts without renewal: a standby takes over at most this long after
/// the leader vanishes without releasing it.
pub(crate) const LEASE_SECONDS: u64 = 15;
/// How long before expiry the leader renews.
const GRACE_SECONDS: u64 = 5;

/// Why leader election could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LeaderError {
    /// Creating or reading the Lease failed (e.g. no RBAC on leases).
    #[error("leader election with Lease {namespace}/{name}: {source}")]
    Lease {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// The cause.
        #[source]
        source: LeaseManagerError,
    },
}

/// A held (or awaited) leadership.
pub(crate) struct Leadership {
    receiver: watch::Receiver<bool>,
}

impl Leadership {
    /// Starts competing for the Lease `namespace/name` as `identity`.
    pub(crate) async fn start(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
    ) -> Result<Leadership, LeaderError> {
        let manager = LeaseManagerBuilder::new(client, name)
            .with_namespace(namespace)
            .with_identity(identity)
            .with_duration(LEASE_SECONDS)
            .with_grace(GRACE_SECONDS)
            .with_field_manager(crate::catalog::FIELD_MANAGER)
            .build()
            .await
            .map_err(|source| LeaderError::Lease {
                namespace: namespace.to_string(),
                name: name.to_string(),
                source,
            })?;
        let (receiver, _task) = manager.watch().await;
        Ok(Leadership { receiver })
    }

    /// Resolves once this instance leads; `false` if the election ended first.
    pub(crate) async fn acquired(&mut self) -> bool {
        loop {
            if *self.receiver.borrow_and_update() {
                return true;
            }
            if self.receiver.changed().await.is_err() {
                return false;
            }
        }
    }

    /// A future that resolves when leadership is lost. Dropping the returned future's
    /// owner (this Leadership) releases the Lease.
    pub(crate) fn lost(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let mut receiver = self.receiver.clone();
        async move {
            loop {
                if !*receiver.borrow_and_update() {
                    return;
                }
                if receiver.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

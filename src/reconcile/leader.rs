//! Leader election with a Lease, so that with several replicas exactly one instance
//! writes status and Events. A standby waits; a leader that loses its Lease stops its
//! controller and the process exits, to be restarted as a standby.
//!
//! kube-lease-manager 0.13 reports "not leader" only once it reads the Lease again and
//! finds another holder: a renewal that fails (API server unreachable, the Lease
//! refused) is logged and retried with back-off while the leader still believes it
//! leads, for as long as the errors last, though a standby takes the Lease once it
//! expires. So this instance also watches its own renewals (every successful PATCH of
//! its Lease, seen by the client it gives the manager) and stops writing, and steps
//! down, once it has not renewed for [`RENEW_DEADLINE`], before the Lease can expire:
//! client-go's leader election gives up at its renew deadline in the same way.

use http::{Method, Request, Response};
use kube::Client;
use kube::client::Body;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long a Lease lasts without renewal: a standby takes over at most this long after
/// the leader vanishes without releasing it.
pub(crate) const LEASE_SECONDS: u64 = 15;
/// How long before expiry the leader renews: 8 s after its last renewal, so that the
/// manager's retries of a failed renewal (after 1 s, then 2 s) still come before the
/// [`RENEW_DEADLINE`].
const GRACE_SECONDS: u64 = 7;
/// How long after its last successful renewal the leader may still write: 3 s short of
/// the Lease's expiry, for a write already in flight and for clock skew between nodes.
pub(crate) const RENEW_DEADLINE: Duration = Duration::from_secs(LEASE_SECONDS - 3);

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

/// When this instance last wrote its Lease successfully (acquired or renewed it).
#[derive(Debug, Default)]
pub(crate) struct Renewals {
    last: Mutex<Option<Instant>>,
}

impl Renewals {
    /// Records a successful write of the Lease sent at `at`.
    fn renewed(&self, at: Instant) {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *last = Some(last.map_or(at, |l| l.max(at)));
    }

    /// Until when a write is within the renewal deadline; `None` before any renewal.
    fn deadline(&self) -> Option<Instant> {
        let last = *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        last.map(|l| l + RENEW_DEADLINE)
    }

    /// Whether `now` is within the renewal deadline.
    fn fresh_at(&self, now: Instant) -> bool {
        self.deadline().is_some_and(|d| now < d)
    }
}

/// Whether a request and its answer are a successful write of the Lease at `path`.
fn is_renewal(method: &Method, path: &str, lease_path: &str, answer: &Response<Body>) -> bool {
    method == Method::PATCH && path.ends_with(lease_path) && answer.status().is_success()
}

/// A client that sends through `client` and records in `renewals` each successful
/// PATCH of the Lease `namespace/name`: the one the lease manager is given.
fn observing_renewals(
    client: Client,
    namespace: &str,
    name: &str,
    renewals: Arc<Renewals>,
) -> Client {
    let lease_path = format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}");
    let default_namespace = client.default_namespace().to_string();
    let service = tower::service_fn(move |request: Request<Body>| {
        let client = client.clone();
        let renewals = renewals.clone();
        let lease_path = lease_path.clone();
        async move {
            let sent = Instant::now();
            let method = request.method().clone();
            let path = request.uri().path().to_string();
            let answer = client.send(request).await?;
            if is_renewal(&method, &path, &lease_path, &answer) {
                renewals.renewed(sent);
            }
            Ok::<_, kube::Error>(answer)
        }
    });
    Client::new(service, default_namespace)
}

/// Whether this instance may write now: always without leader election; with it, only
/// while it holds the Lease and renewed it within [`RENEW_DEADLINE`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Mandate {
    lease: Option<(watch::Receiver<bool>, Arc<Renewals>)>,
}

impl Mandate {
    /// The mandate of a Lease holder: what the lease manager says, and its renewals.
    pub(crate) fn of_lease(leading: watch::Receiver<bool>, renewals: Arc<Renewals>) -> Mandate {
        Mandate {
            lease: Some((leading, renewals)),
        }
    }

    /// Whether this instance may write now.
    pub(crate) fn holds(&self) -> bool {
        self.lease.as_ref().is_none_or(|(leading, renewals)| {
            *leading.borrow() && renewals.fresh_at(Instant::now())
        })
    }
}

/// A held (or awaited) leadership.
pub(crate) struct Leadership {
    receiver: watch::Receiver<bool>,
    renewals: Arc<Renewals>,
    /// When it was acquired.
    acquired_at: Option<Instant>,
}

impl Leadership {
    /// Starts competing for the Lease `namespace/name` as `identity`.
    pub(crate) async fn start(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
    ) -> Result<Leadership, LeaderError> {
        let renewals = Arc::new(Renewals::default());
        let observed = observing_renewals(client, namespace, name, renewals.clone());
        let manager = LeaseManagerBuilder::new(observed, name)
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
        Ok(Leadership {
            receiver,
            renewals,
            acquired_at: None,
        })
    }

    /// Resolves once this instance leads; `false` if the election ended first.
    pub(crate) async fn acquired(&mut self) -> bool {
        loop {
            if *self.receiver.borrow_and_update() {
                self.acquired_at = Some(Instant::now());
                return true;
            }
            if self.receiver.changed().await.is_err() {
                return false;
            }
        }
    }

    /// What the controller checks before each write.
    pub(crate) fn mandate(&self) -> Mandate {
        Mandate::of_lease(self.receiver.clone(), self.renewals.clone())
    }

    /// A future that resolves when leadership is lost: the lease manager says so, or
    /// the renewal deadline passed. Dropping the returned future's owner (this
    /// Leadership) releases the Lease.
    pub(crate) fn lost(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let since = self.acquired_at.unwrap_or_else(Instant::now);
        until_lost(self.receiver.clone(), self.renewals.clone(), since)
    }
}

/// Resolves when `leading` turns false (or its sender is gone), or once `renewals`
/// have not been renewed within [`RENEW_DEADLINE`]. Leadership acquired `since` counts
/// as renewed then: the lease manager claims a Lease that still names this identity
/// (a restarted container keeps its pod's name) without writing it, and renews it
/// within the grace.
async fn until_lost(mut leading: watch::Receiver<bool>, renewals: Arc<Renewals>, since: Instant) {
    loop {
        if !*leading.borrow_and_update() {
            return;
        }
        let deadline = renewals
            .deadline()
            .map_or(since + RENEW_DEADLINE, |d| d.max(since + RENEW_DEADLINE));
        if Instant::now() >= deadline {
            tracing::warn!(
                deadline = ?RENEW_DEADLINE,
                "the Lease was not renewed in time: stepping down before it can expire"
            );
            return;
        }
        tokio::select! {
            changed = leading.changed() => if changed.is_err() {
                return;
            },
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

#[cfg(test)]
mod tests;

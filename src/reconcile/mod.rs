//! The reconcile layer: a kube-runtime Controller over KopfAudits that also watches the
//! target Deployments, their pods and RBAC through shared caches, so a thousand audits
//! do not mean a thousand lists. Each reconcile is the pipeline in [`pipeline`]; it
//! requeues after `spec.interval` at a phase of its own (spread over the interval);
//! transient errors back off per object ([`backoff`]).

pub(crate) mod backoff;
mod churn;
mod cluster_audit;
mod deployment_changes;
pub(crate) mod http;
pub(crate) mod leader;
mod memory;
pub(crate) mod metrics_auth;
mod owed;
pub(crate) mod pipeline;
pub(crate) mod readiness;
mod requests;
mod targets;
mod watches;
mod written;

#[cfg(test)]
mod tests;

use crate::api::KopfAudit;
use crate::evaluate::Policy;
use crate::gather::changes::WatchedChanges;
use crate::gather::logs::LogMemory;
use crate::gather::rbac::{RbacReader, RbacStores, until_synced};
use crate::gather::{Invalidation, Shared};
use crate::publish::EventPublisher;
use crate::publish::metrics::Metrics;
use futures::StreamExt;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use memory::AuditMemory;
use readiness::Readiness;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How the operator was started; a KopfAudit cannot change these.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Allow KopfAudits to read other namespaces (targets, Events, objects).
    pub(crate) allow_cross_namespace: bool,
    /// Rules on exemptions.
    pub(crate) policy: Policy,
    /// Watch only this namespace (a namespaced install); all when `None`.
    pub(crate) watch_namespace: Option<String>,
    /// This instance's name in Events (the pod name).
    pub(crate) instance: String,
    /// At most this many audits run at once (`--max-concurrent-audits`).
    pub(crate) max_concurrent_audits: u16,
    /// What all KopfAudits together keep of their logs, in bytes (`--log-memory-mib`).
    pub(crate) log_memory_bytes: usize,
    /// The report objects written beside the status (`--reports`).
    pub(crate) reports: crate::publish::reports::ReportOutput,
    /// Run the ClusterKopfAudit controller (`--cluster-audits`; not with
    /// `watch_namespace`).
    pub(crate) cluster_audits: bool,
    /// The least time between two audits of one KopfAudit that a request
    /// (`kopfaudit.dev/requested-at`) can ask for (`--audit-now-min-interval`).
    pub(crate) audit_now_min_gap: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allow_cross_namespace: false,
            policy: Policy::default(),
            watch_namespace: None,
            instance: "kopf-audit".into(),
            max_concurrent_audits: DEFAULT_MAX_CONCURRENT_AUDITS,
            log_memory_bytes: crate::gather::logs::DEFAULT_PROCESS_BUDGET_BYTES,
            reports: crate::publish::reports::ReportOutput::default(),
            cluster_audits: false,
            audit_now_min_gap: DEFAULT_AUDIT_NOW_MIN_GAP,
        }
    }
}

/// The least time between two audits a request can ask for, unless
/// `--audit-now-min-interval` says otherwise: a tenant who writes a new
/// `kopfaudit.dev/requested-at` every second gets one audit every 10 s, not one a second.
pub(crate) const DEFAULT_AUDIT_NOW_MIN_GAP: Duration = Duration::from_secs(10);

/// Audits that run at once unless `--max-concurrent-audits` says otherwise: with the
/// per-audit bound of the client's request budget, at most 32 requests in flight.
pub(crate) const DEFAULT_MAX_CONCURRENT_AUDITS: u16 = 8;

/// What every reconcile shares: the client, the targets last seen, the publisher and
/// the metrics.
pub(crate) struct Context {
    client: Client,
    settings: Settings,
    events: EventPublisher,
    metrics: Arc<Metrics>,
    /// What is remembered of each KopfAudit between its runs.
    memory: Arc<AuditMemory>,
    shared: Arc<Shared>,
    mandate: leader::Mandate,
    /// The `--max-concurrent-audits` slots. The controller hands every due audit to a
    /// reconcile at once; the audit waits here for a slot, counted as queued.
    slots: tokio::sync::Semaphore,
}

impl Context {
    /// Waits for a free audit slot, counted in `audits_queued` meanwhile; the slot is
    /// held until the permit drops. `None` only if the slots were closed (never).
    async fn audit_slot(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let _queued = self.metrics.audit_queued();
        self.slots.acquire().await.ok()
    }

    /// A context for reconciles against a fake API.
    #[cfg(test)]
    pub(crate) fn for_test(client: Client, settings: Settings) -> Context {
        let slots = usize::from(settings.max_concurrent_audits);
        Context {
            events: EventPublisher::new(client.clone(), settings.instance.clone()),
            client,
            settings,
            metrics: Arc::new(Metrics::new()),
            memory: Arc::default(),
            shared: Arc::new(Shared::default()),
            mandate: leader::Mandate::default(),
            slots: tokio::sync::Semaphore::new(slots),
        }
    }
}

/// How long a shutdown waits for the audits in progress before it stops anyway: well
/// within the chart's `terminationGracePeriodSeconds` (30 s).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// Runs the controller until `shutdown` resolves, writing only while `mandate` holds;
/// `readiness` turns ready once every cache has synced.
pub(crate) async fn run(
    client: Client,
    settings: Settings,
    mandate: leader::Mandate,
    metrics: Arc<Metrics>,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ns = settings.watch_namespace.clone();
    // Paged lists (500 per page, as client-go) from etcd: an "any" list from the watch
    // cache ignores the page size and arrives as one response of the whole cluster.
    let wc = watcher::Config::default();

    let (rbac_stores, rbac_streams) = watches::rbac_watches(&client, ns.as_deref());

    let memory: Arc<AuditMemory> = Arc::default();
    let (audit_store, audit_writer) = reflector::store();
    let audit_stream = watches::warn_on_error(
        "kopfaudits",
        watcher(
            watches::api_for::<KopfAudit>(&client, ns.as_deref()),
            wc.clone(),
        )
        .default_backoff(),
    )
    .modify(|a: &mut KopfAudit| a.managed_fields_mut().clear())
    .reflect(audit_writer)
    .inspect({
        let memory = memory.clone();
        move |event| {
            if let Ok(watcher::Event::Apply(audit)) = event {
                memory.delivered(audit);
            }
        }
    })
    .applied_objects()
    // A status write (ours) changes no generation: it must not trigger an audit. A new
    // `kopfaudit.dev/requested-at` value does.
    .predicate_filter(generation_or_request, Default::default());

    let ctx = Arc::new(Context {
        client: client.clone(),
        events: EventPublisher::new(client.clone(), settings.instance.clone()),
        memory,
        shared: Arc::new(Shared {
            rbac: RbacReader::new(rbac_stores.clone()),
            logs: LogMemory::new(metrics.log_bytes_read(), settings.log_memory_bytes),
            recognitions: Default::default(),
            objects: Default::default(),
            operators: Default::default(),
            changes: WatchedChanges::watching(ns.as_deref()),
        }),
        metrics,
        mandate,
        slots: tokio::sync::Semaphore::new(usize::from(settings.max_concurrent_audits)),
        settings,
    });

    ctx.metrics
        .set_max_concurrent_audits(ctx.settings.max_concurrent_audits);
    // No limit here: `Context::audit_slot` limits the audits that run, so that those
    // waiting can be counted (kube's scheduler holds its waiting items out of sight).
    let config = ControllerConfig::default().debounce(Duration::from_secs(1));
    let controller = Controller::for_stream(audit_stream, audit_store.clone()).with_config(config);
    tokio::spawn(readiness.when_synced(sync_futures(&audit_store, &rbac_stores)));
    tokio::spawn(forget_deleted_audits(audit_store.clone(), ctx.clone()));
    let deployment_changes = Arc::new(deployment_changes::DeploymentChanges::default());
    let cluster_audits = start_cluster_audits(&ctx, &audit_store, &deployment_changes);

    let controller = watches::attach_targets(
        controller,
        &ctx,
        ns.as_deref(),
        &audit_store,
        cluster_audits.is_some().then_some(deployment_changes),
    );
    let controller = watches::attach_rbac(
        controller,
        &ctx.memory,
        &ctx.shared,
        rbac_stores,
        rbac_streams,
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let requested = async move {
        shutdown.await;
        let _ = stop_tx.send(());
    };
    let running = controller
        .graceful_shutdown_on(requested)
        .run(reconcile_counted, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((obj, _)) => tracing::debug!(audit = %obj, "reconciled"),
                Err(e) => tracing::debug!(error = %e, "reconcile did not complete"),
            }
        });
    let deadline = async move {
        if stop_rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "audits still running at shutdown: stopping anyway");
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = running => {}
        _ = deadline => {}
    }
    if let Some(handle) = cluster_audits {
        handle.abort();
    }
}

/// Starts the ClusterKopfAudit controller when asked to and the install is cluster-wide.
fn start_cluster_audits(
    ctx: &Arc<Context>,
    audits: &Store<KopfAudit>,
    changes: &Arc<deployment_changes::DeploymentChanges>,
) -> Option<tokio::task::JoinHandle<()>> {
    if !ctx.settings.cluster_audits {
        return None;
    }
    if let Some(ns) = &ctx.settings.watch_namespace {
        tracing::warn!(namespace = %ns, "--cluster-audits ignored: a namespaced install cannot discover across namespaces");
        return None;
    }
    Some(tokio::spawn(cluster_audit::run(
        ctx.clone(),
        audits.clone(),
        changes
            .clone()
            .triggers(deployment_changes::SETTLE, deployment_changes::MIN_GAP),
    )))
}

/// What readiness waits for: every watch cache's first list.
fn sync_futures(
    audits: &Store<KopfAudit>,
    rbac: &RbacStores,
) -> Vec<(&'static str, readiness::SyncFuture)> {
    fn synced<K>(name: &'static str, store: &Store<K>) -> (&'static str, readiness::SyncFuture)
    where
        K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    {
        let store = store.clone();
        (name, Box::pin(async move { until_synced(&store).await }))
    }
    let mut out = vec![synced("kopfaudits", audits)];
    out.extend(
        rbac.cluster_role_bindings
            .iter()
            .map(|s| synced("clusterrolebindings", s)),
    );
    out.extend(rbac.cluster_roles.iter().map(|s| synced("clusterroles", s)));
    out.extend(
        rbac.role_bindings
            .iter()
            .map(|(s, _)| synced("rolebindings", s)),
    );
    out.extend(rbac.roles.iter().map(|(s, _)| synced("roles", s)));
    out
}

/// What makes a KopfAudit's change worth an audit: its generation (the spec) and the
/// value of its `kopfaudit.dev/requested-at` annotation.
fn generation_or_request(audit: &KopfAudit) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    audit.metadata.generation.hash(&mut hasher);
    audit
        .annotations()
        .get(crate::catalog::REQUESTED_AT_ANNOTATION)
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// The reconcile with its consecutive-error count kept outside it: reset on success.
///
/// The controller starts a reconcile for every due audit at once (a task each), and
/// all but `--max-concurrent-audits` of them wait here for a slot. The audit itself is
/// a large future (tens of KiB: every await of gather and publish), so it is boxed
/// once the slot is held: a waiting reconcile holds only this small one. Inline, 1,000
/// audits due together held over 80 MiB while they waited (BENCHMARKS.md, "Scale").
async fn reconcile_counted(
    audit: Arc<KopfAudit>,
    ctx: Arc<Context>,
) -> Result<Action, pipeline::ReconcileError> {
    let _slot = ctx.audit_slot().await;
    let _running = ctx.metrics.audit_running();
    let audit_run = Box::pin(pipeline::reconcile(audit.clone(), ctx.clone()));
    let result = pipeline::contain_panic(audit_run)
        .await
        .unwrap_or_else(|message| Err(pipeline::ReconcileError::Panicked(message)));
    if result.is_ok() {
        ctx.memory.succeeded(&audit);
    }
    result
}

/// Exponential back-off with jitter, per object, capped.
fn error_policy(
    audit: Arc<KopfAudit>,
    error: &pipeline::ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    let (attempts, delay) = ctx.memory.failed(&audit);
    tracing::warn!(audit = %audit.name_any(), %error, attempts, retry_in = ?delay, "audit failed");
    Action::requeue(delay)
}

/// How often the state kept for deleted KopfAudits is dropped.
const SWEEP: Duration = Duration::from_secs(60);

/// Drops, every minute, the metric series and what is remembered of deleted KopfAudits,
/// and the shared caches' entries unused for long.
async fn forget_deleted_audits(audits: Store<KopfAudit>, ctx: Arc<Context>) {
    if !until_synced(&audits).await {
        return;
    }
    loop {
        tokio::time::sleep(SWEEP).await;
        let live: std::collections::HashSet<reflector::ObjectRef<KopfAudit>> = audits
            .state()
            .iter()
            .map(|a| reflector::ObjectRef::from_obj(a.as_ref()))
            .collect();
        ctx.metrics.retain_audits(
            &live
                .iter()
                .map(|a| (a.namespace.clone().unwrap_or_default(), a.name.clone()))
                .collect(),
        );
        ctx.memory.retain(&live);
        ctx.shared
            .invalidate(Invalidation::UnusedSince(jiff::Timestamp::now()));
    }
}

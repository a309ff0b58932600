//! The operator: a kube-runtime Controller over KopfAudits that also watches the target
//! Deployments and their pods through shared caches, so a thousand audits do not mean a
//! thousand lists. Each reconcile is gather → evaluate → publish; it always requeues
//! after `spec.interval`, and errors back off per object.

use crate::api::{KopfAudit, KopfAuditSpec};
use crate::duration;
use crate::evaluate::{self, Outcome, Policy};
use crate::gather::{self, GatherError};
use crate::metrics::Metrics;
use crate::publish::{self, EventPublisher, PublishError};
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the operator was started; a KopfAudit cannot change these.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Allow KopfAudits to target Deployments in other namespaces.
    pub allow_cross_namespace: bool,
    /// Rules on exemptions.
    pub policy: Policy,
    /// Watch only this namespace (a namespaced install); all when `None`.
    pub watch_namespace: Option<String>,
    /// This instance's name in Events (the pod name).
    pub instance: String,
}

/// What every reconcile shares: the client, the caches and the per-object back-off.
pub struct Context {
    client: Client,
    deployments: Store<Deployment>,
    pods: Store<Pod>,
    settings: Settings,
    events: EventPublisher,
    failures: Mutex<HashMap<ObjectRef<KopfAudit>, u32>>,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
}

/// Why a reconcile failed; the error policy backs off and retries.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// Gathering evidence failed.
    #[error(transparent)]
    Gather(#[from] GatherError),
    /// Writing status or Events failed.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// A KopfAudit without a namespace (cannot happen for a namespaced kind).
    #[error("KopfAudit {0} has no namespace")]
    NoNamespace(String),
}

/// The first retry after an error; doubles per consecutive failure.
const BACKOFF_BASE: Duration = Duration::from_secs(5);
/// The longest wait between retries.
const BACKOFF_CAP: Duration = Duration::from_secs(300);

fn api_for<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Runs the controller until `shutdown` resolves. `ready` turns true once the caches
/// have synced.
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ns = settings.watch_namespace.clone();
    let audits: Api<KopfAudit> = api_for(&client, ns.as_deref());
    let wc = watcher::Config::default().any_semantic();

    let (deployments, dep_writer) = reflector::store();
    let dep_stream = watcher(api_for::<Deployment>(&client, ns.as_deref()), wc.clone())
        .default_backoff()
        .modify(|d: &mut Deployment| {
            d.managed_fields_mut().clear();
            d.status = None;
        })
        .reflect(dep_writer)
        .touched_objects();
    let (pods, pod_writer) = reflector::store();
    let pod_stream = watcher(api_for::<Pod>(&client, ns.as_deref()), wc.clone())
        .default_backoff()
        .modify(|p: &mut Pod| p.managed_fields_mut().clear())
        .reflect(pod_writer)
        .touched_objects();

    let ctx = Arc::new(Context {
        client: client.clone(),
        deployments: deployments.clone(),
        pods: pods.clone(),
        events: EventPublisher::new(client.clone(), settings.instance.clone()),
        settings,
        failures: Mutex::new(HashMap::new()),
        metrics,
        ready: ready.clone(),
    });

    let controller = Controller::new(audits, wc)
        .with_config(ControllerConfig::default().debounce(Duration::from_millis(500)));
    let audit_store = controller.store();
    let for_deployment = audit_store.clone();
    let for_pod = audit_store.clone();
    let dep_cache = deployments.clone();

    let wait_ready = {
        let (d, p, a) = (deployments.clone(), pods.clone(), audit_store.clone());
        async move {
            let synced = d.wait_until_ready().await.is_ok()
                && p.wait_until_ready().await.is_ok()
                && a.wait_until_ready().await.is_ok();
            if synced {
                ready.store(true, Ordering::SeqCst);
                tracing::info!("caches synced");
            }
        }
    };
    tokio::spawn(wait_ready);
    tokio::spawn(forget_deleted_audits(
        audit_store.clone(),
        ctx.metrics.clone(),
    ));

    let controller = controller
        .watches_stream(dep_stream, move |d: Deployment| {
            audits_for_deployment(&for_deployment, &d)
        })
        .watches_stream(pod_stream, move |p: Pod| {
            audits_for_pod(&for_pod, &dep_cache, &p)
        })
        .watches_stream(rbac_changes::<Role>(&client, ns.as_deref()), {
            let audits = audit_store.clone();
            move |r| audits_in_namespace(&audits, r.metadata.namespace.as_deref())
        })
        .watches_stream(rbac_changes::<RoleBinding>(&client, ns.as_deref()), {
            let audits = audit_store.clone();
            move |r| audits_in_namespace(&audits, r.metadata.namespace.as_deref())
        });
    // Cluster-scoped RBAC can only be watched by a cluster-wide install.
    let controller = if ns.is_none() {
        controller
            .watches_stream(cluster_rbac_changes::<ClusterRole>(&client), {
                let audits = audit_store.clone();
                move |_| audits_in_namespace(&audits, None)
            })
            .watches_stream(cluster_rbac_changes::<ClusterRoleBinding>(&client), {
                let audits = audit_store.clone();
                move |_| audits_in_namespace(&audits, None)
            })
    } else {
        controller
    };
    controller
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((obj, _)) => tracing::debug!(audit = %obj, "reconciled"),
                Err(e) => tracing::debug!(error = %e, "reconcile did not complete"),
            }
        })
        .await;
}

/// How often the metrics of deleted KopfAudits are dropped.
const METRICS_SWEEP: Duration = Duration::from_secs(60);

/// Drops, every minute, the metric series of KopfAudits that were deleted.
async fn forget_deleted_audits(audits: Store<KopfAudit>, metrics: Arc<Metrics>) {
    if audits.wait_until_ready().await.is_err() {
        return;
    }
    loop {
        tokio::time::sleep(METRICS_SWEEP).await;
        let live = audits
            .state()
            .iter()
            .map(|a| (a.namespace().unwrap_or_default(), a.name_any()))
            .collect();
        metrics.retain_audits(&live);
    }
}

/// Changes to namespaced RBAC objects (metadata only: what changed is asked again by
/// the next audit's SubjectAccessReviews).
fn rbac_changes<K>(
    client: &Client,
    namespace: Option<&str>,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<PartialObjectMeta<K>> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    watcher(api, watcher::Config::default())
        .default_backoff()
        .touched_objects()
}

/// Changes to cluster-scoped RBAC objects.
fn cluster_rbac_changes<K>(
    client: &Client,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    watcher(
        Api::<PartialObjectMeta<K>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects()
}

/// The audits whose target lives in `namespace`; every audit for `None` (cluster-scoped
/// changes).
fn audits_in_namespace(
    audits: &Store<KopfAudit>,
    namespace: Option<&str>,
) -> Vec<ObjectRef<KopfAudit>> {
    audits
        .state()
        .iter()
        .filter(|a| {
            let own = a.namespace().unwrap_or_default();
            let target = a.spec.target.namespace.as_deref().unwrap_or(&own);
            namespace.is_none_or(|ns| ns == target)
        })
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

/// Whether a KopfAudit targets this Deployment (by name or selector, same namespace).
fn targets(audit: &KopfAudit, deployment: &Deployment) -> bool {
    let audit_ns = audit.namespace().unwrap_or_default();
    let target_ns = audit.spec.target.namespace.as_deref().unwrap_or(&audit_ns);
    if deployment.metadata.namespace.as_deref() != Some(target_ns) {
        return false;
    }
    if let Some(name) = &audit.spec.target.deployment {
        return deployment.metadata.name.as_ref() == Some(name);
    }
    audit
        .spec
        .target
        .selector
        .clone()
        .and_then(|s| Selector::try_from(s).ok())
        .is_some_and(|s| s.matches(deployment.labels()))
}

fn audits_for_deployment(
    audits: &Store<KopfAudit>,
    deployment: &Deployment,
) -> Vec<ObjectRef<KopfAudit>> {
    audits
        .state()
        .iter()
        .filter(|a| targets(a, deployment))
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

fn audits_for_pod(
    audits: &Store<KopfAudit>,
    deployments: &Store<Deployment>,
    pod: &Pod,
) -> Vec<ObjectRef<KopfAudit>> {
    let owners = deployments.state_filter(|d| {
        d.metadata.namespace == pod.metadata.namespace
            && Selector::try_from(d.spec.selector.clone()).is_ok_and(|s| s.matches(pod.labels()))
    });
    owners
        .iter()
        .flat_map(|d| audits_for_deployment(audits, d))
        .collect()
}

/// The shortest re-audit period (the schema refuses less).
const MIN_INTERVAL: Duration = Duration::from_secs(30);
/// The re-audit period when `spec.interval` cannot be read.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);

/// The requeue period of an audit (the schema guarantees at least 30s).
pub fn interval(spec: &KopfAuditSpec) -> Duration {
    duration::parse(&spec.interval)
        .map(|d| d.max(MIN_INTERVAL))
        .unwrap_or(DEFAULT_INTERVAL)
}

async fn reconcile(audit: Arc<KopfAudit>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let name = audit.name_any();
    let namespace = audit
        .namespace()
        .ok_or_else(|| ReconcileError::NoNamespace(name.clone()))?;
    // An audit on half-filled caches would find no target: wait for the first lists.
    if !ctx.ready.load(Ordering::SeqCst) {
        let synced = ctx.deployments.wait_until_ready().await.is_ok()
            && ctx.pods.wait_until_ready().await.is_ok();
        if synced {
            ctx.ready.store(true, Ordering::SeqCst);
        }
    }
    let span = tracing::info_span!("reconcile", audit = %format!("{namespace}/{name}"));
    let _enter = span.enter();
    let started = std::time::Instant::now();
    let api: Api<KopfAudit> = Api::namespaced(ctx.client.clone(), &namespace);
    let generation = audit.metadata.generation;

    let stored = match audit.status.as_ref().filter(|s| !s.conditions.is_empty()) {
        Some(s) => s.clone(),
        None => {
            let pending = evaluate::pending_status(generation, &Time(Timestamp::now()));
            publish::write_status(&api, &name, &pending).await?;
            ctx.metrics.status_write(&namespace, &name);
            pending
        }
    };

    let deployments = cached_in(&ctx.deployments, &namespace, &audit);
    let pods = cached_in(&ctx.pods, &namespace, &audit);
    let gathered = gather::gather(
        &ctx.client,
        &audit.spec,
        &namespace,
        ctx.settings.allow_cross_namespace,
        &deployments,
        &pods,
    )
    .await;
    let (outcome, failure) = match gathered {
        Ok(outcome) => (outcome, None),
        Err(e) => (
            Outcome::Stalled {
                reason: crate::conditions::Reason::AuditFailed,
                message: format!("The audit failed and is retried with back-off: {e}"),
            },
            Some(e),
        ),
    };
    let evaluation = match &outcome {
        Outcome::Audited(evidence) => Some(evaluate::evaluate(
            &audit.spec,
            evidence,
            &ctx.settings.policy,
        )),
        _ => None,
    };
    let now = Time(Timestamp::now());
    let update = evaluate::next_status(
        Some(&stored),
        &outcome,
        evaluation.as_ref(),
        generation,
        &now,
    );
    if update.changed {
        publish::write_status(&api, &name, &update.status).await?;
        ctx.metrics.status_write(&namespace, &name);
        match publish::policy_report::write(&ctx.client, &audit, &update.status).await {
            Ok(written) => tracing::debug!(written, "policy report"),
            Err(e) => tracing::warn!(error = %e, "policy report not written"),
        }
    }
    for planned in &update.events {
        if let Err(e) = ctx.events.emit(&audit, planned).await {
            tracing::warn!(error = %e, reason = %planned.reason, "event not created");
        }
    }
    ctx.metrics.audited(
        &namespace,
        &name,
        &update.status,
        started.elapsed(),
        failure.is_some(),
    );
    if let Some(e) = failure {
        return Err(e.into());
    }
    reset_backoff(&ctx, &audit);
    tracing::info!(
        changed = update.changed,
        events = update.events.len(),
        "audited"
    );
    Ok(Action::requeue(interval(&audit.spec)))
}

/// The cached objects of the audit's target namespace (clones only that namespace).
fn cached_in<K>(store: &Store<K>, audit_namespace: &str, audit: &KopfAudit) -> Vec<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let ns = audit
        .spec
        .target
        .namespace
        .as_deref()
        .unwrap_or(audit_namespace);
    store
        .state_filter(|o| o.meta().namespace.as_deref() == Some(ns))
        .iter()
        .map(|o| (**o).clone())
        .collect()
}

fn reset_backoff(ctx: &Context, audit: &KopfAudit) {
    if let Ok(mut failures) = ctx.failures.lock() {
        failures.remove(&ObjectRef::from_obj(audit));
    }
}

/// Exponential back-off with jitter, per object, capped.
fn error_policy(audit: Arc<KopfAudit>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let attempts = match ctx.failures.lock() {
        Ok(mut failures) => {
            let n = failures
                .entry(ObjectRef::from_obj(audit.as_ref()))
                .or_insert(0);
            *n = n.saturating_add(1);
            *n
        }
        Err(_) => 1,
    };
    let delay = backoff_delay(attempts, rand::random::<f64>());
    tracing::warn!(audit = %audit.name_any(), %error, attempts, retry_in = ?delay, "audit failed");
    Action::requeue(delay)
}

/// The delay before retry `attempts` (1-based); `jitter` in [0, 1) spreads it ±20%.
pub fn backoff_delay(attempts: u32, jitter: f64) -> Duration {
    let exp = BACKOFF_BASE.saturating_mul(1u32 << attempts.saturating_sub(1).min(16));
    let capped = exp.min(BACKOFF_CAP);
    capped.mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff_delay(1, 0.5), Duration::from_secs(5));
        assert_eq!(backoff_delay(2, 0.5), Duration::from_secs(10));
        assert_eq!(backoff_delay(30, 0.5), Duration::from_secs(300));
        assert!(backoff_delay(3, 0.0) < backoff_delay(3, 0.99));
    }

    #[test]
    fn interval_defaults_and_floors() {
        let mut spec: KopfAuditSpec =
            serde_json::from_value(serde_json::json!({"target": {"deployment": "x"}}))
                .expect("spec");
        assert_eq!(interval(&spec), Duration::from_secs(300));
        spec.interval = "45s".into();
        assert_eq!(interval(&spec), Duration::from_secs(45));
        spec.interval = "1s".into();
        assert_eq!(interval(&spec), Duration::from_secs(30));
    }
}

//! The reconcile layer: a kube-runtime Controller over KopfAudits that also watches the
//! target Deployments, their pods and RBAC through shared caches, so a thousand audits
//! do not mean a thousand lists. Each reconcile is the pipeline in [`pipeline`]; it
//! always requeues after `spec.interval`; transient errors back off per object
//! ([`backoff`]).

pub(crate) mod backoff;
pub(crate) mod http;
pub(crate) mod leader;
pub(crate) mod pipeline;
pub(crate) mod readiness;
mod watches;

#[cfg(test)]
mod tests;

use crate::api::KopfAudit;
use crate::evaluate::Policy;
use crate::publish::EventPublisher;
use crate::publish::metrics::Metrics;
use backoff::Backoff;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use readiness::Readiness;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How the operator was started; a KopfAudit cannot change these.
#[derive(Clone, Debug, Default)]
pub(crate) struct Settings {
    /// Allow KopfAudits to read other namespaces (targets, Events, objects).
    pub(crate) allow_cross_namespace: bool,
    /// Rules on exemptions.
    pub(crate) policy: Policy,
    /// Watch only this namespace (a namespaced install); all when `None`.
    pub(crate) watch_namespace: Option<String>,
    /// This instance's name in Events (the pod name).
    pub(crate) instance: String,
}

/// The shared watch caches of Deployments and pods.
pub(crate) struct Caches {
    deployments: Store<Deployment>,
    pods: Store<Pod>,
}

impl Caches {
    /// Waits until both caches hold their first list: an audit on half-filled caches
    /// would find no target.
    pub(crate) async fn wait_synced(&self) {
        let _ = self.deployments.wait_until_ready().await;
        let _ = self.pods.wait_until_ready().await;
    }

    /// The cached Deployments and pods of one namespace (clones only that namespace).
    pub(crate) fn in_namespace(&self, namespace: &str) -> (Vec<Deployment>, Vec<Pod>) {
        (
            in_namespace(&self.deployments, namespace),
            in_namespace(&self.pods, namespace),
        )
    }
}

fn in_namespace<K>(store: &Store<K>, namespace: &str) -> Vec<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .state_filter(|o| o.meta().namespace.as_deref() == Some(namespace))
        .iter()
        .map(|o| (**o).clone())
        .collect()
}

/// What every reconcile shares: the client, the caches, the publisher and the metrics.
pub(crate) struct Context {
    client: Client,
    caches: Caches,
    settings: Settings,
    events: EventPublisher,
    metrics: Arc<Metrics>,
    backoff: Backoff,
}

impl Context {
    /// A context over caches filled by the test, for reconciles against a fake API.
    #[cfg(test)]
    pub(crate) fn for_test(
        client: Client,
        deployments: Store<Deployment>,
        pods: Store<Pod>,
        settings: Settings,
    ) -> Context {
        Context {
            events: EventPublisher::new(client.clone(), settings.instance.clone()),
            client,
            caches: Caches { deployments, pods },
            settings,
            metrics: Arc::new(Metrics::new()),
            backoff: Backoff::default(),
        }
    }
}

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

/// Runs the controller until `shutdown` resolves; `readiness` turns ready once every
/// cache has synced.
pub(crate) async fn run(
    client: Client,
    settings: Settings,
    metrics: Arc<Metrics>,
    readiness: Readiness,
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
        caches: Caches {
            deployments: deployments.clone(),
            pods: pods.clone(),
        },
        events: EventPublisher::new(client.clone(), settings.instance.clone()),
        settings,
        metrics,
        backoff: Backoff::default(),
    });

    let controller = Controller::new(audits, wc)
        .with_config(ControllerConfig::default().debounce(Duration::from_millis(500)));
    let audit_store = controller.store();
    tokio::spawn(readiness.when_synced(vec![
        Box::pin({
            let d = deployments.clone();
            async move { d.wait_until_ready().await.is_ok() }
        }),
        Box::pin({
            let p = pods.clone();
            async move { p.wait_until_ready().await.is_ok() }
        }),
        Box::pin({
            let a = audit_store.clone();
            async move { a.wait_until_ready().await.is_ok() }
        }),
    ]));
    tokio::spawn(forget_deleted_audits(audit_store.clone(), ctx.clone()));

    let controller = watches::attach(
        controller,
        &client,
        ns.as_deref(),
        &audit_store,
        &deployments,
        dep_stream,
        pod_stream,
    );
    controller
        .graceful_shutdown_on(shutdown)
        .run(reconcile_counted, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((obj, _)) => tracing::debug!(audit = %obj, "reconciled"),
                Err(e) => tracing::debug!(error = %e, "reconcile did not complete"),
            }
        })
        .await;
}

/// The reconcile with its consecutive-error count kept outside it: reset on success.
async fn reconcile_counted(
    audit: Arc<KopfAudit>,
    ctx: Arc<Context>,
) -> Result<Action, pipeline::ReconcileError> {
    let result = pipeline::reconcile(audit.clone(), ctx.clone()).await;
    if result.is_ok() {
        ctx.backoff.succeeded(&audit);
    }
    result
}

/// Exponential back-off with jitter, per object, capped.
fn error_policy(
    audit: Arc<KopfAudit>,
    error: &pipeline::ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    let (attempts, delay) = ctx.backoff.failed(&audit);
    tracing::warn!(audit = %audit.name_any(), %error, attempts, retry_in = ?delay, "audit failed");
    Action::requeue(delay)
}

/// How often the state kept for deleted KopfAudits is dropped.
const SWEEP: Duration = Duration::from_secs(60);

/// Drops, every minute, the metric series and back-off counters of deleted KopfAudits.
async fn forget_deleted_audits(audits: Store<KopfAudit>, ctx: Arc<Context>) {
    if audits.wait_until_ready().await.is_err() {
        return;
    }
    loop {
        tokio::time::sleep(SWEEP).await;
        let live: std::collections::BTreeSet<(String, String)> = audits
            .state()
            .iter()
            .map(|a| (a.namespace().unwrap_or_default(), a.name_any()))
            .collect();
        ctx.metrics.retain_audits(&live);
        ctx.backoff.retain(&live);
    }
}

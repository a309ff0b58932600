//! The ClusterKopfAudit controller: on every `spec.defaults.interval` (and on every spec
//! change), discovers the kopf operators in scope, applies and deletes generated
//! KopfAudits as [`plan`] says, and writes the ClusterKopfAudit's status.
//!
//! It reads Deployments, pods and logs across namespaces whatever
//! `--allow-cross-namespace` says: a ClusterKopfAudit is cluster-scoped, so only a
//! cluster admin can create one. The KopfAudits it generates target their own namespace
//! and are audited by the KopfAudit controller like any other. The KopfAudits it plans
//! against are read from that controller's cache, not listed again; one written
//! elsewhere covers an operator only if that controller runs it, which depends on
//! `--allow-cross-namespace`, so the plan is given that setting.

use super::Context;
use crate::api::{ClusterKopfAudit, KopfAudit};
use crate::catalog::FIELD_MANAGER;
use crate::evaluate::cluster_audit::{
    ClusterOutcome, ClusterScope, CrossNamespace, Found, Plan, generated_by, in_scope, next_status,
    plan, scope_of,
};
use crate::gather::discover::{
    DiscoverError, Fingerprints, Scope, discover_in, namespaces_matching,
};
use crate::model::settings::AuditSettings;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Resource, ResourceExt};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why a reconcile of a ClusterKopfAudit did not complete.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClusterAuditError {
    /// The namespaces could not be listed.
    #[error("listing the namespaces the namespaceSelector matches: {0}")]
    Namespaces(#[source] kube::Error),
    /// The Deployments could not be discovered.
    #[error("discovering the kopf operators: {0}")]
    Discover(#[source] DiscoverError),
    /// A generated KopfAudit could not be applied.
    #[error("applying KopfAudit {namespace}/{name}: {source}")]
    Apply {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// A generated KopfAudit no operator needs could not be deleted.
    #[error("deleting KopfAudit {namespace}/{name}: {source}")]
    Delete {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Several generated KopfAudits could not be applied or deleted; the others were.
    #[error("{failed} of {attempted} writes of generated KopfAudits failed, the first: {first}")]
    Writes {
        /// How many failed.
        failed: usize,
        /// How many were attempted (applies and deletes).
        attempted: usize,
        /// The first that failed.
        #[source]
        first: Box<ClusterAuditError>,
    },
    /// The status could not be written.
    #[error("writing the status of ClusterKopfAudit {name}: {source}")]
    Status {
        /// The ClusterKopfAudit.
        name: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

/// What the ClusterKopfAudit controller shares between reconciles.
struct ClusterContext {
    inner: Arc<Context>,
    /// Every KopfAudit, from the KopfAudit controller's cache.
    audits: Store<KopfAudit>,
    /// Every ClusterKopfAudit: what is kept for deleted ones is dropped.
    clusters: Store<ClusterKopfAudit>,
    /// Log verdicts per Deployment rollout, per ClusterKopfAudit (by uid).
    fingerprints: Mutex<HashMap<String, Arc<Fingerprints>>>,
    /// Consecutive failures per ClusterKopfAudit, for the back-off.
    failures: Mutex<HashMap<String, u32>>,
}

impl ClusterContext {
    /// The log verdicts of `cka`'s discoveries; those of deleted ClusterKopfAudits are
    /// dropped here.
    fn fingerprints_of(&self, cka: &ClusterKopfAudit) -> Arc<Fingerprints> {
        let live: std::collections::HashSet<String> = self
            .clusters
            .state()
            .iter()
            .filter_map(|c| c.uid())
            .collect();
        let mut all = self
            .fingerprints
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        all.retain(|uid, _| live.contains(uid));
        all.entry(cka.uid().unwrap_or_default())
            .or_default()
            .clone()
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs the ClusterKopfAudit controller until the process stops. It waits first for
/// the KopfAudit cache: planning against an empty one would generate a KopfAudit for
/// every operator that has a hand-written one. Every ClusterKopfAudit discovers again
/// at each item of `deployments_changed` (a Deployment appeared, rolled out, changed
/// its labels or went), besides its interval.
pub(super) async fn run(
    ctx: Arc<Context>,
    audits: Store<KopfAudit>,
    deployments_changed: impl futures::Stream<Item = ()> + Send + Sync + 'static,
) {
    if !crate::gather::rbac::until_synced(&audits).await {
        return;
    }
    let api: Api<ClusterKopfAudit> = Api::all(ctx.client.clone());
    let (store, writer) = kube::runtime::reflector::store();
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|c: &mut ClusterKopfAudit| c.managed_fields_mut().clear())
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    let shared = Arc::new(ClusterContext {
        inner: ctx,
        audits,
        clusters: store.clone(),
        fingerprints: Mutex::default(),
        failures: Mutex::default(),
    });
    Controller::for_stream(stream, store)
        .reconcile_all_on(deployments_changed)
        .run(reconcile, error_policy, shared)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "cluster audit reconcile did not complete");
            }
        })
        .await;
}

/// How long to wait when this instance does not hold the Lease.
const NOT_LEADING_RETRY: Duration = Duration::from_secs(5);

async fn reconcile(
    cka: Arc<ClusterKopfAudit>,
    ctx: Arc<ClusterContext>,
) -> Result<Action, ClusterAuditError> {
    if !ctx.inner.mandate.holds() {
        return Ok(Action::requeue(NOT_LEADING_RETRY));
    }
    let interval = AuditSettings::from_defaults(&cka.spec.defaults).interval;
    let outcome = match discover_and_apply(&cka, &ctx).await {
        Ok(plan) => ClusterOutcome::Discovered(plan),
        Err(Stop::Stalled(why)) => ClusterOutcome::Stalled(why),
        Err(Stop::Failed(e)) => {
            let _ = write_status(&ctx, &cka, &ClusterOutcome::Failed(e.to_string())).await;
            return Err(e);
        }
    };
    write_status(&ctx, &cka, &outcome).await?;
    ctx.failures().remove(&cka.name_any());
    match outcome {
        ClusterOutcome::Stalled(_) => Ok(Action::await_change()),
        _ => Ok(Action::requeue(interval)),
    }
}

fn error_policy(
    cka: Arc<ClusterKopfAudit>,
    error: &ClusterAuditError,
    ctx: Arc<ClusterContext>,
) -> Action {
    let attempts = {
        let mut failures = ctx.failures();
        let n = failures.entry(cka.name_any()).or_default();
        *n = n.saturating_add(1);
        *n
    };
    let delay = super::backoff::delay(attempts, rand::random::<f64>());
    tracing::warn!(cluster_audit = %cka.name_any(), %error, attempts, retry_in = ?delay, "cluster audit failed");
    Action::requeue(delay)
}

/// Why a reconcile stopped before its writes.
enum Stop {
    Stalled(String),
    Failed(ClusterAuditError),
}

impl From<ClusterAuditError> for Stop {
    fn from(e: ClusterAuditError) -> Self {
        Stop::Failed(e)
    }
}

/// Discovers the operators in scope, applies and deletes KopfAudits, and returns the plan.
async fn discover_and_apply(cka: &ClusterKopfAudit, ctx: &ClusterContext) -> Result<Plan, Stop> {
    let ClusterScope {
        namespace_selector,
        deployment_selector,
    } = scope_of(&cka.spec).map_err(Stop::Stalled)?;
    let client = &ctx.inner.client;
    let namespaces = match &namespace_selector {
        Some(selector) => Some(
            namespaces_matching(client, selector)
                .await
                .map_err(ClusterAuditError::Namespaces)?,
        ),
        None => None,
    };
    let keep =
        |namespace: &str, name: &str| in_scope(&cka.spec, namespaces.as_ref(), namespace, name);
    let fingerprints = ctx.fingerprints_of(cka);
    let scope = Scope {
        namespace: None,
        selector: deployment_selector.as_deref(),
    };
    let discovery = discover_in(
        client,
        &ctx.inner.shared.recognitions,
        &fingerprints,
        scope,
        &keep,
    )
    .await
    .map_err(ClusterAuditError::Discover)?;
    let found = Found {
        operators: discovery.found,
        undetermined: discovery
            .undetermined
            .into_iter()
            .map(|u| (u.namespace, u.deployment))
            .collect(),
    };
    // Ours wherever they are (those out of scope now are deleted), and the others of
    // the namespaces where operators were found (they may cover one).
    let owner = cka.name_any();
    let operator_namespaces: BTreeSet<&str> = found
        .operators
        .iter()
        .map(|o| o.namespace.as_str())
        .collect();
    let existing: Vec<KopfAudit> = ctx
        .audits
        .state()
        .iter()
        .filter(|a| {
            generated_by(a, &owner)
                || a.spec.target.namespace.is_some()
                || a.namespace()
                    .is_some_and(|ns| operator_namespaces.contains(ns.as_str()))
        })
        .map(|a| a.as_ref().clone())
        .collect();
    let cross = CrossNamespace::from_flag(ctx.inner.settings.allow_cross_namespace);
    let plan = plan(cka, &found, &existing, cross);
    tracing::info!(
        cluster_audit = %cka.name_any(),
        discovered = plan.summary.discovered,
        apply = plan.apply.len(),
        delete = plan.delete.len(),
        remembered = discovery.cost.remembered,
        fingerprints = fingerprints.len(),
        log_decided = discovery.cost.decided_by_log,
        peering_decided = discovery.cost.decided_by_peering,
        "cluster audit discovered"
    );
    apply_and_delete(ctx, &plan).await?;
    Ok(plan)
}

/// Applies the generated KopfAudits the plan wants and deletes those it does not. One
/// that cannot be written (a tenant's quota on KopfAudits, an admission webhook of its
/// namespace) stops none of the others: every write is attempted, and the failures are
/// returned together.
async fn apply_and_delete(ctx: &ClusterContext, plan: &Plan) -> Result<(), ClusterAuditError> {
    // By index: a closure taking `&KopfAudit` makes the future held across the await
    // not `Send` for every lifetime; one taking a `usize` has none.
    let mut failures: Vec<ClusterAuditError> = futures::stream::iter(0..plan.apply.len())
        .map(|i| apply_one(ctx, &plan.apply[i]))
        .buffer_unordered(CONCURRENT_APPLIES)
        .filter_map(|result| std::future::ready(result.err()))
        .collect()
        .await;
    for (namespace, name) in &plan.delete {
        if let Err(e) = delete_one(ctx, namespace, name).await {
            failures.push(e);
        }
    }
    let failed = failures.len();
    let mut failures = failures.into_iter();
    match (failures.next(), failed) {
        (None, _) => Ok(()),
        (Some(only), 1) => Err(only),
        (Some(first), _) => Err(ClusterAuditError::Writes {
            failed,
            attempted: plan.apply.len() + plan.delete.len(),
            first: Box::new(first),
        }),
    }
}

/// Deletes one generated KopfAudit no operator needs; one already gone is no failure.
async fn delete_one(
    ctx: &ClusterContext,
    namespace: &str,
    name: &str,
) -> Result<(), ClusterAuditError> {
    let api: Api<KopfAudit> = Api::namespaced(ctx.inner.client.clone(), namespace);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(ClusterAuditError::Delete {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source,
        }),
    }
}

/// Generated KopfAudits applied at once: one after another, a first discovery of
/// 1,000 operators took 75 s to apply them (`hack/bench-scale.sh --cluster-audit`).
const CONCURRENT_APPLIES: usize = 4;

/// Applies one generated KopfAudit (server-side, forced: the fields are ours).
async fn apply_one(ctx: &ClusterContext, audit: &KopfAudit) -> Result<(), ClusterAuditError> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let namespace = audit.namespace().unwrap_or_default();
    let name = audit.name_any();
    let api: Api<KopfAudit> = Api::namespaced(ctx.inner.client.clone(), &namespace);
    api.patch(&name, &params, &Patch::Apply(audit))
        .await
        .map(drop)
        .map_err(|source| ClusterAuditError::Apply {
            namespace,
            name,
            source,
        })
}

/// Applies the ClusterKopfAudit's status (server-side, the whole status).
async fn write_status(
    ctx: &ClusterContext,
    cka: &ClusterKopfAudit,
    outcome: &ClusterOutcome,
) -> Result<(), ClusterAuditError> {
    let now = Time(jiff::Timestamp::now());
    let status = next_status(cka.status.as_ref(), outcome, cka.metadata.generation, &now);
    let patch = serde_json::json!({
        "apiVersion": ClusterKopfAudit::api_version(&()),
        "kind": ClusterKopfAudit::kind(&()),
        "status": status,
    });
    let api: Api<ClusterKopfAudit> = Api::all(ctx.inner.client.clone());
    api.patch_status(
        &cka.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map(|_| ())
    .map_err(|source| ClusterAuditError::Status {
        name: cka.name_any(),
        source,
    })
}

#[cfg(test)]
mod tests;

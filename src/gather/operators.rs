//! Gathers the other kopf operators within the audit's reach (API I/O only), for
//! `runtime.operator-conflict`: the kopf Deployments discovery finds ([`discover`], a
//! projection of each Deployment, logs only where the spec cannot decide), each with its
//! run (read again from its pod template: scope and peering), its ServiceAccount, and
//! the custom resources its bound rules point at as handled (the same inference as the
//! audited operator's, [`handled::candidates`], from the shared RBAC caches).
//!
//! When sampled objects carry two operators' marks that no rival found explains, it also
//! collects who RBAC lets patch them ([`Patchers`], from the shared RBAC caches): the
//! ServiceAccounts bound by the RoleBindings of the namespace in dispute, and by the
//! ClusterRoleBindings with `--allow-cross-namespace`, so that a rival whose Deployment
//! is out of reach is named by its ServiceAccount.
//!
//! Without `--allow-cross-namespace` only the KopfAudit's namespace is searched. What is
//! found is remembered per searched scope for [`REMEMBERED_FOR`], so that the audits of
//! a cluster's operators share one discovery per interval instead of one each; and for
//! longer (up to [`KEPT_FOR`]) while the operator's watches show no Deployment or pod
//! of the scope changed since ([`WatchedChanges`]).

use super::changes::{KEPT_FOR, Mark, WatchedChanges};
use super::discover::{self, DiscoverError};
use super::handled::candidates;
use super::rbac::binding_namespaces;
use super::{Reach, Shared, obstacle};
use crate::model::conflict::{self, Operator, Operators, Patchers, Place, Searched, overlap};
use crate::model::discovery::Discovered;
use crate::model::evidence::{Gathered, HandledResource, ObjectSample, Obstacle, Unavailable};
use crate::model::kopf_run::{KopfRun, Peering, Scope, find_kopf, template_containers};
use crate::model::rbac::ServiceAccountRef;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::Api;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the operators found in one scope, and what was learned of each, are reused:
/// about an audit interval.
pub(crate) const REMEMBERED_FOR: Duration = Duration::from_secs(300);

/// One scope's discovered kopf Deployments, when they were found and the watches' clock
/// when discovery began.
type Slot = Arc<tokio::sync::Mutex<Option<(Instant, Mark, Vec<Discovered>)>>>;

/// An operator learned, and when.
type Learned = (Instant, Option<Operator>);

/// The kopf Deployments found per searched scope (`None`: the whole cluster), and what
/// was learned of each operator, shared by every audit of the process. One audit at a
/// time discovers a scope; the others wait for it and reuse what it found.
#[derive(Default)]
pub(crate) struct OperatorMemory {
    slots: Mutex<HashMap<Option<String>, Slot>>,
    operators: Mutex<HashMap<(String, String), Learned>>,
}

/// Locks a cache map; a panic elsewhere cannot leave it half-written, so poison is ignored.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl OperatorMemory {
    fn slot(&self, scope: Option<&str>) -> Slot {
        lock(&self.slots)
            .entry(scope.map(str::to_string))
            .or_default()
            .clone()
    }

    /// Drops the operators learned longer ago than [`REMEMBERED_FOR`], and the scopes
    /// discovered longer ago than [`KEPT_FOR`]: the memory follows the scopes and
    /// operators audited.
    pub(crate) fn forget_stale(&self) {
        lock(&self.slots).retain(|_, slot| match slot.try_lock() {
            Ok(held) => held
                .as_ref()
                .is_some_and(|(at, _, _)| at.elapsed() < KEPT_FOR),
            // Being discovered now.
            Err(_) => true,
        });
        lock(&self.operators).retain(|_, (at, _)| at.elapsed() < REMEMBERED_FOR);
    }

    fn operator(&self, key: &(String, String)) -> Option<Option<Operator>> {
        lock(&self.operators)
            .get(key)
            .filter(|(at, _)| at.elapsed() < REMEMBERED_FOR)
            .map(|(_, found)| found.clone())
    }

    fn remember(&self, key: (String, String), found: Option<Operator>) {
        lock(&self.operators).insert(key, (Instant::now(), found));
    }
}

/// The other kopf operators in the audit's reach that may fight `own`: every kopf
/// Deployment discovery finds in reach, and, for those whose scope as discovery saw it
/// shares a namespace with `own`'s, their run, ServiceAccount and resources (one GET
/// of the Deployment and the RBAC caches' bindings each). The others are never read
/// further: a cluster of namespaced operators costs one discovery per interval.
pub(crate) async fn gather(
    client: &Client,
    reach: &Reach,
    shared: &Shared,
    own: &Operator,
    handled: Option<&[HandledResource]>,
    samples: Option<&[ObjectSample]>,
) -> Gathered<Operators> {
    let (scope, searched) = if reach.cross_namespace {
        (None, Searched::Cluster)
    } else {
        (
            Some(reach.own.as_str()),
            Searched::Namespace(reach.own.clone()),
        )
    };
    let rows = discovered(client, shared, scope).await?;
    let memory = &shared.operators;
    let mut found = Vec::new();
    for row in &rows {
        if row.namespace == own.namespace && row.deployment == own.deployment {
            continue;
        }
        if overlap(own, &as_discovered(row)).is_none() {
            continue;
        }
        let key = (row.namespace.clone(), row.deployment.clone());
        let operator = match memory.operator(&key) {
            Some(known) => known,
            None => {
                let learned = operator(client, reach, shared, row).await?;
                memory.remember(key, learned.clone());
                learned
            }
        };
        found.extend(operator);
    }
    let patchers = match (handled, samples) {
        (Some(handled), Some(samples)) => {
            patchers(client, reach, shared, own, &found, handled, samples).await
        }
        _ => None,
    };
    Ok(Operators {
        found,
        searched,
        patchers,
    })
}

/// Who RBAC lets patch the objects in dispute that no rival found explains, in the
/// namespaces in reach (the RoleBindings there, and the ClusterRoleBindings with
/// `--allow-cross-namespace`); `None` when nothing is in dispute, or a read failed (the
/// finding then names no one, as before).
async fn patchers(
    client: &Client,
    reach: &Reach,
    shared: &Shared,
    own: &Operator,
    found: &[Operator],
    handled: &[HandledResource],
    samples: &[ObjectSample],
) -> Option<Patchers> {
    let disputed = conflict::disputed(samples, handled);
    let rivals = conflict::rivals(own, handled, found);
    let unexplained = conflict::unexplained(&disputed, &rivals);
    let cluster_bindings = reach.may_read(None);
    let places: Vec<Place> = conflict::places(&unexplained)
        .into_iter()
        .filter(|(_, ns)| reach.may_read(Some(ns.as_str())) || (ns.is_empty() && cluster_bindings))
        .collect();
    if places.is_empty() {
        return None;
    }
    let mut accounts = BTreeMap::new();
    for (resource, namespace) in places {
        match shared
            .rbac
            .patchers(client, &resource, &namespace, cluster_bindings)
            .await
        {
            Ok(found) => {
                accounts.insert((resource, namespace), found);
            }
            Err(why) => {
                tracing::debug!(%namespace, reason = %why.message, "who may patch the objects in dispute is unknown");
                return None;
            }
        }
    }
    Some(Patchers {
        accounts,
        cluster_bindings,
    })
}

/// Whether a discovery of `scope` made `age` ago (the watches' clock then `mark`) is
/// still its answer: within [`REMEMBERED_FOR`], or while the watches show nothing changed.
fn still_current(changes: &WatchedChanges, scope: Option<&str>, age: Duration, mark: Mark) -> bool {
    age < REMEMBERED_FOR || changes.unchanged_since(scope, mark, age)
}

/// The kopf Deployments of `scope`, discovered at most once per [`REMEMBERED_FOR`], and
/// not again while the watches show no change in the scope.
async fn discovered(
    client: &Client,
    shared: &Shared,
    scope: Option<&str>,
) -> Gathered<Vec<Discovered>> {
    let slot = shared.operators.slot(scope);
    let mut held = slot.lock().await;
    if let Some((at, mark, rows)) = held.as_ref()
        && still_current(&shared.changes, scope, at.elapsed(), *mark)
    {
        return Ok(rows.clone());
    }
    let mark = shared.changes.mark();
    let discovery = discover::discover(
        client,
        &shared.recognitions,
        discover::Scope {
            namespace: scope,
            selector: None,
        },
    )
    .await
    .map_err(discovery_failed)?;
    *held = Some((Instant::now(), mark, discovery.found.clone()));
    Ok(discovery.found)
}

/// An operator as discovery saw it: its scope, peering not known, resources not read.
fn as_discovered(row: &Discovered) -> Operator {
    let (scope, served_names, peering) = discovered_scope(row);
    Operator {
        namespace: row.namespace.clone(),
        deployment: row.deployment.clone(),
        service_account: ServiceAccountRef::default(),
        scope,
        served_names,
        peering,
        resources: None,
    }
}

/// Why the other operators are unknown: a 403 names the permission to grant.
fn discovery_failed(error: DiscoverError) -> Unavailable {
    match error {
        DiscoverError::List(e) => obstacle(
            &e,
            "list Deployments to find the other kopf operators",
            "list on deployments (apiGroups: [apps])",
        ),
        other => Unavailable::new(
            Obstacle::Failed,
            format!("Could not find the other kopf operators: {other}"),
        ),
    }
}

/// One discovered operator: its run from its pod template (or, recognised by its log,
/// the scope discovery saw and an unknown peering), its ServiceAccount and the resources
/// its rules point at. `None` when its Deployment is gone since discovery listed it.
async fn operator(
    client: &Client,
    reach: &Reach,
    shared: &Shared,
    row: &Discovered,
) -> Gathered<Option<Operator>> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), &row.namespace);
    let deployment = api
        .get_opt(&crate::model::names::path_segment(&row.deployment))
        .await
        .map_err(|e| {
            obstacle(
                &e,
                &format!("get Deployment {}/{}", row.namespace, row.deployment),
                "get on deployments (apiGroups: [apps])",
            )
        })?;
    let Some(deployment) = deployment else {
        return Ok(None);
    };
    let run = find_kopf(
        template_containers(&deployment),
        Some(row.container.as_str()),
        Some(row.namespace.as_str()),
    )
    .map(|(_, run)| run);
    let (scope, served_names, peering) = match &run {
        Some(run) => (run.scope.clone(), run.served_names(), run.peering.clone()),
        None => discovered_scope(row),
    };
    let service_account = ServiceAccountRef::of_deployment(&deployment);
    let resources = match &run {
        Some(run) => resources(client, reach, shared, run, &service_account).await,
        None => {
            let run = crate::model::kopf_run::KopfRun {
                scope: scope.clone(),
                ..unknown_run(&row.container)
            };
            resources(client, reach, shared, &run, &service_account).await
        }
    };
    Ok(Some(Operator {
        namespace: row.namespace.clone(),
        deployment: row.deployment.clone(),
        service_account,
        scope,
        served_names,
        peering,
        resources,
    }))
}

/// The scope discovery saw: cluster-wide, the `-n` values, or (unknown) the namespaces
/// its log names, at least these; its peering is not known.
fn discovered_scope(row: &Discovered) -> (Scope, Vec<String>, Peering) {
    let scope = if row.scope == Scope::ClusterWide.mode_name() {
        Scope::ClusterWide
    } else if row.scope == Scope::Namespaced(Vec::new()).mode_name() {
        Scope::Namespaced(row.namespaces.clone())
    } else {
        Scope::Unknown
    };
    let served = match &scope {
        Scope::Unknown => row.namespaces.clone(),
        scope => scope.specific_names(),
    };
    (scope, served, Peering::Unknown)
}

/// A run whose flags are hidden: scope and peering unknown.
fn unknown_run(container: &str) -> KopfRun {
    KopfRun {
        container: container.to_string(),
        origin: crate::model::kopf_run::RunOrigin::CommandLine,
        scope: Scope::Unknown,
        peering: Peering::Unknown,
        priority: None,
        dev: false,
        log_format: crate::model::kopf_run::KopfLogFormat::Full,
        verbosity: (crate::model::kopf_run::Verbosity::Normal, None),
        liveness: None,
        entries: Vec::new(),
    }
}

/// The custom resources an operator's bound rules point at as handled; `None` when its
/// bindings could not be read.
async fn resources(
    client: &Client,
    reach: &Reach,
    shared: &Shared,
    run: &KopfRun,
    sa: &ServiceAccountRef,
) -> Option<std::collections::BTreeSet<crate::model::conflict::ResourceKey>> {
    let (namespaces, _) = binding_namespaces(run, &sa.namespace, reach);
    let bindings = shared.rbac.bindings(client, sa, &namespaces).await.ok()?;
    Some(candidates(&bindings).into_keys().collect())
}

#[cfg(test)]
mod tests;

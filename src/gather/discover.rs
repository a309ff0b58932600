//! Discovery I/O: reads kopf's peering objects (the pods they name run kopf:
//! [`PeerPods`]), lists the Deployments in scope, page by page, each read into a
//! projection of its name, selector and command lines (the rest of the object is
//! skipped while parsing, never held); decides from the spec what it can
//! ([`decide_from_spec`]), and only for the Deployments whose spec cannot decide lists
//! a few of their pods and, unless a peering object names one, reads the first lines
//! of one pod's log per hidden container (the log recognition of [`recognise`], 64 KiB
//! at most per read). A discovery that
//! runs again and again (a ClusterKopfAudit's) remembers each log verdict per rollout
//! ([`Fingerprints`]): a Deployment's pods are listed and its log read again only once
//! its uid or generation changed.

use super::paged::{PAGE_BYTES, PageError, Paged, Pager};
use super::recognise::{self, Recognised, Verdicts, Workload};
use crate::api::Recognition;
use crate::model::discovery::peers::{PeerPods, PodName};
use crate::model::discovery::{
    ContainerProjection, DeploymentProjection, Discovered, DiscoveryCost, Rollout, SpecDecision,
    decide_from_spec,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::core::Selector;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Deployments per page of the list: a page of projections is what is held at once.
const PAGE_SIZE: u32 = 500;

/// Pods of one Deployment listed to find one whose container ran (its log is read).
const PODS_LISTED: u32 = 10;

/// Deployments whose logs are read at once.
const CONCURRENT_LOG_READS: usize = 4;

/// Why discovery could not list the Deployments in scope.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DiscoverError {
    /// The list request could not be made (an invalid label selector).
    #[error("cannot list Deployments with these parameters: {0}")]
    Request(#[source] kube::core::request::Error),
    /// The API server refused or failed the list.
    #[error("listing Deployments: {0}")]
    List(#[source] kube::Error),
    /// A page of the list could not be read.
    #[error("reading a page of the Deployment list: {0}")]
    Decode(#[source] serde_json::Error),
}

impl From<PageError> for DiscoverError {
    fn from(error: PageError) -> Self {
        match error {
            PageError::Request(e) => DiscoverError::Request(e),
            PageError::List(e) => DiscoverError::List(e),
            PageError::Decode(e) => DiscoverError::Decode(e),
        }
    }
}

/// Where to look: one namespace or all, and an optional label selector.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Scope<'a> {
    /// The namespace (`None`: every namespace).
    pub(crate) namespace: Option<&'a str>,
    /// A label selector on the Deployments (`kubectl -l` syntax).
    pub(crate) selector: Option<&'a str>,
}

/// A Deployment whose run of kopf could not be decided, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct Undetermined {
    /// Its namespace.
    pub(crate) namespace: String,
    /// Its name.
    pub(crate) deployment: String,
    /// Why: no pod ever ran, or its log may not be read.
    pub(crate) reason: String,
}

/// What discovery found, and what it cost.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    /// The kopf operators, by namespace and name.
    pub(crate) found: Vec<Discovered>,
    /// The Deployments whose spec could not decide and whose log could not be read.
    pub(crate) undetermined: Vec<Undetermined>,
    /// Lists, pages and bytes.
    pub(crate) cost: DiscoveryCost,
}

/// The log verdicts of earlier discoveries, per Deployment rollout: `Some` the operator
/// found, `None` not kopf. Undetermined Deployments are not remembered (their pods may
/// start any time). After each complete discovery only the rollouts it saw are kept, so
/// it holds at most one entry per Deployment in scope whose spec cannot decide.
#[derive(Debug, Default)]
pub(crate) struct Fingerprints {
    verdicts: Mutex<HashMap<Rollout, Option<Discovered>>>,
}

impl Fingerprints {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Rollout, Option<Discovered>>> {
        self.verdicts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, rollout: &Rollout) -> Option<Option<Discovered>> {
        self.lock().get(rollout).cloned()
    }

    fn put(&self, rollout: Rollout, verdict: Option<Discovered>) {
        self.lock().insert(rollout, verdict);
    }

    fn retain(&self, seen: &HashSet<Rollout>) {
        self.lock().retain(|r, _| seen.contains(r));
    }

    /// How many verdicts are remembered.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// A Deployment whose spec could not decide: what its log recognition needs.
struct Pending {
    namespace: String,
    name: String,
    /// Its rollout, when known: the verdict is remembered under it.
    rollout: Option<Rollout>,
    /// Its labels, for the row.
    labels: std::collections::BTreeMap<String, String>,
    selector: LabelSelector,
    /// Its containers that hide what they run.
    hidden: Vec<Container>,
}

/// Finds every kopf operator among the Deployments in `scope`.
pub(crate) async fn discover(
    client: &Client,
    verdicts: &Verdicts,
    scope: Scope<'_>,
) -> Result<Discovery, DiscoverError> {
    discover_in(
        client,
        verdicts,
        &Fingerprints::default(),
        scope,
        &|_, _| true,
    )
    .await
}

/// Finds every kopf operator among the Deployments in `scope` that `keep` (namespace,
/// name) keeps, the others left before any log is read; log verdicts are taken from
/// and kept in `fingerprints`.
pub(crate) async fn discover_in(
    client: &Client,
    verdicts: &Verdicts,
    fingerprints: &Fingerprints,
    scope: Scope<'_>,
    keep: &(dyn Fn(&str, &str) -> bool + Sync),
) -> Result<Discovery, DiscoverError> {
    let mut discovery = Discovery::default();
    let mut peers = Peers::default();
    let mut pending = Vec::new();
    let mut seen = HashSet::new();
    let mut pager = deployment_pager(client, scope);
    while let Some(step) = pager.next::<DeploymentProjection>().await? {
        let deployments = match step {
            Paged::Items(items) => items,
            Paged::Over { namespace, name } => {
                tracing::warn!(%namespace, %name, "a Deployment over discovery's page budget was not read");
                discovery.undetermined.push(Undetermined {
                    namespace,
                    deployment: name,
                    reason: format!(
                        "the Deployment is over discovery's budget of {} MiB per read: it was not read",
                        PAGE_BYTES >> 20
                    ),
                });
                continue;
            }
        };
        for deployment in deployments {
            discovery.cost.deployments += 1;
            if !keep(&deployment.metadata.namespace, &deployment.metadata.name) {
                continue;
            }
            match decide(deployment) {
                Decided::Kopf(row) => {
                    discovery.cost.decided_by_spec += 1;
                    discovery.found.push(row);
                }
                Decided::NotKopf(None) => discovery.cost.decided_by_spec += 1,
                Decided::NotKopf(Some(script)) => {
                    let peers = peers.read(client, scope, &mut discovery.cost).await;
                    match script.by_peering(peers) {
                        Some(row) => {
                            discovery.cost.decided_by_peering += 1;
                            discovery.found.push(row);
                        }
                        None => discovery.cost.decided_by_spec += 1,
                    }
                }
                Decided::ScaledToZero(u) => discovery.undetermined.push(u),
                Decided::Pending(p) => {
                    let remembered = p.rollout.as_ref().and_then(|r| {
                        seen.insert(r.clone());
                        fingerprints.get(r)
                    });
                    match remembered {
                        Some(verdict) => {
                            discovery.cost.remembered += 1;
                            discovery.found.extend(verdict);
                        }
                        None => pending.push(p),
                    }
                }
            }
        }
    }
    discovery.cost.pages = pager.pages;
    discovery.cost.list_bytes = pager.bytes;
    discovery.cost.pod_lists = pending.len() as u64;
    let peers = if pending.is_empty() {
        &PeerPods::default()
    } else {
        peers.read(client, scope, &mut discovery.cost).await
    };
    let mut by_log = futures::stream::iter(pending)
        .map(|p| async move {
            let rollout = p.rollout.clone();
            (rollout, decide_by_log(client, verdicts, peers, p).await)
        })
        .buffer_unordered(CONCURRENT_LOG_READS);
    while let Some((rollout, outcome)) = by_log.next().await {
        match outcome {
            LogOutcome::Kopf(row) => {
                match row.recognised_by {
                    Recognition::Peering => discovery.cost.decided_by_peering += 1,
                    _ => discovery.cost.decided_by_log += 1,
                }
                if let Some(r) = rollout {
                    fingerprints.put(r, Some((*row).clone()));
                }
                discovery.found.push(*row);
            }
            LogOutcome::NotKopf => {
                discovery.cost.decided_by_log += 1;
                if let Some(r) = rollout {
                    fingerprints.put(r, None);
                }
            }
            LogOutcome::Undetermined(u) => discovery.undetermined.push(u),
        }
    }
    fingerprints.retain(&seen);
    let by_name = |ns: &str, name: &str| (ns.to_string(), name.to_string());
    discovery
        .found
        .sort_by_key(|d| by_name(&d.namespace, &d.deployment));
    discovery
        .undetermined
        .sort_by_key(|u| by_name(&u.namespace, &u.deployment));
    Ok(discovery)
}

/// The names of the namespaces `selector` (`kubectl -l` text) matches, read as
/// metadata only: a ClusterKopfAudit's `namespaceSelector`.
pub(crate) async fn namespaces_matching(
    client: &Client,
    selector: &str,
) -> Result<std::collections::BTreeSet<String>, kube::Error> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let list = api
        .list_metadata(&ListParams::default().labels(selector))
        .await?;
    Ok(list.items.into_iter().map(|n| n.name_any()).collect())
}

/// The Deployment list of `scope`, paged.
fn deployment_pager<'a>(client: &'a Client, scope: Scope<'_>) -> Pager<'a> {
    let path = match scope.namespace {
        Some(ns) => format!(
            "/apis/apps/v1/namespaces/{}/deployments",
            crate::model::names::path_segment(ns)
        ),
        None => "/apis/apps/v1/deployments".to_string(),
    };
    let mut params = ListParams::default();
    if let Some(selector) = scope.selector {
        params = params.labels(selector);
    }
    Pager::new(client, path, params, PAGE_SIZE)
}

/// kopf's peering objects, read the first time a Deployment needs them: a discovery
/// whose every Deployment the spec shows as kopf (an audit's look for the other
/// operators of its namespace, often) makes no request for them.
#[derive(Default)]
struct Peers(Option<PeerPods>);

impl Peers {
    /// The pods the peering objects of `scope` name, read at the first call.
    async fn read(
        &mut self,
        client: &Client,
        scope: Scope<'_>,
        cost: &mut DiscoveryCost,
    ) -> &PeerPods {
        if self.0.is_none() {
            let (peers, lists) = super::peering::for_discovery(client, scope.namespace).await;
            cost.peering_lists = lists;
            self.0 = Some(peers);
        }
        self.0.get_or_insert_default()
    }
}

/// A Deployment of one container whose spec shows a program other than kopf: a console
/// script of its own may call `kopf.run()`, which a peering object naming one of its
/// pods tells.
struct Script {
    metadata: crate::model::discovery::NameProjection,
    container: String,
}

impl Script {
    /// Its row, when a peering object names one of its pods by the names a Deployment
    /// gives its pods.
    fn by_peering(self, peers: &PeerPods) -> Option<Discovered> {
        let (pod, sighting) = peers.of_deployment(&self.metadata.namespace, &self.metadata.name)?;
        let row = Discovered::by_peering(&self.metadata.name, &self.container, pod, sighting);
        Some(row.with_labels(self.metadata.labels))
    }
}

/// What the spec of one Deployment decides.
enum Decided {
    Kopf(Discovered),
    /// Not kopf by its spec; a console script that peering may still show as kopf.
    NotKopf(Option<Script>),
    Pending(Pending),
    /// Its spec cannot decide, and it asks for no pod: nothing to read, no request made.
    ScaledToZero(Undetermined),
}

/// Decides a Deployment from its spec, keeping only what its log recognition needs
/// when the spec cannot. A Deployment of one container whose command the spec takes
/// for another program (a console script of its own that calls `kopf.run()`) is left
/// to the peering objects ([`Script`]).
fn decide(deployment: DeploymentProjection) -> Decided {
    let DeploymentProjection { metadata, spec } = deployment;
    let rollout = metadata.rollout();
    let containers: Vec<Container> = spec
        .template
        .spec
        .containers
        .into_iter()
        .map(ContainerProjection::into_container)
        .collect();
    match decide_from_spec(&containers, &metadata.namespace) {
        SpecDecision::Kopf(run) => Decided::Kopf(
            Discovered::new(&metadata.namespace, &metadata.name, &run).with_labels(metadata.labels),
        ),
        SpecDecision::NotKopf => match containers.as_slice() {
            [container] => Decided::NotKopf(Some(Script {
                container: container.name.clone(),
                metadata,
            })),
            _ => Decided::NotKopf(None),
        },
        SpecDecision::Undecided(_) if spec.replicas == Some(0) => {
            Decided::ScaledToZero(Undetermined {
                namespace: metadata.namespace,
                deployment: metadata.name,
                reason: "it is scaled to zero: no pod runs whose log would show kopf".to_string(),
            })
        }
        SpecDecision::Undecided(hidden) => Decided::Pending(Pending {
            hidden: hidden
                .iter()
                .filter_map(|(i, _)| containers.get(*i).cloned())
                .collect(),
            namespace: metadata.namespace,
            name: metadata.name,
            labels: metadata.labels,
            rollout,
            selector: spec.selector,
        }),
    }
}

/// What the log of one Deployment's pods decides.
enum LogOutcome {
    Kopf(Box<Discovered>),
    NotKopf,
    Undetermined(Undetermined),
}

/// Lists a few pods of a Deployment and reads the first lines of their hidden
/// containers' logs, unless a peering object names one of the pods (and the
/// Deployment has one hidden container, which then runs kopf).
async fn decide_by_log(
    client: &Client,
    verdicts: &Verdicts,
    peers: &PeerPods,
    p: Pending,
) -> LogOutcome {
    let undetermined = |reason: String| {
        LogOutcome::Undetermined(Undetermined {
            namespace: p.namespace.clone(),
            deployment: p.name.clone(),
            reason,
        })
    };
    let selector = match Selector::try_from(p.selector.clone()) {
        Ok(s) if !s.selects_all() => s.to_string(),
        _ => return undetermined("its pod selector is empty or invalid".to_string()),
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
    let params = ListParams::default().labels(&selector).limit(PODS_LISTED);
    let pods: Vec<Pod> = match api.list(&params).await {
        Ok(list) => list
            .items
            .into_iter()
            .map(|mut pod| {
                pod.managed_fields_mut().clear();
                pod
            })
            .collect(),
        Err(e) => return undetermined(format!("listing its pods: {e}")),
    };
    if let Some(row) = by_peering(peers, &p, &pods) {
        return LogOutcome::Kopf(Box::new(row));
    }
    let workload = Workload {
        namespace: &p.namespace,
        name: &p.name,
        containers: &p.hidden,
        pods: &pods,
    };
    match recognise::recognise_workload(client, verdicts, &workload, None).await {
        Recognised::Kopf(run) => LogOutcome::Kopf(Box::new(
            Discovered::new(&p.namespace, &p.name, &run).with_labels(p.labels.clone()),
        )),
        Recognised::NotKopf => LogOutcome::NotKopf,
        Recognised::Undetermined(why) => undetermined(why.message),
    }
}

/// The row of a Deployment with one hidden container whose pod a peering object names.
fn by_peering(peers: &PeerPods, p: &Pending, pods: &[Pod]) -> Option<Discovered> {
    let [container] = p.hidden.as_slice() else {
        return None;
    };
    if peers.is_empty() {
        return None;
    }
    let names = pods.iter().map(|pod| PodName {
        namespace: &p.namespace,
        name: pod.metadata.name.as_deref().unwrap_or_default(),
        hostname: pod.spec.as_ref().and_then(|s| s.hostname.as_deref()),
    });
    let (pod, sighting) = peers.find(names)?;
    Some(
        Discovered::by_peering(&p.name, &container.name, pod, sighting)
            .with_labels(p.labels.clone()),
    )
}

#[cfg(test)]
mod tests;

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

use super::recognise::{self, Recognised, Verdicts, Workload};
use crate::api::Recognition;
use crate::model::discovery::peers::{PeerPods, PodName};
use crate::model::discovery::{
    ContainerProjection, DeploymentPage, DeploymentProjection, Discovered, DiscoveryCost, Rollout,
    SpecDecision, decide_from_spec,
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

/// Most bytes of one page of the Deployment list read and held at once. Deployments are
/// written by tenants, each up to the API server's 1.5 MiB: a page over this is read
/// again with fewer items (an eighth each time), and a single Deployment over it is
/// named as undetermined, never held.
const PAGE_BYTES: usize = 8 << 20;

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
    let mut continue_token: Option<String> = None;
    let mut limit = PAGE_SIZE;
    loop {
        let read = list_page(client, scope, continue_token.as_deref(), limit).await?;
        discovery.cost.pages += 1;
        let (page, bytes) = match read {
            PageRead::Page(page, bytes) => {
                // Small pages again: the next one may take more items.
                if bytes < (PAGE_BYTES / 4) as u64 {
                    limit = limit.saturating_mul(2).min(PAGE_SIZE);
                }
                (page, bytes)
            }
            PageRead::TooBig(_) if limit > 1 => {
                limit = (limit / 8).max(1);
                continue;
            }
            PageRead::TooBig(prefix) => {
                let (namespace, name) = prefix.first_item();
                tracing::warn!(%namespace, %name, "a Deployment over discovery's page budget was not read");
                discovery.undetermined.push(Undetermined {
                    namespace,
                    deployment: name,
                    reason: format!(
                        "the Deployment is over discovery's budget of {} MiB per read: it was not read",
                        PAGE_BYTES >> 20
                    ),
                });
                continue_token = prefix.continue_token();
                if continue_token.is_none() {
                    break;
                }
                continue;
            }
        };
        discovery.cost.list_bytes += bytes;
        for deployment in page.items {
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
        continue_token = page.metadata.continue_.filter(|t| !t.is_empty());
        if continue_token.is_none() {
            break;
        }
    }
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

/// A page of the Deployment list as read: whole, or over [`PAGE_BYTES`] (then only its
/// first bytes are kept, which name the list's `continue` token and its first item).
enum PageRead {
    /// The page and its size in bytes.
    Page(DeploymentPage, u64),
    /// The first bytes of a page over the budget.
    TooBig(PagePrefix),
}

/// The first bytes of a list response. The API server writes a list's `metadata` (with
/// its `continue` token) before its `items`, and an object's `metadata.name` and
/// `namespace` first in the object.
struct PagePrefix(Vec<u8>);

impl PagePrefix {
    /// The string value of the first `"key":"…"` after `from`.
    fn string_after(&self, from: usize, key: &str) -> Option<String> {
        let text = String::from_utf8_lossy(self.0.get(from..)?);
        let needle = format!("\"{key}\":\"");
        let start = text.find(&needle)? + needle.len();
        let end = text[start..].find('"')?;
        Some(text[start..start + end].to_string())
    }

    /// Where the list's items start.
    fn items_at(&self) -> Option<usize> {
        memchr::memmem::find(&self.0, b"\"items\":[")
    }

    /// The list's `continue` token, when more pages follow.
    fn continue_token(&self) -> Option<String> {
        let items = self.items_at()?;
        let metadata = PagePrefix(self.0[..items].to_vec());
        metadata
            .string_after(0, "continue")
            .filter(|t| !t.is_empty())
    }

    /// The namespace and name of the page's first Deployment, as far as the prefix
    /// shows them (`?` when it does not).
    fn first_item(&self) -> (String, String) {
        let at = self.items_at().unwrap_or(0);
        let shown = |v: Option<String>| {
            v.map_or_else(
                || "?".to_string(),
                |v| crate::model::bounded::clean_name(&v),
            )
        };
        (
            shown(self.string_after(at, "namespace")),
            shown(self.string_after(at, "name")),
        )
    }
}

/// One page of at most `limit` Deployments, read up to [`PAGE_BYTES`].
async fn list_page(
    client: &Client,
    scope: Scope<'_>,
    continue_token: Option<&str>,
    limit: u32,
) -> Result<PageRead, DiscoverError> {
    let path = match scope.namespace {
        Some(ns) => format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        None => "/apis/apps/v1/deployments".to_string(),
    };
    let mut params = ListParams::default().limit(limit);
    if let Some(selector) = scope.selector {
        params = params.labels(selector);
    }
    params.continue_token = continue_token.map(str::to_string);
    let request = kube::core::Request::new(path)
        .list(&params)
        .map_err(DiscoverError::Request)?;
    let body = client
        .request_stream(request)
        .await
        .map_err(DiscoverError::List)?;
    let bytes = read_bounded(body, PAGE_BYTES)
        .await
        .map_err(|e| DiscoverError::List(kube::Error::ReadEvents(e)))?;
    match bytes {
        Bounded::Whole(bytes) => {
            let page = serde_json::from_slice(&bytes).map_err(DiscoverError::Decode)?;
            Ok(PageRead::Page(page, bytes.len() as u64))
        }
        Bounded::Cut(prefix) => Ok(PageRead::TooBig(PagePrefix(prefix))),
    }
}

/// A body read up to a bound.
enum Bounded {
    /// All of it.
    Whole(Vec<u8>),
    /// Its first bytes (the first 64 KiB), the rest left unread.
    Cut(Vec<u8>),
}

/// Reads `body` whole when it is at most `max` bytes; else keeps its first 64 KiB and
/// stops reading (the connection's rest is dropped).
async fn read_bounded(
    body: impl futures::AsyncBufRead + Unpin,
    max: usize,
) -> std::io::Result<Bounded> {
    use futures::AsyncReadExt as _;
    let mut out = Vec::new();
    let mut limited = body.take(max as u64 + 1);
    limited.read_to_end(&mut out).await?;
    if out.len() > max {
        out.truncate(64 << 10);
        out.shrink_to_fit();
        return Ok(Bounded::Cut(out));
    }
    Ok(Bounded::Whole(out))
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

//! What re-audits a KopfAudit at once besides its own spec: its target Deployment, the
//! target's pods, and the RBAC objects that can change what its ServiceAccount may do.
//! Each watch is narrowed to what can matter, so that the changes of a busy cluster do
//! not become a herd of audits, nor a cache of the cluster:
//! - Deployments and pods are not cached (an audit reads its targets live): their
//!   watches only trigger, and only in the namespaces that KopfAudits target; the
//!   Deployment watch carries metadata only;
//! - RBAC objects are stripped to what the explanation reads before they are cached;
//! - an object re-triggers only when what the checks read of it changed (for RBAC:
//!   subjects and roleRef, rules, aggregation; never labels or annotations of a
//!   binding), or when it is deleted;
//! - an RBAC change re-audits only the audits whose ServiceAccount the changed binding
//!   (or a binding to the changed role, directly or through aggregation) reaches, and of
//!   those, for a RoleBinding, only the audits that ask about its namespace; it forgets
//!   the remembered SubjectAccessReview answers it may alter (for a RoleBinding, those
//!   about its namespace);
//! - the RBAC changes of one namespace re-run an audit at most once per
//!   [`CHURN_PERIOD`](super::churn::CHURN_PERIOD), the last of them at its end.

use super::Context;
use super::churn::{ChurnBound, Source};
use super::deployment_changes::DeploymentChanges;
use super::memory::AuditMemory;
use crate::api::KopfAudit;
use crate::gather::changes::{Watched, WatchedChanges};
use crate::gather::rbac::RbacStores;
use crate::gather::{Invalidation, Shared};
use crate::model::rbac::{BindingKind, aggregation_selectors, reaches};
use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// The annotation prefix the checks read (exemptions); other annotations are dropped.
const KEPT_ANNOTATION_PREFIX: &str = crate::catalog::SKIP_ANNOTATION_PREFIX;

/// A hash of what the checks read of an object, for the watches' predicates.
fn hash_of(value: &impl serde::Serialize) -> Option<u64> {
    let text = serde_json::to_string(value).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    Some(h.finish())
}

/// What of a pod can change an audit: its labels, phase and container states (restart
/// counts, waiting and terminated reasons, when the running one started), not probes'
/// timestamps or readiness churn. An audit reuses what it read of its target's pods
/// while none of this changes ([`WatchedChanges`]).
fn pod_predicate(p: &Pod) -> Option<u64> {
    let states: Vec<_> = p
        .status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .map(|cs| {
            (
                &cs.name,
                cs.restart_count,
                cs.state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.as_ref()),
                cs.state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .and_then(|t| t.reason.as_ref()),
                cs.last_state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .and_then(|t| t.reason.as_ref()),
                cs.state
                    .as_ref()
                    .and_then(|s| s.running.as_ref())
                    .and_then(|r| r.started_at.as_ref()),
            )
        })
        .collect();
    hash_of(&(
        p.metadata.labels.as_ref(),
        p.metadata.deletion_timestamp.is_some(),
        p.status.as_ref().and_then(|s| s.phase.as_ref()),
        states,
    ))
}

/// What of a Deployment can change an audit: its spec (generation), labels, exemptions.
fn deployment_predicate(d: &PartialObjectMeta<Deployment>) -> Option<u64> {
    let exemptions: Vec<_> = d
        .annotations()
        .iter()
        .filter(|(k, _)| k.starts_with(KEPT_ANNOTATION_PREFIX))
        .collect();
    hash_of(&(
        d.metadata.generation,
        d.metadata.labels.as_ref(),
        exemptions,
    ))
}

/// What of a binding can change a permission: its subjects and role (labels,
/// annotations and the rest of its metadata grant nothing).
fn binding_content(subjects: Option<&Vec<Subject>>, role: &RoleRef) -> Option<u64> {
    hash_of(&(subjects, role))
}

/// What of a RoleBinding can change a permission.
fn role_binding_content(b: &RoleBinding) -> Option<u64> {
    binding_content(b.subjects.as_ref(), &b.role_ref)
}

/// What of a ClusterRoleBinding can change a permission.
fn cluster_role_binding_content(b: &ClusterRoleBinding) -> Option<u64> {
    binding_content(b.subjects.as_ref(), &b.role_ref)
}

/// What of a Role can change a permission: its rules.
fn role_content(r: &Role) -> Option<u64> {
    hash_of(&r.rules)
}

/// What of a ClusterRole can change a permission: its rules, its aggregation rule and
/// its labels (aggregation selects roles by them).
fn cluster_role_content(r: &ClusterRole) -> Option<u64> {
    hash_of(&(&r.rules, &r.aggregation_rule, &r.metadata.labels))
}

/// What of an RBAC object's metadata is kept in its cache.
#[derive(Clone, Copy)]
enum KeptMeta {
    /// Name, namespace and resourceVersion (the cache key and the change filter).
    Identity,
    /// Those and the labels: ClusterRole aggregation selects roles by them.
    IdentityAndLabels,
}

/// Strips every field of the metadata the RBAC explanation and the re-audit map do not
/// read (uid, timestamps, owners, annotations, managedFields; labels unless kept): on
/// the scale bench's 4,830 RBAC objects that is most of their metadata.
fn strip_meta<K: Resource>(o: &mut K, kept: KeptMeta) {
    let meta = o.meta_mut();
    *meta = ObjectMeta {
        name: meta.name.take(),
        namespace: meta.namespace.take(),
        resource_version: meta.resource_version.take(),
        labels: match kept {
            KeptMeta::Identity => None,
            KeptMeta::IdentityAndLabels => meta.labels.take(),
        },
        ..ObjectMeta::default()
    };
}

/// Logs a watch's errors (a forbidden list, a missing CRD, a lost connection) as
/// warnings: kube's watcher retries them with back-off (at most every 30 s) and says
/// nothing itself, so without this a cache that never syncs shows no cause.
pub(super) fn warn_on_error<E, S>(
    resource: &'static str,
    stream: S,
) -> impl Stream<Item = Result<E, watcher::Error>> + Send
where
    S: Stream<Item = Result<E, watcher::Error>> + Send,
{
    stream.inspect(move |event| {
        if let Err(error) = event {
            tracing::warn!(resource, %error, "watch failed; retrying with back-off");
        }
    })
}

/// A reflector stream of `api`, stripped, re-emitting an object only when its
/// `content` changed or it was deleted. The cache is updated before the filter sees an
/// event, so an object the cache no longer holds is a deletion: the delete passes though
/// its content is the last seen (the watch's delete event carries the last state).
fn reflected<K>(
    resource: &'static str,
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    kept: KeptMeta,
    content: fn(&K) -> Option<u64>,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let predicate = content_or_gone(writer.as_reader(), content);
    warn_on_error(
        resource,
        watcher(api, watcher::Config::default()).default_backoff(),
    )
    .modify(move |o| strip_meta(o, kept))
    .reflect(writer)
    .touched_objects()
    .predicate_filter(predicate, Default::default())
}

/// The predicate of [`reflected`]: an object's `content`, and whether `cache` still
/// holds it.
fn content_or_gone<K>(cache: Store<K>, content: fn(&K) -> Option<u64>) -> impl Fn(&K) -> Option<u64>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    move |o: &K| {
        let cached = cache.get(&ObjectRef::from_obj(o)).is_some();
        hash_of(&(content(o)?, cached))
    }
}

/// A binding: where it grants, and its name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BindingKey {
    scope: BindingKind,
    name: String,
}

impl BindingKey {
    /// Where a change of it comes from, for the churn bound.
    fn source(&self) -> Source {
        match &self.scope {
            BindingKind::RoleBinding(ns) => Source::Namespace(ns.clone()),
            BindingKind::ClusterRoleBinding => Source::Cluster,
        }
    }
}

/// Everything the RBAC mapper reads and keeps: the audits' targets as last seen, the
/// RBAC caches, the shared answers to forget, the subjects each binding had when last
/// seen (dropped with the binding), and the bound on re-runs per source.
#[derive(Clone)]
struct RbacMapper {
    targets: Arc<AuditMemory>,
    stores: RbacStores,
    shared: Arc<Shared>,
    last_subjects: Arc<Mutex<HashMap<BindingKey, Vec<Subject>>>>,
    churn: Arc<ChurnBound>,
}

/// One RBAC object that changed.
enum RbacChange<'a> {
    /// A RoleBinding or ClusterRoleBinding with its subjects now (its last ones when
    /// deleted).
    Binding {
        key: BindingKey,
        subjects: &'a [Subject],
        deleted: bool,
    },
    /// A Role in a namespace.
    Role { namespace: &'a str, name: &'a str },
    /// A ClusterRole, with its labels (aggregation selects by them).
    ClusterRole {
        name: &'a str,
        labels: &'a BTreeMap<String, String>,
    },
}

impl RbacChange<'_> {
    /// Where it comes from, for the churn bound.
    fn source(&self) -> Source {
        match self {
            RbacChange::Binding { key, .. } => key.source(),
            RbacChange::Role { namespace, .. } => Source::Namespace(namespace.to_string()),
            RbacChange::ClusterRole { .. } => Source::Cluster,
        }
    }
}

/// A binding's subjects, each with where the binding grants.
type Grants = Vec<(BindingKind, Subject)>;

/// The role a binding's `roleRef` names.
fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: kind.into(),
        name: name.into(),
    }
}

impl RbacMapper {
    /// The subjects of the bindings that reference a role.
    fn bound_to(&self, role: &RoleRef, namespace: Option<&str>) -> Grants {
        let mut out = Vec::new();
        let same = |r: &RoleRef| r.kind == role.kind && r.name == role.name;
        if role.kind == "ClusterRole"
            && let Some(crbs) = &self.stores.cluster_role_bindings
        {
            for b in crbs.state().iter().filter(|b| same(&b.role_ref)) {
                out.extend(
                    b.subjects
                        .iter()
                        .flatten()
                        .map(|s| (BindingKind::ClusterRoleBinding, s.clone())),
                );
            }
        }
        if let Some((rbs, _)) = &self.stores.role_bindings {
            for b in rbs.state().iter().filter(|b| {
                same(&b.role_ref)
                    && (role.kind == "ClusterRole" || b.metadata.namespace.as_deref() == namespace)
            }) {
                let scope =
                    BindingKind::RoleBinding(b.metadata.namespace.clone().unwrap_or_default());
                out.extend(
                    b.subjects
                        .iter()
                        .flatten()
                        .map(|s| (scope.clone(), s.clone())),
                );
            }
        }
        out
    }

    /// The ClusterRoles that aggregate one with these labels.
    fn aggregating(&self, labels: &BTreeMap<String, String>) -> Vec<String> {
        let Some(roles) = &self.stores.cluster_roles else {
            return Vec::new();
        };
        roles
            .state()
            .iter()
            .filter(|r| {
                r.aggregation_rule
                    .as_ref()
                    .map(aggregation_selectors)
                    .into_iter()
                    .flatten()
                    .any(|s| s.matches(labels))
            })
            .map(|r| r.name_any())
            .collect()
    }

    /// Records a binding's subjects now (forgets them when it was deleted) and returns
    /// those it had before: a change takes what the binding granted from them.
    fn remember_subjects(
        &self,
        key: BindingKey,
        subjects: &[Subject],
        deleted: bool,
    ) -> Vec<Subject> {
        let mut last = self
            .last_subjects
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = if deleted {
            last.remove(&key)
        } else {
            last.insert(key, subjects.to_vec())
        };
        before.unwrap_or_default()
    }

    /// The subjects (with where their binding grants) a change can affect.
    fn subjects_of(&self, change: RbacChange) -> Grants {
        match change {
            RbacChange::Binding {
                key,
                subjects,
                deleted,
            } => {
                let scope = key.scope.clone();
                let before = self.remember_subjects(key, subjects, deleted);
                subjects
                    .iter()
                    .cloned()
                    .chain(before)
                    .map(|s| (scope.clone(), s))
                    .collect()
            }
            RbacChange::Role { namespace, name } => {
                self.bound_to(&role_ref("Role", name), Some(namespace))
            }
            RbacChange::ClusterRole { name, labels } => {
                let mut names = vec![name.to_string()];
                names.extend(self.aggregating(labels));
                names
                    .into_iter()
                    .flat_map(|n| self.bound_to(&role_ref("ClusterRole", &n), None))
                    .collect()
            }
        }
    }

    /// The audits a change can alter, to re-run now or, within the churn bound of its
    /// source, at the end of the period.
    fn audits_for(&self, change: RbacChange) -> Vec<ObjectRef<KopfAudit>> {
        let source = change.source();
        let altered = self.altered_by(change);
        if altered.is_empty() {
            return altered;
        }
        let now = self
            .churn
            .admit(&source, altered, tokio::time::Instant::now());
        tracing::debug!(?source, audits = now.len(), "RBAC change re-audits");
        now
    }

    /// The audits a change can alter ([`AuditMemory::audits_reached`]); the remembered
    /// answers it may alter are forgotten at once.
    fn altered_by(&self, change: RbacChange) -> Vec<ObjectRef<KopfAudit>> {
        let grants = self.subjects_of(change);
        if grants.is_empty() {
            return Vec::new();
        }
        let (refs, accounts) = self.targets.audits_reached(|sa| {
            grants
                .iter()
                .filter(|(scope, s)| reaches(s, sa, scope.namespace()).is_some())
                .map(|(scope, _)| scope.clone())
                .collect::<BTreeSet<_>>()
        });
        for (sa, scopes) in &accounts {
            for scope in scopes {
                self.shared
                    .invalidate(Invalidation::Grants { account: sa, scope });
            }
        }
        refs
    }

    /// Whether the caches no longer hold this binding: its change is a deletion.
    fn binding_gone(&self, key: &BindingKey) -> bool {
        match &key.scope {
            BindingKind::RoleBinding(ns) => {
                self.stores
                    .role_bindings
                    .as_ref()
                    .is_some_and(|(store, _)| {
                        store.get(&ObjectRef::new(&key.name).within(ns)).is_none()
                    })
            }
            BindingKind::ClusterRoleBinding => self
                .stores
                .cluster_role_bindings
                .as_ref()
                .is_some_and(|store| store.get(&ObjectRef::new(&key.name)).is_none()),
        }
    }

    /// The audits a binding's change can alter.
    fn audits_for_binding(
        &self,
        scope: BindingKind,
        name: String,
        subjects: Option<&Vec<Subject>>,
    ) -> Vec<ObjectRef<KopfAudit>> {
        let key = BindingKey { scope, name };
        let deleted = self.binding_gone(&key);
        self.audits_for(RbacChange::Binding {
            key,
            subjects: subjects.map(Vec::as_slice).unwrap_or_default(),
            deleted,
        })
    }
}

/// Starts the RBAC watch caches (all four kinds cluster-wide; in a namespaced install
/// only Roles and RoleBindings of its namespace, cluster-scoped RBAC being listed per
/// audit) and adds them to the controller, with the re-runs the churn bound holds back.
pub(super) fn attach_rbac(
    controller: Controller<KopfAudit>,
    targets: &Arc<AuditMemory>,
    shared: &Arc<Shared>,
    stores: RbacStores,
    streams: RbacStreams,
) -> Controller<KopfAudit> {
    let (churn, held_back) = ChurnBound::new(super::churn::CHURN_PERIOD);
    let mapper = RbacMapper {
        targets: targets.clone(),
        stores,
        shared: shared.clone(),
        last_subjects: Arc::default(),
        churn,
    };
    let controller = controller
        .reconcile_on(held_back)
        .watches_stream(streams.role_bindings, {
            let m = mapper.clone();
            move |b: RoleBinding| {
                let scope = BindingKind::RoleBinding(b.namespace().unwrap_or_default());
                m.audits_for_binding(scope, b.name_any(), b.subjects.as_ref())
            }
        })
        .watches_stream(streams.roles, {
            let m = mapper.clone();
            move |r: Role| {
                let ns = r.namespace().unwrap_or_default();
                m.audits_for(RbacChange::Role {
                    namespace: &ns,
                    name: &r.name_any(),
                })
            }
        });
    let controller = match streams.cluster_role_bindings {
        Some(s) => controller.watches_stream(s, {
            let m = mapper.clone();
            move |b: ClusterRoleBinding| {
                m.audits_for_binding(
                    BindingKind::ClusterRoleBinding,
                    b.name_any(),
                    b.subjects.as_ref(),
                )
            }
        }),
        None => controller,
    };
    match streams.cluster_roles {
        Some(s) => controller.watches_stream(s, {
            let m = mapper;
            move |r: ClusterRole| {
                let labels = r.metadata.labels.clone().unwrap_or_default();
                m.audits_for(RbacChange::ClusterRole {
                    name: &r.name_any(),
                    labels: &labels,
                })
            }
        }),
        None => controller,
    }
}

/// A boxed watch stream of one kind.
type WatchStream<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// The RBAC watch streams, to be attached to the controller.
pub(super) struct RbacStreams {
    role_bindings: WatchStream<RoleBinding>,
    roles: WatchStream<Role>,
    cluster_role_bindings: Option<WatchStream<ClusterRoleBinding>>,
    cluster_roles: Option<WatchStream<ClusterRole>>,
}

/// Creates the RBAC watch caches and their streams.
pub(super) fn rbac_watches(client: &Client, namespace: Option<&str>) -> (RbacStores, RbacStreams) {
    let (rb_store, rb_writer) = reflector::store();
    let (role_store, role_writer) = reflector::store();
    let rb_api: Api<RoleBinding> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let role_api: Api<Role> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut stores = RbacStores {
        role_bindings: Some((rb_store, namespace.map(str::to_string))),
        roles: Some((role_store, namespace.map(str::to_string))),
        ..Default::default()
    };
    let mut streams = RbacStreams {
        role_bindings: Box::pin(reflected(
            "rolebindings",
            rb_api,
            rb_writer,
            KeptMeta::Identity,
            role_binding_content,
        )),
        roles: Box::pin(reflected(
            "roles",
            role_api,
            role_writer,
            KeptMeta::Identity,
            role_content,
        )),
        cluster_role_bindings: None,
        cluster_roles: None,
    };
    if namespace.is_none() {
        let (crb_store, crb_writer) = reflector::store();
        let (cr_store, cr_writer) = reflector::store();
        stores.cluster_role_bindings = Some(crb_store);
        stores.cluster_roles = Some(cr_store);
        streams.cluster_role_bindings = Some(Box::pin(reflected(
            "clusterrolebindings",
            Api::<ClusterRoleBinding>::all(client.clone()),
            crb_writer,
            KeptMeta::Identity,
            cluster_role_binding_content,
        )));
        streams.cluster_roles = Some(Box::pin(reflected(
            "clusterroles",
            Api::<ClusterRole>::all(client.clone()),
            cr_writer,
            KeptMeta::IdentityAndLabels,
            cluster_role_content,
        )));
    }
    (stores, streams)
}

/// Adds the target watches (Deployments, pods) that map to KopfAudits; the Deployment
/// watch also tells `changes` (the ClusterKopfAudit controller's), and both tell the
/// shared [`WatchedChanges`] what changed where, so that an audit can reuse its last
/// read of an unchanged target. They cache nothing: only objects in a namespace some
/// KopfAudit may target pass, and only when what the checks read of them changed. A
/// KopfAudit whose target is refused (another namespace without `cross_namespace`) is
/// never re-run by that namespace's changes: its audit count and timestamps would tell
/// a tenant when a guessed Deployment there changes.
pub(super) fn attach_targets(
    controller: Controller<KopfAudit>,
    ctx: &Arc<Context>,
    namespace: Option<&str>,
    audits: &Store<KopfAudit>,
    changes: Option<Arc<DeploymentChanges>>,
) -> Controller<KopfAudit> {
    let client = &ctx.client;
    let targets = &ctx.memory;
    let cross_namespace = ctx.settings.allow_cross_namespace;
    let shared = &ctx.shared;
    let config = watcher::Config::default();
    let deployments = warn_on_error(
        "deployments",
        watcher(
            api_for::<PartialObjectMeta<Deployment>>(client, namespace),
            config.clone(),
        )
        .default_backoff(),
    )
    .inspect({
        let shared = shared.clone();
        move |event| {
            tell(&shared.changes, Watched::Deployments, event, true);
            if let (Some(changes), Ok(event)) = (&changes, event) {
                changes.observe(event);
            }
        }
    })
    .touched_objects();
    // Full pods (their statuses decide a re-audit), so small pages: a tenant's pods can
    // carry a Deployment's fat environment, and a page is held whole while it is read.
    let pods = warn_on_error(
        "pods",
        watcher(
            api_for::<Pod>(client, namespace),
            config.page_size(POD_PAGE_SIZE),
        )
        .default_backoff(),
    )
    .inspect({
        let shared = shared.clone();
        move |event| tell(&shared.changes, Watched::Pods, event, false)
    })
    .touched_objects();
    let pods_changed = shared.clone();
    controller
        .watches_stream(
            in_audited_namespaces(audits, deployments, cross_namespace)
                .predicate_filter(deployment_predicate, Default::default()),
            {
                let audits = audits.clone();
                move |d: PartialObjectMeta<Deployment>| {
                    audits_for_deployment(&audits, &d, cross_namespace)
                }
            },
        )
        .watches_stream(
            in_audited_namespaces(audits, pods, cross_namespace)
                .predicate_filter(pod_predicate, Default::default())
                .inspect(move |pod| {
                    if let Ok(pod) = pod {
                        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
                        pods_changed.changes.changed(Watched::Pods, namespace);
                    }
                }),
            {
                let targets = targets.clone();
                move |p: Pod| targets.audits_for_pod(&p)
            },
        )
}

/// Tells `changes` what one event of a target watch says: a re-list starts or ends, the
/// watch failed, or (with `objects`; the pods' changes are told after their predicate,
/// deletions here) an object changed.
fn tell<K: Resource>(
    changes: &WatchedChanges,
    which: Watched,
    event: &Result<watcher::Event<K>, watcher::Error>,
    objects: bool,
) {
    let namespace = |o: &K| o.meta().namespace.clone().unwrap_or_default();
    match event {
        Err(_) => changes.failed(),
        Ok(watcher::Event::Init) => changes.restarted(which),
        Ok(watcher::Event::InitDone) => changes.listed(which),
        Ok(watcher::Event::Delete(o)) => changes.changed(which, &namespace(o)),
        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) if objects => {
            changes.changed(which, &namespace(o));
        }
        Ok(_) => {}
    }
}

/// Pods per page of the pod watch's lists: 50 pods of the API server's largest (1.5 MiB)
/// are 75 MiB at worst; 500, as for the other watches, would be ten times that.
const POD_PAGE_SIZE: u32 = 50;

/// An API for one namespace, or for all.
pub(super) fn api_for<K>(client: &Client, namespace: Option<&str>) -> Api<K>
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

/// Keeps the objects of the namespaces some KopfAudit targets (and every error): the
/// others are dropped as they arrive, never hashed nor kept.
fn in_audited_namespaces<K, S>(
    audits: &Store<KopfAudit>,
    stream: S,
    cross_namespace: bool,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Send + 'static,
    S: Stream<Item = Result<K, watcher::Error>> + Send + 'static,
{
    let audits = audits.clone();
    stream.filter(move |event| {
        let keep = match event {
            Ok(object) => {
                let namespace = object.meta().namespace.as_deref().unwrap_or_default();
                audits
                    .find(|a| targets_namespace(a, namespace, cross_namespace))
                    .is_some()
            }
            Err(_) => true,
        };
        std::future::ready(keep)
    })
}

/// Whether a KopfAudit's target lives in `namespace` and the audit may read it: its
/// own namespace, or any with `cross_namespace` (without allocating: called for every
/// pod the watch sees).
fn targets_namespace(audit: &KopfAudit, namespace: &str, cross_namespace: bool) -> bool {
    let own = audit.metadata.namespace.as_deref();
    let target = audit.spec.target.namespace.as_deref().or(own);
    target == Some(namespace) && (cross_namespace || own == Some(namespace))
}

/// Whether a KopfAudit targets this Deployment (by name or selector, same namespace)
/// and may read it.
fn targets<D: Resource>(audit: &KopfAudit, deployment: &D, cross_namespace: bool) -> bool {
    let deployment = deployment.meta();
    if !deployment
        .namespace
        .as_deref()
        .is_some_and(|ns| targets_namespace(audit, ns, cross_namespace))
    {
        return false;
    }
    if let Some(name) = &audit.spec.target.deployment {
        return deployment.name.as_ref() == Some(name);
    }
    audit
        .spec
        .target
        .selector
        .clone()
        .and_then(|s| Selector::try_from(s).ok())
        .is_some_and(|s| s.matches(deployment.labels.as_ref().unwrap_or(&Default::default())))
}

fn audits_for_deployment(
    audits: &Store<KopfAudit>,
    deployment: &PartialObjectMeta<Deployment>,
    cross_namespace: bool,
) -> Vec<ObjectRef<KopfAudit>> {
    audits
        .state()
        .iter()
        .filter(|a| targets(a.as_ref(), deployment, cross_namespace))
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests;

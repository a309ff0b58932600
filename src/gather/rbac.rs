//! Gathers what the operator's ServiceAccount may do (API I/O only): the permissions the
//! pure needs (`model/needs.rs`) derive are asked with SubjectAccessReviews as the
//! ServiceAccount with its groups (so aggregated ClusterRoles, group bindings and any
//! authorizer count), a few at a time, deduplicated, and remembered across audits per
//! ServiceAccount until an RBAC change could alter them (or a TTL passes); the Roles,
//! ClusterRoles and bindings that reach it are read from the operator's watch caches
//! (lists in the CLI) to explain the answers and to find over-privilege.
//!
//! The auditor needs `create` on `subjectaccessreviews` and `get`/`list`/`watch` on the
//! four RBAC kinds; without them the RBAC area is `Unknown`, reason `Forbidden`, naming
//! what it lacks.

use super::{Reach, obstacle};
use crate::model::conflict::{ResourceKey, grants_patch};
use crate::model::evidence::{
    Gathered, HandledResource, Obstacle, RbacEvidence, TargetEvidence, Unavailable,
};
use crate::model::kopf_run::{KopfRun, Peering};
use crate::model::names::path_segment;
use crate::model::needs;
use crate::model::rbac::{
    Binding, BindingKind, BoundRole, PeeringCrds, Permission, Reached, RoleKind, Rule,
    ServiceAccountRef, bound_role, reached, rules_of, service_accounts,
};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, RoleRef};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrBool,
};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many SubjectAccessReviews one audit has in flight at once: its share of the
/// auditor's request budget.
pub(crate) const CONCURRENT_REVIEWS: usize = 4;

/// How long a SubjectAccessReview answer is reused when no RBAC change was seen (other
/// authorizers, webhooks, can change their minds without an RBAC object changing): on
/// average; each ServiceAccount's answers expire at their own point between 3/4 and 5/4
/// of it ([`answer_ttl`]), so that answers asked in one wave are not asked again in one.
/// An RBAC change that reaches a ServiceAccount forgets its answers at once (the watches).
pub(crate) const ANSWER_TTL: Duration = Duration::from_secs(3600);

/// The TTL of one ServiceAccount's answers: [`ANSWER_TTL`] spread by a hash of its name.
fn answer_ttl(sa: &ServiceAccountRef) -> Duration {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    sa.hash(&mut hasher);
    let spread = (hasher.finish() % 1000) as u32;
    ANSWER_TTL * 3 / 4 + ANSWER_TTL / 2 * spread / 1000
}

/// How long a CRD read is reused (CRDs are not watched).
const CRD_TTL: Duration = Duration::from_secs(300);

/// The RBAC objects the operator keeps in watch caches; `None` where it does not (a
/// namespaced install cannot watch cluster-scoped RBAC) and lists instead.
#[derive(Clone, Default)]
pub(crate) struct RbacStores {
    /// ClusterRoleBindings.
    pub(crate) cluster_role_bindings: Option<Store<ClusterRoleBinding>>,
    /// ClusterRoles.
    pub(crate) cluster_roles: Option<Store<ClusterRole>>,
    /// RoleBindings, and the namespace they are watched in (`None`: all).
    pub(crate) role_bindings: Option<(Store<RoleBinding>, Option<String>)>,
    /// Roles, and the namespace they are watched in (`None`: all).
    pub(crate) roles: Option<(Store<Role>, Option<String>)>,
}

/// Whether a store holds its first complete list.
pub(crate) fn is_synced<K>(store: &Store<K>) -> bool
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    sync_state(store) == Some(true)
}

/// `Some(true)` once a store holds its first list, `Some(false)` when its writer is
/// gone without one, `None` while it waits.
fn sync_state<K>(store: &Store<K>) -> Option<bool>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    use futures::FutureExt;
    store.wait_until_ready().now_or_never().map(|r| r.is_ok())
}

/// How often [`until_synced`] looks.
const SYNC_POLL: Duration = Duration::from_millis(100);

/// Resolves once a store holds its first list (`true`), or its writer is gone without
/// one (`false`). It looks every 100 ms rather than awaiting `Store::wait_until_ready`:
/// in kube-runtime 5.0 that future sits on one futures oneshot, which keeps the waker
/// of its last poller only, so a second waiter, or any [`is_synced`] (polled with a
/// no-op waker) from an audit running meanwhile, takes the wake-up away. With 1,003
/// KopfAudits on the scale bench that left `/readyz` false until something else woke
/// the task, 30 s after the caches had synced.
pub(crate) async fn until_synced<K>(store: &Store<K>) -> bool
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    loop {
        if let Some(synced) = sync_state(store) {
            return synced;
        }
        tokio::time::sleep(SYNC_POLL).await;
    }
}

/// A store's objects when it has synced.
fn synced<K>(store: Option<&Store<K>>) -> Option<Vec<std::sync::Arc<K>>>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    let store = store?;
    is_synced(store).then(|| store.state())
}

/// Whether a namespaced store covers `namespace`.
fn covers<'a, K: kube::Resource<DynamicType = ()> + Clone + 'static>(
    store: &'a Option<(Store<K>, Option<String>)>,
    namespace: &str,
) -> Option<&'a Store<K>> {
    match store {
        Some((s, None)) => Some(s),
        Some((s, Some(ns))) if ns == namespace => Some(s),
        _ => None,
    }
}

/// Answers of one ServiceAccount, and when they were asked.
#[derive(Debug)]
struct Answers {
    asked: Instant,
    allowed: BTreeMap<Permission, bool>,
}

/// What a CRD says, reduced to what the checks read (CRDs carry large schemas).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CrdDigest {
    /// `plural.group`.
    pub(crate) name: String,
    /// API group.
    pub(crate) group: String,
    /// Plural.
    pub(crate) plural: String,
    /// Kind.
    pub(crate) kind: String,
    /// `Namespaced` scope.
    pub(crate) namespaced: bool,
    /// Per version: name, served, storage, status subresource, status preserves unknown
    /// fields.
    pub(crate) versions: Vec<CrdVersion>,
}

/// One served version of a CRD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CrdVersion {
    /// Version name.
    pub(crate) name: String,
    /// Served.
    pub(crate) served: bool,
    /// The storage version.
    pub(crate) storage: bool,
    /// Has a status subresource.
    pub(crate) status_subresource: bool,
    /// Its schema keeps what kopf writes into status (`keeps_kopf_status`).
    pub(crate) status_preserves_unknown_fields: bool,
}

impl CrdDigest {
    /// The digest of a CRD.
    pub(crate) fn of(crd: &CustomResourceDefinition) -> CrdDigest {
        CrdDigest {
            name: crd.metadata.name.clone().unwrap_or_default(),
            group: crd.spec.group.clone(),
            plural: crd.spec.names.plural.clone(),
            kind: crd.spec.names.kind.clone(),
            namespaced: crd.spec.scope == "Namespaced",
            versions: crd
                .spec
                .versions
                .iter()
                .map(|v| {
                    let schema = v
                        .schema
                        .as_ref()
                        .and_then(|s| s.open_api_v3_schema.as_ref());
                    CrdVersion {
                        name: v.name.clone(),
                        served: v.served,
                        storage: v.storage,
                        status_subresource: v
                            .subresources
                            .as_ref()
                            .is_some_and(|s| s.status.is_some()),
                        status_preserves_unknown_fields: schema.is_some_and(keeps_kopf_status),
                    }
                })
                .collect(),
        }
    }
}

/// Whether a schema keeps a field's unknown keys: it preserves unknown fields, or takes
/// any key (`additionalProperties` true, or a schema that preserves them).
fn keeps_unknown(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_preserve_unknown_fields == Some(true)
        || match &schema.additional_properties {
            Some(JSONSchemaPropsOrBool::Bool(any)) => *any,
            Some(JSONSchemaPropsOrBool::Schema(values)) => {
                values.x_kubernetes_preserve_unknown_fields == Some(true)
            }
            None => false,
        }
}

/// Whether a CRD version's schema keeps what kopf writes into status: the whole object
/// or `status` keeps unknown keys, or `status` declares kopf's own `status.kopf` (its
/// progress and diff-base storage) keeping them. Handler results (`status.<handler
/// id>`) are the author's fields: declared or not, a pruned one shows in kopf's
/// `Merge-patching finished with inconsistencies` line. Without a status subresource
/// kopf patches status with the object itself (kopf 1.45 `_cogs/clients/patching.py`),
/// so only the schema decides what is kept.
fn keeps_kopf_status(root: &JSONSchemaProps) -> bool {
    fn field<'a>(schema: &'a JSONSchemaProps, name: &str) -> Option<&'a JSONSchemaProps> {
        schema.properties.as_ref().and_then(|p| p.get(name))
    }
    if keeps_unknown(root) {
        return true;
    }
    let Some(status) = field(root, "status") else {
        return false;
    };
    keeps_unknown(status) || field(status, "kopf").is_some_and(keeps_unknown)
}

/// What the audits share of RBAC and CRDs: the watch caches (or lists), the
/// SubjectAccessReview answers per ServiceAccount, the CRDs read. One per operator; the
/// CLI makes one per run.
#[derive(Default)]
pub(crate) struct RbacReader {
    stores: RbacStores,
    answers: Mutex<HashMap<ServiceAccountRef, Answers>>,
    crds: Mutex<HashMap<String, (Instant, Option<CrdDigest>)>>,
}

/// Locks a cache map; a panic elsewhere cannot leave it half-written, so poison is ignored.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A failed read of the auditor's own: 403 names the permission to grant.
fn unavailable(e: &kube::Error, what: &str, grant: &str) -> Unavailable {
    obstacle(e, what, grant)
}

const RBAC_GRANT: &str = "get, list and watch on roles, clusterroles, rolebindings and clusterrolebindings (apiGroups: [rbac.authorization.k8s.io])";
const CRD_GRANT: &str = "get on customresourcedefinitions (apiGroups: [apiextensions.k8s.io])";
const SAR_GRANT: &str = "create on subjectaccessreviews (apiGroups: [authorization.k8s.io])";

impl RbacReader {
    /// A reader over the operator's watch caches.
    pub(crate) fn new(stores: RbacStores) -> RbacReader {
        RbacReader {
            stores,
            ..Default::default()
        }
    }

    /// Forgets the answers of a ServiceAccount that a change of a binding scoped
    /// `scope` may alter: all of them for a ClusterRoleBinding, only those about its
    /// namespace for a RoleBinding (which grants nothing elsewhere, nor at cluster scope).
    pub(super) fn forget(&self, sa: &ServiceAccountRef, scope: &BindingKind) {
        let mut answers = lock(&self.answers);
        match scope {
            BindingKind::ClusterRoleBinding => {
                answers.remove(sa);
            }
            BindingKind::RoleBinding(ns) => {
                if let Some(known) = answers.get_mut(sa) {
                    known
                        .allowed
                        .retain(|p, _| p.namespace.as_deref() != Some(ns.as_str()));
                }
            }
        }
    }

    /// Drops the CRD digests read longer than their reuse time ago.
    pub(super) fn forget_stale_crds(&self) {
        lock(&self.crds).retain(|_, (read, _)| read.elapsed() < CRD_TTL);
    }

    /// A CRD by name (`plural.group`), `None` when it does not exist; reused for a while.
    pub(crate) async fn crd(
        &self,
        client: &Client,
        name: &str,
    ) -> Result<Option<CrdDigest>, Unavailable> {
        if let Some((read, found)) = lock(&self.crds).get(name)
            && read.elapsed() < CRD_TTL
        {
            return Ok(found.clone());
        }
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let found = api.get_opt(&path_segment(name)).await.map_err(|e| {
            unavailable(
                &e,
                &format!("get customresourcedefinitions.apiextensions.k8s.io {name}"),
                CRD_GRANT,
            )
        })?;
        let digest = found.as_ref().map(CrdDigest::of);
        lock(&self.crds).insert(name.to_string(), (Instant::now(), digest.clone()));
        Ok(digest)
    }

    /// The bindings that reach the ServiceAccount: every ClusterRoleBinding, and the
    /// RoleBindings of `namespaces`, with their roles' rules.
    pub(crate) async fn bindings(
        &self,
        client: &Client,
        sa: &ServiceAccountRef,
        namespaces: &BTreeSet<String>,
    ) -> Result<Vec<Binding>, Unavailable> {
        let crb_reaching = |b: &ClusterRoleBinding| {
            reached(
                &BindingKind::ClusterRoleBinding,
                &b.metadata,
                &b.role_ref,
                b.subjects.as_ref(),
                sa,
            )
        };
        let mut found: Vec<Reached> = match synced(self.stores.cluster_role_bindings.as_ref()) {
            Some(cached) => cached.iter().filter_map(|b| crb_reaching(b)).collect(),
            None => list_pages(Api::<ClusterRoleBinding>::all(client.clone()))
                .await
                .map_err(|e| {
                    unavailable(
                        &e,
                        "list clusterrolebindings.rbac.authorization.k8s.io",
                        RBAC_GRANT,
                    )
                })?
                .iter()
                .filter_map(crb_reaching)
                .collect(),
        };
        for ns in namespaces {
            let scope = BindingKind::RoleBinding(ns.clone());
            let rb_reaching = |b: &RoleBinding| {
                reached(&scope, &b.metadata, &b.role_ref, b.subjects.as_ref(), sa)
            };
            match synced(covers(&self.stores.role_bindings, ns)) {
                Some(cached) => found.extend(
                    cached
                        .iter()
                        .filter(|b| b.metadata.namespace.as_deref() == Some(ns.as_str()))
                        .filter_map(|b| rb_reaching(b)),
                ),
                None => found.extend(
                    list_pages(Api::<RoleBinding>::namespaced(client.clone(), ns))
                        .await
                        .map_err(|e| {
                            unavailable(
                                &e,
                                &format!("list rolebindings.rbac.authorization.k8s.io in {ns}"),
                                RBAC_GRANT,
                            )
                        })?
                        .iter()
                        .filter_map(rb_reaching),
                ),
            }
        }
        let mut out = Vec::with_capacity(found.len());
        for (kind, name, role_ref, via) in found {
            let role_kind = RoleKind::parse(&role_ref.kind);
            let role = self.role_of(client, bound_role(&kind, &role_ref)).await?;
            let (rules, missing, aggregated) = match role {
                Some((rules, aggregated)) => (rules, false, aggregated),
                None => (Vec::new(), true, false),
            };
            out.push(Binding {
                kind,
                name,
                role_kind,
                role_name: role_ref.name,
                via,
                rules,
                role_missing: missing,
                aggregated,
            });
        }
        out.sort_by(|a, b| a.kind.cmp(&b.kind).then(a.name.cmp(&b.name)));
        Ok(out)
    }

    /// The ServiceAccounts bound to a role that grants `patch` on `resource` by name
    /// ([`grants_patch`]) in `namespace`: the subjects of the namespace's RoleBindings
    /// (none for `""`, a cluster-scoped resource) and, when `cluster_bindings`, of every
    /// ClusterRoleBinding. A `User` subject counts when it is a ServiceAccount's user
    /// name; groups do not (they name no one operator). For
    /// `runtime.operator-conflict`, to name a rival whose Deployment is out of reach.
    pub(crate) async fn patchers(
        &self,
        client: &Client,
        resource: &ResourceKey,
        namespace: &str,
        cluster_bindings: bool,
    ) -> Result<BTreeSet<ServiceAccountRef>, Unavailable> {
        let mut bound: Vec<(BindingKind, RoleRef, Vec<ServiceAccountRef>)> = Vec::new();
        if !namespace.is_empty() {
            let role_bindings: Vec<Arc<RoleBinding>> =
                match synced(covers(&self.stores.role_bindings, namespace)) {
                    Some(cached) => cached
                        .into_iter()
                        .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
                        .collect(),
                    None => list_pages(Api::<RoleBinding>::namespaced(
                        client.clone(),
                        &path_segment(namespace),
                    ))
                    .await
                    .map_err(|e| {
                        unavailable(
                            &e,
                            &format!("list rolebindings.rbac.authorization.k8s.io in {namespace}"),
                            RBAC_GRANT,
                        )
                    })?
                    .into_iter()
                    .map(Arc::new)
                    .collect(),
                };
            bound.extend(role_bindings.iter().map(|b| {
                (
                    BindingKind::RoleBinding(namespace.to_string()),
                    b.role_ref.clone(),
                    service_accounts(b.subjects.as_ref(), Some(namespace)),
                )
            }));
        }
        if cluster_bindings {
            let cluster: Vec<Arc<ClusterRoleBinding>> =
                match synced(self.stores.cluster_role_bindings.as_ref()) {
                    Some(cached) => cached,
                    None => list_pages(Api::<ClusterRoleBinding>::all(client.clone()))
                        .await
                        .map_err(|e| {
                            unavailable(
                                &e,
                                "list clusterrolebindings.rbac.authorization.k8s.io",
                                RBAC_GRANT,
                            )
                        })?
                        .into_iter()
                        .map(Arc::new)
                        .collect(),
                };
            bound.extend(cluster.iter().map(|b| {
                (
                    BindingKind::ClusterRoleBinding,
                    b.role_ref.clone(),
                    service_accounts(b.subjects.as_ref(), None),
                )
            }));
        }
        let mut grants: HashMap<(BindingKind, String, String), bool> = HashMap::new();
        let mut out = BTreeSet::new();
        for (kind, role_ref, accounts) in bound {
            if accounts.is_empty() {
                continue;
            }
            let key = (kind.clone(), role_ref.kind.clone(), role_ref.name.clone());
            let granted = match grants.get(&key) {
                Some(granted) => *granted,
                None => {
                    let rules = self
                        .role_of(client, bound_role(&kind, &role_ref))
                        .await?
                        .map(|(rules, _)| rules)
                        .unwrap_or_default();
                    let granted = rules.iter().any(|r| grants_patch(r, resource));
                    grants.insert(key, granted);
                    granted
                }
            };
            if granted {
                out.extend(accounts);
            }
        }
        Ok(out)
    }

    /// The rules of a bound role and whether it is aggregated; `None` when it is missing
    /// (or the roleRef resolves to no role, which the API server refuses to store).
    async fn role_of(
        &self,
        client: &Client,
        role: Option<BoundRole<'_>>,
    ) -> Result<Option<(Vec<Rule>, bool)>, Unavailable> {
        match role {
            Some(BoundRole::Role {
                namespace: ns,
                name,
            }) => {
                let role = match covers(&self.stores.roles, ns).filter(|s| is_synced(s)) {
                    Some(store) => store.get(&ObjectRef::new(name).within(ns)),
                    None => Api::<Role>::namespaced(client.clone(), &path_segment(ns))
                        .get_opt(&path_segment(name))
                        .await
                        .map_err(|e| {
                            unavailable(
                                &e,
                                &format!("get roles.rbac.authorization.k8s.io in {ns}"),
                                RBAC_GRANT,
                            )
                        })?
                        .map(Arc::new),
                };
                Ok(role.map(|r| (rules_of(r.rules.as_ref()), false)))
            }
            Some(BoundRole::ClusterRole(name)) => {
                let role = match self.stores.cluster_roles.as_ref().filter(|s| is_synced(s)) {
                    Some(store) => store.get(&ObjectRef::new(name)),
                    None => Api::<ClusterRole>::all(client.clone())
                        .get_opt(&path_segment(name))
                        .await
                        .map_err(|e| {
                            unavailable(
                                &e,
                                "get clusterroles.rbac.authorization.k8s.io",
                                RBAC_GRANT,
                            )
                        })?
                        .map(Arc::new),
                };
                Ok(role.map(|r| (rules_of(r.rules.as_ref()), r.aggregation_rule.is_some())))
            }
            None => Ok(None),
        }
    }

    /// The answers for `wanted`: remembered ones reused, the others asked with
    /// SubjectAccessReviews, a few at a time.
    pub(crate) async fn review(
        &self,
        client: &Client,
        sa: &ServiceAccountRef,
        wanted: &BTreeSet<Permission>,
    ) -> Result<BTreeMap<Permission, bool>, Unavailable> {
        let todo: Vec<Permission> = {
            let answers = lock(&self.answers);
            let known = answers
                .get(sa)
                .filter(|a| a.asked.elapsed() < answer_ttl(sa));
            wanted
                .iter()
                .filter(|p| known.is_none_or(|k| !k.allowed.contains_key(*p)))
                .cloned()
                .collect()
        };
        let asked = todo.len();
        let api: Api<SubjectAccessReview> = Api::all(client.clone());
        let results: Vec<(Permission, Decision)> = futures::stream::iter(todo)
            .map(|p| {
                let api = api.clone();
                async move {
                    let review = review_for(sa, &p);
                    let answer = api.create(&PostParams::default(), &review).await?;
                    Ok::<_, kube::Error>((p, Decision::of(answer.status)))
                }
            })
            .buffer_unordered(CONCURRENT_REVIEWS)
            .try_collect()
            .await
            .map_err(|e| {
                unavailable(
                    &e,
                    "create subjectaccessreviews.authorization.k8s.io (to ask what the operator's ServiceAccount may do)",
                    SAR_GRANT,
                )
            })?;
        if let Some((permission, error)) = results.iter().find_map(|(p, d)| match d {
            Decision::Undecided(error) => Some((p, error)),
            Decision::Allowed(_) => None,
        }) {
            return Err(undecided(sa, permission, error));
        }
        let results = results.into_iter().filter_map(|(p, d)| match d {
            Decision::Allowed(allowed) => Some((p, allowed)),
            Decision::Undecided(_) => None,
        });
        let mut answers = lock(&self.answers);
        let entry = answers.entry(sa.clone()).or_insert_with(|| Answers {
            asked: Instant::now(),
            allowed: BTreeMap::new(),
        });
        if entry.asked.elapsed() >= answer_ttl(sa) {
            *entry = Answers {
                asked: Instant::now(),
                allowed: BTreeMap::new(),
            };
        }
        entry.allowed.extend(results);
        tracing::debug!(
            service_account = %sa,
            needed = wanted.len(),
            asked,
            cached = wanted.len() - asked,
            "subject access reviews"
        );
        Ok(wanted
            .iter()
            .filter_map(|p| entry.allowed.get(p).map(|a| (p.clone(), *a)))
            .collect())
    }
}

/// What a SubjectAccessReview decided.
enum Decision {
    /// Allowed (`true`) or denied (`false`).
    Allowed(bool),
    /// Not allowed, with an `evaluationError`: the authorizer could not decide (a
    /// webhook authorizer down, a binding to a role that does not exist). Neither a
    /// grant nor a denial, so it is not remembered either.
    Undecided(String),
}

impl Decision {
    fn of(
        status: Option<k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus>,
    ) -> Decision {
        match status {
            Some(s) if s.allowed => Decision::Allowed(true),
            Some(s) => match s.evaluation_error.filter(|e| !e.trim().is_empty()) {
                Some(error) if !only_missing_roles(&error) => Decision::Undecided(error),
                _ => Decision::Allowed(false),
            },
            None => Decision::Allowed(false),
        }
    }
}

/// Whether an `evaluationError` only says that bound roles do not exist (the RBAC
/// authorizer's `[clusterrole.rbac.authorization.k8s.io "x" not found, ...]`): a
/// missing role grants nothing, so the denial stands (and the bindings explain it).
fn only_missing_roles(error: &str) -> bool {
    let list = error.trim().trim_start_matches('[').trim_end_matches(']');
    list.split(", ").all(|part| {
        let part = part.trim();
        (part.starts_with("clusterrole.rbac.authorization.k8s.io \"")
            || part.starts_with("role.rbac.authorization.k8s.io \""))
            && part.ends_with("\" not found")
    })
}

/// The most of an `evaluationError` a condition quotes.
const EVALUATION_ERROR_MAX: usize = 300;

/// The obstacle of a permission the API server could not decide.
fn undecided(sa: &ServiceAccountRef, permission: &Permission, error: &str) -> Unavailable {
    let quoted: String = kopf_log::redact(error)
        .chars()
        .filter(|c| !c.is_control())
        .take(EVALUATION_ERROR_MAX)
        .collect();
    Unavailable::new(
        Obstacle::Undecided,
        format!(
            "The API server could not decide whether ServiceAccount {sa} may {verb} {what} (its SubjectAccessReview answered: {quoted}); the RBAC area is decided again at the next audit. A binding to a role that does not exist is the usual cause.",
            verb = permission.verb.as_str(),
            what = permission.resource_name(),
        ),
    )
}

/// Lists every object of an API, page by page.
async fn list_pages<K>(api: Api<K>) -> Result<Vec<K>, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    super::paged::each_page(&api, ListParams::default().limit(500), |page| {
        out.extend(page);
        std::ops::ControlFlow::Continue(())
    })
    .await?;
    Ok(out)
}

/// The SubjectAccessReview asking one permission as the ServiceAccount with its groups.
fn review_for(sa: &ServiceAccountRef, p: &Permission) -> SubjectAccessReview {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    SubjectAccessReview {
        metadata: Default::default(),
        spec: SubjectAccessReviewSpec {
            user: Some(sa.username()),
            groups: Some(sa.groups()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(p.verb.as_str().to_string()),
                group: Some(p.group.clone()),
                resource: Some(p.resource.clone()),
                subresource: some(&p.subresource),
                namespace: p.namespace.clone(),
                ..Default::default()
            }),
            ..Default::default()
        },
        status: None,
    }
}

/// The namespaces whose RoleBindings can matter (the operator's own and the exact
/// names it serves) split into those within reach and those left unread.
pub(crate) fn binding_namespaces(
    run: &KopfRun,
    own: &str,
    reach: &Reach,
) -> (BTreeSet<String>, BTreeSet<String>) {
    needs::binding_namespaces(run, own)
        .into_iter()
        .partition(|ns| reach.may_read(Some(ns.as_str())))
}

/// Which of kopf's peering CRDs exist.
async fn peering_crds(client: &Client, cache: &RbacReader) -> Result<PeeringCrds, Unavailable> {
    let mut present = BTreeSet::new();
    for name in PeeringCrds::candidates() {
        if cache.crd(client, &name).await?.is_some() {
            present.insert(name);
        }
    }
    Ok(PeeringCrds { present })
}

/// Gathers the RBAC evidence of one target: the bindings that reach its ServiceAccount,
/// the peering CRDs (unless `--standalone`), the needs of its run mode and handled
/// resources, and the API server's answer to every needed permission.
pub(crate) async fn gather(
    client: &Client,
    target: &TargetEvidence,
    run: &KopfRun,
    handled: Option<&Vec<HandledResource>>,
    reach: &Reach,
    cache: &RbacReader,
) -> Gathered<RbacEvidence> {
    let sa = target.service_account();
    let (namespaces, unread_namespaces) = binding_namespaces(run, &sa.namespace, reach);
    let bindings = cache.bindings(client, &sa, &namespaces).await?;
    let peering_crds = if run.peering == Peering::Standalone {
        PeeringCrds::default()
    } else {
        peering_crds(client, cache).await?
    };
    let needs = needs::needs(
        run,
        handled.map(Vec::as_slice),
        &sa.namespace,
        &peering_crds,
    );
    let wanted = needs::permissions(&needs);
    let answers = cache.review(client, &sa, &wanted).await?;
    Ok(RbacEvidence {
        service_account: sa,
        answers,
        bindings,
        peering_crds,
        needs,
        unread_namespaces,
    })
}

#[cfg(test)]
mod tests;

//! Gathers what the operator's ServiceAccount may do (API I/O only): the permissions the
//! pure needs (`model/needs.rs`) derive are asked with SubjectAccessReviews as the
//! ServiceAccount with its groups (so aggregated ClusterRoles, group bindings and any
//! authorizer count), concurrently, deduplicated and cached per ServiceAccount for one
//! audit cycle; the Roles, ClusterRoles and bindings that reach it are read to explain
//! the answers and to find over-privilege.
//!
//! The auditor needs `create` on `subjectaccessreviews` and `get`/`list` on the four RBAC
//! kinds; without them the RBAC area is `Unknown`, reason `Forbidden`, naming what it lacks.

use super::{Reach, obstacle};
use crate::model::evidence::{
    Gathered, HandledResource, RbacEvidence, TargetEvidence, Unavailable,
};
use crate::model::kopf_run::{KopfRun, Peering};
use crate::model::needs;
use crate::model::rbac::{
    Binding, BindingKind, PeeringCrds, Permission, RoleKind, Rule, ServiceAccountRef, Subject,
};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

/// How many SubjectAccessReviews are in flight at once.
const CONCURRENT_REVIEWS: usize = 8;

type BindingsKey = (ServiceAccountRef, BTreeSet<String>);

/// What one audit cycle has already read or asked, shared by its targets (a selector may
/// match several Deployments running as one ServiceAccount) and by the handled-resources
/// gatherer, so each SubjectAccessReview and read happens once per cycle.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    bindings: Mutex<HashMap<BindingsKey, Result<Vec<Binding>, Unavailable>>>,
    crds: Mutex<HashMap<String, Option<CustomResourceDefinition>>>,
    answers: Mutex<HashMap<ServiceAccountRef, BTreeMap<Permission, bool>>>,
}

/// Locks a cache map; a panic elsewhere cannot leave it half-written, so poison is ignored.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A failed read of the auditor's own: 403 names the permission to grant.
fn unavailable(e: &kube::Error, what: &str, grant: &str) -> Unavailable {
    obstacle(e, what, grant)
}

const RBAC_GRANT: &str = "get and list on roles, clusterroles, rolebindings and clusterrolebindings (apiGroups: [rbac.authorization.k8s.io])";
const CRD_GRANT: &str = "get on customresourcedefinitions (apiGroups: [apiextensions.k8s.io])";
const SAR_GRANT: &str = "create on subjectaccessreviews (apiGroups: [authorization.k8s.io])";

impl Cache {
    /// A CRD by name (`plural.group`), `None` when it does not exist; read once per cycle.
    pub(crate) async fn crd(
        &self,
        client: &Client,
        name: &str,
    ) -> Result<Option<CustomResourceDefinition>, Unavailable> {
        if let Some(found) = lock(&self.crds).get(name) {
            return Ok(found.clone());
        }
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let found = api.get_opt(name).await.map_err(|e| {
            unavailable(
                &e,
                &format!("get customresourcedefinitions.apiextensions.k8s.io {name}"),
                CRD_GRANT,
            )
        })?;
        lock(&self.crds).insert(name.to_string(), found.clone());
        Ok(found)
    }

    /// The bindings that reach the ServiceAccount: every ClusterRoleBinding, and the
    /// RoleBindings of `namespaces`, with their roles' rules; read once per cycle.
    pub(crate) async fn bindings(
        &self,
        client: &Client,
        sa: &ServiceAccountRef,
        namespaces: &BTreeSet<String>,
    ) -> Result<Vec<Binding>, Unavailable> {
        let key = (sa.clone(), namespaces.clone());
        if let Some(found) = lock(&self.bindings).get(&key) {
            return found.clone();
        }
        let read = read_bindings(client, sa, namespaces).await;
        lock(&self.bindings).insert(key, read.clone());
        read
    }

    /// Asks every permission not yet answered for this ServiceAccount in this cycle, with
    /// SubjectAccessReviews in parallel; returns the answers for `wanted`.
    pub(crate) async fn review(
        &self,
        client: &Client,
        sa: &ServiceAccountRef,
        wanted: &BTreeSet<Permission>,
    ) -> Result<BTreeMap<Permission, bool>, Unavailable> {
        let todo: Vec<Permission> = {
            let known = lock(&self.answers);
            let known = known.get(sa);
            wanted
                .iter()
                .filter(|p| known.is_none_or(|k| !k.contains_key(*p)))
                .cloned()
                .collect()
        };
        let asked = todo.len();
        let api: Api<SubjectAccessReview> = Api::all(client.clone());
        let results: Vec<(Permission, bool)> = futures::stream::iter(todo)
            .map(|p| {
                let api = api.clone();
                async move {
                    let review = review_for(sa, &p);
                    let answer = api.create(&PostParams::default(), &review).await?;
                    let allowed = answer.status.is_some_and(|s| s.allowed);
                    Ok::<_, kube::Error>((p, allowed))
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
        let mut all = lock(&self.answers);
        let known = all.entry(sa.clone()).or_default();
        known.extend(results);
        tracing::debug!(
            service_account = %sa,
            needed = wanted.len(),
            asked,
            cached = wanted.len() - asked,
            "subject access reviews"
        );
        Ok(wanted
            .iter()
            .filter_map(|p| known.get(p).map(|a| (p.clone(), *a)))
            .collect())
    }
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
    let mut wanted = BTreeSet::from([own.to_string()]);
    wanted.extend(run.scope.specific_names());
    wanted
        .into_iter()
        .partition(|ns| reach.may_read(Some(ns.as_str())))
}

/// How a binding subject reaches the ServiceAccount, if it does.
fn reaches(
    subject: &k8s_openapi::api::rbac::v1::Subject,
    sa: &ServiceAccountRef,
    binding_namespace: Option<&str>,
) -> Option<Subject> {
    match subject.kind.as_str() {
        "ServiceAccount" => {
            let ns = subject.namespace.as_deref().or(binding_namespace);
            (subject.name == sa.name && ns == Some(sa.namespace.as_str()))
                .then(|| Subject::ServiceAccount(sa.clone()))
        }
        "User" => (subject.name == sa.username()).then(|| Subject::User(subject.name.clone())),
        "Group" => sa
            .groups()
            .contains(&subject.name)
            .then(|| Subject::Group(subject.name.clone())),
        _ => None,
    }
}

/// The first subject of a binding that reaches the ServiceAccount.
fn reaching(
    subjects: Option<&Vec<k8s_openapi::api::rbac::v1::Subject>>,
    sa: &ServiceAccountRef,
    ns: Option<&str>,
) -> Option<Subject> {
    subjects
        .into_iter()
        .flatten()
        .filter_map(|s| reaches(s, sa, ns))
        .min()
}

/// The resource rules of a role (non-resource URL rules dropped).
fn rules_of(rules: Option<&Vec<PolicyRule>>) -> Vec<Rule> {
    rules
        .into_iter()
        .flatten()
        .filter(|r| r.resources.as_ref().is_some_and(|x| !x.is_empty()))
        .map(|r| Rule {
            api_groups: r.api_groups.clone().unwrap_or_default(),
            resources: r.resources.clone().unwrap_or_default(),
            verbs: r.verbs.clone(),
            resource_names: r.resource_names.clone().unwrap_or_default(),
        })
        .collect()
}

async fn read_bindings(
    client: &Client,
    sa: &ServiceAccountRef,
    namespaces: &BTreeSet<String>,
) -> Result<Vec<Binding>, Unavailable> {
    let lp = ListParams::default();
    let crbs = Api::<ClusterRoleBinding>::all(client.clone())
        .list(&lp)
        .await
        .map_err(|e| {
            unavailable(
                &e,
                "list clusterrolebindings.rbac.authorization.k8s.io",
                RBAC_GRANT,
            )
        })?;
    let mut found: Vec<(BindingKind, String, RoleRef, Subject)> = crbs
        .items
        .into_iter()
        .filter_map(|b| {
            let via = reaching(b.subjects.as_ref(), sa, None)?;
            Some((
                BindingKind::ClusterRoleBinding,
                b.metadata.name.unwrap_or_default(),
                b.role_ref,
                via,
            ))
        })
        .collect();
    for ns in namespaces {
        let rbs = Api::<RoleBinding>::namespaced(client.clone(), ns)
            .list(&lp)
            .await
            .map_err(|e| {
                unavailable(
                    &e,
                    &format!("list rolebindings.rbac.authorization.k8s.io in {ns}"),
                    RBAC_GRANT,
                )
            })?;
        found.extend(rbs.items.into_iter().filter_map(|b| {
            let via = reaching(b.subjects.as_ref(), sa, Some(ns))?;
            Some((
                BindingKind::RoleBinding(ns.clone()),
                b.metadata.name.unwrap_or_default(),
                b.role_ref,
                via,
            ))
        }));
    }
    let mut out = Vec::with_capacity(found.len());
    let mut cluster_roles: HashMap<String, Option<ClusterRole>> = HashMap::new();
    for (kind, name, role_ref, via) in found {
        let role_kind = RoleKind::parse(&role_ref.kind);
        let (rules, missing, aggregated) = match (role_kind, &kind) {
            (Some(RoleKind::Role), BindingKind::RoleBinding(ns)) => {
                let role = Api::<Role>::namespaced(client.clone(), ns)
                    .get_opt(&role_ref.name)
                    .await
                    .map_err(|e| {
                        unavailable(
                            &e,
                            &format!("get roles.rbac.authorization.k8s.io in {ns}"),
                            RBAC_GRANT,
                        )
                    })?;
                match role {
                    Some(r) => (rules_of(r.rules.as_ref()), false, false),
                    None => (Vec::new(), true, false),
                }
            }
            (Some(RoleKind::ClusterRole), _) => {
                let role = match cluster_roles.get(&role_ref.name) {
                    Some(r) => r.clone(),
                    None => {
                        let r = Api::<ClusterRole>::all(client.clone())
                            .get_opt(&role_ref.name)
                            .await
                            .map_err(|e| {
                                unavailable(
                                    &e,
                                    "get clusterroles.rbac.authorization.k8s.io",
                                    RBAC_GRANT,
                                )
                            })?;
                        cluster_roles.insert(role_ref.name.clone(), r.clone());
                        r
                    }
                };
                match role {
                    Some(r) => (
                        rules_of(r.rules.as_ref()),
                        false,
                        r.aggregation_rule.is_some(),
                    ),
                    None => (Vec::new(), true, false),
                }
            }
            _ => (Vec::new(), true, false),
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

/// Which of kopf's peering CRDs exist.
async fn peering_crds(client: &Client, cache: &Cache) -> Result<PeeringCrds, Unavailable> {
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
    cache: &Cache,
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

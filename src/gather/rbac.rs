//! Gathers what the operator's ServiceAccount may do (API I/O only): the permissions the
//! pure [`checks::rbac::needs`] derives are asked with SubjectAccessReviews as the
//! ServiceAccount with its groups (so aggregated ClusterRoles, group bindings and any
//! authorizer count), concurrently, deduplicated and cached per ServiceAccount for one
//! audit cycle; the Roles, ClusterRoles and bindings that reach it are read to explain
//! the answers and to find over-privilege.
//!
//! The auditor needs `create` on `subjectaccessreviews` and `get`/`list` on the four RBAC
//! kinds; without them the RBAC area is `Unknown`, reason `Forbidden`, naming what it lacks.

use crate::checks::rbac as checks;
use crate::conditions::Reason;
use crate::evidence::rbac::{Binding, BindingKind, PeeringCrds, Permission, RbacEvidence, Rule};
use crate::evidence::{Gathered, TargetEvidence, Unavailable};
use crate::kopf_mode::{KopfRun, Peering, Scope};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

/// How many SubjectAccessReviews are in flight at once.
const CONCURRENT_REVIEWS: usize = 8;

type BindingsKey = (crate::evidence::rbac::ServiceAccountRef, BTreeSet<String>);

/// What one audit cycle has already read or asked, shared by its targets (a selector may
/// match several Deployments running as one ServiceAccount) and by the handled-resources
/// gatherer, so each SubjectAccessReview and read happens once per cycle.
#[derive(Debug, Default)]
pub struct Cache {
    bindings: Mutex<HashMap<BindingsKey, Result<Vec<Binding>, Unavailable>>>,
    crds: Mutex<HashMap<String, Option<CustomResourceDefinition>>>,
    answers: Mutex<HashMap<crate::evidence::rbac::ServiceAccountRef, BTreeMap<Permission, bool>>>,
}

/// Locks a cache map; a panic elsewhere cannot leave it half-written, so poison is ignored.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The message for a 403 on something the auditor itself must be allowed to do.
pub fn auditor_forbidden(what: &str, grant: &str) -> Unavailable {
    Unavailable {
        reason: Reason::Forbidden,
        message: format!(
            "The auditor may not {what}: grant its ClusterRole {grant} (see the README, \"The auditor's own RBAC\"); the other areas are audited as usual."
        ),
    }
}

/// Turns a failed read into the area's `Unavailable`: 403 names the permission, anything
/// else is an audit failure with the client's error.
fn unavailable(e: &kube::Error, what: &str, grant: &str) -> Unavailable {
    match e {
        kube::Error::Api(s) if s.code == 403 => auditor_forbidden(what, grant),
        other => Unavailable {
            reason: Reason::AuditFailed,
            message: format!("Could not {what}: {other}"),
        },
    }
}

const RBAC_GRANT: &str = "get and list on roles, clusterroles, rolebindings and clusterrolebindings (apiGroups: [rbac.authorization.k8s.io])";
const CRD_GRANT: &str = "get on customresourcedefinitions (apiGroups: [apiextensions.k8s.io])";
const SAR_GRANT: &str = "create on subjectaccessreviews (apiGroups: [authorization.k8s.io])";

impl Cache {
    /// A CRD by name (`plural.group`), `None` when it does not exist; read once per cycle.
    pub async fn crd(
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
    pub async fn bindings(
        &self,
        client: &Client,
        sa: &crate::evidence::rbac::ServiceAccountRef,
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
    pub async fn review(
        &self,
        client: &Client,
        sa: &crate::evidence::rbac::ServiceAccountRef,
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
pub fn review_for(
    sa: &crate::evidence::rbac::ServiceAccountRef,
    p: &Permission,
) -> SubjectAccessReview {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    SubjectAccessReview {
        metadata: Default::default(),
        spec: SubjectAccessReviewSpec {
            user: Some(sa.username()),
            groups: Some(sa.groups()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(p.verb.clone()),
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

/// The namespaces whose RoleBindings can matter: the operator's own and the exact names
/// it serves.
pub fn binding_namespaces(run: &KopfRun, own: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::from([own.to_string()]);
    if let Scope::Namespaced(names) = &run.scope {
        out.extend(
            names
                .iter()
                .filter(|n| !Scope::Namespaced(vec![(*n).clone()]).has_patterns())
                .cloned(),
        );
    }
    out
}

/// How a binding subject reaches the ServiceAccount, if it does.
pub fn reaches(
    subject: &Subject,
    sa: &crate::evidence::rbac::ServiceAccountRef,
    binding_namespace: Option<&str>,
) -> Option<String> {
    match subject.kind.as_str() {
        "ServiceAccount" => {
            let ns = subject.namespace.as_deref().or(binding_namespace);
            (subject.name == sa.name && ns == Some(sa.namespace.as_str()))
                .then(|| format!("ServiceAccount {sa}"))
        }
        "User" => (subject.name == sa.username()).then(|| format!("User {}", subject.name)),
        "Group" => sa
            .groups()
            .contains(&subject.name)
            .then(|| format!("Group {}", subject.name)),
        _ => None,
    }
}

/// The first subject of a binding that reaches the ServiceAccount.
fn reaching(
    subjects: Option<&Vec<Subject>>,
    sa: &crate::evidence::rbac::ServiceAccountRef,
    ns: Option<&str>,
) -> Option<String> {
    let mut ways: Vec<String> = subjects
        .into_iter()
        .flatten()
        .filter_map(|s| reaches(s, sa, ns))
        .collect();
    ways.sort();
    ways.into_iter().next()
}

/// The resource rules of a role (non-resource URL rules dropped).
pub fn rules_of(rules: Option<&Vec<PolicyRule>>) -> Vec<Rule> {
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
    sa: &crate::evidence::rbac::ServiceAccountRef,
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
    let mut found: Vec<(BindingKind, String, RoleRef, String)> = crbs
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
        let (rules, missing, aggregated) = match (role_ref.kind.as_str(), &kind) {
            ("Role", BindingKind::RoleBinding(ns)) => {
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
            ("ClusterRole", _) => {
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
            role_kind: role_ref.kind,
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
/// the peering CRDs (unless `--standalone`) and the API server's answer to every needed
/// permission. Call after the handled resources are gathered: they add needs.
pub async fn gather(
    client: &Client,
    target: &TargetEvidence,
    cache: &Cache,
) -> Gathered<RbacEvidence> {
    let Some(run) = &target.kopf else {
        return Gathered::NotGathered;
    };
    let sa = checks::service_account(target);
    let namespaces = binding_namespaces(run, &sa.namespace);
    let bindings = match cache.bindings(client, &sa, &namespaces).await {
        Ok(b) => b,
        Err(u) => return Gathered::Unavailable(u),
    };
    let peering = if run.peering == Peering::Standalone {
        PeeringCrds::default()
    } else {
        match peering_crds(client, cache).await {
            Ok(p) => p,
            Err(u) => return Gathered::Unavailable(u),
        }
    };
    let needs = checks::needs(
        run,
        target.handled.ready().map(Vec::as_slice),
        &sa.namespace,
        &peering,
    );
    let wanted = checks::permissions(&needs);
    let answers = match cache.review(client, &sa, &wanted).await {
        Ok(a) => a,
        Err(u) => return Gathered::Unavailable(u),
    };
    Gathered::Ready(RbacEvidence {
        service_account: sa,
        answers,
        bindings,
        peering_crds: peering,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::rbac::ServiceAccountRef;

    fn subject(kind: &str, name: &str, ns: Option<&str>) -> Subject {
        Subject {
            kind: kind.into(),
            name: name.into(),
            namespace: ns.map(str::to_string),
            api_group: None,
        }
    }

    #[test]
    fn subjects_that_reach_a_service_account() {
        let sa = ServiceAccountRef {
            namespace: "ns".into(),
            name: "op".into(),
        };
        let r = |s: Subject, ns| reaches(&s, &sa, ns);
        assert!(r(subject("ServiceAccount", "op", Some("ns")), None).is_some());
        assert!(r(subject("ServiceAccount", "op", None), Some("ns")).is_some());
        assert!(r(subject("ServiceAccount", "op", Some("other")), None).is_none());
        assert!(r(subject("ServiceAccount", "other", Some("ns")), None).is_none());
        assert_eq!(
            r(subject("Group", "system:serviceaccounts:ns", None), None).as_deref(),
            Some("Group system:serviceaccounts:ns")
        );
        assert!(r(subject("Group", "system:serviceaccounts:other", None), None).is_none());
        assert!(r(subject("User", "system:serviceaccount:ns:op", None), None).is_some());
    }

    #[test]
    fn a_review_asks_as_the_service_account_with_its_groups() {
        let sa = ServiceAccountRef {
            namespace: "ns".into(),
            name: "op".into(),
        };
        let mut p = Permission::new("patch", "g", "widgets", Some("ns"));
        p.subresource = "status".into();
        let r = review_for(&sa, &p);
        assert_eq!(r.spec.user.as_deref(), Some("system:serviceaccount:ns:op"));
        assert_eq!(
            r.spec.groups,
            Some(vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:ns".into(),
                "system:authenticated".into()
            ])
        );
        let attrs = r.spec.resource_attributes.expect("attributes");
        assert_eq!(attrs.subresource.as_deref(), Some("status"));
        assert_eq!(attrs.namespace.as_deref(), Some("ns"));
        let cluster = review_for(&sa, &Permission::new("list", "", "namespaces", None));
        let attrs = cluster.spec.resource_attributes.expect("attributes");
        assert_eq!(attrs.namespace, None);
        assert_eq!(attrs.subresource, None);
        assert_eq!(attrs.group.as_deref(), Some(""));
    }

    #[test]
    fn forbidden_names_what_the_auditor_lacks() {
        let u = auditor_forbidden(
            "create subjectaccessreviews.authorization.k8s.io",
            SAR_GRANT,
        );
        assert_eq!(u.reason, Reason::Forbidden);
        assert!(u.message.contains("create on subjectaccessreviews"));
    }

    #[test]
    fn role_bindings_are_read_in_the_own_and_exact_namespaces() {
        let run = KopfRun {
            container: "c".into(),
            scope: Scope::Namespaced(vec!["a".into(), "team-*".into()]),
            peering: Peering::Auto,
            log_format: crate::kopf_mode::LogFormat::Full,
            liveness: None,
        };
        assert_eq!(
            binding_namespaces(&run, "own"),
            BTreeSet::from(["a".to_string(), "own".to_string()])
        );
    }
}

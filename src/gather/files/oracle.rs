//! The permission oracle of `kopf-audit lint`: what the rendered Roles, ClusterRoles and
//! bindings grant a ServiceAccount, aggregation included. Live, the API server answers
//! (SubjectAccessReviews); from files, the rules are evaluated as the RBAC authorizer
//! does: a binding that reaches the ServiceAccount grants its role's rules, in its
//! namespace (RoleBinding) or everywhere (ClusterRoleBinding).

use super::manifests::Manifests;
use crate::model::evidence::{Obstacle, Unavailable};
use crate::model::rbac::{
    Binding, BindingKind, BoundRole, CLUSTER_ADMIN, Permission, RoleKind, Rule, ServiceAccountRef,
    bound_role, reached, rules_of, valid_aggregation_selectors,
};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::core::SelectorExt;
use std::collections::{BTreeMap, BTreeSet};

/// The bindings in the files that reach the ServiceAccount, with their roles' rules.
/// A bound role that is not in the files (other than `cluster-admin`, whose rules are
/// known) leaves what the ServiceAccount may do undecided.
pub(crate) fn bindings(
    files: &Manifests,
    sa: &ServiceAccountRef,
) -> Result<Vec<Binding>, Unavailable> {
    let mut found = Vec::new();
    for b in &files.cluster_role_bindings {
        found.extend(reached(
            &BindingKind::ClusterRoleBinding,
            &b.metadata,
            &b.role_ref,
            b.subjects.as_ref(),
            sa,
        ));
    }
    // Reading the files places every RoleBinding in a namespace (its own or the one
    // linted for); one without any has no metadata, which the API server refuses.
    for b in &files.role_bindings {
        let Some(ns) = b.metadata.namespace.as_deref().filter(|ns| !ns.is_empty()) else {
            continue;
        };
        found.extend(reached(
            &BindingKind::RoleBinding(ns.to_string()),
            &b.metadata,
            &b.role_ref,
            b.subjects.as_ref(),
            sa,
        ));
    }
    let mut out = Vec::with_capacity(found.len());
    let mut absent = BTreeSet::new();
    for (kind, name, role_ref, via) in found {
        let role_kind = RoleKind::parse(&role_ref.kind);
        let (rules, aggregated) = match role_rules(files, bound_role(&kind, &role_ref)) {
            Some(found) => found,
            None => {
                absent.insert(format!(
                    "{} {}",
                    role_kind.map_or("role", RoleKind::as_str),
                    role_ref.name
                ));
                (Vec::new(), false)
            }
        };
        out.push(Binding {
            kind,
            name,
            role_kind,
            role_name: role_ref.name,
            via,
            rules,
            role_missing: false,
            aggregated,
        });
    }
    if !absent.is_empty() {
        let roles: Vec<String> = absent.into_iter().collect();
        return Err(Unavailable::new(
            Obstacle::NotInFiles,
            format!(
                "ServiceAccount {sa} is bound to {}, which the linted files do not define: what it grants is known only in a cluster. Lint the files that define it too, or audit the running operator.",
                roles.join(", ")
            ),
        ));
    }
    out.sort_by(|a, b| a.kind.cmp(&b.kind).then(a.name.cmp(&b.name)));
    Ok(out)
}

/// Whether the bindings grant a permission, as the RBAC authorizer decides.
pub(crate) fn allows(bindings: &[Binding], p: &Permission) -> bool {
    bindings.iter().any(|b| {
        b.applies_in(p.namespace.as_deref())
            && b.rules.iter().any(|r| {
                r.has_verb(p.verb) && r.covers_resource(&p.group, &p.resource, &p.subresource)
            })
    })
}

/// The answers for a set of permissions.
pub(crate) fn answers(
    bindings: &[Binding],
    wanted: &BTreeSet<Permission>,
) -> BTreeMap<Permission, bool> {
    wanted
        .iter()
        .map(|p| (p.clone(), allows(bindings, p)))
        .collect()
}

/// The rules of a bound role and whether it is aggregated; `None` when the files do not
/// define it.
fn role_rules(files: &Manifests, role: Option<BoundRole<'_>>) -> Option<(Vec<Rule>, bool)> {
    match role {
        Some(BoundRole::Role {
            namespace: ns,
            name,
        }) => files
            .roles
            .iter()
            .find(|r| {
                r.metadata.name.as_deref() == Some(name)
                    && r.metadata.namespace.as_deref() == Some(ns)
            })
            .map(|r| (rules_of(r.rules.as_ref()), false)),
        Some(BoundRole::ClusterRole(name)) if name == CLUSTER_ADMIN => Some((
            vec![Rule {
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                verbs: vec!["*".into()],
                resource_names: Vec::new(),
            }],
            false,
        )),
        Some(BoundRole::ClusterRole(name)) => {
            let role = files
                .cluster_roles
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(name))?;
            Some(cluster_role_rules(files, role))
        }
        // A roleRef of another kind, or a Role under a ClusterRoleBinding: the API
        // server grants nothing for it.
        None => Some((Vec::new(), false)),
    }
}

/// A ClusterRole's rules as the authorizer will read them, and whether it is
/// aggregated. An aggregated one's rules are replaced by the controller-manager with
/// those of every other ClusterRole its selectors match; its own are overwritten, not
/// kept (Kubernetes 1.31 `pkg/controller/clusterroleaggregation`, `syncClusterRole`).
/// When a selector is invalid the controller gives up on it and the rules written in
/// the files stay (see [`valid_aggregation_selectors`]).
fn cluster_role_rules(files: &Manifests, role: &ClusterRole) -> (Vec<Rule>, bool) {
    let own = rules_of(role.rules.as_ref());
    let Some(aggregation) = &role.aggregation_rule else {
        return (own, false);
    };
    let Some(selectors) = valid_aggregation_selectors(aggregation) else {
        return (own, true);
    };
    let mut rules = Vec::new();
    for selector in selectors {
        for other in &files.cluster_roles {
            let labels = other.metadata.labels.clone().unwrap_or_default();
            if other.metadata.name != role.metadata.name && selector.matches(&labels) {
                rules.extend(rules_of(other.rules.as_ref()));
            }
        }
    }
    (rules, true)
}

#[cfg(test)]
mod tests;

//! The permission oracle of `kopf-audit lint`: what the rendered Roles, ClusterRoles and
//! bindings grant a ServiceAccount, aggregation included. Live, the API server answers
//! (SubjectAccessReviews); from files, the rules are evaluated as the RBAC authorizer
//! does: a binding that reaches the ServiceAccount grants its role's rules, in its
//! namespace (RoleBinding) or everywhere (ClusterRoleBinding).

use super::manifests::Manifests;
use crate::gather::rbac::{reached, rules_of};
use crate::model::evidence::{Obstacle, Unavailable};
use crate::model::rbac::{
    Binding, BindingKind, CLUSTER_ADMIN, Permission, RoleKind, Rule, ServiceAccountRef,
};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
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
            None,
            &b.metadata,
            &b.role_ref,
            b.subjects.as_ref(),
            sa,
        ));
    }
    for b in &files.role_bindings {
        let ns = b.metadata.namespace.as_deref();
        found.extend(reached(
            ns,
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
        let (rules, aggregated) = match role_rules(files, role_kind, &kind, &role_ref.name) {
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
fn role_rules(
    files: &Manifests,
    kind: Option<RoleKind>,
    binding: &BindingKind,
    name: &str,
) -> Option<(Vec<Rule>, bool)> {
    match (kind, binding) {
        (Some(RoleKind::Role), BindingKind::RoleBinding(ns)) => files
            .roles
            .iter()
            .find(|r| {
                r.metadata.name.as_deref() == Some(name)
                    && r.metadata.namespace.as_deref() == Some(ns.as_str())
            })
            .map(|r| (rules_of(r.rules.as_ref()), false)),
        (Some(RoleKind::ClusterRole), _) if name == CLUSTER_ADMIN => Some((
            vec![Rule {
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                verbs: vec!["*".into()],
                resource_names: Vec::new(),
            }],
            false,
        )),
        (Some(RoleKind::ClusterRole), _) => {
            let role = files
                .cluster_roles
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(name))?;
            Some(cluster_role_rules(files, role))
        }
        // A roleRef of another kind, or a Role under a ClusterRoleBinding: the API
        // server grants nothing for it.
        _ => Some((Vec::new(), false)),
    }
}

/// A ClusterRole's rules: its own, and for an aggregated one, those of every ClusterRole
/// its selectors match (what the controller-manager fills in).
fn cluster_role_rules(files: &Manifests, role: &ClusterRole) -> (Vec<Rule>, bool) {
    let mut rules = rules_of(role.rules.as_ref());
    let Some(aggregation) = &role.aggregation_rule else {
        return (rules, false);
    };
    let selectors = aggregation.cluster_role_selectors.iter().flatten();
    for selector in selectors {
        for other in &files.cluster_roles {
            let labels = other.metadata.labels.clone().unwrap_or_default();
            if other.metadata.name != role.metadata.name && matches(selector, &labels) {
                rules.extend(rules_of(other.rules.as_ref()));
            }
        }
    }
    (rules, true)
}

/// Whether labels match a label selector (`matchLabels` and `matchExpressions`).
fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let by_label = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_expression = selector.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let values = e.values.as_deref().unwrap_or(&[]);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    by_label && by_expression
}

#[cfg(test)]
mod tests;

//! The RBAC authorizer's rules for reading RBAC objects, in one place for the live
//! gathering, the files oracle and the watches: which subjects of a binding reach a
//! ServiceAccount, which role a binding grants and where, which ClusterRoles an
//! aggregation rule selects. As Kubernetes 1.31 decides them:
//! `pkg/registry/rbac/validation/rule.go` (`appliesToUser`, `GetRoleReferenceRules`)
//! and `pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`.

use super::{BindingKind, Rule, ServiceAccountRef, Subject};
use crate::model::labels;
use k8s_openapi::api::rbac::v1::{AggregationRule, PolicyRule, RoleRef, Subject as BindingSubject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::Selector;

/// The prefix of a ServiceAccount's user name (`system:serviceaccount:NS:NAME`).
const SERVICE_ACCOUNT_USER_PREFIX: &str = "system:serviceaccount:";

impl BindingKind {
    /// The namespace a binding grants in: a RoleBinding's; `None` for a
    /// ClusterRoleBinding.
    pub(crate) fn namespace(&self) -> Option<&str> {
        match self {
            BindingKind::RoleBinding(ns) => Some(ns),
            BindingKind::ClusterRoleBinding => None,
        }
    }
}

/// The namespace of a `ServiceAccount` subject: its own, or (when it names none, or an
/// empty one) the namespace of its binding; `None` for a ClusterRoleBinding's subject
/// that names none, which reaches no one.
fn subject_namespace<'a>(
    subject: &'a BindingSubject,
    binding_namespace: Option<&'a str>,
) -> Option<&'a str> {
    subject
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .or(binding_namespace)
        .filter(|ns| !ns.is_empty())
}

/// How a binding subject reaches the ServiceAccount, if it does: as itself (a
/// `ServiceAccount` subject, namespaced as [`subject_namespace`] says), as its user
/// name, or as one of the groups its token carries
/// ([`ServiceAccountRef::groups`]). Other kinds reach no one.
pub(crate) fn reaches(
    subject: &BindingSubject,
    sa: &ServiceAccountRef,
    binding_namespace: Option<&str>,
) -> Option<Subject> {
    match subject.kind.as_str() {
        "ServiceAccount" => (subject.name == sa.name
            && subject_namespace(subject, binding_namespace) == Some(sa.namespace.as_str()))
        .then(|| Subject::ServiceAccount(sa.clone())),
        "User" => (subject.name == sa.username()).then(|| Subject::User(subject.name.clone())),
        "Group" => sa
            .groups()
            .contains(&subject.name)
            .then(|| Subject::Group(subject.name.clone())),
        _ => None,
    }
}

/// A binding that reaches the ServiceAccount: its kind, name, role and the subject
/// that reaches.
pub(crate) type Reached = (BindingKind, String, RoleRef, Subject);

/// The binding scoped `scope`, when one of its subjects reaches the ServiceAccount
/// (the first by [`Subject`]'s order: itself before its user name before a group);
/// only then is anything copied out of it.
pub(crate) fn reached(
    scope: &BindingKind,
    meta: &ObjectMeta,
    role_ref: &RoleRef,
    subjects: Option<&Vec<BindingSubject>>,
    sa: &ServiceAccountRef,
) -> Option<Reached> {
    let via = subjects
        .into_iter()
        .flatten()
        .filter_map(|s| reaches(s, sa, scope.namespace()))
        .min()?;
    Some((
        scope.clone(),
        meta.name.clone().unwrap_or_default(),
        role_ref.clone(),
        via,
    ))
}

/// The ServiceAccounts a binding names: `ServiceAccount` subjects (namespaced as
/// [`subject_namespace`] says) and `User` subjects spelled as a ServiceAccount's user
/// name (`system:serviceaccount:NS:NAME`). Groups name no one ServiceAccount.
pub(crate) fn service_accounts(
    subjects: Option<&Vec<BindingSubject>>,
    binding_namespace: Option<&str>,
) -> Vec<ServiceAccountRef> {
    subjects
        .into_iter()
        .flatten()
        .filter_map(|s| match s.kind.as_str() {
            "ServiceAccount" => Some(ServiceAccountRef {
                namespace: subject_namespace(s, binding_namespace)?.to_string(),
                name: s.name.clone(),
            }),
            "User" => service_account_of_user(&s.name),
            _ => None,
        })
        .collect()
}

/// The ServiceAccount whose user name this is, if it is one.
fn service_account_of_user(user: &str) -> Option<ServiceAccountRef> {
    let (namespace, name) = user
        .strip_prefix(SERVICE_ACCOUNT_USER_PREFIX)?
        .split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then(|| ServiceAccountRef {
        namespace: namespace.to_string(),
        name: name.to_string(),
    })
}

/// The role whose rules a binding grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BoundRole<'a> {
    /// A Role of the RoleBinding's namespace.
    Role {
        /// The RoleBinding's namespace.
        namespace: &'a str,
        /// The Role's name.
        name: &'a str,
    },
    /// A ClusterRole, granted in the RoleBinding's namespace or (a ClusterRoleBinding)
    /// everywhere.
    ClusterRole(&'a str),
}

/// The role a binding's roleRef resolves to: a Role is looked up in the RoleBinding's
/// namespace, a ClusterRole by name; `None` for what the API server never resolves (a
/// Role under a ClusterRoleBinding, a roleRef of another kind), which grants nothing.
pub(crate) fn bound_role<'a>(
    scope: &'a BindingKind,
    role_ref: &'a RoleRef,
) -> Option<BoundRole<'a>> {
    match (role_ref.kind.as_str(), scope) {
        ("Role", BindingKind::RoleBinding(ns)) => Some(BoundRole::Role {
            namespace: ns,
            name: &role_ref.name,
        }),
        ("ClusterRole", _) => Some(BoundRole::ClusterRole(&role_ref.name)),
        _ => None,
    }
}

/// The resource rules of a role (non-resource URL rules dropped).
pub(crate) fn rules_of(rules: Option<&Vec<PolicyRule>>) -> Vec<Rule> {
    rules.into_iter().flatten().filter_map(rule_of).collect()
}

/// One rule of a role as the model reads it; `None` for a non-resource URL rule.
pub(crate) fn rule_of(rule: &PolicyRule) -> Option<Rule> {
    let resources = rule.resources.as_ref().filter(|x| !x.is_empty())?;
    Some(Rule {
        api_groups: rule.api_groups.clone().unwrap_or_default(),
        resources: resources.clone(),
        verbs: rule.verbs.clone(),
        resource_names: rule.resource_names.clone().unwrap_or_default(),
    })
}

/// The selectors of an aggregation rule, as the ClusterRole aggregation controller
/// reads them: when one of them is invalid the controller gives up on the ClusterRole
/// (and retries), so none selects anything. A ClusterRole selected by any of them
/// lends its rules, the aggregated ClusterRole itself excepted.
pub(crate) fn aggregation_selectors(rule: &AggregationRule) -> Vec<Selector> {
    valid_aggregation_selectors(rule).unwrap_or_default()
}

/// The selectors of an aggregation rule; `None` when one is invalid, so the controller
/// never writes the ClusterRole's rules and those it was created with stay.
pub(crate) fn valid_aggregation_selectors(rule: &AggregationRule) -> Option<Vec<Selector>> {
    rule.cluster_role_selectors
        .iter()
        .flatten()
        .map(labels::selector)
        .collect()
}

#[cfg(test)]
mod tests;

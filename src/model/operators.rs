//! The kopf operators of a cluster as `runtime.operator-conflict` compares them: where
//! each runs, what it serves and how it peers. Gather fills them ([`Operators`]); the
//! conflict model ([`super::conflict`]) decides who fights whom.

use super::kopf_run::{Peering, Scope};
use super::rbac::{Rule, ServiceAccountRef, Verb};
use std::collections::{BTreeMap, BTreeSet};

/// A resource, `(group, plural)`: what two operators' handled resources are compared by.
pub(crate) type ResourceKey = (String, String);

/// The peering name kopf uses when `--peering` is not given (`settings.peering.name`).
pub(crate) const DEFAULT_PEERING: &str = "default";

/// A kopf operator as far as a conflict is concerned: where it runs, what it serves and
/// how it peers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Operator {
    /// Its Deployment's namespace.
    pub(crate) namespace: String,
    /// Its Deployment's name.
    pub(crate) deployment: String,
    /// The ServiceAccount its pods run as.
    pub(crate) service_account: ServiceAccountRef,
    /// The namespaces it serves.
    pub(crate) scope: Scope,
    /// The namespaces it is known to serve by name (for an unknown scope, those its log
    /// names objects in).
    pub(crate) served_names: Vec<String>,
    /// Its peering mode.
    pub(crate) peering: Peering,
    /// The resources it handles; `None` when they could not be learned (its RBAC
    /// unreadable).
    pub(crate) resources: Option<BTreeSet<ResourceKey>>,
}

impl Operator {
    /// `namespace/deployment`, as findings name it.
    pub(crate) fn name(&self) -> String {
        format!("{}/{}", self.namespace, self.deployment)
    }

    /// Whether it serves `namespace`, as far as is known: an unknown scope serves the
    /// names seen.
    pub(crate) fn serves(&self, namespace: &str) -> bool {
        match &self.scope {
            Scope::Unknown => self.served_names.iter().any(|n| n == namespace),
            scope => scope.serves(namespace),
        }
    }

    /// The names it surely serves, when it serves no more than a list of them.
    pub(crate) fn listed_names(&self) -> Option<&[String]> {
        match &self.scope {
            Scope::Namespaced(_) if !self.scope.has_patterns() => Some(&self.served_names),
            Scope::Unknown => Some(&self.served_names),
            _ => None,
        }
    }

    /// The peering object kopf joins: `(cluster-wide, name)`; `None` when standalone or
    /// unknown. A cluster-wide operator joins a `ClusterKopfPeering`, a namespaced one a
    /// `KopfPeering` in each namespace it serves: the two never meet.
    pub(crate) fn peering_place(&self) -> Option<(bool, &str)> {
        let name = match &self.peering {
            Peering::Standalone | Peering::Unknown => return None,
            Peering::Named(name) => name.as_str(),
            Peering::Auto => DEFAULT_PEERING,
        };
        Some((self.scope.is_cluster_wide(), name))
    }
}

/// Where the other kopf operators were looked for: the audit's reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Searched {
    /// Every namespace (`--allow-cross-namespace`).
    Cluster,
    /// Only the KopfAudit's namespace: operators elsewhere are not looked for.
    Namespace(String),
}

/// The other kopf operators in reach, for `runtime.operator-conflict`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Operators {
    /// Every kopf operator found (the audited one among them, skipped by [`super::conflict::rivals`]).
    pub(crate) found: Vec<Operator>,
    /// Where they were looked for.
    pub(crate) searched: Searched,
    /// Who RBAC lets patch the objects in dispute that no rival found explains; `None`
    /// when nothing is in dispute or the bindings could not be read.
    pub(crate) patchers: Option<Patchers>,
}

/// Where objects are in dispute: a resource in a namespace.
pub(crate) type Place = (ResourceKey, String);

/// The ServiceAccounts RBAC lets patch the objects in dispute, per resource and
/// namespace: kopf adds its finalizer and writes its diff-base and progress annotations
/// with `patch` (kopf 1.45 `_cogs/clients/patching.py`), so the other operator runs as
/// one of them. They name a rival whose Deployment the audit may not read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Patchers {
    /// Per place, the ServiceAccounts bound to a role that grants `patch` on the
    /// resource by name ([`grants_patch`]), the audited operator's own among them.
    pub(crate) accounts: BTreeMap<Place, BTreeSet<ServiceAccountRef>>,
    /// Whether ClusterRoleBindings were read too. Without `--allow-cross-namespace`
    /// only the RoleBindings of the namespace in dispute (the KopfAudit's own) are:
    /// cluster-scoped objects are outside a KopfAudit's reach (docs/security/tenancy.md).
    pub(crate) cluster_bindings: bool,
}

/// Whether a rule grants `patch` on the resource, naming its group and plural: rules
/// with `*` groups or resources (cluster-admin and the like, bound to many subjects
/// that are no kopf operator) would make every such subject a suspect, so they do not
/// count. `resourceNames` do not matter: kopf patches the objects it serves by name.
pub(crate) fn grants_patch(rule: &Rule, (group, plural): &ResourceKey) -> bool {
    rule.has_verb(Verb::Patch)
        && rule.api_groups.iter().any(|g| g == group)
        && rule.resources.iter().any(|r| r == plural)
}

//! Two kopf operators fighting over the same objects, the pure part: which other kopf
//! operators serve a resource this one serves, in namespaces both serve, without a
//! peering between them ([`rivals`]), and which handled objects carry the marks of two
//! kopf operators ([`disputed`]). kopf's peering makes one operator of a peering pause
//! while a higher-priority one runs; operators outside one peering know nothing of each
//! other, and each takes the other's finalizer, diff-base and progress marks for
//! changes to handle (kopf 1.38-1.45 `_core/engines/peering.py`,
//! `_cogs/configs/progress.py`, `_cogs/configs/diffbase.py`).

use super::evidence::{HandledResource, ObjectSample, TargetEvidence};
use super::kopf_marks;
use super::kopf_run::{KopfRun, Peering};
pub(crate) use super::operators::{
    Operator, Operators, Patchers, Place, ResourceKey, Searched, grants_patch,
};
use super::rbac::ServiceAccountRef;
use std::collections::BTreeSet;

/// The audited operator: its Deployment and how it runs kopf (its resources are the
/// audit's handled resources, compared by [`rivals`]).
pub(crate) fn audited(target: &TargetEvidence, run: &KopfRun) -> Operator {
    Operator {
        namespace: target.namespace().to_string(),
        deployment: target.name().to_string(),
        service_account: target.service_account(),
        scope: run.scope.clone(),
        served_names: run.served_names(),
        peering: run.peering.clone(),
        resources: None,
    }
}

/// Where two operators both serve a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// Both serve every namespace.
    Everywhere,
    /// These namespaces.
    Namespaces(Vec<String>),
}

impl Overlap {
    /// How a message names it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Overlap::Everywhere => "every namespace".to_string(),
            Overlap::Namespaces(names) => format!(
                "namespace {}",
                super::bounded::listed(names, ", ", super::bounded::MAX_LISTED)
            ),
        }
    }

    /// Whether a namespace is in it.
    pub(crate) fn covers(&self, namespace: &str) -> bool {
        match self {
            Overlap::Everywhere => true,
            Overlap::Namespaces(names) => names.iter().any(|n| n == namespace),
        }
    }
}

/// The namespaces both serve; `None` when they share none, or when neither lists its
/// namespaces (two pattern scopes: which namespaces match both is not known).
pub(crate) fn overlap(a: &Operator, b: &Operator) -> Option<Overlap> {
    if a.scope.is_cluster_wide() && b.scope.is_cluster_wide() {
        return Some(Overlap::Everywhere);
    }
    let names: Vec<String> = match (a.listed_names(), b.listed_names()) {
        (Some(names), _) => names.iter().filter(|n| b.serves(n)).cloned().collect(),
        (None, Some(names)) => names.iter().filter(|n| a.serves(n)).cloned().collect(),
        (None, None) => return None,
    };
    let names: Vec<String> = names
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    (!names.is_empty()).then_some(Overlap::Namespaces(names))
}

/// Why two operators do not peer: each a reason kopf keeps them apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Apart {
    /// One or both run `--standalone`.
    Standalone,
    /// Different peering names.
    Names(String, String),
    /// One is cluster-wide (`ClusterKopfPeering`), the other namespaced (`KopfPeering`).
    Kinds,
}

impl Apart {
    /// How a message says it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Apart::Standalone => "peering is off (`--standalone`)".to_string(),
            Apart::Names(a, b) => format!("they join different peerings ({a} and {b})"),
            Apart::Kinds => "one is cluster-wide and joins a ClusterKopfPeering, the other is namespaced and joins a KopfPeering: the two never meet".to_string(),
        }
    }
}

/// Why two operators are apart, or `None` when they peer or it is not known (a hidden
/// command line: `--standalone` or `--peering` may be there).
pub(crate) fn apart(a: &Operator, b: &Operator) -> Option<Apart> {
    if matches!(a.peering, Peering::Unknown) || matches!(b.peering, Peering::Unknown) {
        return None;
    }
    match (a.peering_place(), b.peering_place()) {
        (Some((wide_a, name_a)), Some((wide_b, name_b))) => {
            if name_a != name_b {
                Some(Apart::Names(name_a.to_string(), name_b.to_string()))
            } else if wide_a != wide_b {
                Some(Apart::Kinds)
            } else {
                None
            }
        }
        _ => Some(Apart::Standalone),
    }
}

/// Another operator that serves what this one serves, where it does, without peering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rival {
    /// The other operator.
    pub(crate) operator: Operator,
    /// The resources both serve (`plural.group`), sorted.
    pub(crate) resources: Vec<String>,
    /// Where.
    pub(crate) overlap: Overlap,
    /// Why kopf does not keep them apart.
    pub(crate) apart: Apart,
}

/// `plural.group` (or `plural` for core).
fn resource_name((group, plural): &ResourceKey) -> String {
    if group.is_empty() {
        plural.clone()
    } else {
        format!("{plural}.{group}")
    }
}

/// The other operators that fight `own` for its handled resources: each serves one of
/// them in a namespace `own` serves too, and the two do not peer. A cluster-scoped
/// resource is shared only by two cluster-wide operators. The same Deployment is never
/// its own rival (its replicas are `workload.standalone-replicas`' concern).
pub(crate) fn rivals(
    own: &Operator,
    handled: &[HandledResource],
    others: &[Operator],
) -> Vec<Rival> {
    let mut out = Vec::new();
    for other in others {
        if other.namespace == own.namespace && other.deployment == own.deployment {
            continue;
        }
        let Some(theirs) = &other.resources else {
            continue;
        };
        let Some(apart) = apart(own, other) else {
            continue;
        };
        let Some(where_) = overlap(own, other) else {
            continue;
        };
        let cluster_wide = own.scope.is_cluster_wide() && other.scope.is_cluster_wide();
        let mut shared: Vec<String> = handled
            .iter()
            .filter(|h| h.namespaced || cluster_wide)
            .map(|h| (h.group.clone(), h.plural.clone()))
            .filter(|key| theirs.contains(key))
            .map(|key| resource_name(&key))
            .collect();
        shared.sort();
        shared.dedup();
        if shared.is_empty() {
            continue;
        }
        out.push(Rival {
            operator: other.clone(),
            resources: shared,
            overlap: where_,
            apart,
        });
    }
    out.sort_by_key(|r| r.operator.name());
    out
}

/// What shows two kopf operators on one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Marks {
    /// Diff-bases under two or more prefixes: two operators each store what they last
    /// handled.
    DiffBases(Vec<String>),
    /// Two or more kopf finalizers: each operator blocks the deletion for itself.
    Finalizers(Vec<String>),
}

impl Marks {
    /// How a message says it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Marks::DiffBases(prefixes) => format!(
                "diff-bases under {}",
                super::bounded::listed(prefixes, " and ", super::bounded::MAX_LISTED)
            ),
            Marks::Finalizers(finalizers) => format!(
                "finalizers {}",
                super::bounded::listed(finalizers, " and ", super::bounded::MAX_LISTED)
            ),
        }
    }
}

/// A handled object that carries the marks of two kopf operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Disputed {
    /// `namespace/name`.
    pub(crate) object: String,
    /// Its namespace (empty when cluster-scoped).
    pub(crate) namespace: String,
    /// Its resource.
    pub(crate) resource: ResourceKey,
    /// The marks of two operators.
    pub(crate) marks: Vec<Marks>,
}

/// The diff-base prefixes on an object, sorted.
fn diffbase_prefixes(sample: &ObjectSample) -> Vec<String> {
    let set: BTreeSet<&str> = sample
        .annotations
        .keys()
        .filter_map(|k| kopf_marks::diffbase_prefix(k))
        .collect();
    set.into_iter().map(str::to_string).collect()
}

/// The kopf finalizers on an object, sorted: kopf's own kinds ([`kopf_marks::is_kopf_finalizer`])
/// and any under one of the object's diff-base prefixes (an operator that chose its
/// prefix names its finalizer alike).
fn kopf_finalizers(sample: &ObjectSample, group: Option<&str>, prefixes: &[String]) -> Vec<String> {
    let set: BTreeSet<&String> = sample
        .finalizers
        .iter()
        .filter(|f| {
            kopf_marks::is_kopf_finalizer(f, group)
                || prefixes.iter().any(|p| {
                    f.strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
                })
        })
        .collect();
    set.into_iter().cloned().collect()
}

/// The sampled objects that carry two kopf operators' marks: diff-bases under two
/// prefixes, or two kopf finalizers. Two operators that both keep kopf's defaults leave
/// one diff-base and one finalizer between them: their marks cannot tell them apart
/// (nor can `managedFields`, where every kopf operator writes as the manager `kopf`).
pub(crate) fn disputed(samples: &[ObjectSample], handled: &[HandledResource]) -> Vec<Disputed> {
    let mut out: Vec<Disputed> = samples
        .iter()
        .filter_map(|sample| {
            let resource = handled.get(sample.resource)?;
            let group = Some(resource.group.as_str());
            let prefixes = diffbase_prefixes(sample);
            let finalizers = kopf_finalizers(sample, group, &prefixes);
            let mut marks = Vec::new();
            if prefixes.len() > 1 {
                marks.push(Marks::DiffBases(prefixes));
            }
            if finalizers.len() > 1 {
                marks.push(Marks::Finalizers(finalizers));
            }
            (!marks.is_empty()).then(|| Disputed {
                object: sample.qualified_name(),
                namespace: sample.namespace.clone(),
                resource: (resource.group.clone(), resource.plural.clone()),
                marks,
            })
        })
        .collect();
    out.sort_by(|a, b| a.object.cmp(&b.object));
    out
}

/// The objects in dispute that no rival explains: none of the rivals serves their
/// namespace. The finding for them names who else may patch them ([`suspects`]).
pub(crate) fn unexplained<'a>(disputed: &'a [Disputed], rivals: &[Rival]) -> Vec<&'a Disputed> {
    disputed
        .iter()
        .filter(|d| !rivals.iter().any(|r| r.overlap.covers(&d.namespace)))
        .collect()
}

/// The places (resource and namespace) of some objects in dispute, sorted.
pub(crate) fn places(disputed: &[&Disputed]) -> BTreeSet<Place> {
    disputed
        .iter()
        .map(|d| (d.resource.clone(), d.namespace.clone()))
        .collect()
}

/// What a finding may name of other operators and ServiceAccounts: with
/// `--allow-cross-namespace` ([`Searched::Cluster`]) everything; without it only what is
/// in the KopfAudit's own namespace, so that a tenant's KopfAudit names nothing of
/// another namespace (a RoleBinding of its own namespace may bind a ServiceAccount of
/// any other).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Naming {
    /// Every namespace's names.
    Everything,
    /// Only the names of this namespace, the KopfAudit's.
    Within(String),
}

impl Naming {
    /// What the search the operators come from lets a finding name.
    pub(crate) fn of(searched: &Searched) -> Naming {
        match searched {
            Searched::Cluster => Naming::Everything,
            Searched::Namespace(own) => Naming::Within(own.clone()),
        }
    }

    /// Whether what lives in `namespace` may be named.
    pub(crate) fn names(&self, namespace: &str) -> bool {
        match self {
            Naming::Everything => true,
            Naming::Within(own) => own == namespace,
        }
    }
}

/// How a finding calls a ServiceAccount it may not name.
pub(crate) const UNNAMED_ACCOUNT: &str = "a ServiceAccount in another namespace";

/// Who may have left the other operator's marks, as far as the audit may tell.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Suspect {
    /// A kopf Deployment found in reach runs as a ServiceAccount that may patch the
    /// objects (its command line hid how it peers, or its RBAC used wildcards: it was
    /// not called a rival).
    Deployment(String, ServiceAccountRef),
    /// A ServiceAccount that may patch the objects, whose Deployment the audit may not
    /// read (or runs no kopf the audit recognised).
    ServiceAccount(ServiceAccountRef),
}

impl Suspect {
    /// How a message names it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Suspect::Deployment(name, sa) => format!("Deployment {name} (ServiceAccount {sa})"),
            Suspect::ServiceAccount(sa) => format!("ServiceAccount {sa}"),
        }
    }

    /// How a message names it as `naming` lets it; `None` when it lives in a namespace
    /// that may not be named (a Deployment lives in its ServiceAccount's namespace).
    pub(crate) fn named(&self, naming: &Naming) -> Option<String> {
        let (Suspect::Deployment(_, sa) | Suspect::ServiceAccount(sa)) = self;
        naming.names(&sa.namespace).then(|| self.describe())
    }
}

/// The ServiceAccounts other than `own` that RBAC lets patch the objects in dispute
/// (any of their places), each named by the kopf Deployment found running as it when
/// there is one; Deployments first, then by name.
pub(crate) fn suspects(
    own: &ServiceAccountRef,
    disputed: &[&Disputed],
    patchers: &Patchers,
    found: &[Operator],
) -> Vec<Suspect> {
    let accounts: BTreeSet<&ServiceAccountRef> = places(disputed)
        .iter()
        .filter_map(|place| patchers.accounts.get(place))
        .flatten()
        .filter(|sa| *sa != own)
        .collect();
    let mut out: Vec<Suspect> = accounts
        .into_iter()
        .map(|sa| match found.iter().find(|o| o.service_account == *sa) {
            Some(operator) => Suspect::Deployment(operator.name(), sa.clone()),
            None => Suspect::ServiceAccount(sa.clone()),
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests;

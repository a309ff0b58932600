//! `runtime.operator-conflict`: another kopf operator fights this one over the objects
//! both handle. Its findings: one per rival, naming it and the objects in dispute, and
//! one for objects in dispute that no rival in reach explains, naming the
//! ServiceAccounts RBAC lets patch them (the other operator's Deployment may be out of
//! the audit's reach; its RBAC in the namespace in dispute is not).

use super::alone;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::bounded::{MAX_LISTED, listed};
use crate::model::conflict::{
    self, Disputed, Naming, Operator, Operators, Patchers, Rival, Searched, UNNAMED_ACCOUNT,
};
use crate::model::evidence::{HandledResource, KopfEvidence, ObjectSample, TargetEvidence};
use crate::model::rbac::ServiceAccountRef;
use std::collections::BTreeSet;

/// Decided from the other operators, the handled resources and the sampled objects,
/// when the operators and the handled resources were read; not from the log.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    alone(decide(input.target, input.kopf))
}

/// `runtime.operator-conflict`: another kopf operator fights this one over the objects
/// both handle. Found two ways: another kopf operator in the audit's reach serves a
/// handled resource where this one does and no peering keeps them apart
/// ([`conflict::rivals`]); or handled objects carry two kopf operators'
/// diff-bases or finalizers ([`conflict::disputed`]). One finding per rival, and
/// one for objects in dispute that no rival in reach explains.
pub(super) fn decide(target: &TargetEvidence, kopf: &KopfEvidence) -> Vec<Finding> {
    let (Ok(operators), Ok(handled)) = (&kopf.operators, &kopf.handled) else {
        return Vec::new();
    };
    let samples: &[ObjectSample] = kopf.objects.as_ref().map_or(&[][..], |o| &o.samples[..]);
    let own = conflict::audited(target, &kopf.run);
    let rivals = conflict::rivals(&own, handled, &operators.found);
    let disputed = conflict::disputed(samples, handled);
    let naming = conflict::Naming::of(&operators.searched);
    let mut out: Vec<Finding> = rivals
        .iter()
        .map(|rival| rival_finding(target.name(), rival, &naming, handled, samples, &disputed))
        .collect();
    let unexplained = conflict::unexplained(&disputed, &rivals);
    if !unexplained.is_empty() {
        out.push(marks_finding(
            target.name(),
            &own.service_account,
            operators,
            &unexplained,
        ));
    }
    out
}

/// At most this many objects in dispute are named in a finding.
const NAMED_OBJECTS: usize = 5;

/// At most this many ServiceAccounts that may patch the objects in dispute are named.
const NAMED_ACCOUNTS: usize = 3;

/// The finding naming one rival (unless `naming` keeps it unnamed), its shared
/// resources and namespaces, and the objects in dispute: those with two operators'
/// marks first, else the sampled objects of the shared resources where both serve.
fn rival_finding(
    target: &str,
    rival: &Rival,
    naming: &Naming,
    handled: &[HandledResource],
    samples: &[ObjectSample],
    disputed: &[Disputed],
) -> Finding {
    let marked: Vec<String> = disputed
        .iter()
        .filter(|d| rival.overlap.covers(&d.namespace))
        .map(describe_disputed)
        .collect();
    let evidence = if marked.is_empty() {
        let shared: Vec<String> = samples
            .iter()
            .filter(|s| rival.overlap.covers(&s.namespace))
            .filter(|s| {
                handled.get(s.resource).is_some_and(|h| {
                    let name = if h.group.is_empty() {
                        h.plural.clone()
                    } else {
                        format!("{}.{}", h.plural, h.group)
                    };
                    rival.resources.contains(&name)
                })
            })
            .map(ObjectSample::qualified_name)
            .collect();
        (!shared.is_empty()).then(|| {
            format!(
                "objects both serve: {}",
                listed(&shared, ", ", NAMED_OBJECTS)
            )
        })
    } else {
        Some(format!(
            "objects in dispute: {}",
            listed(&marked, "; ", NAMED_OBJECTS)
        ))
    };
    finding(
        CheckId::RuntimeOperatorConflict,
        target,
        format!(
            "{} runs another kopf operator that also serves {} in {}, and kopf does not keep the two apart: {}. Both handle the same objects and each takes the other's finalizer, diff-base and progress marks for changes: finalizers are added and removed, diff-bases overwritten and handlers re-run for ever. Let one operator serve each resource and namespace, or run both in one peering (the same `--peering` name and scope, different `--priority`) so that only one is active at a time.",
            rival_named(&rival.operator, naming),
            listed(&rival.resources, ", ", NAMED_OBJECTS),
            rival.overlap.describe(),
            rival.apart.describe(),
        ),
        evidence,
    )
}

/// How a finding starts with a rival: `Deployment ns/name (ServiceAccount ns/sa)`, or,
/// where `naming` may not name its namespace, neither.
fn rival_named(other: &Operator, naming: &Naming) -> String {
    let sa = &other.service_account;
    if naming.names(&other.namespace) && naming.names(&sa.namespace) {
        format!("Deployment {} (ServiceAccount {sa})", other.name())
    } else {
        format!("A Deployment in another namespace (running as {UNNAMED_ACCOUNT})")
    }
}

/// `ns/name (diff-bases under a and b, finalizers x and y)`.
fn describe_disputed(d: &Disputed) -> String {
    let marks: Vec<String> = d.marks.iter().map(conflict::Marks::describe).collect();
    format!("{} ({})", d.object, marks.join(", "))
}

/// The finding for objects with two operators' marks that no rival in reach explains:
/// where the auditor looked, and who may have left the marks ([`suspects`]).
fn marks_finding(
    target: &str,
    own: &ServiceAccountRef,
    operators: &Operators,
    disputed: &[&Disputed],
) -> Finding {
    let searched = match &operators.searched {
        Searched::Cluster => "among the cluster's Deployments".to_string(),
        Searched::Namespace(ns) => format!(
            "among the Deployments of namespace {ns} (the auditor looks at other namespaces only when started with --allow-cross-namespace, see docs/security/tenancy.md)"
        ),
    };
    let named: Vec<String> = disputed.iter().map(|d| describe_disputed(d)).collect();
    let naming = Naming::of(&operators.searched);
    let who = operators
        .patchers
        .as_ref()
        .map(|patchers| suspects(own, disputed, patchers, &operators.found, &naming))
        .unwrap_or_default();
    finding(
        CheckId::RuntimeOperatorConflict,
        target,
        format!(
            "Handled objects carry the marks of two kopf operators (two diff-bases or two kopf finalizers), yet no other kopf operator serving them was found {searched}: another operator (or one that ran before under other settings) handles them too, and the two fight over them.{who} Find the other operator and let only one serve these objects, or remove the stale marks if it is gone.",
        ),
        Some(format!(
            "objects in dispute: {}",
            listed(&named, "; ", NAMED_OBJECTS)
        )),
    )
}

/// Who may have left the other operator's marks, as a sentence (with a leading space),
/// empty when RBAC could not be read: the ServiceAccounts other than `own` that RBAC
/// lets patch the objects (at most [`NAMED_ACCOUNTS`], each by its kopf Deployment when
/// one in reach runs as it; those `naming` may not name counted together), or, when
/// there is none, which bindings were read.
fn suspects(
    own: &ServiceAccountRef,
    disputed: &[&Disputed],
    patchers: &Patchers,
    found: &[Operator],
    naming: &Naming,
) -> String {
    let all = conflict::suspects(own, disputed, patchers, found);
    let mut suspects: Vec<String> = all.iter().filter_map(|s| s.named(naming)).collect();
    match all.len() - suspects.len() {
        0 => {}
        1 => suspects.push(UNNAMED_ACCOUNT.to_string()),
        n => suspects.push(format!("{n} ServiceAccounts in other namespaces")),
    }
    match all.len() {
        0 if patchers.cluster_bindings => " No other ServiceAccount is granted patch on them by a role naming their resource (grants through wildcards, such as cluster-admin's, are not counted).".to_string(),
        0 => {
            let namespaces: Vec<String> = conflict::places(disputed)
                .into_iter()
                .map(|(_, ns)| ns)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            format!(
                " Its Deployment is outside what this audit may read, and no RoleBinding of namespace {} grants another ServiceAccount patch on them (ClusterRoleBindings, cluster-scoped, are read only with --allow-cross-namespace): it cannot be named.",
                listed(&namespaces, ", ", MAX_LISTED)
            )
        }
        1 => format!(
            " RBAC lets one other ServiceAccount patch them, so the other operator likely runs as it: {}.",
            suspects[0]
        ),
        n => format!(
            " RBAC lets {n} other ServiceAccounts patch them, and the other operator likely runs as one of them: {}.",
            listed(&suspects, ", ", NAMED_ACCOUNTS)
        ),
    }
}

#[cfg(test)]
mod tests;

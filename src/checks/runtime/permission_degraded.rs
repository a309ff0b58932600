//! `runtime.permission-degraded`: kopf may not watch some resources (`Not enough
//! permissions to watch for resources`), so their changes go unnoticed.

use super::{first_of, logs};
use crate::catalog::CheckId;
use crate::checks::{Cause, LiveInput, Raised};
use crate::model::evidence::{KopfEvidence, LogEvidence};
use crate::model::needs::{CRD_GROUP, CRD_RESOURCE};
use kopf_log::{EventKind, PermissionScope};
use std::collections::BTreeSet;

/// The first such line, with the refusals that explain it: decided from the log, when
/// it was read, and the RBAC answers.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    let Some(logs) = logs(input) else {
        return Vec::new();
    };
    decide(input.target.name(), input.kopf, logs)
        .into_iter()
        .collect()
}

/// `runtime.permission-degraded`: `Not enough permissions to watch for resources`. kopf
/// logs it when its watch of CRDs is refused (kopf 1.45 `_core/reactor/observation.py`
/// `resource_observer`, a list then a watch of customresourcedefinitions), so its causes
/// are the refusals of list and watch on CRDs at cluster scope that the RBAC answers or
/// the log show: `rbac.crd-scan` reports the same cause with the rule to add, and one
/// finding is kept (evaluate keeps one per cause).
pub(super) fn decide(target: &str, kopf: &KopfEvidence, logs: &LogEvidence) -> Option<Raised> {
    let finding = first_of(
        target,
        logs,
        CheckId::RuntimePermissionDegraded,
        |k| {
            matches!(
                k,
                EventKind::PermissionDegraded {
                    what: PermissionScope::Watch
                }
            )
        },
        "kopf may not watch some resources, so their changes are not noticed: grant list and watch on them (see the rbac findings).",
    )?;
    Some(Raised {
        finding,
        causes: crd_watch_denials(kopf, logs),
    })
}

/// The refusals of list or watch on CRDs at cluster scope: those the API server answers
/// for the operator's ServiceAccount (the `rbac.crd-scan` need), and those its log
/// shows.
fn crd_watch_denials(kopf: &KopfEvidence, logs: &LogEvidence) -> Vec<Cause> {
    let answered = kopf.rbac.iter().flat_map(|rbac| {
        rbac.needs
            .iter()
            .filter(|need| need.check == CheckId::RbacCrdScan)
            .flat_map(|need| need.verbs.iter().map(|(verb, _)| need.permission(*verb)))
            .filter(|p| rbac.allowed(p) == Some(false))
            .map(|p| Cause::denied(&p))
    });
    let logged = logs
        .all_records()
        .filter_map(|r| r.forbidden.as_ref().and_then(Cause::from_log))
        .filter(|cause| {
            let Cause::Denied {
                verb,
                group,
                resource,
                namespace,
            } = cause;
            matches!(verb.as_str(), "list" | "watch")
                && group == CRD_GROUP
                && resource == CRD_RESOURCE
                && namespace.is_none()
        });
    let causes: BTreeSet<Cause> = answered.chain(logged).collect();
    causes.into_iter().collect()
}

//! The gather phase: API I/O only. Targets and pods come from the shared watch caches
//! (or one list each in the CLI); the previous container's log is read only for pods
//! that restarted.

pub mod handled;
pub mod rbac;

use crate::api::{AuditTarget, KopfAuditSpec};
use crate::checks::workload::CRASH_QUOTE_LINES;
use crate::conditions::Reason;
use crate::evaluate::Outcome;
use crate::evidence::{Evidence, Gathered, PreviousLog, TargetEvidence};
use crate::kopf_mode::{KopfRun, Scope};

pub mod events;
pub mod logs;
pub mod objects;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use kube::core::{Selector, SelectorExt};
use kube::{Client, ResourceExt};
use std::collections::BTreeMap;

/// Why gathering failed as a whole (a forbidden read of one area is not an error: that
/// area becomes `Unknown`).
#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    /// The target's label selector cannot be turned into a query.
    #[error("spec.target.selector is invalid: {0}")]
    InvalidSelector(String),
    /// An API call failed.
    #[error("{what}: {source}")]
    Api {
        /// Which read failed.
        what: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

/// How many bytes of a previous container's log to read for a crash-loop quote.
const PREVIOUS_LOG_BYTES: i64 = 16 * 1024;

/// The namespace a KopfAudit's target lives in, and whether the auditor may go there.
pub fn target_namespace<'a>(
    target: &'a AuditTarget,
    audit_namespace: &'a str,
    allow_cross_namespace: bool,
) -> Result<&'a str, (Reason, String)> {
    let ns = target.namespace.as_deref().unwrap_or(audit_namespace);
    if ns != audit_namespace && !allow_cross_namespace {
        return Err((
            Reason::CrossNamespaceRefused,
            format!(
                "spec.target.namespace is {ns:?} but this KopfAudit lives in {audit_namespace:?}: the auditor only audits a KopfAudit's own namespace unless it is started with --allow-cross-namespace. Move the KopfAudit into {ns:?}."
            ),
        ));
    }
    Ok(ns)
}

/// Picks the target Deployments among the candidates of the target's namespace.
pub fn select_targets(
    target: &AuditTarget,
    namespace: &str,
    candidates: &[Deployment],
) -> Result<Vec<Deployment>, GatherError> {
    let in_ns = candidates
        .iter()
        .filter(|d| d.metadata.namespace.as_deref() == Some(namespace));
    if let Some(name) = &target.deployment {
        return Ok(in_ns
            .filter(|d| d.metadata.name.as_ref() == Some(name))
            .cloned()
            .collect());
    }
    let Some(selector) = &target.selector else {
        return Ok(Vec::new());
    };
    let selector = Selector::try_from(selector.clone())
        .map_err(|e| GatherError::InvalidSelector(e.to_string()))?;
    let mut found: Vec<Deployment> = in_ns
        .filter(|d| selector.matches(d.labels()))
        .cloned()
        .collect();
    found.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(found)
}

/// The pods a Deployment owns, matched by its selector.
pub fn pods_of(deployment: &Deployment, pods: &[Pod]) -> Vec<Pod> {
    let Ok(selector) = Selector::try_from(deployment.spec.selector.clone()) else {
        return Vec::new();
    };
    let ns = deployment.metadata.namespace.as_deref();
    let mut found: Vec<Pod> = pods
        .iter()
        .filter(|p| p.metadata.namespace.as_deref() == ns && selector.matches(p.labels()))
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect();
    found.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    found
}

/// The message for a target that matches nothing.
pub fn target_not_found(target: &AuditTarget, namespace: &str) -> (Reason, String) {
    let what = match (&target.deployment, &target.selector) {
        (Some(name), _) => format!("Deployment {namespace}/{name} does not exist"),
        _ => format!("no Deployment in {namespace} matches spec.target.selector"),
    };
    (
        Reason::TargetNotFound,
        format!("{what}: create it, or fix spec.target."),
    )
}

/// Gathers the evidence for an audit from candidate Deployments and pods (from caches
/// or lists), reading only what the caches cannot hold (previous logs).
pub async fn gather(
    client: &Client,
    spec: &KopfAuditSpec,
    audit_namespace: &str,
    allow_cross_namespace: bool,
    deployments: &[Deployment],
    pods: &[Pod],
) -> Result<Outcome, GatherError> {
    if spec.suspend {
        return Ok(Outcome::Suspended);
    }
    let namespace = match target_namespace(&spec.target, audit_namespace, allow_cross_namespace) {
        Ok(ns) => ns,
        Err((reason, message)) => return Ok(Outcome::Stalled { reason, message }),
    };
    let selected = select_targets(&spec.target, namespace, deployments)?;
    if selected.is_empty() {
        let (reason, message) = target_not_found(&spec.target, namespace);
        return Ok(Outcome::Stalled { reason, message });
    }
    let mut targets = Vec::with_capacity(selected.len());
    let rbac_cache = rbac::Cache::default();
    for deployment in selected {
        let target_pods = pods_of(&deployment, pods);
        let mut target =
            TargetEvidence::new(deployment, target_pods, spec.target.container.as_deref());
        target.previous_logs = previous_logs(client, namespace, &target).await;
        target.handled = handled::gather(client, spec, &target, &rbac_cache).await;
        target.rbac = rbac::gather(client, &target, &rbac_cache).await;
        gather_log_areas(client, spec, namespace, &mut target).await;
        targets.push(target);
    }
    Ok(Outcome::Audited(Evidence {
        now: Timestamp::now(),
        targets,
    }))
}

/// The namespaces whose objects and Events a kopf run concerns: the exact names it
/// serves plus its own; `None` (all) for cluster-wide runs and glob patterns.
pub fn concerned_namespaces(run: &KopfRun, own: &str) -> Option<Vec<String>> {
    match &run.scope {
        Scope::Namespaced(names) if !run.scope.has_patterns() => {
            let mut list: Vec<String> = names.clone();
            list.push(own.to_string());
            list.sort();
            list.dedup();
            Some(list)
        }
        _ => None,
    }
}

/// Gathers what the events, persistence and runtime areas read: logs, Events and a
/// sample of handled objects (once the handled resources are known).
async fn gather_log_areas(
    client: &Client,
    spec: &KopfAuditSpec,
    namespace: &str,
    target: &mut TargetEvidence,
) {
    let Some(run) = target.kopf.clone() else {
        return;
    };
    let bounds = logs::LogBounds::from_spec(&spec.logs);
    target.logs = logs::gather(client, namespace, &target.pods, &run.container, bounds).await;
    let concerned = concerned_namespaces(&run, namespace);
    target.events = events::gather(
        client,
        concerned.as_deref(),
        Timestamp::now(),
        bounds.window,
    )
    .await;
    target.objects = match &target.handled {
        Gathered::Ready(handled) => objects::gather(client, handled, concerned.as_deref()).await,
        Gathered::Unavailable(why) => Gathered::Unavailable(why.clone()),
        Gathered::NotGathered => Gathered::NotGathered,
    };
}

/// Reads the head of the previous container's log of every restarted pod.
async fn previous_logs(
    client: &Client,
    namespace: &str,
    target: &TargetEvidence,
) -> BTreeMap<String, PreviousLog> {
    let Some(run) = &target.kopf else {
        return BTreeMap::new();
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut out = BTreeMap::new();
    for pod in &target.pods {
        let restarted = pod
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .any(|cs| cs.name == run.container && cs.restart_count > 0);
        if !restarted {
            continue;
        }
        let params = LogParams {
            container: Some(run.container.clone()),
            previous: true,
            limit_bytes: Some(PREVIOUS_LOG_BYTES),
            ..Default::default()
        };
        let name = pod.name_any();
        let log = match api.logs(&name, &params).await {
            Ok(text) => PreviousLog::Lines(first_lines(&text, CRASH_QUOTE_LINES)),
            Err(kube::Error::Api(s)) if s.code == 403 => {
                PreviousLog::Unreadable(format!("the auditor may not get pods/log in {namespace}"))
            }
            Err(e) => PreviousLog::Unreadable(e.to_string()),
        };
        out.insert(name, log);
    }
    out
}

/// The first non-empty lines of a log, each a short redacted excerpt.
pub fn first_lines(text: &str, count: usize) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(count)
        .map(|l| kopf_log::excerpt(l, 240))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    fn deployment(ns: &str, name: &str, labels: &[(&str, &str)]) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.namespace = Some(ns.into());
        d.metadata.name = Some(name.into());
        d.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        d
    }

    #[test]
    fn selects_by_name_or_selector_within_the_namespace() {
        let all = [
            deployment("a", "op", &[("app", "op")]),
            deployment("b", "op", &[("app", "op")]),
            deployment("a", "web", &[("app", "web")]),
        ];
        let by_name = AuditTarget {
            deployment: Some("op".into()),
            ..Default::default()
        };
        let found = select_targets(&by_name, "a", &all).expect("ok");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].metadata.namespace.as_deref(), Some("a"));
        let by_label = AuditTarget {
            selector: Some(LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let found = select_targets(&by_label, "a", &all).expect("ok");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].metadata.name.as_deref(), Some("web"));
    }

    #[test]
    fn cross_namespace_needs_the_allowance() {
        let t = AuditTarget {
            deployment: Some("op".into()),
            namespace: Some("other".into()),
            ..Default::default()
        };
        let refused = target_namespace(&t, "mine", false).expect_err("refused");
        assert_eq!(refused.0, Reason::CrossNamespaceRefused);
        assert_eq!(target_namespace(&t, "mine", true), Ok("other"));
    }

    #[test]
    fn quotes_first_lines_redacted() {
        let lines = first_lines(
            "\n\nstarting\nAuthorization: Bearer abc.def.ghi\nthird\nfourth",
            3,
        );
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "starting");
        assert!(!lines[1].contains("abc.def.ghi"), "{}", lines[1]);
    }
}

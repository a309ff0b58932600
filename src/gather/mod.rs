//! The gather layer: API I/O only. Targets and pods are read live, a list each (no
//! cache of the cluster's Deployments and pods; the operator reuses an audit's last
//! read while its watches show no change, [`changes`]); then, per kopf target, its
//! logs, the resources it handles, its ServiceAccount's permissions, the Events about
//! its objects and a sample of those objects. A read that fails makes only its area unavailable, with the reason;
//! nothing outside the KopfAudit's namespace is read without the cross-namespace
//! allowance ([`Reach`]).

pub(crate) mod changes;
pub(crate) mod discover;
pub(crate) mod events;
pub(crate) mod files;
pub(crate) mod handled;
pub(crate) mod logs;
pub(crate) mod objects;
pub(crate) mod operators;
mod paged;
use paged::{Paged, Pager};
pub(crate) mod peering;
pub(crate) mod rbac;
pub(crate) mod recognise;
pub(crate) mod webhooks;

use crate::api::{AuditTarget, KopfAuditSpec};
use crate::catalog::ConditionReason;
use crate::model::evidence::{AuditFailure, FailureCause};
use crate::model::evidence::{
    Evidence, KopfEvidence, Observation, Obstacle, Stall, TargetEvidence, Unavailable, ever_ran,
};
use crate::model::kopf_run::{KopfRun, Scope};
use crate::model::names::{name_selector, spec_problem};
use crate::model::rbac::{BindingKind, ServiceAccountRef};
use crate::model::settings::{AuditSettings, LogBounds};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::core::{Selector, SelectorExt};
use kube::{Client, ResourceExt};
use std::collections::BTreeSet;

/// Why the target Deployments or their pods could not be read (the audit then fails
/// and is retried with back-off; the CLI exits with the reason).
#[derive(Debug, thiserror::Error)]
pub(crate) enum GatherError {
    /// Listing Deployments or pods failed.
    #[error("{what}: {source}")]
    List {
        /// Which list failed.
        what: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

impl GatherError {
    /// The audit failure it makes, classified by what the API server answered.
    pub(crate) fn failure(&self) -> AuditFailure {
        let GatherError::List { source, .. } = self;
        let cause = match source {
            kube::Error::Api(status) => match status.code {
                403 => FailureCause::Forbidden,
                429 => FailureCause::Throttled,
                500..=599 => FailureCause::ServerError,
                _ => FailureCause::Other,
            },
            kube::Error::HyperError(_) | kube::Error::Service(_) => FailureCause::Unreachable,
            _ => FailureCause::Other,
        };
        AuditFailure {
            cause,
            message: self.to_string(),
        }
    }
}

/// What audits share across runs: RBAC caches and SubjectAccessReview answers, CRD
/// digests, what was read of the logs and whether it showed kopf. One per operator
/// process; the CLI makes one per run. What a change makes stale is dropped through
/// [`Shared::invalidate`], the one way in from the watches and the sweep.
#[derive(Default)]
pub(crate) struct Shared {
    /// RBAC objects, SubjectAccessReview answers, CRDs.
    pub(crate) rbac: rbac::RbacReader,
    /// The logs read so far, per container.
    pub(crate) logs: logs::LogMemory,
    /// Whether the first lines of each container instance's log showed kopf.
    pub(crate) recognitions: recognise::Verdicts,
    /// The pages of sampled objects the process may hold at once.
    pub(crate) objects: objects::ObjectPages,
    /// The kopf operators found per searched scope, for `runtime.operator-conflict`.
    pub(crate) operators: operators::OperatorMemory,
    /// What the operator's Deployment and pod watches saw change, per namespace: what
    /// says whether a read of a namespace can be reused (never, in the CLI).
    pub(crate) changes: changes::WatchedChanges,
}

/// What has made part of the [`Shared`] caches stale.
#[derive(Debug)]
pub(crate) enum Invalidation<'a> {
    /// A binding scoped `scope` that reaches `account` changed: the account's
    /// SubjectAccessReview answers that binding could alter.
    Grants {
        /// The ServiceAccount the binding reaches (or reached).
        account: &'a ServiceAccountRef,
        /// Where the binding grants.
        scope: &'a BindingKind,
    },
    /// Time passed: log digests, kopf verdicts and CRD digests unused or read before
    /// then, by their own horizons.
    UnusedSince(Timestamp),
}

impl Shared {
    /// Drops what `what` made stale.
    pub(crate) fn invalidate(&self, what: Invalidation<'_>) {
        match what {
            Invalidation::Grants { account, scope } => self.rbac.forget(account, scope),
            Invalidation::UnusedSince(now) => {
                self.logs.forget_unused(now);
                self.recognitions.forget_unused(now);
                self.rbac.forget_stale_crds();
                self.operators.forget_stale();
            }
        }
    }
}

/// Which namespaces an audit may read: its own, or any with the cross-namespace
/// allowance. Cluster-scoped objects count as outside every namespace.
#[derive(Clone, Debug)]
pub(crate) struct Reach {
    /// The KopfAudit's namespace.
    pub(crate) own: String,
    /// `--allow-cross-namespace`.
    pub(crate) cross_namespace: bool,
    /// The KopfAudit (`namespace/name`) that reads: what it remembers of a log is its
    /// own, read with its own window and limit, so that one audit's short window never
    /// blinds another audit of the same operator.
    pub(crate) reader: String,
}

impl Reach {
    /// Whether objects of `namespace` (`None`: cluster-scoped) may be read.
    pub(crate) fn may_read(&self, namespace: Option<&str>) -> bool {
        self.cross_namespace || namespace == Some(self.own.as_str())
    }

    /// The obstacle for an area that would need what lies beyond.
    pub(crate) fn outside(&self, what: &str) -> Unavailable {
        Unavailable::new(
            Obstacle::OutsideNamespace,
            format!(
                "This area needs {what}, outside the KopfAudit's namespace {}: the auditor reads other namespaces only when started with --allow-cross-namespace (Helm value allowCrossNamespace), so that a tenant cannot read another namespace through its KopfAudit. A platform team can grant it (see docs/security/tenancy.md), or audit the operator with `kopf-audit check` and its own credentials.",
                self.own
            ),
        )
    }
}

/// The namespaces a read covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Namespaces {
    /// Every namespace (a cluster-wide operator, or `-n` patterns).
    All,
    /// Exactly these.
    Only(BTreeSet<String>),
}

impl Namespaces {
    /// The namespaces kopf serves in this run (`All` when it uses patterns or serves
    /// every namespace); when the scope is unknown, the operator's own namespace `own`
    /// and those its log names objects in: the ones it surely serves.
    pub(crate) fn served(run: &KopfRun, own: &str) -> Namespaces {
        let scope = &run.scope;
        if scope.is_cluster_wide() || scope.has_patterns() {
            Namespaces::All
        } else if *scope == Scope::Unknown {
            let mut names = BTreeSet::from([own.to_string()]);
            names.extend(run.served_names());
            Namespaces::Only(names)
        } else {
            Namespaces::Only(run.served_names().into_iter().collect())
        }
    }

    /// Whether the reach covers them all.
    pub(crate) fn within(&self, reach: &Reach) -> bool {
        match self {
            Namespaces::All => reach.cross_namespace,
            Namespaces::Only(list) => list.iter().all(|ns| reach.may_read(Some(ns))),
        }
    }
}

/// Turns a failed read into the area's obstacle: a 403 names the permission to grant the
/// auditor, anything else is a failure of this audit, retried at the next one.
pub(crate) fn obstacle(error: &kube::Error, what: &str, grant: &str) -> Unavailable {
    match error {
        kube::Error::Api(s) if s.code == 403 => Unavailable::new(
            Obstacle::Forbidden,
            format!(
                "The auditor may not {what}: grant it {grant} (see docs/security/rbac.md); the other areas are audited as usual."
            ),
        ),
        other => Unavailable::new(Obstacle::Failed, format!("Could not {what}: {other}")),
    }
}

/// The namespace a KopfAudit's target lives in, or why the auditor may not go there.
pub(crate) fn resolve_target_namespace<'a>(
    target: &'a AuditTarget,
    reach: &'a Reach,
) -> Result<&'a str, Stall> {
    let ns = target.namespace.as_deref().unwrap_or(&reach.own);
    if !reach.may_read(Some(ns)) {
        return Err(Stall {
            reason: ConditionReason::CrossNamespaceRefused,
            message: format!(
                "spec.target.namespace is {ns:?} but this KopfAudit lives in {own:?}: the auditor only audits a KopfAudit's own namespace unless it is started with --allow-cross-namespace. Move the KopfAudit into {ns:?}.",
                own = reach.own
            ),
        });
    }
    Ok(ns)
}

/// What a KopfAudit's spec resolves to before anything is read, decided once per audit:
/// the operator's reconcile and `kopf-audit check` both read candidates and gather from
/// it, and neither decides `suspend` or a stall again.
#[derive(Clone, Debug)]
pub(crate) enum Resolution {
    /// `spec.suspend`: nothing is read, the last results are kept.
    Suspended,
    /// Only a change of the spec can let the audit run: an invalid spec or selector, a
    /// namespace out of reach, no target named.
    Stalled(Stall),
    /// The target to read.
    Target(ResolvedTarget),
}

/// A target that may be read: its namespace and how its Deployments are chosen.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedTarget {
    /// The namespace, within the audit's reach.
    pub(crate) namespace: String,
    /// By name or by label selector.
    pub(crate) select: TargetSelect,
}

/// How the target's Deployments are chosen.
#[derive(Clone, Debug)]
pub(crate) enum TargetSelect {
    /// `spec.target.deployment`.
    Name(String),
    /// `spec.target.selector`, parsed.
    Labels(Selector),
}

impl ResolvedTarget {
    /// The list of the target's Deployments: one request, by name or by selector.
    fn list_params(&self) -> ListParams {
        match &self.select {
            TargetSelect::Name(name) => ListParams::default().fields(&name_selector(name)),
            TargetSelect::Labels(selector) => ListParams::default().labels_from(selector),
        }
    }

    /// The target Deployments among the candidates, sorted by name.
    pub(crate) fn select(&self, candidates: &[Deployment]) -> Vec<Deployment> {
        let mut found: Vec<Deployment> = candidates
            .iter()
            .filter(|d| d.metadata.namespace.as_deref() == Some(self.namespace.as_str()))
            .filter(|d| match &self.select {
                TargetSelect::Name(name) => d.metadata.name.as_ref() == Some(name),
                TargetSelect::Labels(selector) => selector.matches(d.labels()),
            })
            .cloned()
            .collect();
        found.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        found
    }
}

/// Resolves a KopfAudit's spec within its reach.
pub(crate) fn resolve(spec: &KopfAuditSpec, reach: &Reach) -> Resolution {
    if spec.suspend {
        return Resolution::Suspended;
    }
    if let Some(problem) = spec_problem(spec) {
        return Resolution::Stalled(Stall {
            reason: ConditionReason::InvalidSpec,
            message: format!("{problem}. Fix the spec."),
        });
    }
    let target = &spec.target;
    let namespace = match resolve_target_namespace(target, reach) {
        Ok(ns) => ns.to_string(),
        Err(stall) => return Resolution::Stalled(stall),
    };
    let select = match (&target.deployment, &target.selector) {
        (Some(name), _) => TargetSelect::Name(name.clone()),
        (None, Some(selector)) => match Selector::try_from(selector.clone()) {
            Ok(selector) => TargetSelect::Labels(selector),
            Err(e) => {
                return Resolution::Stalled(Stall {
                    reason: ConditionReason::InvalidSpec,
                    message: format!("spec.target.selector is invalid: {e}. Fix the selector."),
                });
            }
        },
        (None, None) => return Resolution::Stalled(target_not_found(target, &namespace)),
    };
    Resolution::Target(ResolvedTarget { namespace, select })
}

/// The pods a Deployment owns, matched by its selector.
pub(crate) fn pods_of(deployment: &Deployment, pods: &[Pod]) -> Vec<Pod> {
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

/// The stall of a target that matches nothing.
fn target_not_found(target: &AuditTarget, namespace: &str) -> Stall {
    let what = match (&target.deployment, &target.selector) {
        (Some(name), _) => format!("Deployment {namespace}/{name} does not exist"),
        _ => format!("no Deployment in {namespace} matches spec.target.selector"),
    };
    Stall {
        reason: ConditionReason::TargetNotFound,
        message: format!("{what}: create it, or fix spec.target."),
    }
}

/// Most bytes of a target's Deployments and pods, as the API server sends them, held
/// for one audit. A kopf operator's Deployment and pods take a few KiB each; a target
/// over this (a selector matching a namespace of fat Deployments, pods with megabytes
/// of environment) is not read further, and the audit stalls with
/// [`ConditionReason::TargetTooLarge`]: what a tenant writes does not grow the auditor.
pub(crate) const TARGET_BYTES: u64 = 16 << 20;

/// Objects per page of the target's lists.
const TARGET_PAGE: u32 = 100;

/// The Deployments a KopfAudit's target names and the pods of each, read live: the
/// operator keeps no cache of the cluster's Deployments and pods (its memory follows
/// what is audited, not the cluster), and the CLI reads the same way.
#[derive(Clone, Debug, Default)]
pub(crate) struct Candidates {
    /// The Deployments the target names (by name or selector), in its namespace.
    pub(crate) deployments: Vec<Deployment>,
    /// The pods their selectors match.
    pub(crate) pods: Vec<Pod>,
    /// Why the target was not read whole: it is over [`TARGET_BYTES`] (then the lists
    /// above are incomplete and nothing is concluded from them).
    pub(crate) too_large: Option<String>,
}

/// Reads the target's Deployments (one paged list by name or by the target's selector)
/// and their pods (one paged list per Deployment, by its selector), at most
/// [`TARGET_BYTES`] in all.
pub(crate) async fn read_candidates(
    client: &Client,
    target: &ResolvedTarget,
) -> Result<Candidates, GatherError> {
    let namespace = target.namespace.as_str();
    let segment = crate::model::names::path_segment(namespace);
    let mut budget = TargetBudget::default();
    let mut candidates = Candidates::default();
    let deployments_path = format!("/apis/apps/v1/namespaces/{segment}/deployments");
    let deployments: Vec<Deployment> = read_listed(
        client,
        deployments_path,
        target.list_params(),
        &mut budget,
        || format!("listing the target Deployments in {namespace}"),
    )
    .await?;
    let pods_path = format!("/api/v1/namespaces/{segment}/pods");
    for deployment in &deployments {
        if budget.over.is_some() {
            break;
        }
        let Ok(selector) = Selector::try_from(deployment.spec.selector.clone()) else {
            continue;
        };
        let params = ListParams::default().labels_from(&selector);
        let pods: Vec<Pod> = read_listed(client, pods_path.clone(), params, &mut budget, || {
            format!(
                "listing the pods of Deployment {namespace}/{}",
                deployment.name_any()
            )
        })
        .await?;
        for mut pod in pods {
            if !candidates
                .pods
                .iter()
                .any(|p| p.metadata.uid == pod.metadata.uid)
            {
                // The checks read a target pod's identity, labels and status: its spec
                // (the template's copy, with volumes and tolerations) is more than half
                // of it, and is not kept between audits.
                pod.spec = None;
                candidates.pods.push(pod);
            }
        }
    }
    candidates.deployments = deployments;
    candidates.too_large = budget.over;
    Ok(candidates)
}

/// What reading a target has spent of [`TARGET_BYTES`], and what went over it.
#[derive(Debug, Default)]
struct TargetBudget {
    /// Bytes read.
    spent: u64,
    /// What went over the budget, said for a person.
    over: Option<String>,
}

/// A paged list of a target's objects, each without its `managedFields` (often a third
/// of a pod: no check reads them, and the objects are kept for the whole audit); stops
/// at the first object or page that takes `budget` over [`TARGET_BYTES`].
async fn read_listed<K>(
    client: &Client,
    path: String,
    params: ListParams,
    budget: &mut TargetBudget,
    what: impl Fn() -> String,
) -> Result<Vec<K>, GatherError>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let mut pager = Pager::new(client, path, params, TARGET_PAGE);
    let mut items = Vec::new();
    let failed = |e: paged::PageError| GatherError::List {
        what: what(),
        source: e.into_kube(),
    };
    while budget.over.is_none() {
        let Some(step) = pager.next::<K>().await.map_err(failed)? else {
            break;
        };
        match step {
            Paged::Items(page) => items.extend(page.into_iter().map(|mut item: K| {
                item.managed_fields_mut().clear();
                item
            })),
            Paged::Over { name, .. } => {
                budget.over = Some(format!(
                    "{} {name} is over the {} MiB the auditor reads of one page",
                    K::kind(&()),
                    paged::PAGE_BYTES >> 20
                ));
            }
        }
        if budget.spent + pager.bytes > TARGET_BYTES && budget.over.is_none() {
            budget.over = Some(format!(
                "{} took the target over the {} MiB the auditor reads for one audit",
                what(),
                TARGET_BYTES >> 20
            ));
        }
    }
    budget.spent += pager.bytes;
    Ok(items)
}

/// A target name whose gathering panics, in tests only: the panic boundary around an
/// audit is tested with it.
#[cfg(test)]
pub(crate) const PANICKING_TARGET: &str = "panics-in-gather";

/// Gathers the evidence for an audit from its resolved target and the candidate
/// Deployments and pods read for it.
pub(crate) async fn gather(
    client: &Client,
    spec: &KopfAuditSpec,
    settings: &AuditSettings,
    resolved: &ResolvedTarget,
    reach: &Reach,
    shared: &Shared,
    candidates: &Candidates,
) -> Observation {
    #[cfg(test)]
    if spec.target.deployment.as_deref() == Some(PANICKING_TARGET) {
        panic!("a panic forced by a test");
    }
    if let Some(why) = &candidates.too_large {
        return Observation::Stalled(Stall {
            reason: ConditionReason::TargetTooLarge,
            message: format!(
                "The target was not read: {why}. Narrow spec.target to the operator's own Deployment, or shrink what its Deployment and pods carry (environment values, annotations)."
            ),
        });
    }
    let selected = resolved.select(&candidates.deployments);
    if selected.is_empty() {
        return Observation::Stalled(target_not_found(&spec.target, &resolved.namespace));
    }
    let mut targets = Vec::with_capacity(selected.len());
    for deployment in selected {
        let target_pods = pods_of(&deployment, &candidates.pods);
        let wanted = spec.target.container.as_deref();
        let mut target = TargetEvidence::new(deployment, target_pods, wanted);
        if target.kopf.is_none() {
            match recognise::recognise(client, &shared.recognitions, &target, wanted).await {
                recognise::Recognised::Kopf(run) => target.kopf = Some(KopfEvidence::unread(*run)),
                recognise::Recognised::NotKopf => {}
                recognise::Recognised::Undetermined(why) => target.undetermined = Some(why),
            }
        }
        if let Some(kopf) = target.kopf.take() {
            target.kopf = Some(
                gather_kopf(
                    client,
                    spec,
                    settings.logs,
                    reach,
                    &target,
                    kopf.run,
                    shared,
                )
                .await,
            );
        }
        targets.push(target);
    }
    Observation::Evidence(Evidence {
        now: Timestamp::now(),
        targets,
    })
}

/// Why a target without a pod that ever ran has no log: an empty log would pass for a
/// quiet one.
fn no_running_pod(target: &TargetEvidence, container: &str) -> Unavailable {
    Unavailable::new(
        Obstacle::NoRunningPod,
        format!(
            "Deployment {} has no pod whose container {container} ever ran ({} pod(s)): there is no log to read, so the checks that read it wait for one. Scale it up, or see why its pods do not start.",
            target.name(),
            target.pods.len()
        ),
    )
}

/// Gathers every kopf area of one target, in the order their evidence builds on each
/// other: the log names handled resources, the handled resources add RBAC needs and say
/// which Events and objects to read.
async fn gather_kopf(
    client: &Client,
    spec: &KopfAuditSpec,
    bounds: LogBounds,
    reach: &Reach,
    target: &TargetEvidence,
    run: KopfRun,
    shared: &Shared,
) -> KopfEvidence {
    let cache = &shared.rbac;
    let logs = if target.pods.iter().any(|p| ever_ran(p, &run.container)) {
        logs::gather(
            client,
            &shared.logs,
            &reach.reader,
            target.namespace(),
            &target.pods,
            &run.container,
            bounds,
        )
        .await
    } else {
        Err(no_running_pod(target, &run.container))
    };
    let handled =
        handled::gather(client, spec, target, &run, logs.as_ref().ok(), reach, cache).await;
    let rbac = rbac::gather(client, target, &run, handled.as_ref().ok(), reach, cache).await;
    let (events, objects) = match &handled {
        Ok(list) => (
            events::gather(
                client,
                &run,
                list,
                target.namespace(),
                reach,
                Timestamp::now(),
                bounds.window,
            )
            .await,
            objects::gather(
                client,
                &run,
                list,
                target.namespace(),
                reach,
                &shared.objects,
            )
            .await,
        ),
        Err(why) => (Err(why.clone()), Err(why.clone())),
    };
    let peering = peering::gather(client, &run, target.namespace(), reach).await;
    let webhooks = webhooks::gather(client, reach).await;
    let own = crate::model::conflict::audited(target, &run);
    let operators = operators::gather(
        client,
        reach,
        shared,
        &own,
        handled.as_deref().ok(),
        objects.as_ref().ok().map(|o| &o.samples[..]),
    )
    .await;
    KopfEvidence {
        run,
        handled,
        rbac,
        logs,
        events,
        objects,
        peering,
        webhooks,
        operators,
        declared_storage: None,
        declared_daemon_stop: None,
    }
}

#[cfg(test)]
mod tests;

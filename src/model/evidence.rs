//! What the gather phase hands to the pure checks: plain data, no clients.
//! Each area's evidence is [`Gathered`]: present, or [`Unavailable`] with a reason a
//! person can act on (the auditor may not read it, it lies outside the KopfAudit's
//! namespace, or the read failed this time).

pub(crate) use super::handled::{CrdInfo, HandledResource, HandledSource};
use super::kopf_run::{KopfRun, Scope, find_kopf, template_containers};
use super::needs::Need;
use super::rbac::{Binding, PeeringCrds, Permission, ServiceAccountRef};
use super::source::{DaemonStop, StateStorage};
use crate::catalog::{ConditionReason, EventType, REPORTING_CONTROLLER};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Pod};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Evidence for one area, or why there is none.
pub(crate) type Gathered<T> = Result<T, Unavailable>;

/// Why an area's evidence could not be gathered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unavailable {
    /// What kind of obstacle it is.
    pub(crate) why: Obstacle,
    /// What a person can act on (e.g. the permission to grant the auditor).
    pub(crate) message: String,
}

/// The kinds of obstacle to gathering an area, each with its own condition reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Obstacle {
    /// The auditor may not read it (a 403): a permission to grant.
    Forbidden,
    /// It lies outside the KopfAudit's namespace and cross-namespace reads are off.
    OutsideNamespace,
    /// The read failed this time (a timeout, a 5xx): retried at the next audit.
    Failed,
    /// There is nothing to read yet: the target has no pod that ever ran, so it has
    /// no log. An empty log would look like a quiet, healthy one.
    NoRunningPod,
    /// The API server could not decide a permission (a SubjectAccessReview answered
    /// with an `evaluationError`): neither granted nor denied, and not remembered.
    Undecided,
    /// `kopf-audit lint` reads files: logs, Events, handled objects and peering exist
    /// only in a running cluster.
    NotInFiles,
}

impl Unavailable {
    /// An obstacle with its message.
    pub(crate) fn new(why: Obstacle, message: impl Into<String>) -> Unavailable {
        Unavailable {
            why,
            message: message.into(),
        }
    }

    /// The condition reason an area reports for it.
    pub(crate) fn reason(&self) -> ConditionReason {
        match self.why {
            Obstacle::Forbidden => ConditionReason::Forbidden,
            Obstacle::OutsideNamespace => ConditionReason::OutsideNamespace,
            Obstacle::Failed => ConditionReason::GatherFailed,
            Obstacle::NoRunningPod => ConditionReason::NoRunningPod,
            Obstacle::Undecided => ConditionReason::AuthorizationUndecided,
            Obstacle::NotInFiles => ConditionReason::NotInFiles,
        }
    }
}

/// `namespace/name`, or `name` for cluster-scoped objects: how every message names an
/// object.
pub(crate) fn qualified(namespace: Option<&str>, name: &str) -> String {
    match namespace.filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// How often a container of a pod restarted (0 when it did not, or is not there).
pub(crate) fn restart_count(pod: &Pod, container: &str) -> i32 {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .find(|cs| cs.name == container)
        .map_or(0, |cs| cs.restart_count)
}

/// Whether a container of a pod restarted (a previous container exists).
pub(crate) fn restarted(pod: &Pod, container: &str) -> bool {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .any(|cs| cs.name == container && cs.restart_count > 0)
}

/// Whether a container of a pod ever ran, so that it has a log to read: it is ready,
/// runs, ended or restarted. A pod that is Pending, or whose container never started,
/// has none.
pub(crate) fn ever_ran(pod: &Pod, container: &str) -> bool {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter(|cs| cs.name == container)
        .any(|cs| {
            let state = cs.state.as_ref();
            cs.ready
                || cs.restart_count > 0
                || cs
                    .last_state
                    .as_ref()
                    .is_some_and(|s| s.terminated.is_some())
                || state.is_some_and(|s| s.running.is_some() || s.terminated.is_some())
        })
}

/// Everything gathered about one target Deployment.
#[derive(Clone, Debug, Default)]
pub(crate) struct TargetEvidence {
    /// The Deployment as the watch cache has it.
    pub(crate) deployment: Deployment,
    /// Its pods (matched by the Deployment's selector).
    pub(crate) pods: Vec<Pod>,
    /// How it runs kopf and what was gathered about that; `None` when no container
    /// runs kopf.
    pub(crate) kopf: Option<KopfEvidence>,
    /// Why it is not known whether the target runs kopf: its command line does not show
    /// kopf and no log could be read to tell. `None` when it is known.
    pub(crate) undetermined: Option<Unavailable>,
}

/// What was gathered about a kopf operator, area by area.
#[derive(Clone, Debug)]
pub(crate) struct KopfEvidence {
    /// The kopf container and how it runs kopf.
    pub(crate) run: KopfRun,
    /// The resources the operator handles (from the spec, or inferred).
    pub(crate) handled: Gathered<Vec<HandledResource>>,
    /// What the operator's ServiceAccount may do.
    pub(crate) rbac: Gathered<RbacEvidence>,
    /// The operator's parsed logs in the window.
    pub(crate) logs: Gathered<LogEvidence>,
    /// Events about handled objects in the window.
    pub(crate) events: Gathered<EventEvidence>,
    /// A bounded sample of handled objects.
    pub(crate) objects: Gathered<ObjectEvidence>,
    /// The peering objects the operator takes part in (none when standalone, or when
    /// kopf's peering CRDs are not installed).
    pub(crate) peering: Gathered<Vec<PeeringObject>>,
    /// The admission webhook configurations kopf manages for the handled resources.
    pub(crate) webhooks: Gathered<Vec<WebhookConfig>>,
    /// The other kopf operators in the audit's reach, which may fight this one.
    pub(crate) operators: Gathered<super::operators::Operators>,
    /// Where the operator's source makes kopf keep its state, when its source was read
    /// (lint); live, only the marks on the objects tell.
    pub(crate) declared_storage: Option<StateStorage>,
    /// The daemon kopf waits for longest when the operator exits, when its source was
    /// read (lint) and declares one; live, no source tells.
    pub(crate) declared_daemon_stop: Option<DaemonStop>,
}

impl KopfEvidence {
    /// Evidence of a run whose areas are all still to be gathered (`Failed`, "not read").
    pub(crate) fn unread(run: KopfRun) -> KopfEvidence {
        let unread = || Unavailable::new(Obstacle::Failed, "not read");
        KopfEvidence {
            run,
            handled: Err(unread()),
            rbac: Err(unread()),
            logs: Err(unread()),
            events: Err(unread()),
            objects: Err(unread()),
            peering: Err(unread()),
            webhooks: Err(unread()),
            operators: Err(unread()),
            declared_storage: None,
            declared_daemon_stop: None,
        }
    }
}

impl TargetEvidence {
    /// Evidence for a Deployment and its pods, with the kopf container (the `wanted` one
    /// if named) read from the pod template; the kopf areas start unread.
    pub(crate) fn new(deployment: Deployment, pods: Vec<Pod>, wanted: Option<&str>) -> Self {
        let namespace = deployment.metadata.namespace.as_deref();
        let kopf =
            find_kopf(template_containers(&deployment), wanted, namespace).map(|(_, run)| run);
        TargetEvidence {
            kopf: kopf.map(KopfEvidence::unread),
            undetermined: None,
            deployment,
            pods,
        }
    }

    /// The Deployment's name.
    pub(crate) fn name(&self) -> &str {
        self.deployment.metadata.name.as_deref().unwrap_or("")
    }

    /// The Deployment's namespace: the operator's own namespace.
    pub(crate) fn namespace(&self) -> &str {
        self.deployment.metadata.namespace.as_deref().unwrap_or("")
    }

    /// The ServiceAccount the pods run as (`default` when the template names none).
    pub(crate) fn service_account(&self) -> ServiceAccountRef {
        ServiceAccountRef::of_deployment(&self.deployment)
    }

    /// The container that runs kopf.
    pub(crate) fn kopf_container(&self) -> Option<&Container> {
        let run = &self.kopf.as_ref()?.run;
        self.deployment
            .spec
            .template
            .spec
            .as_ref()?
            .containers
            .iter()
            .find(|c| c.name == run.container)
    }
}

/// The operator's logs in the window, parsed.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogEvidence {
    /// Records of the current containers' logs, oldest first.
    pub(crate) records: Vec<kopf_log::Record>,
    /// The previous container's log of every restarted pod, by pod name.
    pub(crate) previous: BTreeMap<String, Vec<kopf_log::Record>>,
    /// The end of each previous container's log after kopf's last line, when it has
    /// lines that are not kopf's (a Python traceback printed before kopf logged
    /// anything, an ImportError of the operator's module), by pod name; bounded.
    pub(crate) previous_tail: BTreeMap<String, Vec<kopf_log::Record>>,
    /// Line counts, for `runtime.unparsed-logs`.
    pub(crate) stats: kopf_log::Stats,
    /// How often each handler succeeded and each cause was processed per object in
    /// the current containers' logs of the window (routine lines, not kept as
    /// records), for `runtime.handler-loop`.
    pub(crate) tally: kopf_log::Tally,
    /// The byte cap cut the log: the window was not fully read.
    pub(crate) truncated: bool,
    /// Distinct records of the window that were read but not kept (past the bound of
    /// what one read or one container's digest keeps, or of the KopfAudit's log
    /// budget): the log-based checks saw part of the window, so an absent finding is
    /// not a resolved one.
    pub(crate) dropped: usize,
    /// What the log's wording says of kopf's version (every read of it, narrowed).
    pub(crate) version: kopf_log::VersionRange,
}

impl LogEvidence {
    /// All records, the current containers' first, then the previous containers'.
    pub(crate) fn all_records(&self) -> impl Iterator<Item = &kopf_log::Record> {
        self.records.iter().chain(self.previous.values().flatten())
    }
}

/// Who posted an Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reporter {
    /// kopf (`source.component`/`reportingComponent` `kopf`).
    Kopf,
    /// kopf-audit itself: never evidence against an audited operator.
    Auditor,
    /// Anything else (kubelet, other controllers), as written.
    Other(String),
}

impl Reporter {
    /// Reads an Event's `source.component` / `reportingComponent` / `reportingController`.
    pub(crate) fn parse(component: &str) -> Reporter {
        match component {
            "kopf" => Reporter::Kopf,
            REPORTING_CONTROLLER => Reporter::Auditor,
            other => Reporter::Other(other.to_string()),
        }
    }
}

/// An Event about an object (core/v1, flattened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EventRecord {
    /// The involved object's API group (empty for core).
    pub(crate) group: String,
    /// The involved object's kind.
    pub(crate) kind: String,
    /// The involved object's namespace (empty for cluster-scoped objects).
    pub(crate) object_namespace: String,
    /// Where the Event of a cluster-scoped object was filed (kopf writes it into
    /// `involvedObject.namespace`); empty otherwise.
    pub(crate) filed_in: String,
    /// The involved object's name.
    pub(crate) name: String,
    /// The involved object's uid.
    pub(crate) uid: String,
    /// `Normal`, `Warning`, `Error`, `Debug`...
    pub(crate) type_: EventType,
    /// The reason.
    pub(crate) reason: String,
    /// The message.
    pub(crate) message: String,
    /// Who posted it.
    pub(crate) reporter: Reporter,
    /// How many times the API aggregated it (kopf never does: always 1).
    pub(crate) count: u32,
    /// When it was posted (first/last timestamp or eventTime).
    pub(crate) time: Option<Timestamp>,
}

impl EventRecord {
    /// `namespace/name` of the involved object.
    pub(crate) fn object(&self) -> String {
        qualified(Some(&self.object_namespace), &self.name)
    }

    /// The Event as evidence about the operator, if it is: about an object of a handled
    /// resource in a namespace kopf serves (or a cluster-scoped handled object), and not
    /// posted by kopf-audit. kopf files the Events of a cluster-scoped object in the
    /// namespace of its login (its own, or `default`: `homes`) and writes that namespace
    /// into `involvedObject` (kopf 1.45 `_cogs/clients/events.py`); such a record is
    /// normalized to no namespace.
    pub(crate) fn about_handled(
        mut self,
        handled: &[HandledResource],
        scope: &Scope,
        homes: &[&str],
    ) -> Option<EventRecord> {
        if self.reporter == Reporter::Auditor {
            return None;
        }
        let resource = handled
            .iter()
            .find(|h| h.is_kind(&self.group, &self.kind))?;
        if resource.namespaced {
            let served = !self.object_namespace.is_empty() && scope.serves(&self.object_namespace);
            return served.then_some(self);
        }
        if self.object_namespace.is_empty() || homes.contains(&self.object_namespace.as_str()) {
            self.filed_in = std::mem::take(&mut self.object_namespace);
            return Some(self);
        }
        None
    }
}

/// The API group of an `apiVersion` (`group/version`, or `v1` for core).
pub(crate) fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The Events read for one target: about its handled objects, posted by kopf or others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EventEvidence {
    /// The Events, within the window.
    pub(crate) events: Vec<EventRecord>,
    /// The read stopped at its bound: older Events were not read.
    pub(crate) truncated: bool,
    /// Namespaces where kopf may have filed Events of cluster-scoped objects that were
    /// not read, and why (`default`, where kopf files them when its login names no
    /// namespace: outside the KopfAudit's namespace without the cross-namespace
    /// allowance, or refused to the auditor).
    pub(crate) unread: BTreeMap<String, Unavailable>,
}

/// The sample of handled objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ObjectEvidence {
    /// The objects read, reduced.
    pub(crate) samples: Vec<ObjectSample>,
    /// Objects listed but not read (`namespace/name`): their JSON's shape would cost
    /// more than the parse budget of one object, or nests too deep
    /// (`model::shape`). Nothing is concluded from them, so the areas that read the
    /// objects saw part of them.
    pub(crate) over_budget: Vec<String>,
}

/// One handled object, reduced to what the persistence checks read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ObjectSample {
    /// Index into the target's handled resources.
    pub(crate) resource: usize,
    /// Namespace (empty for cluster-scoped).
    pub(crate) namespace: String,
    /// Name.
    pub(crate) name: String,
    /// Annotation keys, with the byte size of key plus value.
    pub(crate) annotations: BTreeMap<String, usize>,
    /// Finalizers.
    pub(crate) finalizers: Vec<String>,
    /// When deletion was requested, if it was.
    pub(crate) deletion_timestamp: Option<Timestamp>,
    /// Keys under `status.kopf` (kopf's status storage), if any.
    pub(crate) status_kopf_keys: Vec<String>,
    /// Whether kopf handled the object's last change, as far as can be seen.
    pub(crate) handling: Handling,
}

/// What an object shows of whether kopf handled its last change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Handling {
    /// kopf stored a diff-base (annotation or status).
    pub(crate) diffbase: bool,
    /// Its essence differs from the stored diff-base: a change kopf has not handled.
    pub(crate) differs: bool,
    /// kopf's progress annotations (or status) are on it: handling is under way.
    pub(crate) in_progress: bool,
    /// When a manager other than kopf last changed it (`metadata.managedFields`).
    pub(crate) changed_by_others: Option<Timestamp>,
    /// When kopf last changed it (manager `kopf`, from its User-Agent `kopf/<version>`).
    pub(crate) changed_by_kopf: Option<Timestamp>,
}

impl ObjectSample {
    /// `namespace/name`.
    pub(crate) fn qualified_name(&self) -> String {
        qualified(Some(&self.namespace), &self.name)
    }
}

/// The RBAC evidence of one target (filled by the RBAC gatherer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RbacEvidence {
    /// The ServiceAccount asked about.
    pub(crate) service_account: ServiceAccountRef,
    /// The API server's answer to every permission the checks need (true: allowed).
    pub(crate) answers: BTreeMap<Permission, bool>,
    /// The bindings that reach the ServiceAccount, sorted, with their roles' rules.
    pub(crate) bindings: Vec<Binding>,
    /// kopf's peering CRDs that exist (read only when peering is not `--standalone`).
    pub(crate) peering_crds: PeeringCrds,
    /// What kopf needs in this run mode: what was asked.
    pub(crate) needs: Vec<Need>,
    /// RoleBindings of these namespaces were not read (outside the KopfAudit's
    /// namespace without the cross-namespace allowance).
    pub(crate) unread_namespaces: BTreeSet<String>,
}

impl RbacEvidence {
    /// The answer for a permission; `None` when it was not asked.
    pub(crate) fn allowed(&self, permission: &Permission) -> Option<bool> {
        self.answers.get(permission).copied()
    }
}

/// Why an audit could not complete: retried with back-off, its last results kept. The
/// cause is the `reason` label of the `audit_failures` metric, so that a dashboard tells
/// a refused read from an overloaded API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AuditFailure {
    /// What kind of failure it was.
    pub(crate) cause: FailureCause,
    /// What failed, with the API server's or the client's words.
    pub(crate) message: String,
}

/// The kinds of audit failure, by what the API server (or the connection) answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FailureCause {
    /// 403: the auditor may not read the target's Deployments or pods.
    Forbidden,
    /// 429: API Priority and Fairness or a max-inflight limit throttled the auditor.
    Throttled,
    /// 5xx: the API server failed.
    ServerError,
    /// No answer: a timeout, a refused or broken connection.
    Unreachable,
    /// Anything else (an unexpected answer, a body that did not parse).
    Other,
}

impl FailureCause {
    /// Every cause.
    pub(crate) const ALL: [FailureCause; 5] = [
        FailureCause::Forbidden,
        FailureCause::Throttled,
        FailureCause::ServerError,
        FailureCause::Unreachable,
        FailureCause::Other,
    ];

    /// The `reason` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailureCause::Forbidden => "forbidden",
            FailureCause::Throttled => "throttled",
            FailureCause::ServerError => "server_error",
            FailureCause::Unreachable => "unreachable",
            FailureCause::Other => "other",
        }
    }
}

impl fmt::Display for AuditFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The clock and the target set of one audit.
#[derive(Clone, Debug)]
pub(crate) struct Evidence {
    /// When the evidence was gathered.
    pub(crate) now: Timestamp,
    /// One entry per target Deployment.
    pub(crate) targets: Vec<TargetEvidence>,
}

/// Why an audit cannot run until its spec or its target changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stall {
    /// `TargetNotFound`, `TargetTooLarge`, `CrossNamespaceRefused` or `InvalidSpec`.
    pub(crate) reason: ConditionReason,
    /// What a person can act on.
    pub(crate) message: String,
}

/// What gathering found: evidence to evaluate, a reason the audit cannot run, or that
/// it is suspended.
#[derive(Clone, Debug)]
pub(crate) enum Observation {
    /// The evidence of every target.
    Evidence(Evidence),
    /// Only a change of the spec or the target can let the audit run.
    Stalled(Stall),
    /// `spec.suspend` is set.
    Suspended,
}

impl fmt::Display for Obstacle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Obstacle::Forbidden => "forbidden",
            Obstacle::OutsideNamespace => "outside the namespace",
            Obstacle::Failed => "failed",
            Obstacle::NoRunningPod => "no running pod",
            Obstacle::Undecided => "undecided",
            Obstacle::NotInFiles => "not in files",
        })
    }
}

/// One `KopfPeering` (namespaced) or `ClusterKopfPeering`: kopf's operators that share
/// it see each other in its `status` and pause for higher or equal priorities (kopf
/// 1.38-1.45 `_core/engines/peering.py`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PeeringObject {
    /// Its namespace (`None` for a `ClusterKopfPeering`).
    pub(crate) namespace: Option<String>,
    /// Its name (the operator's `--peering`, `default` otherwise).
    pub(crate) name: String,
    /// The peers in its status.
    pub(crate) peers: Vec<Peer>,
}

/// One entry of a peering object's status: `{id: {priority, lifetime, lastseen}}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Peer {
    /// The identity: `POD_ID` if set, else `user@host/YYYYmmddHHMMSS/xyz`, or
    /// `user@host` for `kopf freeze` (kopf `detect_own_id`).
    pub(crate) id: String,
    /// Its peering priority (666 with `--dev`; 0 by default; 100 for `kopf freeze`).
    pub(crate) priority: i64,
    /// How long after `lastseen` it counts as alive, in seconds (kopf: 60).
    pub(crate) lifetime_seconds: i64,
    /// When it last renewed its entry.
    pub(crate) lastseen: Option<Timestamp>,
}

impl Peer {
    /// Whether kopf counts it as alive at `now` (`lastseen + lifetime > now`). Both
    /// come from a peering object's status, which anyone who may patch it writes: a sum
    /// past the end of time is alive for ever, one before its start never was.
    pub(crate) fn alive_at(&self, now: Timestamp) -> bool {
        let Some(seen) = self.lastseen else {
            return false;
        };
        match seen.checked_add(jiff::SignedDuration::from_secs(self.lifetime_seconds)) {
            Ok(until) => until > now,
            Err(_) => self.lifetime_seconds > 0,
        }
    }
}

/// Which kind of admission webhook configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum WebhookKind {
    /// `ValidatingWebhookConfiguration` (`@kopf.on.validate`).
    Validating,
    /// `MutatingWebhookConfiguration` (`@kopf.on.mutate`).
    Mutating,
}

impl WebhookKind {
    /// The Kubernetes kind.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WebhookKind::Validating => "ValidatingWebhookConfiguration",
            WebhookKind::Mutating => "MutatingWebhookConfiguration",
        }
    }
}

/// An admission webhook configuration last written by kopf (field manager `kopf`),
/// reduced to what decides its blast radius.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WebhookConfig {
    /// Validating or mutating.
    pub(crate) kind: WebhookKind,
    /// Its name (kopf's `settings.admission.managed`).
    pub(crate) name: String,
    /// Its webhooks.
    pub(crate) webhooks: Vec<Webhook>,
}

/// The host the API server verifies a webhook server's certificate for (Kubernetes
/// `k8s.io/apiserver/pkg/util/webhook`): the host of `clientConfig.url` (an IPv6
/// address without its brackets), else `<name>.<namespace>.svc` of
/// `clientConfig.service`. `None` when neither gives one.
pub(crate) fn webhook_host(url: Option<&str>, service: Option<(&str, &str)>) -> Option<String> {
    if let Some(url) = url {
        let uri = url.parse::<http::Uri>().ok()?;
        let host = uri.host()?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        return (!host.is_empty()).then(|| host.to_ascii_lowercase());
    }
    let (name, namespace) = service?;
    Some(format!("{name}.{namespace}.svc"))
}

/// One webhook of a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Webhook {
    /// Its name (`<handler id>.<configuration name>`).
    pub(crate) name: String,
    /// `failurePolicy: Fail` (kopf's default unless `ignore_failures=True`).
    pub(crate) fails_closed: bool,
    /// A namespaceSelector that leaves kube-system out (kopf never sets one).
    pub(crate) spares_kube_system: bool,
    /// `clientConfig.url`, if the webhook calls a URL rather than a Service.
    pub(crate) url: Option<String>,
    /// `clientConfig.service` namespace, if it calls a Service.
    pub(crate) service_namespace: Option<String>,
    /// The host the API server verifies the webhook server's certificate for: the URL's
    /// host, or `<service>.<namespace>.svc` ([`webhook_host`]).
    pub(crate) host: Option<String>,
    /// `(apiGroup, resource)` pairs of its rules, subresources stripped.
    pub(crate) resources: Vec<(String, String)>,
    /// `clientConfig.caBundle`, read within bounds (`runtime.webhook-certificate`).
    pub(crate) ca_bundle: super::ca_bundle::CaBundle,
}

//! The check catalogue: every check ID, its area and default severity, defined once.
//!
//! The IDs are public API (status, metrics labels, exemption annotations, CLI output):
//! add checks freely, rename none.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How bad a finding is; ordered so that `Error > Warning > Info`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing, no action required.
    Info,
    /// A convention is violated and will bite.
    Warning,
    /// The operator is broken or will break.
    Error,
}

impl Severity {
    /// The lowercase word used in status, metrics and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The five condition areas a check belongs to; each has its own condition type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Area {
    /// The target Deployment and its pods.
    Workload,
    /// What the operator's ServiceAccount may do.
    Rbac,
    /// How the operator surfaces state as Events.
    Events,
    /// What kopf leaves on handled objects and their CRDs.
    Persistence,
    /// What the operator's logs say about its own health.
    Runtime,
    /// What only the operator's source shows (`kopf-audit lint`); no condition reports
    /// it, as the live auditor reads no source.
    Source,
}

impl Area {
    /// Every area, in the order conditions are listed.
    pub const ALL: [Area; 5] = [
        Area::Workload,
        Area::Rbac,
        Area::Events,
        Area::Persistence,
        Area::Runtime,
    ];

    /// The areas only `kopf-audit lint` reports.
    pub const LINT_ONLY: [Area; 1] = [Area::Source];

    /// The prefix of this area's check IDs (`workload.`, `rbac.`, ...).
    pub fn prefix(self) -> &'static str {
        match self {
            Area::Workload => "workload",
            Area::Rbac => "rbac",
            Area::Events => "events",
            Area::Persistence => "persistence",
            Area::Runtime => "runtime",
            Area::Source => "source",
        }
    }
}

macro_rules! define_checks {
    ($( $variant:ident = $id:literal, $area:ident, $severity:ident, $summary:literal; )*) => {
        /// A stable check identifier, serialized as its dotted ID (`rbac.events`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        pub enum CheckId {
            $(
                #[doc = $summary]
                #[serde(rename = $id)]
                $variant,
            )*
        }

        impl CheckId {
            /// Every check, in catalogue order.
            pub const ALL: &'static [CheckId] = &[$(CheckId::$variant),*];

            /// The dotted ID, as it appears in status, metrics and annotations.
            pub fn as_str(self) -> &'static str {
                match self { $(CheckId::$variant => $id,)* }
            }

            /// The condition area the check reports into.
            pub fn area(self) -> Area {
                match self { $(CheckId::$variant => Area::$area,)* }
            }

            /// The severity used unless a finding says otherwise or the KopfAudit overrides it.
            pub fn default_severity(self) -> Severity {
                match self { $(CheckId::$variant => Severity::$severity,)* }
            }

            /// One line on what the check looks for, for documentation and the CLI.
            pub fn summary(self) -> &'static str {
                match self { $(CheckId::$variant => $summary,)* }
            }
        }
    };
}

define_checks! {
    WorkloadNotKopf = "workload.not-kopf", Workload, Info, "No container of the target runs kopf (`kopf run`, `python -m kopf`).";
    WorkloadMemoryRequest = "workload.memory-request", Workload, Warning, "Memory request missing or below 256Mi, kopf's resting baseline.";
    WorkloadMemoryLimit = "workload.memory-limit", Workload, Warning, "Memory limit missing or below 512Mi (error below 256Mi): OOMKilled under normal watch load.";
    WorkloadCpuLimit = "workload.cpu-limit", Workload, Warning, "A CPU limit is set; CPU is compressible, set only a request.";
    WorkloadCpuRequest = "workload.cpu-request", Workload, Info, "No CPU request.";
    WorkloadOomKilled = "workload.oom-killed", Workload, Error, "A container's current or last state is OOMKilled: raise the memory limit first.";
    WorkloadCrashLoop = "workload.crash-loop", Workload, Error, "CrashLoopBackOff or restarts; quotes the lines of the previous container's log that explain the exit, kopf's or not (a Python traceback at import).";
    WorkloadStandaloneReplicas = "workload.standalone-replicas", Workload, Error, "`--standalone` (peering off) with more than one replica: two operators handle every object.";
    WorkloadLiveness = "workload.liveness", Workload, Warning, "No liveness probe, or it does not hit kopf's `--liveness` endpoint.";
    WorkloadDefaultServiceAccount = "workload.default-service-account", Workload, Warning, "The pod runs as the namespace's `default` ServiceAccount.";
    WorkloadNoScopeFlag = "workload.no-scope-flag", Workload, Warning, "Neither `-A`/`--all-namespaces` nor `-n`/`--namespace` is given: kopf falls back to cluster-wide with a FutureWarning.";
    WorkloadRolloutOverlap = "workload.rollout-overlap", Workload, Warning, "A single-leader kopf Deployment whose rollouts run two instances at once (RollingUpdate with a surge): kopf's docs use `strategy: Recreate`.";
    WorkloadDebugLogging = "workload.debug-logging", Workload, Warning, "kopf runs with `-v`/`--debug`, or DEBUG records dominate the log: it logs whole bodies and patches, secrets included.";
    WorkloadWebhookBlastRadius = "workload.webhook-blast-radius", Workload, Warning, "kopf-managed admission webhooks that fail closed on a single or not-ready operator, reach kube-system, or point at a dev tunnel.";
    WorkloadGracePeriod = "workload.grace-period", Workload, Warning, "A daemon's `cancellation_backoff` + `cancellation_timeout`, which kopf waits for it when the operator exits, is longer than the Deployment's `terminationGracePeriodSeconds` (30 when unset): the kubelet kills the operator while it is still stopping its daemons. Decided from the source (`kopf-audit lint`); live audits cannot read it.";
    RbacCrdScan = "rbac.crd-scan", Rbac, Error, "No list or watch on customresourcedefinitions at cluster scope (kopf never gets a CRD: get is not needed).";
    RbacEvents = "rbac.events", Rbac, Error, "No create on core events in a namespace where the operator must post.";
    RbacEventsPatch = "rbac.events-patch", Rbac, Info, "Events create is granted but patch is not (advice: kopf 1.45 only creates).";
    RbacNamespaces = "rbac.namespaces", Rbac, Error, "Namespaced mode (`-n`) without list and watch on namespaces.";
    RbacPeering = "rbac.peering", Rbac, Error, "Peering is on and get, list, watch or patch is missing on kopf's peering resources.";
    RbacHandledResources = "rbac.handled-resources", Rbac, Error, "A handled resource lacks get, list, watch or patch (or status patch).";
    RbacOverPrivileged = "rbac.over-privileged", Rbac, Warning, "Wildcard verbs or resources, a cluster-admin binding, or cluster-wide read of secrets.";
    EventsSilentFailures = "events.silent-failures", Events, Warning, "Handler failures in the logs, yet the object has no Warning or Error event.";
    EventsLoggingFlood = "events.logging-flood", Events, Warning, "Events with reason Logging and type Normal or Debug on handled objects.";
    EventsSteadyStateSpam = "events.steady-state-spam", Events, Warning, "The same object, reason and message posted 3 or more times in the window.";
    EventsPostFailures = "events.post-failures", Events, Error, "The logs contain `Failed to post an event`.";
    EventsDuplicates = "events.duplicates", Events, Info, "The same failure surfaces as an explicit event and as a Logging event.";
    EventsTruncated = "events.truncated", Events, Info, "Event messages cut at kopf's 1024-character limit.";
    EventsPostingLevel = "events.posting-level", Events, Warning, "kopf posts its log as `Logging` Warning or Error Events but none of its INFO lines, and no Normal Event: settings.posting.level is above INFO, which also drops every `kopf.info()` call (use `kopf.event()`).";
    PersistenceProgressAnnotations = "persistence.progress-annotations", Persistence, Warning, "Handled objects carry kopf.zalando.org/<handler-id> progress annotations.";
    PersistenceDiffbaseAnnotation = "persistence.diffbase-annotation", Persistence, Warning, "Handled objects carry kopf.zalando.org/last-handled-configuration.";
    PersistenceDefaultFinalizer = "persistence.default-finalizer", Persistence, Info, "The finalizer is kopf's default kopf.zalando.org/KopfFinalizerMarker.";
    PersistenceStatusSchema = "persistence.status-schema", Persistence, Warning, "The handled CRD's schema prunes what kopf writes into status: neither status nor status.kopf keeps unknown fields.";
    PersistencePatchInconsistencies = "persistence.patch-inconsistencies", Persistence, Error, "The logs contain `Merge-patching finished with inconsistencies` (warning on a built-in kind, whose status no schema can keep).";
    PersistenceStuckFinalizer = "persistence.stuck-finalizer", Persistence, Error, "A handled object has been deleting for over 10 minutes with a kopf finalizer.";
    PersistenceAnnotationSize = "persistence.annotation-size", Persistence, Warning, "A handled object's annotations approach the 262144-byte limit.";
    PersistenceOrphanedFinalizers = "persistence.orphaned-finalizers", Persistence, Error, "Handled objects carry the operator's finalizer while it has no running instance (error), or live in its own namespace (info): deletions hang.";
    RuntimeHandlerFailures = "runtime.handler-failures", Runtime, Warning, "Handler failures in the window, per handler and object.";
    RuntimeStartupForbidden = "runtime.startup-forbidden", Runtime, Error, "An `is forbidden` line in the logs names a missing verb and resource.";
    RuntimePermissionDegraded = "runtime.permission-degraded", Runtime, Error, "`Not enough permissions to watch for resources`: changes go unnoticed (when rbac.crd-scan names the refused CRD watch, that finding alone is kept).";
    RuntimePeeringConflict = "runtime.peering-conflict", Runtime, Error, "`Possibly conflicting operators with the same priority`.";
    RuntimeUnresolvedResources = "runtime.unresolved-resources", Runtime, Error, "`Unresolved resources cannot be served`: a handled CRD is missing.";
    RuntimeThrottling = "runtime.throttling", Runtime, Error, "`Throttling for N seconds due to an unexpected error`.";
    RuntimeOrphanedDaemons = "runtime.orphaned-daemons", Runtime, Warning, "Daemons did not exit in time and were left orphaned.";
    RuntimeUnparsedLogs = "runtime.unparsed-logs", Runtime, Info, "Most lines in the window match no known kopf log format.";
    RuntimeNotHandling = "runtime.not-handling", Runtime, Error, "A handled object changed long ago and its diff-base still shows the old state while the pod runs: the operator stopped handling.";
    RuntimeDeadWatcher = "runtime.dead-watcher", Runtime, Error, "`Watcher for RES has failed` (or a peering task's): up to kopf 1.44 it is not respawned; the operator is blind to it until a restart.";
    RuntimeKopfVersion = "runtime.kopf-version", Runtime, Info, "The kopf version the log's wording shows (warning below 1.44: a watch can freeze silently without a timeout).";
    RuntimeForeignPeer = "runtime.foreign-peer", Runtime, Error, "The peering object lists live peers that are not the operator's pods (a `--dev` laptop, a higher priority): the operator pauses for them.";
    RuntimeRateLimited = "runtime.rate-limited", Runtime, Warning, "The API server answered the operator with HTTP 429 again and again (API Priority and Fairness, max-inflight): kopf backs off and handling lags (error when a request gave up after its retries). One retried 429, or a server still building its cache (`storage is (re)initializing`), is no finding.";
    RuntimeHandlerLoop = "runtime.handler-loop", Runtime, Warning, "A change handler succeeds on the same object again and again, each time after an update: it patches what kopf diffs, so its own patch is the next change (a loop for ever: API load and a log flood).";
    RuntimeStartupStalled = "runtime.startup-stalled", Runtime, Error, "The operator's pod has been Running for minutes, yet its whole log shows no handler outcome and no handled object carries kopf's marks: kopf never got past its startup (an on.startup handler that never returns, kopf.index with a worker limit below the indexed objects).";
    RuntimeOperatorConflict = "runtime.operator-conflict", Runtime, Error, "Another kopf operator serves the same resource in a namespace this one serves, and no peering keeps them apart (`--standalone`, different peerings, or one cluster-wide and one namespaced), or handled objects carry two kopf operators' diff-bases or finalizers: the two fight over the objects (finalizers added and removed, diff-bases overwritten, handlers re-run for ever).";
    RuntimeCredentialsLost = "runtime.credentials-lost", Runtime, Error, "kopf lost its credentials: the API server refused them (401) and re-authentication gave none it accepts (`Ran out of valid credentials`, or `Re-authentication has failed`), so its watchers stop; the finding names the login handler the log shows.";
    RuntimeApiTlsFailure = "runtime.api-tls-failure", Runtime, Error, "The operator does not trust the API server's certificate (`CERTIFICATE_VERIFY_FAILED`, aiohttp's `ClientConnectorCertificateError`): its requests, watchers and handlers fail; the finding names the host and the failing step the log shows.";
    RuntimeThreadExhaustion = "runtime.thread-exhaustion", Runtime, Error, "`RuntimeError: can't start new thread`: the container may start no more threads (pids or memory limit), and the sync handlers and daemons that kopf runs in its thread pool (`settings.execution.max_workers`) fail.";
    RuntimeWebhookCertificate = "runtime.webhook-certificate", Runtime, Error, "The `caBundle` of a kopf-managed admission webhook expired or is not valid yet, or no longer matches what the operator serves (kopf's self-signed certificate, made at each start, older than every running instance or shared by several; the served certificate not valid for the host the webhook is called at): the API server cannot verify the webhook and every create or update of the handled kind fails. Warning when it expires within 14 days, or when no certificate can be read from it. Decided from the configuration and the pods; the auditor never connects to the webhook.";
    SourceSyntaxError = "source.syntax-error", Source, Error, "A Python file does not parse with current Python syntax: nothing in it was linted, and kopf would not import it.";
    SourceHandlerKwargs = "source.handler-kwargs", Source, Error, "A kopf handler's signature has no `**kwargs`: kopf calls every handler with all its keyword arguments (`fn(**kwargs)`), so each call raises TypeError.";
    SourceBlockingCall = "source.blocking-call", Source, Warning, "A blocking call (time.sleep, requests, subprocess, os.system, the synchronous kubernetes client or pykube, module-level client objects included) in an `async def` handler, or in a function of the repository it calls (followed up to 4 calls deep): it stalls kopf's event loop and every other handler with it.";
    SourceModuleLogger = "source.module-logger", Source, Warning, "A handler logs with a module-level logger (`logging.getLogger`, a `LoggerAdapter` or child of one, structlog, loguru) or the root logger (`logging.info`), itself or, when it logs no other way, through the repository's functions it calls: its records carry no object reference, so kopf never posts them as Events. Use the handler's `logger` keyword argument.";
    SourceSettingsOutsideStartup = "source.settings-outside-startup", Source, Warning, "kopf settings are written outside an `@kopf.on.startup` handler: kopf applies the settings its startup handlers set, before it starts watching.";
    SourcePostingFlood = "source.posting-flood", Source, Warning, "Handlers' log records are posted as Events (kopf before 1.41, or `posting.loggers` on) and `posting.level` is left at INFO: every INFO line of a handler becomes an Event.";
    SourceSilentFailure = "source.silent-failure", Source, Warning, "A handler raises kopf.TemporaryError or kopf.PermanentError (itself, or in a function of the repository it calls, up to 4 calls deep), kopf 1.41+ posts no log record as an Event (`posting.loggers` off), and the handler posts none itself: its failures never reach the object's Events.";
    SourceTimerPosting = "source.timer-posting", Source, Warning, "A timer posts an Event (kopf.event/info/warn) on every tick: the object's Events fill with the same message.";
    SourceIndexWorkerLimit = "source.index-worker-limit", Source, Warning, "`@kopf.index` handlers with `queueing.worker_limit` (`batching` before its rename) set: with more indexed objects than workers, kopf's startup waits for indexing forever (kopf issue 1243).";
    SourceUnfilteredBuiltin = "source.unfiltered-builtin", Source, Warning, "A change handler, timer or daemon on a built-in kind with no labels/annotations/when/field filter: kopf writes its diff-base annotation onto every such object it serves (on Secrets, with their data), or, for a timer or daemon, its finalizer, so their deletion hangs while the operator is down.";
    SourceNoResume = "source.no-resume", Source, Info, "A resource has `@kopf.on.create` or `@kopf.on.update` handlers but no `@kopf.on.resume` (nor an event, timer or daemon handler): objects unchanged since they were last handled are not reconciled when the operator restarts, so a new operator version's desired state never reaches them.";
    SourceSyncDaemonPool = "source.sync-daemon-pool", Source, Warning, "A synchronous `@kopf.daemon` serves every object of its resource (no labels/annotations/when/field filter) while `settings.execution.max_workers` keeps Python's default (min(32, CPUs + 4) threads, shared with every synchronous handler): each such daemon holds a thread for its object's whole life, so with more objects than threads the rest never start.";
    SourceDaemonIgnoresStop = "source.daemon-ignores-stop", Source, Warning, "A daemon loops but never checks its `stopped` flag (an async one without `cancellation_timeout`, which kopf would cancel), or sleeps with `time.sleep`/`asyncio.sleep` instead of `stopped.wait()`: kopf cannot stop it, so deletions hang on its finalizer and the operator's exit waits for the kubelet's kill.";
    SourceWatchTimeouts = "source.watch-timeouts", Source, Info, "A kopf operator whose startup handlers set neither `settings.watching.server_timeout` nor `client_timeout` (warning when every kopf version allowed is before 1.44, which has no bookmarks or inactivity timeout): a watch stream dropped silently by a load balancer or NAT is never restarted.";
}

impl CheckId {
    /// Looks a check up by its dotted ID, for annotations and CLI flags.
    pub fn parse(id: &str) -> Option<CheckId> {
        CheckId::ALL.iter().copied().find(|c| c.as_str() == id)
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_prefixed_by_their_area() {
        let mut seen = std::collections::HashSet::new();
        for check in CheckId::ALL {
            assert!(seen.insert(check.as_str()), "duplicate {check}");
            let prefix = format!("{}.", check.area().prefix());
            assert!(
                check.as_str().starts_with(&prefix),
                "{check} not in {prefix}"
            );
            assert_eq!(CheckId::parse(check.as_str()), Some(*check));
        }
    }

    #[test]
    fn serializes_as_the_dotted_id() {
        let json = serde_json::to_string(&CheckId::RbacEventsPatch).expect("serializes");
        assert_eq!(json, "\"rbac.events-patch\"");
        let back: CheckId = serde_json::from_str("\"workload.oom-killed\"").expect("parses");
        assert_eq!(back, CheckId::WorkloadOomKilled);
    }

    #[test]
    fn released_ids_never_change() {
        // Every ID released so far, copied here so that a rename fails a test: IDs are
        // public API (status, metrics labels, exemption annotations).
        let catalogue = [
            "workload.not-kopf",
            "workload.memory-request",
            "workload.memory-limit",
            "workload.cpu-limit",
            "workload.cpu-request",
            "workload.oom-killed",
            "workload.crash-loop",
            "workload.standalone-replicas",
            "workload.liveness",
            "workload.default-service-account",
            "workload.no-scope-flag",
            "rbac.crd-scan",
            "rbac.events",
            "rbac.events-patch",
            "rbac.namespaces",
            "rbac.peering",
            "rbac.handled-resources",
            "rbac.over-privileged",
            "events.silent-failures",
            "events.logging-flood",
            "events.steady-state-spam",
            "events.post-failures",
            "events.duplicates",
            "events.truncated",
            "persistence.progress-annotations",
            "persistence.diffbase-annotation",
            "persistence.default-finalizer",
            "persistence.status-schema",
            "persistence.patch-inconsistencies",
            "persistence.stuck-finalizer",
            "persistence.annotation-size",
            "runtime.handler-failures",
            "runtime.startup-forbidden",
            "runtime.permission-degraded",
            "runtime.peering-conflict",
            "runtime.unresolved-resources",
            "runtime.throttling",
            "runtime.orphaned-daemons",
            "runtime.unparsed-logs",
            "runtime.rate-limited",
            "runtime.handler-loop",
            "runtime.startup-stalled",
            "events.posting-level",
        ];
        for id in catalogue {
            assert!(CheckId::parse(id).is_some(), "{id} missing");
        }
        assert!(catalogue.len() <= CheckId::ALL.len());
    }
}

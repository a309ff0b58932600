//! Parser and classifier for kopf operator logs.
//!
//! kopf-audit reads the pod logs of Python operators written with
//! [kopf](https://github.com/nolar/kopf) and turns them into typed [`Record`]s:
//! time, level, logger, object reference and a recognised [`EventKind`]
//! (handler outcomes, event-posting failures, RBAC `forbidden` errors,
//! peering, fatal watcher failures, ...). The templates are kopf's own
//! (read from kopf 1.45.2, 1.43.0, 1.39.1 and 1.38.0, `_core/actions/execution.py`,
//! `_cogs/clients/events.py`, `_core/reactor/observation.py` and others).
//!
//! All three `--log-format`s are understood, line by line (a log may mix them,
//! e.g. after a restart with other flags), with the kubelet's `timestamps=true`
//! prefix, ANSI colours, multi-line tracebacks and arbitrary non-kopf noise.
//! The parser never panics and never fails: unknown lines become
//! [`EventKind::Other`] records with `format: None`.
//!
//! ```
//! use kopf_log::{EventKind, Parser, ParserOptions};
//!
//! let mut parser = Parser::new(ParserOptions::default());
//! let mut records = Vec::new();
//! for line in [
//!     "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/name] Handler 'x' failed temporarily: boom",
//!     "[2026-11-30 02:41:56,001] kopf.objects         [INFO    ] [ns/name] Handler 'x' succeeded.",
//! ] {
//!     records.extend(parser.push_line(line.as_bytes()));
//! }
//! records.extend(parser.finish());
//! assert!(matches!(records[0].kind, EventKind::HandlerFailedTemporarily { .. }));
//! assert_eq!(records[1].object.as_ref().map(|o| o.name.as_str()), Some("name"));
//! ```

#![warn(missing_docs)]

/// A deterministic xorshift64 generator, for the unit tests' random inputs.
#[cfg(test)]
pub(crate) fn test_rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Changes `v` at `edits` random places: an element replaced, removed, or
/// inserted (from `alphabet`); for the unit tests that mutate real lines.
#[cfg(test)]
pub(crate) fn test_mutate<T: Copy>(
    v: &mut Vec<T>,
    alphabet: &[T],
    edits: u64,
    next: &mut impl FnMut() -> u64,
) {
    for _ in 0..edits {
        let at = (next() % (v.len() as u64 + 1)) as usize;
        let c = alphabet[(next() % alphabet.len() as u64) as usize];
        match next() % 3 {
            0 if at < v.len() => v[at] = c,
            1 if at < v.len() => {
                v.remove(at);
            }
            _ => v.insert(at, c),
        }
    }
}

mod classify;
mod parser;
mod quick_json;
mod redact;
mod swar;
mod tally;
mod time;
mod version;

pub use classify::{Classification, classify_message, parse_forbidden};
pub use parser::{
    MAX_BUFFERED_LINE_BYTES, Parser, ParserOptions, Records, Routine, RoutineStats, Stats,
    detect_format, records,
};
pub use redact::{MASK, excerpt, is_invisible, plain_text, redact, strip_ansi};
pub use tally::{MAX_TALLIED, Outcome, Tallied, Tally};
pub use time::Timestamp;
pub use version::{KopfVersion, VersionClue, VersionRange, VersionSignal, version_signal};

use serde::Serialize;
use std::fmt;

/// Which of kopf's `--log-format`s a line was written in.
///
/// Exists because the three formats carry different metadata (only `full`
/// has the logger name; only `json` has the object's kind and uid; `plain`
/// has no time or level) and because the checks must give the same findings
/// whatever the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] message` (kopf's default).
    Full,
    /// The message only (with the `[ns/name] ` prefix for object loggers).
    Plain,
    /// One JSON object per line (`message`, `timestamp`, `severity`, `object`, `exc_info`).
    Json,
    /// Python's own logging: `INFO:kopf.objects:message` (`logging.basicConfig()`'s
    /// default) or a custom format with the level next to kopf's logger
    /// (`2026-12-01 10:00:00,000 INFO [kopf.objects] message`): kopf started from
    /// Python (`kopf.run()`) with logging set up by the operator, not by kopf. No object
    /// prefix. Not a `--log-format` value.
    Basic,
}

impl LogFormat {
    /// The value of kopf's `--log-format` flag (`full`, `plain`, `json`), or `basic`
    /// for [`LogFormat::Basic`].
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Full => "full",
            LogFormat::Plain => "plain",
            LogFormat::Json => "json",
            LogFormat::Basic => "basic",
        }
    }

    /// Reads a `--log-format` value (any case); `None` for anything else.
    pub fn parse(value: &str) -> Option<LogFormat> {
        [LogFormat::Full, LogFormat::Plain, LogFormat::Json]
            .into_iter()
            .find(|f| value.eq_ignore_ascii_case(f.as_str()))
    }
}

/// A Python logging level, as kopf writes it.
///
/// Exists so that checks can tell failures (ERROR) from chatter (INFO) and
/// map kopf's levels to Kubernetes event types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// `DEBUG` / JSON `debug` (only with `-v`/`-d`).
    Debug,
    /// `INFO` / JSON `info` (the default level).
    Info,
    /// `WARNING` / JSON `warn`.
    Warning,
    /// `ERROR` / JSON `error`.
    Error,
    /// `CRITICAL` / JSON `fatal`.
    Critical,
}

impl Level {
    /// Parses a level name: Python's `DEBUG`..`CRITICAL` (also padded, as in
    /// `[ERROR   ]`), `WARN`, `FATAL`, any case. `None` for anything else.
    pub fn parse(s: &str) -> Option<Level> {
        let t = s.trim();
        let b = t.as_bytes();
        let eq = |w: &str| b.eq_ignore_ascii_case(w.as_bytes());
        if eq("info") {
            Some(Level::Info)
        } else if eq("error") || eq("err") {
            Some(Level::Error)
        } else if eq("warning") || eq("warn") {
            Some(Level::Warning)
        } else if eq("debug") || eq("trace") {
            Some(Level::Debug)
        } else if eq("critical") || eq("fatal") {
            Some(Level::Critical)
        } else {
            None
        }
    }
}

/// The Kubernetes object a record is about.
///
/// Exists so that checks can correlate log failures with the object's Events
/// (`events.silent-failures`). Text formats give only `[namespace/name]`
/// (or `[name]` for cluster-scoped objects); JSON adds `apiVersion`, `kind` and `uid`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ObjectRef {
    /// The namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's `metadata.name`.
    pub name: String,
    /// The object's kind (JSON format only).
    pub kind: Option<String>,
    /// The object's `metadata.uid` (JSON format only).
    pub uid: Option<String>,
    /// The object's `apiVersion`, `group/version` or `version` for core kinds (JSON
    /// format only).
    pub api_version: Option<String>,
}

/// The kind of kopf handler named in a message: kopf writes
/// `Handler 'id'`, `Timer 'id'`, `Daemon 'id'`, `Activity 'id'`, `Webhook 'id'`
/// or `Indexer 'id'`. Kept because daemons and timers fail differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum HandlerKind {
    /// Resource-changing, -watching and other generic handlers.
    Handler,
    /// `@kopf.timer`.
    Timer,
    /// `@kopf.daemon`.
    Daemon,
    /// `@kopf.on.startup`, `cleanup`, `login`, `probe`.
    Activity,
    /// `@kopf.on.validate` / `mutate`.
    Webhook,
    /// `@kopf.index`.
    Indexer,
}

impl HandlerKind {
    /// The word kopf writes before the handler id.
    pub fn as_str(&self) -> &'static str {
        match self {
            HandlerKind::Handler => "Handler",
            HandlerKind::Timer => "Timer",
            HandlerKind::Daemon => "Daemon",
            HandlerKind::Activity => "Activity",
            HandlerKind::Webhook => "Webhook",
            HandlerKind::Indexer => "Indexer",
        }
    }
}

/// A handler as named in kopf's messages (`Handler 'create_fn'`).
///
/// Exists so that failures can be counted per handler and object
/// (`runtime.handler-failures`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct HandlerRef {
    /// The word before the id.
    pub kind: HandlerKind,
    /// The handler id (e.g. `create_fn`, `create_fn/sub1`), unquoted.
    pub id: String,
}

impl fmt::Display for HandlerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} '{}'", self.kind.as_str(), self.id)
    }
}

/// What kopf does after an arbitrary exception in a handler.
///
/// Exists because `events.silent-failures` and `runtime.handler-failures`
/// weigh a retry loop differently from a final stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExceptionOutcome {
    /// `... and will try again in N seconds:` (1.40+) / `... Will retry.` (older).
    Retry,
    /// `... and will ignore it:` / `... Will ignore.`
    Ignore,
    /// `... and will stop now:` (also `(it would time out/exceed ...)`) / `... Will stop.`
    Stop,
}

/// Which permission kopf found missing and degraded around
/// (`_core/reactor/observation.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PermissionScope {
    /// `Not enough permissions to watch for resources: ...` (changes not noticed).
    Watch,
    /// `Not enough permissions to list namespaces. Falling back to ...`
    ListNamespaces,
    /// `Not enough permissions to watch for namespaces: ...`
    WatchNamespaces,
}

/// One of kopf's guarded background tasks: those whose failure kopf logs as
/// ERROR `{Name} has failed: {error}` (with a traceback) and whose return as
/// WARNING `{Name} has finished unexpectedly.` (`_cogs/aiokits/aiotasks.py`,
/// `guard()`, which capitalises the name: the rest of it is lower-cased).
///
/// The names are the same in kopf 1.38.0, 1.43.0 and 1.45.2:
/// `_core/reactor/running.py` names the operator-wide tasks,
/// `_core/reactor/orchestration.py` those per resource and namespace
/// (`watcher for RES@NS`, `peering keep-alive for NAME@NS`, `peering
/// observer for NAME@NS`; `NS` is `none` for cluster-wide ones).
///
/// Exists so that a check can name what died: up to 1.44 a failed watcher
/// or peering task is not respawned and kopf runs on without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackgroundTask {
    /// `watcher for RES@NS`: the watch-stream of a served resource.
    Watcher,
    /// `peering keep-alive for NAME@NS`: refreshes this operator's entry in a peering object.
    PeeringKeepAlive,
    /// `peering observer for NAME@NS`: watches a peering object for other operators.
    PeeringObserver,
    /// `multidimensional multitasker`: spawns the watchers and peering tasks.
    Multitasker,
    /// `resource observer`: watches CRDs for the resources to serve.
    ResourceObserver,
    /// `namespace observer`: watches namespaces for `-n` patterns.
    NamespaceObserver,
    /// `credentials retriever`: runs the login activities when credentials are needed.
    CredentialsRetriever,
    /// `poster of events`: posts the Kubernetes Events.
    EventPoster,
    /// `health reporter`: serves `--liveness`.
    HealthReporter,
    /// `daemon killer`: stops daemons and timers at exit.
    DaemonKiller,
    /// `admission insights chain`: watches for the admission configurations' changes.
    AdmissionInsights,
    /// `admission validating configuration manager`.
    AdmissionValidatingManager,
    /// `admission mutating configuration manager`.
    AdmissionMutatingManager,
    /// `admission webhook server`.
    AdmissionServer,
    /// `the command`: `kopf freeze`/`resume` and other one-off commands.
    Command,
}

impl BackgroundTask {
    /// The task's name as kopf gives it (lower case; `watcher for`,
    /// `peering keep-alive for`, `peering observer for` are followed by
    /// `RES@NS` or `NAME@NS`).
    pub fn as_str(self) -> &'static str {
        match self {
            BackgroundTask::Watcher => "watcher for",
            BackgroundTask::PeeringKeepAlive => "peering keep-alive for",
            BackgroundTask::PeeringObserver => "peering observer for",
            BackgroundTask::Multitasker => "multidimensional multitasker",
            BackgroundTask::ResourceObserver => "resource observer",
            BackgroundTask::NamespaceObserver => "namespace observer",
            BackgroundTask::CredentialsRetriever => "credentials retriever",
            BackgroundTask::EventPoster => "poster of events",
            BackgroundTask::HealthReporter => "health reporter",
            BackgroundTask::DaemonKiller => "daemon killer",
            BackgroundTask::AdmissionInsights => "admission insights chain",
            BackgroundTask::AdmissionValidatingManager => {
                "admission validating configuration manager"
            }
            BackgroundTask::AdmissionMutatingManager => "admission mutating configuration manager",
            BackgroundTask::AdmissionServer => "admission webhook server",
            BackgroundTask::Command => "the command",
        }
    }

    /// Every task, for lookups.
    pub const ALL: [BackgroundTask; 15] = [
        BackgroundTask::Watcher,
        BackgroundTask::PeeringKeepAlive,
        BackgroundTask::PeeringObserver,
        BackgroundTask::Multitasker,
        BackgroundTask::ResourceObserver,
        BackgroundTask::NamespaceObserver,
        BackgroundTask::CredentialsRetriever,
        BackgroundTask::EventPoster,
        BackgroundTask::HealthReporter,
        BackgroundTask::DaemonKiller,
        BackgroundTask::AdmissionInsights,
        BackgroundTask::AdmissionValidatingManager,
        BackgroundTask::AdmissionMutatingManager,
        BackgroundTask::AdmissionServer,
        BackgroundTask::Command,
    ];

    /// Whether the name is followed by `RES@NS` / `NAME@NS`.
    pub fn has_target(self) -> bool {
        matches!(
            self,
            BackgroundTask::Watcher
                | BackgroundTask::PeeringKeepAlive
                | BackgroundTask::PeeringObserver
        )
    }
}

/// The details of a Kubernetes RBAC denial, from
/// `... is forbidden: User "U" cannot VERB resource "R" in API group "G" at the cluster scope|in the namespace "NS"`.
///
/// Exists so that `runtime.startup-forbidden` can name the missing verb and
/// resource, whichever line (or traceback) the denial appeared in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Forbidden {
    /// The denied verb (`list`, `watch`, `create`, ...); empty when the message
    /// is a non-RBAC `is forbidden` (e.g. a terminating namespace).
    pub verb: String,
    /// The resource (`customresourcedefinitions`, `kopfexamples/status`), or
    /// for non-resource URLs the path; for non-RBAC denials, the subject
    /// written before `is forbidden`.
    pub resource: String,
    /// The API group; `Some("")` for the core group, `None` when not stated.
    pub api_group: Option<String>,
    /// The denied user (`system:serviceaccount:NS:SA`).
    pub user: Option<String>,
    /// The namespace of a namespaced denial.
    pub namespace: Option<String>,
    /// True for `at the cluster scope`.
    pub cluster_scope: bool,
}

/// A retried Kubernetes API request: `Request attempt #N/M failed; ...`
/// (`_cogs/clients/api.py`).
///
/// Exists so that a 403 retried for ~54 s is recognised as one problem and
/// the final (escalated) attempt is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct RequestAttempt {
    /// The attempt number `N`.
    pub attempt: u32,
    /// The total `M` (absent when kopf's backoffs are unbounded).
    pub of: Option<u32>,
    /// True for `escalating` (the last attempt: the error propagates).
    pub escalating: bool,
    /// True when the refused request was answered HTTP 429: the line names
    /// `APITooManyRequestsError` (kopf 1.42.2 and newer retry 429s in
    /// `_cogs/clients/api.py`; the class is in `_cogs/clients/errors.py`).
    pub too_many_requests: bool,
}

/// The recognised meaning of a record.
///
/// Exists so that checks match on typed variants rather than on strings:
/// the templates (old and new) live in one place, this crate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum EventKind {
    /// INFO `Handler 'x' succeeded.`
    HandlerSucceeded {
        /// The handler.
        handler: HandlerRef,
    },
    /// ERROR `Handler 'x' failed temporarily: MSG` (a `kopf.TemporaryError`),
    /// also `... but will time out after N seconds: ...` / `... but will exceed N retries: ...`.
    HandlerFailedTemporarily {
        /// The handler.
        handler: HandlerRef,
        /// True for the `but will time out` / `but will exceed` variants:
        /// this failure is final.
        final_attempt: bool,
    },
    /// ERROR + traceback `Handler 'x' failed with an exception and will try again in N seconds: MSG`
    /// (and `will ignore it`, `will stop now`); before 1.40 `... failed with an exception. Will retry.`
    HandlerFailedWithException {
        /// The handler.
        handler: HandlerRef,
        /// What kopf does next.
        outcome: ExceptionOutcome,
        /// The backoff of `will try again in N seconds` (new template only).
        retry_in_seconds: Option<f64>,
    },
    /// ERROR `Handler 'x' failed permanently: MSG` (a `kopf.PermanentError`).
    HandlerFailedPermanently {
        /// The handler.
        handler: HandlerRef,
    },
    /// ERROR `Handler 'x' has timed out after T.`
    HandlerTimedOut {
        /// The handler.
        handler: HandlerRef,
    },
    /// ERROR `Handler 'x' has exceeded N retries.`
    HandlerRetriesExceeded {
        /// The handler.
        handler: HandlerRef,
    },
    /// WARNING `Handler 'x' is cancelled. Will escalate.`
    HandlerCancelled {
        /// The handler.
        handler: HandlerRef,
    },
    /// INFO `Creation is processed: 1 succeeded; 1 failed.` (also updating, deletion, resuming).
    CauseProcessed {
        /// The cause title as written, lower-cased (`creation`, `updating`, ...).
        cause: String,
        /// Handlers that succeeded.
        succeeded: u32,
        /// Handlers that failed.
        failed: u32,
    },
    /// WARNING `Failed to post an event. Ignoring and continuing. Code: 403. ...`
    /// (`Status: N.` for aiohttp errors).
    EventPostFailed {
        /// The HTTP/API code, when written.
        code: Option<u16>,
    },
    /// WARNING `Merge-patching finished with inconsistencies: DIFF` (1.44+),
    /// `Patching failed with inconsistencies: DIFF` (up to 1.43).
    PatchInconsistencies,
    /// An RBAC denial: `Request attempt #N/M failed; will retry|escalating: ... is forbidden: ...`
    /// or any other line (or traceback) whose only recognised meaning is `is forbidden`.
    /// Records of other kinds may also carry [`Record::forbidden`].
    Forbidden {
        /// The denied verb.
        verb: String,
        /// The denied resource.
        resource: String,
        /// The API group (`Some("")` for core).
        api_group: Option<String>,
        /// The denied user.
        user: Option<String>,
        /// The namespace of a namespaced denial.
        namespace: Option<String>,
        /// True for `at the cluster scope`.
        cluster_scope: bool,
    },
    /// ERROR `Request attempt #N/M failed; ...` for anything but a 403.
    RequestRetry {
        /// The attempt number.
        attempt: u32,
        /// The total number of attempts, when bounded.
        of: Option<u32>,
        /// True for `escalating` (the last attempt).
        escalating: bool,
    },
    /// WARNING ``Receiving `too many requests` error from server, will retry after N
    /// seconds. Error details: ...`` (`_cogs/clients/watching.py`, kopf 1.42.1 and
    /// older): a watch-stream answered HTTP 429. Newer versions write a
    /// [`EventKind::RequestRetry`] whose [`RequestAttempt::too_many_requests`] is set.
    WatchTooManyRequests,
    /// WARNING `Not enough permissions to ...` (observation.py).
    PermissionDegraded {
        /// What could not be listed or watched.
        what: PermissionScope,
    },
    /// WARNING `Unresolved resources cannot be served (try creating their CRDs): ...`
    UnresolvedResources,
    /// INFO `Pausing operations in favour of [...]` / WARNING `Pausing all operators, including self: ...`
    PeeringPaused,
    /// WARNING `Possibly conflicting operators with the same priority: ...`
    PeeringConflict,
    /// INFO `Resuming operations after the pause. ...`
    PeeringResumed,
    /// ERROR + traceback `Watcher for RESOURCE@NAMESPACE has failed: ...` (fatal: exit 1 follows).
    WatcherFailed {
        /// `plural.version.group` as written (kopf lower-cases it).
        resource: String,
        /// The namespace after `@` (`None` for cluster-wide watchers).
        namespace: Option<String>,
    },
    /// ERROR + traceback `Multidimensional multitasker has failed: ...` (fatal).
    MultitaskerFailed,
    /// ERROR + traceback `{Task} has failed: ...` of a background task other
    /// than a watcher ([`EventKind::WatcherFailed`]) or the multitasker
    /// ([`EventKind::MultitaskerFailed`]): `Peering keep-alive for
    /// default@ns has failed: ...`, `Peering observer for ...`, `Resource
    /// observer has failed: ...`, `Poster of events has failed: ...` (see
    /// [`BackgroundTask`]). Up to 1.44 kopf runs on without the task.
    TaskFailed {
        /// The task.
        task: BackgroundTask,
        /// The peering object's name of peering tasks (before the `@`).
        target: Option<String>,
        /// The namespace after the `@` (`None` for cluster-wide tasks).
        namespace: Option<String>,
    },
    /// WARNING `{Task} has finished unexpectedly.`: a background task that
    /// should run until the operator stops returned (a watcher or peering
    /// task too: kopf then neither watches nor peers for it).
    TaskFinished {
        /// The task.
        task: BackgroundTask,
        /// The resource (`plural.version.group`) of a watcher, the peering
        /// object's name of peering tasks (before the `@`).
        target: Option<String>,
        /// The namespace after the `@` (`None` for cluster-wide tasks).
        namespace: Option<String>,
    },
    /// ERROR + traceback `Throttling for N seconds due to an unexpected error: ...`
    Throttling {
        /// The delay.
        seconds: f64,
    },
    /// WARNING `Daemon 'x' did not exit in time. Leaving it orphaned.`
    OrphanedDaemon {
        /// The daemon (or timer).
        handler: HandlerRef,
    },
    /// Python's `FutureWarning: Absence of either namespaces or cluster-wide flag ...` on stderr.
    ScopeFutureWarning,
    /// WARNING `Initial authentication has failed: no credentials were retrieved from
    /// the login handlers.` (or `Re-authentication ...`; kopf 1.38.0 and 1.45.2
    /// `_core/engines/activities.py` `authenticate()`): no login handler gave
    /// credentials.
    AuthenticationFailed {
        /// `Re-authentication`: credentials that worked were refused (401) first.
        reauthentication: bool,
    },
    /// A line that is no other kind, or its traceback, names a [`Fault`] of the
    /// operator's runtime (e.g. a top-level traceback that ends in `RuntimeError:
    /// can't start new thread`): kept so that a check sees it.
    Fault {
        /// The first fault named.
        fault: Fault,
    },
    /// Anything else (other kopf messages, user messages, non-kopf output).
    Other,
}

/// A fault of the operator's own runtime, named in a message or a traceback whatever
/// the record's kind (a handler failure, a dead watcher, a request retry, a traceback
/// of its own).
///
/// Exists because these faults show in many of kopf's templates (and in Python's own
/// output), as the exception's text, not as a template of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// `LoginError: Ran out of valid credentials.` (kopf 1.38.0 and 1.45.2
    /// `_cogs/structs/credentials.py`, `Vault.select()` and `Vault.invalidate()`): every
    /// credential was refused and re-authentication gave no new one.
    CredentialsExhausted,
    /// `APIUnauthorizedError` (kopf 1.38.0 and 1.45.2 `_cogs/clients/errors.py`): the
    /// API server answered 401 Unauthorized.
    Unauthorized,
    /// OpenSSL's `CERTIFICATE_VERIFY_FAILED` (Python's `ssl.SSLCertVerificationError`,
    /// aiohttp's `ClientConnectorCertificateError`): the API server's certificate is
    /// not trusted.
    CertificateVerifyFailed,
    /// CPython's `RuntimeError: can't start new thread` (`_thread.start_new_thread`,
    /// 3.8 to 3.13): the process may start no more threads.
    ThreadExhausted,
}

impl Fault {
    /// Every fault, in the order [`fault_in`] looks for them.
    pub const ALL: [Fault; 4] = [
        Fault::CredentialsExhausted,
        Fault::CertificateVerifyFailed,
        Fault::ThreadExhausted,
        Fault::Unauthorized,
    ];

    /// The text that names the fault in a message or a traceback line.
    pub fn marker(self) -> &'static str {
        match self {
            Fault::CredentialsExhausted => "Ran out of valid credentials",
            Fault::Unauthorized => "APIUnauthorizedError",
            Fault::CertificateVerifyFailed => "CERTIFICATE_VERIFY_FAILED",
            Fault::ThreadExhausted => "can't start new thread",
        }
    }
}

/// The first [`Fault`] (in [`Fault::ALL`]'s order) that `text` names.
pub fn fault_in(text: &str) -> Option<Fault> {
    classify::fault_in(text.as_bytes())
}

impl EventKind {
    /// The variant's name (`"HandlerSucceeded"`, `"Forbidden"`, ...): a stable,
    /// allocation-free label for metrics and counters.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::HandlerSucceeded { .. } => "HandlerSucceeded",
            EventKind::HandlerFailedTemporarily { .. } => "HandlerFailedTemporarily",
            EventKind::HandlerFailedWithException { .. } => "HandlerFailedWithException",
            EventKind::HandlerFailedPermanently { .. } => "HandlerFailedPermanently",
            EventKind::HandlerTimedOut { .. } => "HandlerTimedOut",
            EventKind::HandlerRetriesExceeded { .. } => "HandlerRetriesExceeded",
            EventKind::HandlerCancelled { .. } => "HandlerCancelled",
            EventKind::CauseProcessed { .. } => "CauseProcessed",
            EventKind::EventPostFailed { .. } => "EventPostFailed",
            EventKind::PatchInconsistencies => "PatchInconsistencies",
            EventKind::Forbidden { .. } => "Forbidden",
            EventKind::RequestRetry { .. } => "RequestRetry",
            EventKind::WatchTooManyRequests => "WatchTooManyRequests",
            EventKind::PermissionDegraded { .. } => "PermissionDegraded",
            EventKind::UnresolvedResources => "UnresolvedResources",
            EventKind::PeeringPaused => "PeeringPaused",
            EventKind::PeeringConflict => "PeeringConflict",
            EventKind::PeeringResumed => "PeeringResumed",
            EventKind::WatcherFailed { .. } => "WatcherFailed",
            EventKind::MultitaskerFailed => "MultitaskerFailed",
            EventKind::TaskFailed { .. } => "TaskFailed",
            EventKind::TaskFinished { .. } => "TaskFinished",
            EventKind::Throttling { .. } => "Throttling",
            EventKind::OrphanedDaemon { .. } => "OrphanedDaemon",
            EventKind::ScopeFutureWarning => "ScopeFutureWarning",
            EventKind::AuthenticationFailed { .. } => "AuthenticationFailed",
            EventKind::Fault { .. } => "Fault",
            EventKind::Other => "Other",
        }
    }

    /// The handler named by handler-outcome kinds.
    pub fn handler(&self) -> Option<&HandlerRef> {
        match self {
            EventKind::HandlerSucceeded { handler }
            | EventKind::HandlerFailedTemporarily { handler, .. }
            | EventKind::HandlerFailedWithException { handler, .. }
            | EventKind::HandlerFailedPermanently { handler }
            | EventKind::HandlerTimedOut { handler }
            | EventKind::HandlerRetriesExceeded { handler }
            | EventKind::HandlerCancelled { handler }
            | EventKind::OrphanedDaemon { handler } => Some(handler),
            _ => None,
        }
    }

    /// The background task that failed or finished: [`BackgroundTask::Watcher`]
    /// for [`EventKind::WatcherFailed`], [`BackgroundTask::Multitasker`] for
    /// [`EventKind::MultitaskerFailed`], the task of [`EventKind::TaskFailed`]
    /// and [`EventKind::TaskFinished`]. Exists so that a check names what
    /// died whichever kind says it.
    pub fn background_task(&self) -> Option<BackgroundTask> {
        match self {
            EventKind::WatcherFailed { .. } => Some(BackgroundTask::Watcher),
            EventKind::MultitaskerFailed => Some(BackgroundTask::Multitasker),
            EventKind::TaskFailed { task, .. } | EventKind::TaskFinished { task, .. } => {
                Some(*task)
            }
            _ => None,
        }
    }

    /// True for handler failures (temporary, exception, permanent, timeout,
    /// retries exceeded): what `events.silent-failures` and
    /// `runtime.handler-failures` count. A webhook's permanent failure is not one: it
    /// is how an admission handler denies a request (`kopf.AdmissionError` is a
    /// `PermanentError`, kopf `_core/engines/admission.py`), logged as
    /// `Webhook 'x' failed permanently: <the denial>`.
    pub fn is_handler_failure(&self) -> bool {
        match self {
            EventKind::HandlerFailedPermanently { handler } => handler.kind != HandlerKind::Webhook,
            EventKind::HandlerFailedTemporarily { .. }
            | EventKind::HandlerFailedWithException { .. }
            | EventKind::HandlerTimedOut { .. }
            | EventKind::HandlerRetriesExceeded { .. } => true,
            _ => false,
        }
    }

    /// The level kopf logs this kind at; used to fill in [`Record::level`] for
    /// the `plain` format, which does not write it. `None` for [`EventKind::Other`].
    pub fn kopf_level(&self) -> Option<Level> {
        Some(match self {
            EventKind::HandlerSucceeded { .. }
            | EventKind::CauseProcessed { .. }
            | EventKind::PeeringResumed => Level::Info,
            EventKind::PeeringPaused => Level::Info,
            EventKind::HandlerCancelled { .. }
            | EventKind::EventPostFailed { .. }
            | EventKind::PatchInconsistencies
            | EventKind::PermissionDegraded { .. }
            | EventKind::WatchTooManyRequests
            | EventKind::UnresolvedResources
            | EventKind::PeeringConflict
            | EventKind::OrphanedDaemon { .. }
            | EventKind::TaskFinished { .. }
            | EventKind::AuthenticationFailed { .. }
            | EventKind::ScopeFutureWarning => Level::Warning,
            EventKind::HandlerFailedTemporarily { .. }
            | EventKind::HandlerFailedWithException { .. }
            | EventKind::HandlerFailedPermanently { .. }
            | EventKind::HandlerTimedOut { .. }
            | EventKind::HandlerRetriesExceeded { .. }
            | EventKind::RequestRetry { .. }
            | EventKind::Forbidden { .. }
            | EventKind::WatcherFailed { .. }
            | EventKind::MultitaskerFailed
            | EventKind::TaskFailed { .. }
            | EventKind::Throttling { .. } => Level::Error,
            EventKind::Fault { .. } | EventKind::Other => return None,
        })
    }
}

/// One log record: a line, plus its traceback lines in text formats.
///
/// Exists as the single typed unit all log-based checks consume. Everything
/// in it is bounded: the message is cut at [`ParserOptions::max_message_bytes`],
/// the traceback keeps its first and last lines. What is cut is [`redact`]ed
/// whole first, so that no secret is left half-visible at a cut (quote the
/// rest through [`redact`] or [`excerpt`] as usual); the lines of a PEM
/// block that a traceback's earlier line opened are masked whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// The record's own time (`full`/`json`), else the kubelet's timestamp.
    pub timestamp: Option<Timestamp>,
    /// The kubelet's `timestamps=true` prefix, when the line had one.
    pub kubelet_timestamp: Option<Timestamp>,
    /// The level (`full`/`json`; for `plain`, inferred from a recognised kind).
    pub level: Option<Level>,
    /// The logger name (`full` only; cut to 20 characters by kopf, e.g. `kopf._core.reactor.r`).
    pub logger: Option<String>,
    /// The object the record is about.
    pub object: Option<ObjectRef>,
    /// The message, without the `[ns/name] ` prefix, ANSI codes stripped,
    /// bounded (redacted whole before it is cut).
    pub message: String,
    /// The recognised meaning.
    pub kind: EventKind,
    /// The format; `None` for lines that are not kopf's.
    pub format: Option<LogFormat>,
    /// The first lines of the traceback (text continuation lines or JSON `exc_info`),
    /// with a `... N more lines ...` marker and the last lines when longer.
    pub traceback: Vec<String>,
    /// An RBAC denial found in the message or the traceback, whatever the kind
    /// (e.g. a `WatcherFailed` or `EventPostFailed` caused by a 403).
    pub forbidden: Option<Forbidden>,
    /// The request attempt of `Request attempt #N/M failed; ...` lines.
    pub request: Option<RequestAttempt>,
    /// What the message's wording tells of kopf's version, when it is one
    /// that changed between releases (see [`VersionClue`]); the whole log's
    /// range is [`Stats::kopf_version`].
    pub version: Option<VersionSignal>,
    /// The 1-based number of the record's first line in the input.
    pub line: u64,
    /// True when the message was cut at the bound (and so redacted), or its
    /// line at [`Parser::line_bound`] (at its last whole word).
    pub truncated: bool,
}

impl Record {
    /// True when the record is in one of kopf's formats or a recognised kopf message.
    pub fn is_kopf(&self) -> bool {
        self.format.is_some()
    }

    /// True for the records [`Routine::Count`] drops: kind [`EventKind::Other`],
    /// [`EventKind::HandlerSucceeded`] or [`EventKind::CauseProcessed`], and no
    /// RBAC denial. Exists so that the auditor's filter (it keeps no routine
    /// record) and the parser's fast mode are one definition.
    pub fn is_routine(&self) -> bool {
        self.forbidden.is_none()
            && match &self.kind {
                // An activity's success (a login handler's, a startup's) is rare and
                // tells how the operator logs in.
                EventKind::HandlerSucceeded { handler } => handler.kind != HandlerKind::Activity,
                EventKind::Other | EventKind::CauseProcessed { .. } => true,
                _ => false,
            }
    }

    /// The first [`Fault`] the message or the traceback names (the message first).
    pub fn fault(&self) -> Option<Fault> {
        if let EventKind::Fault { fault } = self.kind {
            return Some(fault);
        }
        fault_in(&self.message).or_else(|| self.traceback.iter().find_map(|l| fault_in(l)))
    }
}

//! Runtime checks (`runtime.*`): what the operator's logs say about its own health.
//! Findings quote one short, redacted line and carry no counts or times, so that an
//! unchanged log gives an unchanged status.

use super::{Cause, Raised, finding};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::bounded::{MAX_LISTED, listed};
use crate::model::conflict as model_conflict;
use crate::model::evidence::{
    KopfEvidence, LogEvidence, ObjectSample, Peer, PeeringObject, TargetEvidence, qualified,
};
use crate::model::kopf_run::KopfRun;
use crate::model::needs::{CRD_GROUP, CRD_RESOURCE};
use crate::model::settings::CheckSettings;
use crate::model::source::kopf_version::BOOKMARKS;
use k8s_openapi::api::core::v1::Pod;
use kopf_log::{
    BackgroundTask, EventKind, HandlerKind, KopfVersion, PermissionScope, Record, VersionRange,
};
use std::collections::{BTreeMap, BTreeSet};

/// From kopf 1.45 a failed watcher stops the operator (`_core/reactor/orchestration.py`
/// re-raises a failed ensemble task); up to 1.44.6 the dead task stays registered and
/// is never respawned.
const EXITS_ON_DEAD_WATCHER: KopfVersion = KopfVersion::new(1, 45, 0);
/// At most this many objects are named in a not-handling finding.
const NAMED_OBJECTS: usize = 5;

/// How many characters of a log line a finding quotes.
pub(crate) const QUOTE_CHARS: usize = 240;

/// Below this share of kopf lines, the log evidence is weak (with enough lines to judge).
const MIN_KOPF_RATIO: f64 = 0.5;
const MIN_LINES_TO_JUDGE: u64 = 20;

mod conflict;
mod faults;
pub(crate) mod handler_loop;
mod webhook_certificate;

/// Runs every runtime check on one kopf target.
pub(crate) fn check(
    target: &TargetEvidence,
    kopf: &KopfEvidence,
    settings: &CheckSettings,
) -> Vec<Raised> {
    // Reads the other operators and the objects, not the log.
    let conflicts = operator_conflict(target, kopf);
    let mut out: Vec<Raised> = conflicts.into_iter().map(Raised::alone).collect();
    // Reads the webhook configurations and the pods, not the log.
    let certificates = webhook_certificate::live(target, kopf, settings.now);
    out.extend(certificates.into_iter().map(Raised::alone));
    let Ok(logs) = &kopf.logs else {
        return out;
    };
    let name = target.name();
    out.extend(startup_forbidden(name, logs));
    out.extend(permission_degraded(name, kopf, logs));
    let not_handling = match &kopf.objects {
        Ok(objects) => not_handling(
            name,
            &objects.samples,
            &target.pods,
            &kopf.run.container,
            logs,
            settings,
        ),
        Err(_) => None,
    };
    let stalled = match &kopf.objects {
        Ok(objects) => startup_stalled(
            name,
            &objects.samples,
            &target.pods,
            &kopf.run.container,
            logs,
            settings,
        ),
        Err(_) => None,
    };
    let foreign = match &kopf.peering {
        Ok(peerings) => foreign_peer(target, &kopf.run, peerings, logs, settings.now),
        Err(_) => Vec::new(),
    };
    let alone = [
        foreign,
        not_handling.into_iter().collect(),
        stalled.into_iter().collect(),
        dead_watcher(name, logs),
        kopf_version(name, logs).into_iter().collect(),
        handler_failures(name, logs),
        peering_conflict(name, logs).into_iter().collect(),
        unresolved_resources(name, logs).into_iter().collect(),
        throttling(name, logs).into_iter().collect(),
        rate_limited(name, logs).into_iter().collect(),
        handler_loop::live(
            name,
            logs,
            kopf.objects.as_ref().map_or(&[][..], |o| &o.samples[..]),
        ),
        orphaned_daemons(name, logs).into_iter().collect(),
        unparsed_logs(name, logs).into_iter().collect(),
        credentials_lost(name, logs).into_iter().collect(),
        api_tls_failure(name, logs).into_iter().collect(),
        thread_exhaustion(name, logs).into_iter().collect(),
    ];
    out.extend(alone.into_iter().flatten().map(Raised::alone));
    out
}

/// `runtime.operator-conflict`: another kopf operator fights this one over the objects
/// both handle. Found two ways: another kopf operator in the audit's reach serves a
/// handled resource where this one does and no peering keeps them apart
/// ([`model_conflict::rivals`]); or handled objects carry two kopf operators'
/// diff-bases or finalizers ([`model_conflict::disputed`]). One finding per rival, and
/// one for objects in dispute that no rival in reach explains.
fn operator_conflict(target: &TargetEvidence, kopf: &KopfEvidence) -> Vec<Finding> {
    let (Ok(operators), Ok(handled)) = (&kopf.operators, &kopf.handled) else {
        return Vec::new();
    };
    let samples: &[ObjectSample] = kopf.objects.as_ref().map_or(&[][..], |o| &o.samples[..]);
    let own = model_conflict::audited(target, &kopf.run);
    let rivals = model_conflict::rivals(&own, handled, &operators.found);
    let disputed = model_conflict::disputed(samples, handled);
    let naming = model_conflict::Naming::of(&operators.searched);
    let mut out: Vec<Finding> = rivals
        .iter()
        .map(|rival| {
            conflict::rival_finding(target.name(), rival, &naming, handled, samples, &disputed)
        })
        .collect();
    let unexplained = model_conflict::unexplained(&disputed, &rivals);
    if !unexplained.is_empty() {
        out.push(conflict::marks_finding(
            target.name(),
            &own.service_account,
            operators,
            &unexplained,
        ));
    }
    out
}

/// `[ns/name] message`, shortened and redacted.
pub(crate) fn quote(record: &Record) -> String {
    let object = record
        .object
        .as_ref()
        .map(|o| format!("[{}] ", qualified(o.namespace.as_deref(), &o.name)))
        .unwrap_or_default();
    kopf_log::excerpt(&format!("{object}{}", record.message), QUOTE_CHARS)
}

/// The object a record is about, as messages name it.
fn object_name(record: &Record) -> String {
    match &record.object {
        Some(o) => qualified(o.namespace.as_deref(), &o.name),
        // Python's `basicConfig` format: kopf writes `[ns/name]` in its own formats only.
        None => "an object its log does not name".into(),
    }
}

/// `runtime.handler-failures`: one finding per handler, the first failure quoted, the
/// objects named.
fn handler_failures(target: &str, logs: &LogEvidence) -> Vec<Finding> {
    let mut per_handler: BTreeMap<String, (Severity, &Record, Vec<String>)> = BTreeMap::new();
    for record in logs.all_records().filter(|r| r.kind.is_handler_failure()) {
        let Some(handler) = record.kind.handler() else {
            continue;
        };
        let severity = match record.kind {
            EventKind::HandlerFailedPermanently { .. } => Severity::Error,
            _ => Severity::Warning,
        };
        let entry =
            per_handler
                .entry(handler.to_string())
                .or_insert((severity, record, Vec::new()));
        entry.0 = entry.0.max(severity);
        let object = object_name(record);
        if !entry.2.contains(&object) {
            entry.2.push(object);
        }
    }
    per_handler
        .into_iter()
        .map(|(handler, (severity, first, mut objects))| {
            objects.sort();
            let shown: Vec<&str> = objects.iter().take(3).map(String::as_str).collect();
            let more = if objects.len() > 3 { " and others" } else { "" };
            let mut f = finding(
                CheckId::RuntimeHandlerFailures,
                target,
                format!(
                    "{handler} fails in the log window for {}{more}: fix the cause quoted in evidence; kopf retries it in a loop (a permanent failure is not retried).",
                    shown.join(", ")
                ),
                Some(quote(first)),
            );
            f.severity = severity;
            f
        })
        .collect()
}

/// `runtime.startup-forbidden`: one finding per refused verb, resource and scope; an RBAC
/// finding about the same denial explains it instead (evaluate keeps one per cause).
fn startup_forbidden(target: &str, logs: &LogEvidence) -> Vec<Raised> {
    let mut seen: BTreeMap<Cause, (&Record, &kopf_log::Forbidden)> = BTreeMap::new();
    for record in logs.all_records() {
        let Some(denial) = &record.forbidden else {
            continue;
        };
        if let Some(cause) = Cause::from_log(denial) {
            seen.entry(cause).or_insert((record, denial));
        }
    }
    seen.into_iter()
        .map(|(cause, (record, denial))| {
            let group = denial.api_group.clone().unwrap_or_default();
            let group_text = if group.is_empty() { "\"\"".to_string() } else { group };
            let scope = if denial.cluster_scope {
                "at cluster scope (ClusterRole)".to_string()
            } else {
                format!("in namespace {}", denial.namespace.as_deref().unwrap_or("?"))
            };
            let (verb, resource) = (&denial.verb, &denial.resource);
            let f = finding(
                CheckId::RuntimeStartupForbidden,
                target,
                format!(
                    "The API server refused `{verb}` on {resource} (group {group_text}) {scope}: add a rule `apiGroups: [{group_text}], resources: [{resource}], verbs: [{verb}]` to the operator's role."
                ),
                Some(quote(record)),
            );
            Raised { finding: f, causes: vec![cause] }
        })
        .collect()
}

/// The first record of a kind, as a finding with a fixed message.
fn first_of(
    target: &str,
    logs: &LogEvidence,
    check: CheckId,
    matches: impl Fn(&EventKind) -> bool,
    message: &str,
) -> Option<Finding> {
    let record = logs.all_records().find(|r| matches(&r.kind))?;
    Some(finding(
        check,
        target,
        message.to_string(),
        Some(quote(record)),
    ))
}

/// `runtime.permission-degraded`: `Not enough permissions to watch for resources`. kopf
/// logs it when its watch of CRDs is refused (kopf 1.45 `_core/reactor/observation.py`
/// `resource_observer`, a list then a watch of customresourcedefinitions), so its causes
/// are the refusals of list and watch on CRDs at cluster scope that the RBAC answers or
/// the log show: `rbac.crd-scan` reports the same cause with the rule to add, and one
/// finding is kept (evaluate keeps one per cause).
fn permission_degraded(target: &str, kopf: &KopfEvidence, logs: &LogEvidence) -> Option<Raised> {
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

/// `runtime.peering-conflict`: `Possibly conflicting operators with the same priority`.
fn peering_conflict(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimePeeringConflict,
        |k| matches!(k, EventKind::PeeringConflict),
        "Two operators with the same peering priority are running, so both pause and nothing is served: give each a distinct --priority, or run one replica.",
    )
}

/// `runtime.unresolved-resources`: `Unresolved resources cannot be served`.
fn unresolved_resources(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeUnresolvedResources,
        |k| matches!(k, EventKind::UnresolvedResources),
        "kopf cannot find the CRD of a resource it handles, so nothing of it is served: install the CRD (or fix the group/version/plural in the handler decorators).",
    )
}

/// `runtime.throttling`: `Throttling for N seconds due to an unexpected error`.
fn throttling(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeThrottling,
        |k| matches!(k, EventKind::Throttling { .. }),
        "kopf throttles after an unexpected error in its own machinery and loops: read the traceback before the throttling line and fix its cause.",
    )
}

/// The last kopf release that retries a 429 only on watch-streams, with the warning
/// ``Receiving `too many requests` error from server`` (kopf 1.38.0
/// `_cogs/clients/watching.py`; its `_cogs/clients/api.py` retries no 4xx but 403, so
/// any other refused request fails at once). From 1.42.2 every request retries a 429
/// and logs `Request attempt #N/M failed; ... -> APITooManyRequestsError(...)` (kopf
/// 1.45.2 `_cogs/clients/api.py`).
const RETRIES_ONLY_WATCHES_UNTIL: KopfVersion = KopfVersion::new(1, 42, 1);

/// How many refused requests a finding states: a bucket, so that one more 429 in the
/// window does not change the status.
fn how_many(count: usize) -> &'static str {
    match count {
        0 | 1 => "1 request",
        2..=9 => "several requests",
        10..=99 => "10 or more requests",
        _ => "100 or more requests",
    }
}

/// What the API server says in a 429 while its cache of a resource is still being
/// built (a CRD created a moment before, or the server itself starting): not API
/// Priority and Fairness throttling anyone (kube-apiserver's `storage is
/// (re)initializing` from its watch cache, `staging/src/k8s.io/apiserver/pkg/storage/
/// cacher`).
const STORAGE_INITIALIZING: &str = "storage is (re)initializing";

/// Refused requests in the window that make a pattern: one 429 (kopf retries it after a
/// second) is a blip, not throttling.
const SUSTAINED_429S: usize = 2;

/// `runtime.rate-limited`: the API server answered the operator with HTTP 429 again and
/// again (API Priority and Fairness, or a proxy). kopf backs off and retries, so handling
/// lags; a request that exhausts its retries escalates (error): the handler or watch it
/// served fails. A server still building its cache for a resource (`storage is
/// (re)initializing`) is not throttling, and a single 429 that was retried is no
/// pattern.
fn rate_limited(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let refused: Vec<&Record> = logs
        .all_records()
        .filter(|r| {
            matches!(r.kind, EventKind::WatchTooManyRequests)
                || r.request.is_some_and(|a| a.too_many_requests)
        })
        .filter(|r| !r.message.contains(STORAGE_INITIALIZING))
        .collect();
    let first = refused.first()?;
    let escalated = refused
        .iter()
        .find(|r| r.request.is_some_and(|a| a.escalating));
    if refused.len() < SUSTAINED_429S && escalated.is_none() {
        return None;
    }
    let old_wording = refused
        .iter()
        .any(|r| matches!(r.kind, EventKind::WatchTooManyRequests))
        || logs
            .version
            .at_most
            .is_some_and(|hi| hi <= RETRIES_ONLY_WATCHES_UNTIL);
    let mut message = format!(
        "The API server refused {} of the operator with HTTP 429 (Too Many Requests) in the log window, so kopf backs off and handling falls behind: give its ServiceAccount a FlowSchema and PriorityLevelConfiguration with enough concurrency shares, watch fewer resources or namespaces, and lower settings.queueing.worker_limit (settings.batching before its rename, as in kopf 1.38).",
        how_many(refused.len())
    );
    if escalated.is_some() {
        message.push_str(" Some requests gave up after all their retries (`escalating`): what they served failed.");
    }
    if old_wording {
        message.push_str(" kopf 1.42.1 and older retry a 429 only on watch-streams; any other refused request fails at once: upgrade kopf.");
    }
    let mut f = finding(
        CheckId::RuntimeRateLimited,
        target,
        message,
        Some(quote(escalated.copied().unwrap_or(first))),
    );
    if escalated.is_some() {
        f.severity = Severity::Error;
    }
    Some(f)
}

/// `runtime.orphaned-daemons`: `did not exit in time. Leaving it orphaned.`
fn orphaned_daemons(target: &str, logs: &LogEvidence) -> Option<Finding> {
    first_of(
        target,
        logs,
        CheckId::RuntimeOrphanedDaemons,
        |k| matches!(k, EventKind::OrphanedDaemon { .. }),
        "A daemon did not exit when asked and was left orphaned: make it check `stopped` (or handle cancellation) so that it exits in time.",
    )
}

/// `runtime.not-handling`: handled objects whose essence has differed from their
/// diff-base for longer than the threshold while the operator's pod runs: it is alive
/// and its liveness probe passes, yet it stopped handling.
fn not_handling(
    target: &str,
    objects: &[ObjectSample],
    pods: &[Pod],
    container: &str,
    logs: &LogEvidence,
    settings: &CheckSettings,
) -> Option<Finding> {
    if !running(pods, container) {
        return None;
    }
    let threshold = jiff::SignedDuration::try_from(settings.unhandled_after).unwrap_or_default();
    // Resources whose objects carry diff-bases: kopf has change handlers for them.
    let diffed: BTreeSet<usize> = objects
        .iter()
        .filter(|o| o.handling.diffbase)
        .map(|o| o.resource)
        .collect();
    let mut waiting: Vec<(String, jiff::SignedDuration, bool)> = objects
        .iter()
        .filter_map(|o| {
            let h = &o.handling;
            let since = if h.diffbase {
                h.differs.then_some(h.changed_by_others?)?
            } else {
                // The second signal, managedFields: kopf wrote to the object, others
                // changed it later. Only where kopf diffs the resource at all (not for
                // daemons, timers or event handlers alone, which store no diff-base).
                let kopf = h.changed_by_kopf.filter(|_| diffed.contains(&o.resource))?;
                h.changed_by_others.filter(|others| *others > kopf)?
            };
            let waited = settings.now.duration_since(since);
            // kopf wrote to it after the change: it noticed, its handlers did not finish.
            let noticed = h.changed_by_kopf.is_some_and(|kopf| kopf > since);
            (waited > threshold).then(|| (o.qualified_name(), waited, h.in_progress || noticed))
        })
        .collect();
    if waiting.is_empty() {
        return None;
    }
    waiting.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let shown: Vec<String> = waiting
        .iter()
        .take(NAMED_OBJECTS)
        .map(|(name, waited, _)| format!("{name} (over {})", rounded(*waited)))
        .collect();
    let more = match waiting.len().saturating_sub(NAMED_OBJECTS) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let causes = likely_causes(logs, waiting.iter().any(|(_, _, p)| *p));
    Some(finding(
        CheckId::RuntimeNotHandling,
        target,
        format!(
            "The operator's pod runs, yet changes to {}{more} have not been handled: their spec, labels or annotations differ from kopf's last-handled diff-base. Likely causes: {causes}. Restart the operator to recover, then fix the cause (if they merely stopped matching the handlers' labels/annotations/when filters, kopf ignores them on purpose: skip this check for them).",
            shown.join(", ")
        ),
        Some(format!(
            "{} handled object(s) changed and not handled",
            waiting.len()
        )),
    ))
}

/// How long the operator's container may run with no handler outcome in its whole log
/// and no mark of kopf on any handled object before `runtime.startup-stalled` fires (the
/// catalogue's default).
const STALLED_AFTER: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// `runtime.startup-stalled`: the kopf container has run for longer than
/// [`STALLED_AFTER`], all of its log since it started is in the window (so nothing was
/// missed), that log holds no handler outcome (no success, no failure, no processed
/// cause, no peering pause), and handled objects exist but none carries a mark of kopf
/// (diff-base, progress, a finalizer, `status.kopf`, a change by kopf's field manager).
/// kopf runs the startup activities, and waits until every `@kopf.index` has indexed
/// every object, before any other handler (kopf 1.45.2 `_core/reactor/running.py`,
/// `_core/engines/indexing.py`), so a startup handler that never returns, or an index
/// starved by `settings.queueing.worker_limit` (kopf issue 1243), stops it there, its
/// liveness probe still passing. Distinct from `runtime.not-handling`, which compares
/// objects that kopf handled once with their diff-base.
fn startup_stalled(
    target: &str,
    objects: &[ObjectSample],
    pods: &[Pod],
    container: &str,
    logs: &LogEvidence,
    settings: &CheckSettings,
) -> Option<Finding> {
    let started = latest_start(pods, container)?;
    let window = jiff::SignedDuration::try_from(settings.window).unwrap_or_default();
    let ran = settings.now.duration_since(started);
    if ran <= STALLED_AFTER || ran > window || objects.is_empty() || logs.truncated {
        return None;
    }
    // Activities (login, startup) run before handling, and indexers while kopf waits for
    // the indexing to finish (verbose: `Indexer 'x' succeeded.`, kopf 1.45.2
    // `_core/actions/loggers.py` TerseObjectLogger): neither is an outcome of handling.
    let handles = |kind: HandlerKind| !matches!(kind, HandlerKind::Activity | HandlerKind::Indexer);
    let handled_something = logs.tally.iter().any(|t| match &t.outcome {
        kopf_log::Outcome::Succeeded { kind, .. } | kopf_log::Outcome::Retried { kind, .. } => {
            handles(*kind)
        }
        kopf_log::Outcome::Processed { .. } => true,
    }) || logs.records.iter().any(|r| {
        r.kind.handler().is_some_and(|h| handles(h.kind))
            || matches!(
                r.kind,
                EventKind::CauseProcessed { .. }
                    | EventKind::PeeringPaused
                    | EventKind::PeeringConflict
            )
    });
    if handled_something || objects.iter().any(carries_kopf_marks) {
        return None;
    }
    let mut names: Vec<String> = objects.iter().map(ObjectSample::qualified_name).collect();
    names.sort();
    Some(finding(
        CheckId::RuntimeStartupStalled,
        target,
        format!(
            "The operator has been running for over {} without handling anything: its log since it started shows no handler outcome, and no handled object ({}) carries kopf's marks. kopf never got past its startup: look for an @kopf.on.startup handler that never returns (give it a timeout, move long work into a daemon), @kopf.index handlers with settings.queueing.worker_limit (settings.batching before its rename) below the number of indexed objects (raise or remove the limit: indexing must finish before any handler runs), or a resource it waits for and cannot list. Restarting does not help while the cause stays.",
            rounded(STALLED_AFTER),
            listed(&names, ", ", NAMED_OBJECTS),
        ),
        logs.records.iter().rfind(|r| r.is_kopf()).map(quote),
    ))
}

/// Whether kopf left any mark on an object: a diff-base, progress, a finalizer,
/// `status.kopf`, or a change by its field manager.
fn carries_kopf_marks(o: &ObjectSample) -> bool {
    let h = &o.handling;
    h.diffbase
        || h.in_progress
        || h.changed_by_kopf.is_some()
        || !o.finalizers.is_empty()
        || !o.status_kopf_keys.is_empty()
}

/// When the kopf container of the most recently started running pod started.
fn latest_start(pods: &[Pod], container: &str) -> Option<jiff::Timestamp> {
    pods.iter()
        .flat_map(|p| p.status.iter())
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter(|cs| cs.name == container)
        .filter_map(|cs| cs.state.as_ref()?.running.as_ref()?.started_at.as_ref())
        .map(|t| t.0)
        .max()
}

/// A duration as a message says it, rounded down to whole minutes (so that a finding's
/// text changes rarely).
fn rounded(d: jiff::SignedDuration) -> String {
    let minutes = d.as_secs() / 60;
    if minutes >= 120 {
        format!("{} h", minutes / 60)
    } else {
        format!("{minutes} min")
    }
}

/// Whether the kopf container of some pod is running (not waiting, not terminated).
fn running(pods: &[Pod], container: &str) -> bool {
    pods.iter().any(|p| {
        p.status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .any(|cs| {
                cs.name == container && cs.state.as_ref().is_some_and(|s| s.running.is_some())
            })
    })
}

/// What the log and the objects point at, most specific first.
fn likely_causes(logs: &LogEvidence, in_progress: bool) -> String {
    let mut causes = Vec::new();
    if logs
        .records
        .iter()
        .any(|r| matches!(r.kind.background_task(), Some(BackgroundTask::Watcher)))
    {
        causes.push("a dead watcher (see runtime.dead-watcher)".to_string());
    }
    let last_peering_turn = logs
        .records
        .iter()
        .rfind(|r| matches!(r.kind, EventKind::PeeringPaused | EventKind::PeeringResumed));
    if last_peering_turn.is_some_and(|r| matches!(r.kind, EventKind::PeeringPaused)) {
        causes.push(
            "a paused peering (another operator of higher or equal priority is alive)".to_string(),
        );
    }
    if in_progress {
        causes.push("a handler that does not finish (kopf noticed the change: its progress marks or writes are on the objects; see runtime.handler-failures)".to_string());
    }
    if logs.version.at_most.is_none_or(|v| v < BOOKMARKS) {
        causes.push(format!(
            "a watch stream that froze silently ({} without settings.watching.server_timeout or client_timeout; fixed by bookmarks in kopf 1.44)",
            describe_version(&logs.version)
        ));
    }
    if causes.is_empty() {
        causes.push(
            "a watch stream that stopped (kopf 1.44+ reconnects an inactive one after 70 s)".into(),
        );
    }
    causes.join("; ")
}

/// `runtime.dead-watcher`: a background task that must run for as long as the operator
/// does has failed: the watch of a resource, or a peering keep-alive or observer.
fn dead_watcher(target: &str, logs: &LogEvidence) -> Vec<Finding> {
    let version = &logs.version;
    let exits = version.at_least.is_some_and(|v| v >= EXITS_ON_DEAD_WATCHER);
    // Up to 1.44 a restart revives the task, so only the running container counts;
    // from 1.45 the previous container's log says why it exited.
    let previous = logs.previous.values().flatten().filter(|_| exits);
    let mut seen: BTreeMap<String, &Record> = BTreeMap::new();
    for r in logs.records.iter().chain(previous) {
        let vital = matches!(
            r.kind.background_task(),
            Some(
                BackgroundTask::Watcher
                    | BackgroundTask::PeeringKeepAlive
                    | BackgroundTask::PeeringObserver
            )
        );
        let died = matches!(
            r.kind,
            EventKind::WatcherFailed { .. }
                | EventKind::TaskFailed { .. }
                | EventKind::TaskFinished { .. }
        );
        if vital && died {
            seen.entry(task_name(r)).or_insert(r);
        }
    }
    let effect = if exits {
        "kopf 1.45 stops the whole operator on it, so the pod restarts (a crash loop if it keeps failing)".to_string()
    } else if version.at_most.is_some_and(|v| v < EXITS_ON_DEAD_WATCHER) {
        format!(
            "{} does not respawn it: the operator runs on, blind to it, its liveness probe still passing, until it is restarted",
            describe_version(version)
        )
    } else {
        "up to kopf 1.44 it is not respawned (the operator runs on, blind to it, until restarted); kopf 1.45 exits on it".to_string()
    };
    seen.into_iter()
        .map(|(task, record)| {
            finding(
                CheckId::RuntimeDeadWatcher,
                target,
                format!(
                    "kopf's {task} failed: {effect}. Restart the operator, and fix the cause in the traceback (often a permission or an API error)."
                ),
                Some(quote(record)),
            )
        })
        .collect()
}

/// `watcher for RES@NS` / `peering keep-alive for NAME@NS` of a record.
fn task_name(record: &Record) -> String {
    let task = record
        .kind
        .background_task()
        .map_or("background task", BackgroundTask::as_str);
    let (target, namespace) = match &record.kind {
        EventKind::WatcherFailed {
            resource,
            namespace,
        } => (Some(resource.clone()), namespace.clone()),
        EventKind::TaskFailed {
            target, namespace, ..
        }
        | EventKind::TaskFinished {
            target, namespace, ..
        } => (target.clone(), namespace.clone()),
        _ => (None, None),
    };
    match (target, namespace) {
        (Some(t), Some(ns)) => format!("{task} {t}@{ns}"),
        (Some(t), None) => format!("{task} {t}"),
        _ => task.to_string(),
    }
}

/// `kopf 1.45.2`, `kopf 1.40 or newer`, `kopf 1.38 to 1.43`...
fn describe_version(v: &VersionRange) -> String {
    match (v.at_least, v.at_most) {
        (Some(lo), Some(hi)) if lo == hi => format!("kopf {lo}"),
        (Some(lo), Some(hi)) => format!("kopf {lo} to {hi}"),
        (Some(lo), None) => format!("kopf {lo} or newer"),
        (None, Some(hi)) => format!("kopf {hi} or older"),
        (None, None) => "this kopf (its version is not in the log)".into(),
    }
}

/// `runtime.kopf-version`: the version the log's wording shows; below 1.44 a watch can
/// freeze silently.
fn kopf_version(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let v = &logs.version;
    if v.is_unbounded() || v.is_empty() {
        return None;
    }
    let old = v.at_most.is_some_and(|hi| hi < BOOKMARKS);
    let mut f = finding(
        CheckId::RuntimeKopfVersion,
        target,
        if old {
            format!(
                "The log's wording shows {}: before 1.44 a watch stream can freeze silently (a load balancer or proxy drops it and kopf never notices), and the operator stops handling while it looks healthy. Upgrade kopf, or set settings.watching.server_timeout and client_timeout (e.g. 300 s) in a startup handler.",
                describe_version(v)
            )
        } else {
            format!(
                "The log's wording shows {}; findings that depend on kopf's version assume it.",
                describe_version(v)
            )
        },
        None,
    );
    if old {
        f.severity = Severity::Warning;
    }
    Some(f)
}

/// The peering priority `--dev` sets (kopf `cli.py`).
const DEV_PRIORITY: i64 = 666;
/// The priority `kopf freeze` takes by default (kopf `cli.py`).
const FREEZE_PRIORITY: i64 = 100;

/// `runtime.foreign-peer`: live peers in the operator's peering objects that are not its
/// own pods. One finding per peering object, naming the peers (without their times, so
/// that keep-alives do not change it).
fn foreign_peer(
    target: &TargetEvidence,
    run: &KopfRun,
    peerings: &[PeeringObject],
    logs: &LogEvidence,
    now: jiff::Timestamp,
) -> Vec<Finding> {
    let own = OwnIdentity::of(target, run);
    peerings
        .iter()
        .filter_map(|peering| {
            let live: Vec<&Peer> = peering.peers.iter().filter(|p| p.alive_at(now)).collect();
            let own_priority = live
                .iter()
                .filter(|p| own.is(&p.id))
                .map(|p| p.priority)
                .max()
                .unwrap_or(own.priority);
            let mut foreign: Vec<String> = live
                .iter()
                .filter(|p| !own.is(&p.id))
                .filter_map(|p| describe_foreign(p, own_priority))
                .collect();
            if foreign.is_empty() {
                return None;
            }
            foreign.sort();
            let object = match &peering.namespace {
                Some(ns) => format!("KopfPeering {ns}/{}", peering.name),
                None => format!("ClusterKopfPeering {}", peering.name),
            };
            let confirmed = logs.records.iter().find(|r| {
                matches!(r.kind, EventKind::PeeringPaused | EventKind::PeeringConflict)
            });
            let effect = if confirmed.is_some() {
                "The operator's log confirms it paused"
            } else {
                "Peers of higher or equal priority make kopf pause (a lower one pauses itself)"
            };
            Some(finding(
                CheckId::RuntimeForeignPeer,
                target.name(),
                format!(
                    "{object} lists live peers that are not this operator's pods: {}. {effect}. Stop them (a `kopf run --dev` on a laptop, a forgotten `kopf freeze`, another deployment of the same operator), or give this operator a peering of its own with --peering.",
                    listed(&foreign, "; ", MAX_LISTED)
                ),
                confirmed.map(quote),
            ))
        })
        .collect()
}

/// What a foreign peer is, if it matters: a higher or equal priority pauses this
/// operator; a developer's identity is flagged at any priority.
fn describe_foreign(peer: &Peer, own_priority: i64) -> Option<String> {
    let laptop = looks_like_a_person(&peer.id);
    let why = match peer.priority {
        DEV_PRIORITY if own_priority < DEV_PRIORITY => {
            "priority 666, what --dev sets: this operator pauses in its favour".to_string()
        }
        p if p > own_priority && p == FREEZE_PRIORITY => {
            "priority 100, kopf freeze's default: this operator pauses in its favour".to_string()
        }
        p if p > own_priority => format!(
            "priority {p}, above this operator's {own_priority}: this operator pauses in its favour"
        ),
        p if p == own_priority => format!("the same priority {p}: both pause"),
        p if laptop => format!(
            "priority {p}, below this operator's: it pauses itself, but a developer's machine takes part in this peering"
        ),
        _ => return None,
    };
    Some(format!("{} ({why})", peer.id))
}

/// `user@host/...` or `user@host` on a host that is not a Deployment's pod: kopf's
/// identity on a machine (without `POD_ID`).
fn looks_like_a_person(id: &str) -> bool {
    id.split_once('@')
        .is_some_and(|(_, rest)| !looks_like_a_pod(host_of(rest)))
}

/// The host of `host/...`, without a domain (a descriptive hostname may be a FQDN).
fn host_of(rest: &str) -> &str {
    let host = rest.split('/').next().unwrap_or_default();
    host.split('.').next().unwrap_or_default()
}

/// `<deployment>-<replicaset hash>-<5 characters>`: a Deployment's pod name.
fn looks_like_a_pod(name: &str) -> bool {
    let mut parts = name.rsplitn(3, '-');
    let (Some(suffix), Some(hash), Some(base)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let alnum = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    };
    !base.is_empty()
        && suffix.len() == 5
        && alnum(suffix)
        && (1..=10).contains(&hash.len())
        && alnum(hash)
}

/// How to tell the operator's own peers: `POD_ID` (a pod's name, or a fixed value),
/// else `user@<pod hostname>/...`; the Deployment's other pods (a rollout's old
/// ReplicaSet) count as its own.
struct OwnIdentity {
    pod_names: Vec<String>,
    pod_prefix: String,
    fixed: Option<String>,
    priority: i64,
}

impl OwnIdentity {
    fn of(target: &TargetEvidence, run: &KopfRun) -> OwnIdentity {
        let fixed = target
            .kopf_container()
            .and_then(|c| c.env.as_ref())
            .and_then(|env| env.iter().find(|e| e.name == "POD_ID"))
            .and_then(|e| e.value.clone());
        OwnIdentity {
            pod_names: target
                .pods
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect(),
            pod_prefix: format!("{}-", target.name()),
            fixed,
            priority: if run.dev {
                DEV_PRIORITY
            } else {
                run.priority.unwrap_or(0)
            },
        }
    }

    fn is(&self, id: &str) -> bool {
        let pod = match id.split_once('@') {
            Some((_, rest)) => host_of(rest),
            None => id,
        };
        let of_this_deployment = pod.strip_prefix(&self.pod_prefix).is_some_and(|rest| {
            rest.matches('-').count() == 1 && looks_like_a_pod(&format!("x-{rest}"))
        });
        self.fixed.as_deref() == Some(id)
            || self.pod_names.iter().any(|n| n == pod)
            || of_this_deployment
    }
}

/// `runtime.credentials-lost`: kopf ran out of valid credentials (its deciders and
/// message in [`faults`]).
fn credentials_lost(target: &str, logs: &LogEvidence) -> Option<Finding> {
    faults::credentials_lost_finding(target, logs)
}

/// `runtime.api-tls-failure`: the operator does not trust the API server's certificate
/// (its deciders and message in [`faults`]).
fn api_tls_failure(target: &str, logs: &LogEvidence) -> Option<Finding> {
    faults::api_tls_failure_finding(target, logs)
}

/// `runtime.thread-exhaustion`: Python could not start a thread (its deciders and
/// message in [`faults`]).
fn thread_exhaustion(target: &str, logs: &LogEvidence) -> Option<Finding> {
    faults::thread_exhaustion_finding(target, logs)
}

/// `runtime.unparsed-logs`: most lines match none of kopf's formats.
fn unparsed_logs(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let stats = &logs.stats;
    if stats.lines < MIN_LINES_TO_JUDGE || stats.kopf_ratio() >= MIN_KOPF_RATIO {
        return None;
    }
    Some(finding(
        CheckId::RuntimeUnparsedLogs,
        target,
        "Most lines of the operator's log match none of kopf's formats, so the log-based checks see little: log through kopf's loggers (the `logger` handler argument) and keep --log-format full, plain or json.".to_string(),
        None,
    ))
}

#[cfg(test)]
mod tests;

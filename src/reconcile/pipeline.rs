//! One reconcile of one KopfAudit, as a pipeline:
//! first sight (pending status) → gather (the target read live, then its areas) →
//! evaluate (no client required) → next status (no client required) → publish (status,
//! PolicyReport, Events) → metrics. Errors that only a spec change can fix are a Stalled status, not
//! an error: the audit waits for the change, or the interval.

use super::Context;
use crate::api::{KopfAudit, KopfAuditSpec, KopfAuditStatus};
use crate::catalog::{ConditionReason, REQUESTED_AT_ANNOTATION};
use crate::evaluate::{self, Outcome, Policy, StatusUpdate};
use crate::gather::{self, Candidates, GatherError, Reach, Resolution, ResolvedTarget, Shared};
use crate::model::evidence::Stall;
use crate::model::evidence::{AuditFailure, Observation};
use crate::model::settings::AuditSettings;
use crate::publish::{self, PublishError};
use futures::FutureExt;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Client, ResourceExt};
use std::future::Future;
use std::sync::Arc;

/// Why a reconcile failed; the error policy backs off and retries.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    /// The audit could not complete (its status says so); retried with back-off.
    #[error("the audit failed ({cause}): {failure}", cause = .0.cause.as_str(), failure = .0)]
    Audit(AuditFailure),
    /// Writing the status failed.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// A KopfAudit without a namespace (cannot happen for a namespaced kind).
    #[error("KopfAudit {0} has no namespace")]
    NoNamespace(String),
    /// Planning or publishing the status panicked (a defect): retried with back-off,
    /// and the process goes on serving the other audits.
    #[error("the audit panicked: {0}")]
    Panicked(String),
    /// This instance no longer holds (or could not renew) its Lease: it writes nothing,
    /// and is stepping down.
    #[error("not the leader: nothing written")]
    NotLeading,
}

/// What one audit audits: a KopfAudit's spec, and the settings read from it once, when
/// the audit started, for every step to share.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Audit<'a> {
    /// The spec as written (its target, handled resources and check selection).
    pub(crate) spec: &'a KopfAuditSpec,
    /// Its interval, hold-down, thresholds and log bounds.
    pub(crate) settings: &'a AuditSettings,
}

/// Gathers and evaluates one audit from its candidates (read by
/// [`gather::read_candidates`]): the function the operator and `kopf-audit check` share.
///
/// Whatever a tenant writes (its KopfAudit, its Deployment's args, its peering objects,
/// its operator's log) is read here. A panic on such data is a defect, but it must not
/// end the one process that audits every team: it is caught and the audit stalls with
/// the panic's message until the next interval.
pub(crate) async fn run_audit(
    client: &Client,
    Audit { spec, settings }: Audit<'_>,
    reach: &Reach,
    shared: &Shared,
    resolution: &Resolution,
    candidates: Result<Candidates, GatherError>,
    policy: &Policy,
) -> Outcome {
    let audit = async {
        let observation = match (resolution, candidates) {
            (Resolution::Suspended, _) => Ok(Observation::Suspended),
            (Resolution::Stalled(stall), _) => Ok(Observation::Stalled(stall.clone())),
            (Resolution::Target(target), Ok(candidates)) => {
                Ok(
                    gather::gather(client, spec, settings, target, reach, shared, &candidates)
                        .await,
                )
            }
            (Resolution::Target(_), Err(e)) => Err(e.failure()),
        };
        evaluate::evaluate(spec, settings, observation, policy)
    };
    contain_panic(audit)
        .await
        .unwrap_or_else(|message| Outcome::Stalled(panicked(&message)))
}

/// Runs `work`, turning a panic into its message (the payload of `panic!` and of the
/// standard library's panics is a string).
pub(crate) async fn contain_panic<T>(work: impl Future<Output = T>) -> Result<T, String> {
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|payload| {
            payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string())
        })
}

/// The most of a panic's message a status quotes.
const PANIC_MESSAGE_MAX: usize = 300;

/// The stall of an audit whose gathering or evaluation panicked.
fn panicked(message: &str) -> Stall {
    let mut quoted: String = message.chars().filter(|c| !c.is_control()).collect();
    if quoted.len() > PANIC_MESSAGE_MAX {
        let mut end = PANIC_MESSAGE_MAX;
        while !quoted.is_char_boundary(end) {
            end -= 1;
        }
        quoted.truncate(end);
        quoted.push('…');
    }
    tracing::error!(panic = %quoted, "an audit panicked: kopf-audit kept running and stalled this audit");
    Stall {
        reason: ConditionReason::InternalError,
        message: format!(
            "kopf-audit hit a defect while auditing this target ({quoted}). The other audits are unaffected and this one is tried again at the next interval; please report it with the auditor's log."
        ),
    }
}

/// The target's Deployments and pods: what the audit's last run read, while the watches
/// show nothing in their namespace changed since and no audit was asked for
/// (`audit-now` reads everything again); otherwise read now, and kept.
async fn read_target(
    audit: &KopfAudit,
    target: &ResolvedTarget,
    asked: bool,
    ctx: &Context,
) -> Result<Candidates, GatherError> {
    let changes = &ctx.shared.changes;
    if !asked && let Some(kept) = ctx.memory.kept_target(audit, &target.namespace, changes) {
        tracing::debug!("target unchanged since it was read: reused");
        return Ok(kept);
    }
    let mark = changes.mark();
    let read = gather::read_candidates(&ctx.client, target).await?;
    ctx.memory.keep_target(audit, mark, &read);
    Ok(read)
}

/// Reconciles one KopfAudit.
#[tracing::instrument(skip_all, fields(audit = %format!("{}/{}", audit.namespace().unwrap_or_default(), audit.name_any())))]
pub(crate) async fn reconcile(
    audit: Arc<KopfAudit>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let started = std::time::Instant::now();
    let namespace = audit
        .namespace()
        .ok_or_else(|| ReconcileError::NoNamespace(audit.name_any()))?;
    let stored = first_sight(&audit, &namespace, &ctx).await?;
    let requested = audit
        .annotations()
        .get(REQUESTED_AT_ANNOTATION)
        .map(String::as_str);
    let gap = ctx.settings.audit_now_min_gap;
    let now = std::time::Instant::now();
    if let Some(wait) = ctx
        .memory
        .request_wait(&audit, &stored, requested, gap, now)
    {
        defer_request(&audit, &namespace, &stored, wait, &ctx).await?;
        return Ok(Action::requeue(wait));
    }
    ctx.memory.audit_started(&audit, now);
    let settings = AuditSettings::from_spec(&audit.spec);
    let reach = Reach {
        own: namespace.clone(),
        cross_namespace: ctx.settings.allow_cross_namespace,
        reader: format!("{namespace}/{}", audit.name_any()),
    };
    let resolution = gather::resolve(&audit.spec, &reach);
    let asked = evaluate::unanswered_request(&stored, requested).is_some();
    let candidates = match &resolution {
        Resolution::Target(target) => read_target(&audit, target, asked, &ctx).await,
        Resolution::Suspended | Resolution::Stalled(_) => Ok(Candidates::default()),
    };
    if let Ok(candidates) = &candidates {
        ctx.memory.remember(&audit, &candidates.deployments);
    }
    let policy = &ctx.settings.policy;
    let outcome = run_audit(
        &ctx.client,
        Audit {
            spec: &audit.spec,
            settings: &settings,
        },
        &reach,
        &ctx.shared,
        &resolution,
        candidates,
        policy,
    )
    .await;
    let now = Time(Timestamp::now());
    let mut update = evaluate::next_status(
        Some(&stored),
        &outcome,
        audit.metadata.generation,
        &now,
        settings.resolve_after,
    );
    evaluate::acknowledge_request(
        &mut update,
        &stored,
        audit
            .annotations()
            .get(REQUESTED_AT_ANNOTATION)
            .map(String::as_str),
        &now,
    );
    let published = publish_update(&audit, &namespace, &update, &ctx).await?;
    let failed = match &outcome {
        Outcome::Failed(failure) => Some(failure.cause),
        _ => None,
    };
    ctx.metrics.audited(
        &namespace,
        &audit.name_any(),
        &update.status,
        started.elapsed(),
        failed,
    );
    ctx.metrics
        .interval(&namespace, &audit.name_any(), settings.interval);
    tracing::info!(
        changed = update.changed,
        events = published.events,
        events_owed = published.events_owed,
        "audited"
    );
    match outcome {
        Outcome::Failed(why) => Err(ReconcileError::Audit(why)),
        _ => Ok(Action::requeue(spread(
            settings.interval,
            &audit.uid().unwrap_or_else(|| audit.name_any()),
            Timestamp::now(),
        ))),
    }
}

/// The delay until the next audit: at this audit's own phase within the interval (from
/// a hash of its UID), at least half an interval away. Audits created in one wave (or
/// re-run by one change) spread evenly over the interval from their second cycle on
/// (1,000 audits at 5m: about 3.3 a second) instead of coming back all at once; an
/// audit left alone runs exactly every interval.
fn spread(interval: std::time::Duration, uid: &str, now: Timestamp) -> std::time::Duration {
    use std::hash::{Hash, Hasher};
    // In u128: an interval as long as the spec allows cannot overflow.
    let period = interval.as_millis().max(1);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    uid.hash(&mut hasher);
    let phase = u128::from(hasher.finish()) % period;
    let now_ms = now.as_millisecond().max(0) as u128;
    let earliest = now_ms + period / 2;
    // The first instant at or after `earliest` whose remainder is the phase.
    let offset = (phase + period - earliest % period) % period;
    let delay = earliest + offset - now_ms;
    std::time::Duration::from_millis(u64::try_from(delay).unwrap_or(u64::MAX))
}

/// The stored status, or the pending status written on first sight.
async fn first_sight(
    audit: &KopfAudit,
    namespace: &str,
    ctx: &Context,
) -> Result<KopfAuditStatus, ReconcileError> {
    if let Some(stored) = ctx
        .memory
        .stored(audit)
        .filter(|s| !s.conditions.is_empty())
    {
        return Ok(stored);
    }
    let pending = evaluate::pending_status(audit.metadata.generation, &Time(Timestamp::now()));
    write_status(audit, namespace, &pending, ctx).await?;
    Ok(pending)
}

/// Echoes in status when a requested audit runs (`status.requestDeferredUntil`), once
/// per wait: the requests that follow within it change nothing to write.
async fn defer_request(
    audit: &KopfAudit,
    namespace: &str,
    stored: &KopfAuditStatus,
    wait: std::time::Duration,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    if stored.request_deferred_until.is_some() {
        return Ok(());
    }
    let until = jiff::SignedDuration::try_from(wait)
        .ok()
        .and_then(|wait| Timestamp::now().checked_add(wait).ok())
        .unwrap_or_else(Timestamp::now);
    tracing::info!(wait_ms = wait.as_millis() as u64, "audit request deferred");
    let status = KopfAuditStatus {
        request_deferred_until: Some(Time(until)),
        ..stored.clone()
    };
    write_status(audit, namespace, &status, ctx).await
}

/// Writes a status, only while this instance may write, and remembers it until the
/// cache shows it.
async fn write_status(
    audit: &KopfAudit,
    namespace: &str,
    status: &KopfAuditStatus,
    ctx: &Context,
) -> Result<(), ReconcileError> {
    if !ctx.mandate.holds() {
        return Err(ReconcileError::NotLeading);
    }
    let api: Api<KopfAudit> = Api::namespaced(ctx.client.clone(), namespace);
    let rv = publish::write_status(&api, &audit.name_any(), status).await?;
    ctx.memory.record(audit, rv, status);
    ctx.metrics.status_write(namespace, &audit.name_any());
    Ok(())
}

/// What one audit delivered of its Events, and how many it still owes.
struct Published {
    events: usize,
    events_owed: usize,
}

/// Writes the report objects `--reports` asks for; owed again, all of them, when one
/// fails (server-side apply makes rewriting the others harmless).
async fn write_reports(audit: &KopfAudit, update: &StatusUpdate, ctx: &Context) {
    let mut all_written = true;
    for kind in ctx.settings.reports.kinds() {
        match publish::reports::write(&ctx.client, *kind, audit, &update.status, &update.passed)
            .await
        {
            Ok(written) => tracing::debug!(written, kind = kind.name(), "report"),
            Err(e) => {
                all_written = false;
                tracing::warn!(error = %e, kind = kind.name(), "report not written: retried at the next audit");
            }
        }
    }
    if all_written {
        ctx.memory.owe_policy_report(audit, false);
    }
}

/// Writes what changed: the status, then the PolicyReport, then the transition Events;
/// with them whatever earlier audits could not publish after their status was written
/// (their Events first, in order). What fails now is owed to the next audit.
async fn publish_update(
    audit: &KopfAudit,
    namespace: &str,
    update: &StatusUpdate,
    ctx: &Context,
) -> Result<Published, ReconcileError> {
    if update.changed {
        // When this fails, nothing of this audit is published: the next plans it again.
        write_status(audit, namespace, &update.status, ctx).await?;
        ctx.memory.owe_policy_report(audit, true);
    }
    let at = Timestamp::now();
    let planned = update.events.iter().enumerate().map(|(index, planned)| {
        publish::OutgoingEvent::new(&audit.name_any(), planned.clone(), at, index)
    });
    let given_up = ctx.memory.queue(audit, planned);
    if given_up > 0 {
        tracing::warn!(
            given_up,
            "transition Events given up: more were owed than an audit keeps"
        );
        ctx.metrics.events_given_up(given_up);
    }
    if ctx.memory.policy_report_owed(audit) && ctx.mandate.holds() {
        write_reports(audit, update, ctx).await;
    }
    Ok(Published {
        events: deliver_events(audit, ctx).await,
        events_owed: ctx.memory.events_owed(audit),
    })
}

/// Posts the Events `audit` owes, in order, and returns how many were delivered. It
/// stops at the first that fails for a reason that may pass: that one and those after
/// it wait for the next audit. One the API server refuses as invalid is given up.
async fn deliver_events(audit: &KopfAudit, ctx: &Context) -> usize {
    let mut delivered = 0;
    while let Some(event) = ctx.memory.next_event(audit) {
        if !ctx.mandate.holds() {
            break;
        }
        match ctx.events.emit(audit, &event).await {
            Ok(delivery) => {
                if delivery == publish::Delivery::AlreadyThere {
                    tracing::debug!(
                        event = event.name(),
                        "event already created by an earlier attempt"
                    );
                }
                delivered += 1;
            }
            Err(e) if e.is_permanent() => {
                tracing::warn!(error = %e, reason = %event.planned.reason, "event refused as invalid: given up");
                ctx.metrics.events_given_up(1);
            }
            Err(e) => {
                tracing::warn!(error = %e, reason = %event.planned.reason, "event not created: retried at the next audit");
                break;
            }
        }
        ctx.memory.settle_event(audit, event.name());
    }
    delivered
}

#[cfg(test)]
mod tests {
    use super::spread;
    use jiff::Timestamp;
    use std::time::Duration;

    const FIVE_MINUTES: Duration = Duration::from_secs(300);

    #[test]
    fn a_requeue_is_between_half_and_one_and_a_half_intervals() {
        let now = Timestamp::from_second(1_800_000_000).expect("a valid time");
        for i in 0..1000 {
            let d = spread(FIVE_MINUTES, &format!("uid-{i}"), now);
            assert!(d >= FIVE_MINUTES / 2 && d < FIVE_MINUTES * 3 / 2, "{d:?}");
        }
    }

    #[test]
    fn an_audit_left_alone_runs_exactly_every_interval() {
        let mut now = Timestamp::from_second(1_800_000_000).expect("a valid time");
        now = now + spread(FIVE_MINUTES, "uid-a", now);
        for _ in 0..5 {
            let d = spread(FIVE_MINUTES, "uid-a", now);
            assert_eq!(d, FIVE_MINUTES);
            now += d;
        }
    }

    #[test]
    fn audits_created_in_one_wave_come_back_spread_over_the_interval() {
        let now = Timestamp::from_second(1_800_000_000).expect("a valid time");
        // 1,000 audits finishing at once: their next runs, per 30-second slot.
        let mut slots = [0u32; 10];
        for i in 0..1000 {
            let at = now + spread(FIVE_MINUTES, &format!("uid-{i}"), now);
            let phase = at.as_second().rem_euclid(300) as usize / 30;
            slots[phase] += 1;
        }
        // Evenly: 100 a slot; never the whole wave in one.
        assert!(slots.iter().all(|&n| (60..=140).contains(&n)), "{slots:?}");
    }
}

//! `runtime.rate-limited`: the API server answered the operator with HTTP 429 again
//! and again, so kopf backs off and handling lags.

use super::{on_log, quote};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use kopf_log::{EventKind, KopfVersion, Record};

/// The refused requests: decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
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
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
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

#[cfg(test)]
mod tests;

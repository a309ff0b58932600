//! `workload.grace-period`: the daemon kopf waits for longest at the operator's exit
//! (its `cancellation_backoff` + `cancellation_timeout`: kopf 1.45
//! `_core/engines/daemons.py`, `daemon_killer` and `stop_daemon`, all daemons at once)
//! waits longer than the pod's grace period, so the kubelet's SIGKILL cuts the stop
//! short. Reads the pod template's terminationGracePeriodSeconds and the daemon stop the
//! source declares: live evidence has none, and nothing is decided.

use super::on_kopf_container;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::{KopfEvidence, TargetEvidence};

/// The kubelet's grace period when the pod sets none (Kubernetes'
/// `terminationGracePeriodSeconds` default).
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// Seconds the fix leaves beyond kopf's wait, for the rest of kopf's exit.
const MARGIN_SECONDS: u64 = 10;

/// The live decider the registry lists: [`live_on`] on the target's kopf container.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_kopf_container(input, |_, _| live_on(input.target, input.kopf))
}

/// The declared daemon stop against the pods' grace period (set or default).
pub(crate) fn live_on(target: &TargetEvidence, kopf: &KopfEvidence) -> Option<Finding> {
    let stop = kopf.declared_daemon_stop.as_ref()?;
    let set = target
        .deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.termination_grace_period_seconds);
    let grace = set.unwrap_or(DEFAULT_GRACE_SECONDS);
    let wait = stop.total();
    if u64::try_from(grace).is_ok_and(|g| wait.0 <= g.saturating_mul(1000)) {
        return None;
    }
    let shown_grace = match set {
        Some(g) => format!("terminationGracePeriodSeconds: {g}"),
        None => {
            format!("no terminationGracePeriodSeconds (the default, {DEFAULT_GRACE_SECONDS} s)")
        }
    };
    let mut f = finding(
        CheckId::WorkloadGracePeriod,
        target.name(),
        format!(
            "The pods have {shown_grace}, but when the operator exits kopf waits up to {wait} for daemon {}() to stop (cancellation_backoff {} + cancellation_timeout {}, at {}; kopf 1.45 `_core/engines/daemons.py`, `stop_daemon`): the kubelet SIGKILLs the operator first, cutting short the daemon's own cleanup and the rest of kopf's exit. Raise terminationGracePeriodSeconds above {wait}, or shorten the daemon's timeouts.",
            stop.function, stop.backoff, stop.timeout, stop.location
        ),
        Some(format!(
            "{}: {}() cancellation_backoff {} + cancellation_timeout {} = {wait}; {shown_grace}",
            stop.location, stop.function, stop.backoff, stop.timeout
        )),
    );
    f.fix = Some(format!(
        "spec:\n  template:\n    spec:\n      terminationGracePeriodSeconds: {}\n",
        wait.ceil_seconds().saturating_add(MARGIN_SECONDS)
    ));
    Some(f)
}

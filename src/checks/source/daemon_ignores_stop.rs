//! `source.daemon-ignores-stop`: a looping daemon that never reads its `stopped` flag,
//! or sleeps past it (kopf 1.45 `_core/engines/daemons.py`). Reads each daemon's loop,
//! reads of `stopped`, sleeps and cancellation_timeout.

use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::{DaemonFacts, Handler, Millis, Sleep};

/// The longest sleep a daemon may take between checks of `stopped`: a stop waits out at
/// most that long, as in kopf's own termination example (`time.sleep(1.0)`, kopf docs
/// `daemons.rst`).
const TOLERATED_SLEEP: Millis = Millis(1000);

/// The decider, per handler: a daemon that loops and never reads its `stopped`
/// flag (at the loop), else one that sleeps past it (at the first such sleep). kopf
/// stops a daemon by setting `stopped`; it cancels only an async daemon, and only with
/// `cancellation_timeout` (kopf 1.45 `_core/engines/daemons.py`); a thread cannot be
/// cancelled at all (`_core/actions/invocation.py` waits for it).
pub(crate) fn source(h: &Handler) -> Option<SourceFinding> {
    let daemon = h.daemon.as_ref()?;
    let loop_at = daemon.first_loop.as_ref()?;
    if !daemon.reads_stopped {
        if h.is_async && daemon.cancels {
            // kopf cancels it: any await raises CancelledError (kopf docs `daemons.rst`).
            return None;
        }
        let mut found = raise(
            CheckId::SourceDaemonIgnoresStop,
            &handler_target(h),
            loop_at,
            never_stops(h, daemon),
        );
        found.finding.fix = Some(fix(h, None));
        return Some(found);
    }
    let sleep = daemon
        .sleeps
        .iter()
        .find(|s| sleeps_past_stop(h, daemon, s))?;
    let waited = sleep.duration.map_or_else(
        || "as long as it lasts".to_string(),
        |d| format!("up to {d}"),
    );
    let mut found = raise(
        CheckId::SourceDaemonIgnoresStop,
        &handler_target(h),
        &sleep.location,
        format!(
            "Daemon {}() sleeps with {}(){}: the sleep does not end when kopf sets `stopped`, so every stop (its object's deletion, the operator's exit) waits {waited}, and a deletion that finds the daemon still running is looked at again only after settings.background.cancellation_polling (60 s; kopf 1.45 `_core/engines/daemons.py`, `stop_daemons`). Sleep with `{}`, which returns as soon as the flag is set.",
            h.function,
            sleep.function,
            if h.is_async {
                " and has no cancellation_timeout (kopf never cancels it)"
            } else {
                ""
            },
            wait_call(h, sleep.duration)
        ),
    );
    found.finding.fix = Some(fix(h, sleep.duration));
    Some(found)
}

/// The message of a looping daemon that never reads `stopped`.
fn never_stops(h: &Handler, daemon: &DaemonFacts) -> String {
    let deleted = match (h.is_async, daemon.cancels) {
        (false, true) => {
            "when its object is deleted, kopf gives up after cancellation_backoff + cancellation_timeout (`did not exit in time. Leaving it orphaned.`) and the thread runs on for good, holding one of settings.execution.executor's threads"
        }
        _ => {
            "when its object is deleted, the finalizer stays for as long as the daemon runs (kopf polls it every 60 s, settings.background.cancellation_polling): the deletion hangs"
        }
    };
    let exiting = if h.is_async {
        "when the operator exits, kopf abandons it and cancels it with the hung tasks 5 s later"
    } else {
        "when the operator exits, the thread keeps the process alive until the kubelet kills it at the end of terminationGracePeriodSeconds"
    };
    let how = if h.is_async {
        "Loop `while not stopped:` and sleep with `await stopped.wait(seconds)`, or set cancellation_timeout= on the decorator (kopf then cancels it)"
    } else {
        "Loop `while not stopped:` and sleep with `stopped.wait(seconds)`"
    };
    format!(
        "{} daemon {}() loops but never checks its `stopped` flag{}: kopf stops a daemon by setting that flag ({}; kopf 1.45 `_core/engines/daemons.py`). So {deleted}; {exiting}. {how}.",
        if h.is_async { "Async" } else { "Synchronous" },
        h.function,
        if h.is_async {
            ", and has no cancellation_timeout"
        } else {
            ""
        },
        if h.is_async {
            "it cancels an async daemon only when cancellation_timeout is set"
        } else {
            "a thread cannot be cancelled"
        },
    )
}

/// Whether a sleep keeps a daemon from stopping: `time.sleep` in a thread, or
/// `asyncio.sleep` in an async daemon kopf never cancels, for longer than
/// [`TOLERATED_SLEEP`] or an unread time. (`time.sleep` in an async daemon is
/// `source.blocking-call`'s.)
fn sleeps_past_stop(h: &Handler, daemon: &DaemonFacts, sleep: &Sleep) -> bool {
    let blocks_stop = match (h.is_async, sleep.function.as_str()) {
        (false, "time.sleep") => true,
        (true, "asyncio.sleep") => !daemon.cancels,
        _ => false,
    };
    blocks_stop && sleep.duration.is_none_or(|d| d > TOLERATED_SLEEP)
}

/// The call that waits as a sleep does but returns when `stopped` is set.
fn wait_call(h: &Handler, duration: Option<Millis>) -> String {
    let seconds = duration.map_or_else(|| "seconds".to_string(), seconds_literal);
    if h.is_async {
        format!("await stopped.wait({seconds})")
    } else {
        format!("stopped.wait({seconds})")
    }
}

/// A duration as a Python number literal.
fn seconds_literal(d: Millis) -> String {
    if d.0.is_multiple_of(1000) {
        (d.0 / 1000).to_string()
    } else {
        format!("{}.{:03}", d.0 / 1000, d.0 % 1000)
            .trim_end_matches('0')
            .to_string()
    }
}

/// A daemon's loop that stops when kopf says so.
fn fix(h: &Handler, duration: Option<Millis>) -> String {
    let def = if h.is_async { "async def" } else { "def" };
    format!(
        "{def} {}(stopped, **kwargs):\n    while not stopped:\n        ...  # the work\n        {}\n",
        h.function,
        wait_call(h, duration.or(Some(Millis(10_000))))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractional_seconds_are_written_as_python_numbers() {
        assert_eq!(seconds_literal(Millis(2500)), "2.5");
        assert_eq!(seconds_literal(Millis(250)), "0.25");
        assert_eq!(seconds_literal(Millis(60_000)), "60");
    }
}

//! `runtime.credentials-lost`: kopf ran out of valid credentials, so its watchers stop;
//! the finding names the login handler the log shows.

use super::faults::{fault_quote, first_with};
use super::{EXITS_ON_DEAD_WATCHER, describe_version, on_log, quote, task_name};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::evidence::LogEvidence;
use kopf_log::{EventKind, Fault, HandlerKind};

/// Decided from the log, when it was read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    on_log(input, decide)
}

/// The ids of kopf's own login handlers (kopf 1.37.5, 1.38.0 and 1.45.2
/// `_core/intents/registries.py` `SmartOperatorRegistry`; `login_via_async_client` in
/// 1.45.2, not in 1.38.0), and what each reads.
const KOPF_LOGINS: [(&str, &str); 5] = [
    (
        "login_via_client",
        "kopf's login via the `kubernetes` client library (login_via_client: its in-cluster ServiceAccount token or kubeconfig)",
    ),
    (
        "login_via_async_client",
        "kopf's login via the `kubernetes_asyncio` client library (login_via_async_client)",
    ),
    (
        "login_via_pykube",
        "kopf's login via `pykube-ng` (login_via_pykube: its in-cluster ServiceAccount token or kubeconfig)",
    ),
    (
        "login_with_service_account",
        "kopf's own login with the ServiceAccount's token file (login_with_service_account)",
    ),
    (
        "login_with_kubeconfig",
        "kopf's own login with a kubeconfig (login_with_kubeconfig)",
    ),
];

/// The logger of the authentication activity's handlers as kopf's `full` format cuts
/// it (`kopf.activities.authentication`, 20 characters).
const LOGIN_LOGGER: &str = "kopf.activities.auth";

/// Which login handler gave the credentials, as the log says it: `Activity 'ID'
/// succeeded.` (kopf 1.37.5 to 1.45.2 `_core/actions/execution.py`) under the
/// authentication logger, or with the id of one of kopf's own.
fn login_path(logs: &LogEvidence) -> String {
    let login = logs.all_records().find_map(|r| match &r.kind {
        EventKind::HandlerSucceeded { handler } if handler.kind == HandlerKind::Activity => {
            let own = KOPF_LOGINS.iter().find(|(id, _)| *id == handler.id);
            let logged = r.logger.as_deref().is_some_and(|l| l.starts_with(LOGIN_LOGGER));
            match own {
                Some((_, what)) => Some(format!("The credentials come from {what}.")),
                None if logged => Some(format!(
                    "The credentials come from the operator's own login handler '{}' (@kopf.on.login).",
                    kopf_log::excerpt(&handler.id, 80)
                )),
                None => None,
            }
        }
        _ => None,
    });
    login.unwrap_or_else(|| {
        "The log does not say which login handler gave the credentials (kopf logs `Activity 'ID' succeeded.` at INFO; the full format names its logger, kopf.activities.authentication).".to_string()
    })
}

/// What kopf does once its credentials are gone, by the log's version.
fn credentials_effect(logs: &LogEvidence) -> String {
    let v = &logs.version;
    if v.at_least.is_some_and(|lo| lo >= EXITS_ON_DEAD_WATCHER) {
        "kopf 1.45 stops the operator when a watcher fails so, and the pod restarts".into()
    } else if v.at_most.is_some_and(|hi| hi < EXITS_ON_DEAD_WATCHER) {
        format!(
            "{} leaves the failed watchers dead: the operator runs on, handling nothing, until it is restarted",
            describe_version(v)
        )
    } else {
        "up to kopf 1.44 the failed watchers stay dead until a restart; kopf 1.45 stops the operator".into()
    }
}

/// `runtime.credentials-lost`: kopf's re-authentication failed. kopf 1.37.5 to 1.45.2
/// raise `LoginError("Ran out of valid credentials. ...")` (`_cogs/structs/credentials.py`,
/// `Vault.select()` and `Vault.invalidate()`) when the API server refused every
/// credential (401) and the login handlers gave none it accepts, and log
/// `Re-authentication has failed: no credentials were retrieved from the login
/// handlers.` (`_core/engines/activities.py`) when they gave none at all; 401s
/// (`APIUnauthorizedError`) followed by a failed watcher or observer are the same
/// fault seen from the other end.
pub(super) fn decide(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let stopped = || {
        logs.all_records().find(|r| {
            matches!(
                r.kind,
                EventKind::WatcherFailed { .. } | EventKind::TaskFailed { .. }
            ) && r.kind.background_task().is_some()
        })
    };
    let (record, fault) = if let Some(r) = first_with(logs, Fault::CredentialsExhausted) {
        (r, Some(Fault::CredentialsExhausted))
    } else if let Some(r) = logs
        .all_records()
        .find(|r| matches!(r.kind, EventKind::AuthenticationFailed { .. }))
    {
        (r, None)
    } else {
        first_with(logs, Fault::Unauthorized)?;
        (stopped()?, Some(Fault::Unauthorized))
    };
    let how = match record.kind {
        EventKind::AuthenticationFailed {
            reauthentication: false,
        } => {
            "no login handler gave credentials at startup (kopf 1.37 to 1.45 `Initial authentication has failed`)"
        }
        EventKind::AuthenticationFailed {
            reauthentication: true,
        } => {
            "the API server refused them (401 Unauthorized) and no login handler gave new ones (kopf 1.37 to 1.45 `Re-authentication has failed`)"
        }
        _ if fault == Some(Fault::Unauthorized) => {
            "the API server refused them (401 Unauthorized, kopf's `APIUnauthorizedError`)"
        }
        _ => {
            "the API server refused them (401 Unauthorized) and re-authentication gave none it accepts (kopf 1.37 to 1.45 `Ran out of valid credentials`)"
        }
    };
    let what = match stopped() {
        Some(task) => format!(
            "kopf's {} stopped on it: {}",
            task_name(task),
            credentials_effect(logs)
        ),
        None => "every request of the operator fails until it logs in again".into(),
    };
    let evidence = match fault {
        Some(f) => fault_quote(record, f),
        None => quote(record),
    };
    let mut f = finding(
        CheckId::RuntimeCredentialsLost,
        target,
        format!(
            "kopf lost its credentials, as {how}, so {what}. {} A login handler must return fresh credentials on every call: read the token file again (a projected ServiceAccount token is rotated every hour), not a token cached at startup, and check that the ServiceAccount and its token still exist.",
            login_path(logs)
        ),
        Some(evidence),
    );
    f.fix = Some(CREDENTIALS_FIX.into());
    Some(f)
}

/// A login handler that reads the ServiceAccount's token file on every call (kopf's
/// own `login_with_service_account`, kopf 1.37.5 to 1.45.2 `_core/intents/piggybacking.py`).
const CREDENTIALS_FIX: &str = "import kopf\n\n@kopf.on.login()\ndef login(**kwargs):\n    # Called again on every 401: return what the token file holds now.\n    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)\n";

//! The faults of the operator's own runtime that its log names, whatever the template
//! they show in (a dead watcher, a handler failure, a request retry, a traceback of
//! its own): `runtime.credentials-lost`, `runtime.api-tls-failure` and
//! `runtime.thread-exhaustion`. Each quotes one bounded, redacted line and names what
//! the log shows (the login handler, the host and the failing step, the handler),
//! nothing that changes from one audit to the next.

use super::{EXITS_ON_DEAD_WATCHER, QUOTE_CHARS, describe_version, quote, task_name};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::finding;
use crate::model::evidence::LogEvidence;
use kopf_log::{EventKind, Fault, HandlerKind, Record};

/// The first record that names `fault`, the current containers' first.
fn first_with(logs: &LogEvidence, fault: Fault) -> Option<&Record> {
    logs.all_records()
        .find(|r| r.fault() == Some(fault) || names(r, fault))
}

/// Whether the message or a traceback line names `fault` (a record may name several:
/// [`Record::fault`] gives the first).
fn names(record: &Record, fault: Fault) -> bool {
    let marker = fault.marker();
    record.message.contains(marker) || record.traceback.iter().any(|l| l.contains(marker))
}

/// The record quoted, and, when the quote does not show the fault (the message names
/// it past the cut, or only a traceback line does), the part that names it: both
/// bounded.
fn fault_quote(record: &Record, fault: Fault) -> String {
    let head = quote(record);
    let marker = fault.marker();
    if head.contains(marker) {
        return head;
    }
    let naming = std::iter::once(record.message.as_str())
        .chain(record.traceback.iter().rev().map(String::as_str))
        .find(|text| text.contains(marker));
    match naming {
        Some(text) => format!("{head} ... {}", around(text, marker)),
        None => head,
    }
}

/// `text` from a little before `marker` (`[SSL: CERTIFICATE_VERIFY_FAILED] ...`),
/// bounded; the whole of it when it is short.
fn around(text: &str, marker: &str) -> String {
    let text = text.trim();
    let at = text.find(marker).unwrap_or(0);
    let mut start = if text.len() <= QUOTE_CHARS {
        0
    } else {
        at.saturating_sub(6)
    };
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    kopf_log::excerpt(&text[start..], QUOTE_CHARS)
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
pub(super) fn credentials_lost_finding(target: &str, logs: &LogEvidence) -> Option<Finding> {
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

/// `host:port` of an aiohttp connection error (`Cannot connect to host H:P ssl:...`,
/// `ConnectionKey(host='H', port=P, ...)`) or of a request's URL
/// (`GET https://H:P/path`).
fn tls_host(text: &str) -> Option<String> {
    if let Some(rest) = text.split_once("Cannot connect to host ").map(|(_, r)| r) {
        return rest.split_whitespace().next().map(clean_host);
    }
    let (_, rest) = text.split_once("https://")?;
    rest.split(['/', ' ', '?']).next().map(clean_host)
}

/// A host as a message may say it: printable, bounded.
fn clean_host(host: &str) -> String {
    kopf_log::excerpt(host.trim_end_matches([',', ')', '\'']), 100)
}

/// The request that failed (`GET /api`), from `Request attempt #N/M failed; ...: GET
/// URL -> ...` (kopf 1.38.0 and 1.45.2 `_cogs/clients/api.py`).
fn tls_request(text: &str) -> Option<String> {
    let (_, rest) = text.split_once(": ")?;
    let (method, rest) = rest.split_once(' ')?;
    if !matches!(method, "GET" | "POST" | "PATCH" | "PUT" | "DELETE") {
        return None;
    }
    let url = rest.split_whitespace().next()?;
    let path = url
        .strip_prefix("https://")
        .and_then(|u| u.find('/').map(|at| &u[at..]))
        .unwrap_or(url);
    let path = path.split('?').next().unwrap_or(path);
    Some(format!("{method} {}", kopf_log::excerpt(path, 120)))
}

/// OpenSSL's reason after `certificate verify failed: ` (`self-signed certificate`,
/// `unable to get local issuer certificate`, `IP address mismatch, ...`).
fn tls_reason(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("certificate verify failed: ")?;
    let end = rest
        .find(" (_ssl")
        .or_else(|| rest.find(['\'', '\n']))
        .unwrap_or(rest.len());
    Some(kopf_log::excerpt(&rest[..end], 100))
}

/// What failed on it: the request, else the background task, else the handler.
fn tls_step(records: &[&Record]) -> Option<String> {
    if let Some(request) = records.iter().find_map(|r| {
        matches!(r.kind, EventKind::RequestRetry { .. })
            .then(|| tls_request(&r.message))
            .flatten()
    }) {
        return Some(format!("at the request `{request}`"));
    }
    records.iter().find_map(|r| {
        if r.kind.background_task().is_some() {
            Some(format!("in kopf's {}", task_name(r)))
        } else {
            r.kind.handler().map(|h| format!("in {h}"))
        }
    })
}

/// `runtime.api-tls-failure`: the operator does not trust the API server's
/// certificate (OpenSSL's `CERTIFICATE_VERIFY_FAILED`, in `ssl.SSLCertVerificationError`
/// and aiohttp's `ClientConnectorCertificateError`): kopf 1.37.5 to 1.45.2 retry the
/// request (`_cogs/clients/api.py`), then the watcher, observer or handler fails.
pub(super) fn api_tls_failure_finding(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let fault = Fault::CertificateVerifyFailed;
    let records: Vec<&Record> = logs.all_records().filter(|r| names(r, fault)).collect();
    let first = *records.first()?;
    let text = |r: &Record| {
        std::iter::once(r.message.as_str())
            .chain(r.traceback.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let host = records.iter().find_map(|r| tls_host(&text(r)));
    let reason = records.iter().find_map(|r| tls_reason(&text(r)));
    let step = tls_step(&records);
    let mut what = match &host {
        Some(h) => format!("The operator does not trust the certificate of the API server at {h}"),
        None => "The operator does not trust the API server's certificate".to_string(),
    };
    if let Some(reason) = reason {
        what.push_str(&format!(" ({reason})"));
    }
    if let Some(step) = step {
        what.push_str(&format!(", {step}"));
    }
    let mut f = finding(
        CheckId::RuntimeApiTlsFailure,
        target,
        format!(
            "{what}: kopf retries, then its watchers and handlers fail (kopf 1.37 to 1.45), so nothing is handled. Give the login the cluster's CA: kopf's own logins read the ServiceAccount's ca.crt or the kubeconfig's certificate-authority; a custom @kopf.on.login must pass ca_path or ca_data to kopf.ConnectionInfo. Behind a proxy that re-signs TLS, trust the proxy's CA. Do not set insecure=True."
        ),
        Some(fault_quote(first, fault)),
    );
    f.fix = Some(TLS_FIX.into());
    Some(f)
}

/// A login handler that passes the in-cluster CA bundle (kopf.ConnectionInfo's
/// `ca_path`, kopf 1.37.5 to 1.45.2 `_cogs/structs/credentials.py`).
const TLS_FIX: &str = "import kopf\n\n@kopf.on.login()\ndef login(**kwargs):\n    # The ServiceAccount's ca.crt, else the kubeconfig's certificate-authority; a\n    # custom login passes ca_path= (or ca_data=) to kopf.ConnectionInfo instead.\n    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)\n";

/// `runtime.thread-exhaustion`: Python could not start a thread (CPython's
/// `RuntimeError: can't start new thread`). kopf runs sync handlers and daemons in its
/// executor's threads (kopf 1.37.5 to 1.45.2 `_core/actions/invocation.py`,
/// `settings.execution.max_workers`, by default Python's `min(32, CPUs + 4)`); a sync
/// daemon holds its thread for its whole life.
pub(super) fn thread_exhaustion_finding(target: &str, logs: &LogEvidence) -> Option<Finding> {
    let fault = Fault::ThreadExhausted;
    let record = first_with(logs, fault)?;
    let handlers: Vec<String> = {
        let mut seen: Vec<String> = logs
            .all_records()
            .filter(|r| names(r, fault))
            .filter_map(|r| r.kind.handler().map(|h| h.to_string()))
            .collect();
        seen.sort();
        seen.dedup();
        seen
    };
    let failing = match handlers.as_slice() {
        [] => "kopf's own machinery fails".to_string(),
        [one] => format!("{one} fails and is retried"),
        many => format!(
            "{} fail and are retried",
            crate::model::bounded::listed(many, ", ", 3)
        ),
    };
    let daemons = handlers.iter().any(|h| h.starts_with("Daemon "));
    let mut message = format!(
        "Python could not start a new thread (`can't start new thread`): {failing}. kopf runs sync handlers, timers and daemons in a thread pool (settings.execution.max_workers, by default min(32, CPUs + 4)), and each sync daemon holds a thread for as long as it runs; the container hit its limit of threads (the pod's pids limit, the node's, or too little memory for their stacks)."
    );
    if daemons {
        message.push_str(
            " Make long-running daemons async (`async def`), so that they hold no thread.",
        );
    }
    message.push_str(" Cap settings.execution.max_workers below the limit, or raise the limit.");
    let mut f = finding(
        CheckId::RuntimeThreadExhaustion,
        target,
        message,
        Some(fault_quote(record, fault)),
    );
    f.fix = Some(THREADS_FIX.into());
    Some(f)
}

/// A startup handler that caps kopf's thread pool (kopf 1.37.5 to 1.45.2
/// `_cogs/configs/configuration.py` `ExecutionSettings.max_workers`).
const THREADS_FIX: &str = "import kopf\n\n@kopf.on.startup()\ndef configure(settings: kopf.OperatorSettings, **_):\n    # Below the pod's pids limit, with room for kopf's own threads.\n    settings.execution.max_workers = 16\n";

#[cfg(test)]
mod tests;

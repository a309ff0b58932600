//! Recognition of kopf's message templates.
//!
//! Every template here is copied from kopf's source (1.45.2; older forms from
//! 1.43.0, 1.39.1 and 1.38.0). Each one below is written the same in 1.38.0,
//! 1.43.0 and 1.45.2 (read in their sources), except those whose wording
//! changed: the handler exception (`. Will retry.` up to 1.39.1) and the
//! patch inconsistencies (`Patching failed` up to 1.43.0), see
//! [`VersionClue`](crate::VersionClue). File by file:
//! - `_core/actions/execution.py`: handler outcomes;
//! - `_core/reactor/processing.py`: `X is processed: N succeeded; M failed.`;
//! - `_core/actions/application.py`: patch inconsistencies;
//! - `_cogs/clients/events.py`: `Failed to post an event. ...`;
//! - `_cogs/clients/api.py`: `Request attempt #N/M failed; ...`;
//! - `_core/reactor/observation.py`: `Not enough permissions ...`, `Unresolved resources ...`;
//! - `_core/engines/peering.py`: pausing (`Pausing operations in favour of`,
//!   `Pausing all operators, including self`), conflicts (`Possibly
//!   conflicting operators with the same priority`), resuming;
//! - `_cogs/aiokits/aiotasks.py` (names from `_core/reactor/running.py`,
//!   `orchestration.py`; the same in 1.38.0, 1.43.0 and 1.45.2):
//!   `Watcher for ... has failed`, `Multidimensional multitasker has failed`,
//!   `Peering keep-alive for ... has failed`, `... has finished unexpectedly.`;
//! - `_core/actions/throttlers.py`: `Throttling for N seconds ...`;
//! - `_core/engines/daemons.py`: `... did not exit in time. Leaving it orphaned.`;
//! - `_core/reactor/running.py`: the scope `FutureWarning`;
//! - `_core/engines/activities.py`: `... authentication has failed: ...`.
//!
//! Besides, the [`Fault`]s of the operator's runtime, named anywhere in a message
//! or a traceback ([`fault_in`]).
//!
//! Matching is by fixed prefixes on the message (cheap `starts_with`) plus two
//! `memmem` scans (`is forbidden`, the FutureWarning) over the whole line.

use crate::swar::{find_near, find_near2};
use crate::{
    BackgroundTask, EventKind, ExceptionOutcome, Fault, Forbidden, HandlerKind, HandlerRef,
    PermissionScope, RequestAttempt,
};
use memchr::memmem;

/// The result of classifying one message.
///
/// Exists because one message can carry several facts: e.g. a
/// `Request attempt` line is both a retry and an RBAC denial.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// The primary meaning.
    pub kind: EventKind,
    /// An RBAC denial found anywhere in the message.
    pub forbidden: Option<Forbidden>,
    /// The request attempt of `Request attempt ...` lines.
    pub request: Option<RequestAttempt>,
}

/// Pre-built substring finders, built once per parser.
pub(crate) struct Finders {
    pub(crate) forbidden: memmem::Finder<'static>,
    future: memmem::Finder<'static>,
}

impl Finders {
    pub(crate) fn new() -> Self {
        Finders {
            forbidden: memmem::Finder::new(b" is forbidden"),
            future: memmem::Finder::new(b"Absence of either namespaces or cluster-wide flag"),
        }
    }

    /// Finds and parses the first `is forbidden` clause in `text`.
    pub(crate) fn forbidden_in(&self, text: &[u8]) -> Option<Forbidden> {
        let at = self.forbidden.find(text)?;
        Some(forbidden_at(text, at))
    }
}

/// What [`Finders::quick_routine`] proved about a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoutineTag {
    /// [`EventKind::HandlerSucceeded`].
    Succeeded,
    /// [`EventKind::CauseProcessed`].
    Processed,
    /// [`EventKind::Other`].
    Other,
}

/// Every prefix on which [`fixed_message`] may return a kind (or cut its
/// search short): the quick path leaves such messages to [`classify`].
const FIXED_PREFIXES: &[&[u8]] = &[
    b"Request attempt #",
    b"Receiving `too many requests` error from server",
    b"Resuming operations after the pause",
    b"Failed to post an event.",
    b"Merge-patching finished with inconsistencies",
    b"Multidimensional multitasker has failed",
    b"Patching failed with inconsistencies",
    b"Pausing operations in favour of",
    b"Pausing all operators, including self",
    b"Possibly conflicting operators with the same priority",
    b"Not enough permissions to ",
    b"Unresolved resources cannot be served",
    b"Watcher for ",
    b"Throttling for ",
    b"Initial authentication has failed",
    b"Re-authentication has failed",
    b"Authentication has failed",
    // The other background tasks of `task_message`.
    b"Peering keep-alive for ",
    b"Peering observer for ",
    b"Multidimensional multitasker has ",
    b"Resource observer has ",
    b"Namespace observer has ",
    b"Credentials retriever has ",
    b"Poster of events has ",
    b"Health reporter has ",
    b"Daemon killer has ",
    b"Admission insights chain has ",
    b"Admission validating configuration manager has ",
    b"Admission mutating configuration manager has ",
    b"Admission webhook server has ",
    b"The command has ",
];

/// The first bytes of [`FIXED_PREFIXES`]: most messages start otherwise
/// and skip the comparisons.
const FIXED_FIRST_BYTES: &[u8] = b"RFMPNUWTCHDAI";

impl Finders {
    /// Without allocating: `Some(tag)` only when [`classify`] would give the
    /// kind `tag` with no RBAC denial and no request attempt, i.e. a record
    /// the auditor drops; `None` when the message may be anything else (the
    /// caller then classifies it in full). Mirrors [`classify`] branch by branch.
    ///
    /// ` is forbidden` (an RBAC denial, never routine) is looked for only
    /// where it can be: a success and a processed cause are fixed templates,
    /// which only a handler id with a space could make hold it.
    pub(crate) fn quick_routine(&self, m: &[u8]) -> Option<RoutineTag> {
        let first = m.first().copied().unwrap_or(0);
        if matches!(first, b'H' | b'T' | b'D' | b'A' | b'W' | b'I')
            && let Some((_, id, rest)) = handler_span(m)
        {
            if rest == b" succeeded." {
                // An activity's success is kept (`Record::is_routine`).
                if matches!(m.first(), Some(b'A')) && m.starts_with(b"Activity ") {
                    return None;
                }
                let may_forbid = find_near(b' ', id).is_some();
                if may_forbid && self.forbidden.find(m).is_some() {
                    return None;
                }
                return Some(RoutineTag::Succeeded);
            }
            // Every other outcome `handler_message` knows (or may know).
            if rest.starts_with(b" failed ")
                || rest.starts_with(b" has ")
                || rest.starts_with(b" did not exit in time")
                || rest.starts_with(b" is cancelled")
            {
                return None;
            }
            // `handler_message` gives nothing: `classify` goes on below.
        }
        if FIXED_FIRST_BYTES.contains(&first) && FIXED_PREFIXES.iter().any(|p| m.starts_with(p)) {
            return None;
        }
        if matches!(first, b'C' | b'U' | b'D' | b'R') && processed_parts(m).is_some() {
            return Some(RoutineTag::Processed);
        }
        if self.forbidden.find(m).is_some()
            || self.future.find(m).is_some()
            || fault_in(m).is_some()
        {
            return None;
        }
        Some(RoutineTag::Other)
    }
}

/// Classifies one message (without the `[ns/name] ` prefix and time/level
/// header): the primary [`EventKind`], plus any RBAC denial and request attempt.
/// Exists for callers that have messages from elsewhere (e.g. Event messages).
pub fn classify_message(message: &str) -> Classification {
    classify(message.as_bytes(), Some(message), &Finders::new())
}

/// Parses the first `... is forbidden: User "U" cannot VERB resource "R" ...`
/// clause in `text`. Exists for evidence found outside log records (e.g. in
/// a pod's termination message).
pub fn parse_forbidden(text: &str) -> Option<Forbidden> {
    Finders::new().forbidden_in(text.as_bytes())
}

/// `whole` is the valid UTF-8 text `m` was cut from, if known: strings are
/// then copied out of it without validating them again.
pub(crate) fn classify(m: &[u8], whole: Option<&str>, f: &Finders) -> Classification {
    let mut request = None;
    let mut kind = match m.first() {
        Some(b'H' | b'T' | b'D' | b'A' | b'W' | b'I') => handler_message(m, whole),
        _ => None,
    };
    if kind.is_none() {
        kind = fixed_message(m, &mut request);
    }
    let forbidden = f.forbidden_in(m);
    let kind = match kind {
        Some(EventKind::RequestRetry { .. }) | None if forbidden.is_some() => {
            forbidden.clone().map(forbidden_kind)
        }
        Some(k) => Some(k),
        None if f.future.find(m).is_some() => Some(EventKind::ScopeFutureWarning),
        None => None,
    };
    Classification {
        kind: kind.unwrap_or(EventKind::Other),
        forbidden,
        request,
    }
}

/// Turns denial details into the [`EventKind::Forbidden`] variant.
pub(crate) fn forbidden_kind(f: Forbidden) -> EventKind {
    EventKind::Forbidden {
        verb: f.verb,
        resource: f.resource,
        api_group: f.api_group,
        user: f.user,
        namespace: f.namespace,
        cluster_scope: f.cluster_scope,
    }
}

/// Parses `Handler 'id'` (or Timer/Daemon/...) at the start of `m`;
/// returns the handler and the rest after the closing quote.
pub(crate) fn handler_prefix<'m>(
    m: &'m [u8],
    whole: Option<&str>,
) -> Option<(HandlerRef, &'m [u8])> {
    let (kind, raw, rest) = handler_span(m)?;
    let id = if memchr::memchr(b'\\', raw).is_some() {
        unescape_py(raw)
    } else {
        own(whole, raw)
    };
    Some((HandlerRef { kind, id }, rest))
}

/// [`handler_prefix`] without building the handler: the kind, the raw
/// (still escaped) id and the rest after the closing quote. No allocation.
pub(crate) fn handler_span(m: &[u8]) -> Option<(HandlerKind, &[u8], &[u8])> {
    // Literal prefixes per arm: compared inline, without a `memcmp` call.
    let (kind, rest) = match m.first()? {
        b'H' => (HandlerKind::Handler, m.strip_prefix(b"Handler ")?),
        b'T' => (HandlerKind::Timer, m.strip_prefix(b"Timer ")?),
        b'D' => (HandlerKind::Daemon, m.strip_prefix(b"Daemon ")?),
        b'A' => (HandlerKind::Activity, m.strip_prefix(b"Activity ")?),
        b'W' => (HandlerKind::Webhook, m.strip_prefix(b"Webhook ")?),
        b'I' => (HandlerKind::Indexer, m.strip_prefix(b"Indexer ")?),
        _ => return None,
    };
    // Python's repr(): 'id', or "id" when the id contains a single quote;
    // backslash escapes inside.
    let q = *rest.first()?;
    if q != b'\'' && q != b'"' {
        return None;
    }
    let body = &rest[1..];
    // Nearly every id has no backslash: its closing quote is the first quote.
    if let Some(end) = find_near2(q, b'\\', body)
        && body[end] == q
    {
        return (end > 0).then(|| (kind, &body[..end], &body[end + 1..]));
    }
    let mut i = 0;
    let mut escaped = false;
    while i < body.len() {
        let c = body[i];
        if escaped {
            escaped = false;
        } else if c == b'\\' {
            escaped = true;
        } else if c == q {
            break;
        }
        i += 1;
    }
    if i >= body.len() || i == 0 {
        return None;
    }
    Some((kind, &body[..i], &body[i + 1..]))
}

fn unescape_py(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut it = raw.iter().copied();
    while let Some(c) = it.next() {
        if c == b'\\' {
            match it.next() {
                Some(b'n') => out.push(b'\n'),
                Some(b't') => out.push(b'\t'),
                Some(o) => out.push(o),
                None => out.push(b'\\'),
            }
        } else {
            out.push(c);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn handler_message(m: &[u8], whole: Option<&str>) -> Option<EventKind> {
    let (handler, rest) = handler_prefix(m, whole)?;
    if rest == b" succeeded." {
        return Some(EventKind::HandlerSucceeded { handler });
    }
    if let Some(r) = rest.strip_prefix(b" failed ") {
        if let Some(t) = r.strip_prefix(b"temporarily") {
            let final_attempt =
                t.starts_with(b" but will time out after ") || t.starts_with(b" but will exceed ");
            return Some(EventKind::HandlerFailedTemporarily {
                handler,
                final_attempt,
            });
        }
        if r.starts_with(b"permanently") {
            return Some(EventKind::HandlerFailedPermanently { handler });
        }
        if let Some(e) = r.strip_prefix(b"with an exception") {
            let (outcome, retry_in_seconds) = if let Some(t) = e.strip_prefix(b" and will ") {
                if let Some(n) = t.strip_prefix(b"try again in ") {
                    (ExceptionOutcome::Retry, parse_number(n))
                } else if t.starts_with(b"ignore") {
                    (ExceptionOutcome::Ignore, None)
                } else if t.starts_with(b"stop") {
                    (ExceptionOutcome::Stop, None)
                } else {
                    return None;
                }
            } else if let Some(t) = e.strip_prefix(b". Will ") {
                // Before 1.40: "failed with an exception. Will retry." etc.
                if t.starts_with(b"retry") {
                    (ExceptionOutcome::Retry, None)
                } else if t.starts_with(b"ignore") {
                    (ExceptionOutcome::Ignore, None)
                } else if t.starts_with(b"stop") {
                    (ExceptionOutcome::Stop, None)
                } else {
                    return None;
                }
            } else {
                return None;
            };
            return Some(EventKind::HandlerFailedWithException {
                handler,
                outcome,
                retry_in_seconds,
            });
        }
        return None;
    }
    if rest.starts_with(b" has timed out after ") {
        return Some(EventKind::HandlerTimedOut { handler });
    }
    if rest.starts_with(b" has exceeded ") && rest.ends_with(b" retries.") {
        return Some(EventKind::HandlerRetriesExceeded { handler });
    }
    if rest == b" did not exit in time. Leaving it orphaned." {
        return Some(EventKind::OrphanedDaemon { handler });
    }
    if rest == b" is cancelled. Will escalate." {
        return Some(EventKind::HandlerCancelled { handler });
    }
    None
}

fn fixed_message(m: &[u8], request: &mut Option<RequestAttempt>) -> Option<EventKind> {
    if let Some(kind) = task_message(m) {
        return Some(kind);
    }
    match m.first()? {
        b'R' => {
            if let Some(r) = m.strip_prefix(b"Request attempt #") {
                let a = parse_attempt(r)?;
                *request = Some(a);
                return Some(EventKind::RequestRetry {
                    attempt: a.attempt,
                    of: a.of,
                    escalating: a.escalating,
                });
            }
            if m.starts_with(b"Receiving `too many requests` error from server") {
                return Some(EventKind::WatchTooManyRequests);
            }
            if m.starts_with(b"Resuming operations after the pause") {
                return Some(EventKind::PeeringResumed);
            }
            authentication_failed(m)
        }
        b'F' => {
            if m.starts_with(b"Failed to post an event.") {
                return Some(EventKind::EventPostFailed { code: post_code(m) });
            }
            None
        }
        b'M' => {
            if m.starts_with(b"Merge-patching finished with inconsistencies") {
                return Some(EventKind::PatchInconsistencies);
            }
            None
        }
        b'P' => {
            if m.starts_with(b"Patching failed with inconsistencies") {
                return Some(EventKind::PatchInconsistencies);
            }
            if m.starts_with(b"Pausing operations in favour of")
                || m.starts_with(b"Pausing all operators, including self")
            {
                return Some(EventKind::PeeringPaused);
            }
            if m.starts_with(b"Possibly conflicting operators with the same priority") {
                return Some(EventKind::PeeringConflict);
            }
            None
        }
        b'N' => {
            let r = m.strip_prefix(b"Not enough permissions to ")?;
            let what = if r.starts_with(b"watch for resources") {
                PermissionScope::Watch
            } else if r.starts_with(b"list namespaces") {
                PermissionScope::ListNamespaces
            } else if r.starts_with(b"watch for namespaces") {
                PermissionScope::WatchNamespaces
            } else {
                return None;
            };
            Some(EventKind::PermissionDegraded { what })
        }
        b'U' => {
            if m.starts_with(b"Unresolved resources cannot be served") {
                return Some(EventKind::UnresolvedResources);
            }
            None
        }
        b'I' | b'A' => authentication_failed(m),
        b'T' => {
            let r = m.strip_prefix(b"Throttling for ")?;
            let end = memmem::find(r, b" seconds due to an unexpected error")?;
            let seconds = parse_number(&r[..end]).unwrap_or(0.0);
            Some(EventKind::Throttling { seconds })
        }
        _ => None,
    }
    .or_else(|| match m.first() {
        // "Creation/Updating/Deletion/Resuming is processed: ..."
        Some(b'C' | b'U' | b'D' | b'R') => processed(m),
        _ => None,
    })
}

/// `{Initial authentication|Re-authentication|Authentication} has failed: ...`
/// (kopf 1.38.0 and 1.45.2 `_core/engines/activities.py`).
fn authentication_failed(m: &[u8]) -> Option<EventKind> {
    let reauthentication = if m.starts_with(b"Re-authentication has failed") {
        true
    } else if m.starts_with(b"Initial authentication has failed")
        || m.starts_with(b"Authentication has failed")
    {
        false
    } else {
        return None;
    };
    Some(EventKind::AuthenticationFailed { reauthentication })
}

/// The fault finders, built once: [`Fault::ALL`]'s markers.
fn fault_finders() -> &'static [(Fault, memmem::Finder<'static>); 4] {
    static FINDERS: std::sync::OnceLock<[(Fault, memmem::Finder<'static>); 4]> =
        std::sync::OnceLock::new();
    FINDERS.get_or_init(|| Fault::ALL.map(|f| (f, memmem::Finder::new(f.marker().as_bytes()))))
}

/// The first [`Fault`] (in [`Fault::ALL`]'s order) that `text` names.
pub(crate) fn fault_in(text: &[u8]) -> Option<Fault> {
    fault_finders()
        .iter()
        .find(|(_, finder)| finder.find(text).is_some())
        .map(|(fault, _)| *fault)
}

/// `{Name} has failed: {e}` (ERROR) and `{Name} has finished unexpectedly.`
/// (WARNING) of kopf's guarded background tasks (`_cogs/aiokits/aiotasks.py`
/// `guard()`: `name.capitalize()`, so all but the first letter is lower case).
fn task_message(m: &[u8]) -> Option<EventKind> {
    let first = *m.first()?;
    let task = BackgroundTask::ALL.into_iter().find(|t| {
        let name = t.as_str().as_bytes();
        first == name[0].to_ascii_uppercase()
            && m.len() > name.len()
            && m[1..name.len()] == name[1..]
    })?;
    let rest = &m[task.as_str().len()..];
    const FAILED: &[u8] = b" has failed";
    const FINISHED: &[u8] = b" has finished unexpectedly.";
    let (target, failed) = if task.has_target() {
        // "watcher for {resource}@{namespace}", "peering keep-alive for {name}@{namespace}".
        let r = rest.strip_prefix(b" ")?;
        match memmem::find(r, FAILED) {
            Some(end) => (Some(&r[..end]), true),
            None => (Some(r.strip_suffix(FINISHED)?), false),
        }
    } else if rest.starts_with(FAILED) {
        (None, true)
    } else if rest == FINISHED {
        (None, false)
    } else {
        return None;
    };
    let (target, namespace) = match target {
        Some(what) => {
            let (t, ns) = match memchr::memrchr(b'@', what) {
                Some(at) => (&what[..at], Some(&what[at + 1..])),
                None => (what, None),
            };
            let namespace = ns
                .filter(|n| !n.is_empty() && *n != b"none" && *n != b"None")
                .map(lossy);
            (Some(lossy(t)), namespace)
        }
        None => (None, None),
    };
    Some(match (task, failed) {
        (BackgroundTask::Watcher, true) => EventKind::WatcherFailed {
            resource: target.unwrap_or_default(),
            namespace,
        },
        (BackgroundTask::Multitasker, true) => EventKind::MultitaskerFailed,
        (task, true) => EventKind::TaskFailed {
            task,
            target,
            namespace,
        },
        (task, false) => EventKind::TaskFinished {
            task,
            target,
            namespace,
        },
    })
}

/// `{Title} is processed: N succeeded; M failed.` (processing.py).
fn processed(m: &[u8]) -> Option<EventKind> {
    let (title, succeeded, failed) = processed_parts(m)?;
    Some(EventKind::CauseProcessed {
        cause: String::from_utf8_lossy(title).to_ascii_lowercase(),
        succeeded,
        failed,
    })
}

/// The title and counts of a `... is processed: ...` message, without allocating.
fn processed_parts(m: &[u8]) -> Option<(&[u8], u32, u32)> {
    // One to 32 letters (checked by `first_word_end`), then the template.
    let at = first_word_end(m)?;
    let r = m[at..].strip_prefix(b" is processed: ")?;
    let title = &m[..at];
    let (succeeded, r) = leading_u32(r)?;
    let r = r.strip_prefix(b" succeeded; ")?;
    let (failed, r) = leading_u32(r)?;
    if r != b" failed." {
        return None;
    }
    Some((title, succeeded, failed))
}

/// The end of a leading capitalised word of up to 32 letters (`Creation`).
pub(crate) fn first_word_end(m: &[u8]) -> Option<usize> {
    let n = m
        .iter()
        .take(33)
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    (n > 0 && n <= 32 && m.get(n) == Some(&b' ')).then_some(n)
}

/// `1/9 failed; will retry: ...`, `9/9 failed; escalating: ...`, `3 failed; TCP closed; ...`
fn parse_attempt(r: &[u8]) -> Option<RequestAttempt> {
    let (attempt, r) = leading_u32(r)?;
    let (of, r) = match r.strip_prefix(b"/") {
        Some(r) => {
            let (n, r) = leading_u32(r)?;
            (Some(n), r)
        }
        None => (None, r),
    };
    let r = r.strip_prefix(b" failed; ")?;
    Some(RequestAttempt {
        attempt,
        of,
        escalating: r.starts_with(b"escalating"),
        // `... -> APITooManyRequestsError(...)`: the error's repr follows the URL.
        too_many_requests: memmem::find(r, b"-> APITooManyRequestsError(").is_some(),
    })
}

/// `... Code: 403. ...` (APIError) or `... Status: 403. ...` (aiohttp).
fn post_code(m: &[u8]) -> Option<u16> {
    for key in [&b"Code: "[..], &b"Status: "[..]] {
        if let Some(at) = memmem::find(m, key) {
            let (n, _) = leading_u32(&m[at + key.len()..])?;
            return u16::try_from(n).ok();
        }
    }
    None
}

fn leading_u32(b: &[u8]) -> Option<(u32, &[u8])> {
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || n > 9 {
        return None;
    }
    let mut v: u32 = 0;
    for &c in &b[..n] {
        v = v * 10 + u32::from(c - b'0');
    }
    Some((v, &b[n..]))
}

/// A leading decimal number such as `60`, `1.5`, `0.25`.
fn parse_number(b: &[u8]) -> Option<f64> {
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'.')
        .count()
        .min(32);
    std::str::from_utf8(&b[..n]).ok()?.parse().ok()
}

/// Reads a `"quoted"` value right at the start of `b` (no escapes: Kubernetes
/// does not put quotes inside these values).
fn quoted(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let r = b.strip_prefix(b"\"")?;
    let end = memchr::memchr(b'"', r)?;
    Some((&r[..end], &r[end + 1..]))
}

/// `part` (a sub-slice of `whole`'s bytes) as an owned string, copied from
/// `whole` without validating it again; falls back to [`lossy`].
pub(crate) fn own(whole: Option<&str>, part: &[u8]) -> String {
    whole
        .and_then(|w| {
            let start = (part.as_ptr() as usize).checked_sub(w.as_ptr() as usize)?;
            w.get(start..start.checked_add(part.len())?)
        })
        .map(str::to_owned)
        .unwrap_or_else(|| lossy(part))
}

/// Bytes to an owned string: a plain copy for valid UTF-8 (the fast,
/// common case), replacement characters otherwise.
pub(crate) fn lossy(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// Parses the denial whose ` is forbidden` starts at `at`.
fn forbidden_at(text: &[u8], at: usize) -> Forbidden {
    let after = &text[at + b" is forbidden".len()..];
    // Bound the clause: the RBAC message is short; never scan megabytes.
    let after = &after[..after.len().min(1024)];
    let mut f = Forbidden {
        verb: String::new(),
        resource: String::new(),
        api_group: None,
        user: None,
        namespace: None,
        cluster_scope: false,
    };
    let rbac = after
        .strip_prefix(b": User ")
        .and_then(quoted)
        .and_then(|(user, r)| {
            f.user = Some(lossy(user));
            r.strip_prefix(b" cannot ")
        });
    if let Some(r) = rbac {
        let vend = r.iter().position(|&c| c == b' ').unwrap_or(r.len());
        f.verb = lossy(&r[..vend]);
        let mut r = &r[vend..];
        if let Some(x) = r.strip_prefix(b" resource ").and_then(quoted) {
            f.resource = lossy(x.0);
            r = x.1;
        } else if let Some(x) = r.strip_prefix(b" path ").and_then(quoted) {
            f.resource = lossy(x.0);
            r = x.1;
        } else {
            // Old-style "cannot list pods in the namespace ...".
            let r2 = r.strip_prefix(b" ").unwrap_or(r);
            let e = r2.iter().position(|&c| c == b' ').unwrap_or(r2.len());
            f.resource = lossy(&r2[..e]);
            r = &r2[e..];
        }
        if let Some((g, rest)) = r.strip_prefix(b" in API group ").and_then(quoted) {
            f.api_group = Some(lossy(g));
            r = rest;
        }
        if r.starts_with(b" at the cluster scope") {
            f.cluster_scope = true;
        } else if let Some((ns, _)) = r.strip_prefix(b" in the namespace ").and_then(quoted) {
            f.namespace = Some(lossy(ns));
        }
    } else {
        // A non-RBAC denial: name the subject written before "is forbidden".
        let before = &text[..at];
        let start = before.len().saturating_sub(256);
        let before = &before[start..];
        let s = before
            .iter()
            .rposition(|&c| c == b'\'' || c == b'(' || c == b'>' || c == b'[')
            .map(|p| p + 1)
            .unwrap_or(0);
        f.resource = lossy(before[s..].trim_ascii());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(m: &str) -> EventKind {
        classify_message(m).kind
    }

    fn h(kind: HandlerKind, id: &str) -> HandlerRef {
        HandlerRef {
            kind,
            id: id.to_string(),
        }
    }

    #[test]
    fn handler_outcomes() {
        assert_eq!(
            kind("Handler 'create_fn' succeeded."),
            EventKind::HandlerSucceeded {
                handler: h(HandlerKind::Handler, "create_fn")
            }
        );
        assert_eq!(
            kind("Timer \"it's\" succeeded."),
            EventKind::HandlerSucceeded {
                handler: h(HandlerKind::Timer, "it's")
            }
        );
        assert_eq!(
            kind("Handler 'a/b' failed temporarily: boom"),
            EventKind::HandlerFailedTemporarily {
                handler: h(HandlerKind::Handler, "a/b"),
                final_attempt: false
            }
        );
        assert!(matches!(
            kind("Daemon 'd' failed temporarily but will time out after 60 seconds: x"),
            EventKind::HandlerFailedTemporarily {
                final_attempt: true,
                ..
            }
        ));
        assert_eq!(
            kind("Handler 'x' failed with an exception and will try again in 60 seconds: 'spec'"),
            EventKind::HandlerFailedWithException {
                handler: h(HandlerKind::Handler, "x"),
                outcome: ExceptionOutcome::Retry,
                retry_in_seconds: Some(60.0)
            }
        );
        assert!(matches!(
            kind("Handler 'x' failed with an exception. Will stop."),
            EventKind::HandlerFailedWithException {
                outcome: ExceptionOutcome::Stop,
                ..
            }
        ));
        assert!(matches!(kind("Handler 'x' succeeded"), EventKind::Other));
        assert!(matches!(kind("Handler '' succeeded."), EventKind::Other));
        assert!(matches!(kind("Handler 'x"), EventKind::Other));
    }

    #[test]
    fn forbidden_details() {
        let f = parse_forbidden(
            "pods is forbidden: User \"system:serviceaccount:a:b\" cannot watch resource \"pods\" in API group \"\" in the namespace \"default\"",
        )
        .expect("forbidden");
        assert_eq!(f.verb, "watch");
        assert_eq!(f.resource, "pods");
        assert_eq!(f.api_group.as_deref(), Some(""));
        assert_eq!(f.namespace.as_deref(), Some("default"));
        assert!(!f.cluster_scope);
        let f = parse_forbidden("forbidden: User \"system:anonymous\" cannot get path \"/apis\"")
            .is_none();
        assert!(f, "needs ' is forbidden'");
        let f = parse_forbidden("x: unable to create new content in namespace x because it is being terminated; the thing 'events \"e\" is forbidden: quota'")
            .expect("non-rbac");
        assert_eq!(f.verb, "");
        assert_eq!(f.resource, "events \"e\"");
        let f = parse_forbidden("\"x\" is forbidden").expect("end of text");
        assert_eq!(f.resource, "\"x\"");
    }

    #[test]
    fn quick_routine_agrees_with_classify() {
        let f = Finders::new();
        let msgs = [
            "",
            "Handler 'create_fn' succeeded.",
            "Timer \"it's\" succeeded.",
            "Handler 'x' succeeded. ",
            "Handler 'x' failed temporarily: boom",
            "Handler 'x' has exceeded 3 retries.",
            "Handler 'x' is invoked.",
            "Daemon 'd' did not exit in time. Leaving it orphaned.",
            "Creation is processed: 1 succeeded; 0 failed.",
            "Updating is processed: 1 succeeded; 2 failed",
            "Resuming is processed: 0 succeeded; 0 failed.",
            "Request is processed: 1 succeeded; 0 failed.",
            "Whatever is processed: 1 succeeded; 0 failed.",
            "Request attempt #1/9 failed; will retry: x",
            "Merge-patching the resource with: {}",
            "Merge-patching finished with inconsistencies: ()",
            "Watcher for kopfexamples@ns has failed: x",
            "Watchers for x",
            "Throttling for 1 seconds due to an unexpected error: x",
            "pods is forbidden: User \"u\" cannot list resource \"pods\"",
            "Handler 'a is forbidden' succeeded.",
            "Handler 'a' succeeded. x is forbidden: User \"u\" cannot get resource \"pods\"",
            "Creation is processed: 1 succeeded; 0 failed. pods is forbidden: User \"u\" cannot list resource \"pods\"",
            "Reconciled: pods is forbidden: User \"u\" cannot list resource \"pods\"",
            "FutureWarning: Absence of either namespaces or cluster-wide flag will become an error",
            "Reconciled 3 replicas",
            "Unclosed client session",
        ];
        for m in msgs {
            let c = classify(m.as_bytes(), Some(m), &f);
            let routine = c.forbidden.is_none()
                && c.request.is_none()
                && matches!(
                    c.kind,
                    EventKind::Other
                        | EventKind::HandlerSucceeded { .. }
                        | EventKind::CauseProcessed { .. }
                );
            match f.quick_routine(m.as_bytes()) {
                Some(RoutineTag::Succeeded) => {
                    assert!(matches!(c.kind, EventKind::HandlerSucceeded { .. }), "{m}")
                }
                Some(RoutineTag::Processed) => {
                    assert!(matches!(c.kind, EventKind::CauseProcessed { .. }), "{m}")
                }
                Some(RoutineTag::Other) => assert_eq!(c.kind, EventKind::Other, "{m}"),
                None => {}
            }
            if f.quick_routine(m.as_bytes()).is_some() {
                assert!(routine, "{m}");
            }
        }
        // The common routine messages do take the quick path.
        for m in [
            "Handler 'create_fn' succeeded.",
            "Creation is processed: 1 succeeded; 0 failed.",
            "Merge-patching the resource with: {}",
            "Unclosed client session",
        ] {
            assert!(f.quick_routine(m.as_bytes()).is_some(), "{m}");
        }
    }

    #[test]
    fn fixed_first_bytes_cover_the_fixed_prefixes() {
        for p in FIXED_PREFIXES {
            assert!(
                FIXED_FIRST_BYTES.contains(&p[0]),
                "{}",
                String::from_utf8_lossy(p)
            );
        }
    }

    /// `{name.capitalize()} has failed: {e}` of every guarded task kopf names
    /// (1.38.0, 1.43.0 and 1.45.2 `_core/reactor/running.py`, `orchestration.py`).
    #[test]
    fn background_tasks() {
        assert_eq!(
            kind("Peering keep-alive for default@ns1 has failed: APIForbiddenError('x')"),
            EventKind::TaskFailed {
                task: BackgroundTask::PeeringKeepAlive,
                target: Some("default".into()),
                namespace: Some("ns1".into()),
            }
        );
        assert_eq!(
            kind("Peering observer for default@none has failed: x"),
            EventKind::TaskFailed {
                task: BackgroundTask::PeeringObserver,
                target: Some("default".into()),
                namespace: None,
            }
        );
        assert_eq!(
            kind("Watcher for kopfexamples.v1.kopf.dev@ns1 has failed: x"),
            EventKind::WatcherFailed {
                resource: "kopfexamples.v1.kopf.dev".into(),
                namespace: Some("ns1".into()),
            }
        );
        assert_eq!(
            kind("Watcher for kopfexamples.v1.kopf.dev@ns1 has finished unexpectedly."),
            EventKind::TaskFinished {
                task: BackgroundTask::Watcher,
                target: Some("kopfexamples.v1.kopf.dev".into()),
                namespace: Some("ns1".into()),
            }
        );
        assert_eq!(
            kind("Multidimensional multitasker has failed: x"),
            EventKind::MultitaskerFailed
        );
        for task in BackgroundTask::ALL {
            let name = task.as_str();
            let capitalised = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
            let what = if task.has_target() { " x@none" } else { "" };
            let failed = kind(&format!("{capitalised}{what} has failed: boom"));
            assert_eq!(failed.background_task(), Some(task), "{name}");
            assert_eq!(failed.kopf_level(), Some(crate::Level::Error), "{name}");
            let finished = kind(&format!("{capitalised}{what} has finished unexpectedly."));
            assert!(matches!(finished, EventKind::TaskFinished { .. }), "{name}");
            assert_eq!(finished.background_task(), Some(task), "{name}");
            // The quick path leaves them to the full one.
            let f = Finders::new();
            assert!(
                f.quick_routine(format!("{capitalised}{what} has failed: boom").as_bytes())
                    .is_none(),
                "{name}"
            );
        }
        for m in [
            "Resource observer is fine",
            "Health reporter has finished unexpectedly. Or not.",
            "Watcher for x has finished",
            "watcher for x@y has failed: lower case is not kopf's",
            "Peering keep-alive has failed: no target",
        ] {
            assert_eq!(kind(m).background_task(), None, "{m}");
        }
    }

    #[test]
    fn processed_summary() {
        assert_eq!(
            kind("Creation is processed: 1 succeeded; 2 failed."),
            EventKind::CauseProcessed {
                cause: "creation".into(),
                succeeded: 1,
                failed: 2
            }
        );
        assert_eq!(
            kind("Creation is processed: 1 succeeded; 2 failed"),
            EventKind::Other
        );
    }
}

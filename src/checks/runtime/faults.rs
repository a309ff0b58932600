//! What the checks of the faults of the operator's own runtime share: finding the
//! records that name a fault, whatever the template they show in (a dead watcher, a
//! handler failure, a request retry, a traceback of its own), and quoting them.
//! `runtime.credentials-lost`, `runtime.api-tls-failure` and `runtime.thread-exhaustion`
//! (each its own module) quote one bounded, redacted line and name what the log shows
//! (the login handler, the host and the failing step, the handler), nothing that
//! changes from one audit to the next.

use super::{QUOTE_CHARS, quote};
use crate::model::evidence::LogEvidence;
use kopf_log::{Fault, Record};

/// The first record that names `fault`, the current containers' first.
pub(super) fn first_with(logs: &LogEvidence, fault: Fault) -> Option<&Record> {
    logs.all_records()
        .find(|r| r.fault() == Some(fault) || names(r, fault))
}

/// Whether the message or a traceback line names `fault` (a record may name several:
/// [`Record::fault`] gives the first).
pub(super) fn names(record: &Record, fault: Fault) -> bool {
    let marker = fault.marker();
    record.message.contains(marker) || record.traceback.iter().any(|l| l.contains(marker))
}

/// The record quoted, and, when the quote does not show the fault (the message names
/// it past the cut, or only a traceback line does), the part that names it: both
/// bounded.
pub(super) fn fault_quote(record: &Record, fault: Fault) -> String {
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

#[cfg(test)]
mod tests;

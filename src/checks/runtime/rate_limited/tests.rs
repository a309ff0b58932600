//! Tests of runtime.rate-limited, in the wording of kopf 1.45.2 and 1.38.0.

use super::*;
use crate::checks::runtime::tests::{FULL_FAIL, FULL_FORBIDDEN, ids, parse};

/// kopf 1.45.2 `_cogs/clients/api.py`: a PATCH refused with 429 by API Priority and
/// Fairness, retried.
const FULL_429: &str = "[2026-12-02 15:10:01,123] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: PATCH https://127.0.0.1:6443/apis/x.dev/v1/namespaces/ns/things/a -> APITooManyRequestsError('Too many requests, please try again later.', {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': 'Too many requests, please try again later.', 'reason': 'TooManyRequests', 'details': {'retryAfterSeconds': 1}, 'code': 429})";

#[test]
fn retried_429s_are_rate_limiting_and_the_count_is_a_stable_bucket() {
    let one_line = decide("op", &parse(&[FULL_429, FULL_429])).expect("a finding");
    assert_eq!(one_line.check, CheckId::RuntimeRateLimited);
    assert_eq!(one_line.severity, Severity::Warning);
    assert!(
        one_line.message.contains("several requests"),
        "{}",
        one_line.message
    );
    assert!(
        one_line.message.contains("FlowSchema"),
        "{}",
        one_line.message
    );
    assert!(!one_line.message.contains("1.42.1"), "{}", one_line.message);
    let many: Vec<&str> = std::iter::repeat_n(FULL_429, 12).collect();
    let f = decide("op", &parse(&many)).expect("a finding");
    assert!(f.message.contains("10 or more requests"), "{}", f.message);
    let more: Vec<&str> = std::iter::repeat_n(FULL_429, 17).collect();
    let g = decide("op", &parse(&more)).expect("a finding");
    assert_eq!(f.message, g.message, "one more 429 changes nothing");
    assert!(ids(&[FULL_429, FULL_429]).contains(&CheckId::RuntimeRateLimited));
}

#[test]
fn one_retried_429_or_a_server_still_starting_is_no_rate_limiting() {
    assert!(decide("op", &parse(&[FULL_429])).is_none(), "a blip");
    assert!(!ids(&[FULL_429]).contains(&CheckId::RuntimeRateLimited));
    // kube-apiserver's watch cache for a CRD created a moment before the operator.
    let warming = FULL_429.replace(
        "'Too many requests, please try again later.'",
        "'storage is (re)initializing'",
    );
    let warming: Vec<&str> = std::iter::repeat_n(warming.as_str(), 5).collect();
    assert!(decide("op", &parse(&warming)).is_none(), "not throttling");
}

#[test]
fn a_429_that_escalates_is_an_error_quoting_the_last_attempt() {
    let last = FULL_429
        .replace("#1/9", "#9/9")
        .replace("will retry", "escalating");
    let f = decide("op", &parse(&[FULL_429, &last])).expect("a finding");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.contains("escalating")),
        "{f:?}"
    );
    assert!(f.message.contains("gave up"), "{}", f.message);
}

#[test]
fn old_kopf_s_watch_warning_is_rate_limiting_with_the_upgrade_advice() {
    // kopf 1.38.0 `_cogs/clients/watching.py`, the only place it logs a 429.
    let line = "[2026-12-02 15:10:01,123] kopf._cogs.clients.w [WARNING ] Receiving `too many requests` error from server, will retry after 1 seconds. Error details: ('Too many requests, please try again later.', {'kind': 'Status', 'code': 429})";
    let f = decide("op", &parse(&[line, line])).expect("a finding");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("1.42.1 and older"), "{}", f.message);
}

#[test]
fn other_retried_errors_are_not_rate_limiting() {
    let server = FULL_429.replace(
        "APITooManyRequestsError('Too many requests, please try again later.'",
        "APIServerError('etcdserver: request timed out'",
    );
    assert!(decide("op", &parse(&[&server, FULL_FORBIDDEN, FULL_FAIL])).is_none());
    assert!(!ids(&[&server]).contains(&CheckId::RuntimeRateLimited));
}

//! Tests of the runtime faults, on what kopf 1.38.0 and 1.45.2 really print
//! (`hack/capture-kopf-logs.sh faults`).

use super::super::{api_tls_failure, credentials_lost, thread_exhaustion};
use super::*;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::model::evidence::LogEvidence;

/// The captured runs about faults, each with its compliant twin.
const VERSIONS: [&str; 2] = ["1.38.0", "1.45.2"];

/// The lines of a captured log (`crates/kopf-log/tests/data/captured/NAME`).
fn lines(name: &str) -> Vec<String> {
    let path = format!(
        "{}/crates/kopf-log/tests/data/captured/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// A captured log as the gatherer keeps it: the scan's parser (routine lines only
/// counted), routine records dropped.
fn gathered(name: &str) -> LogEvidence {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default())
        .with_routine(kopf_log::Routine::Count);
    let mut records = Vec::new();
    for line in lines(name) {
        records.extend(parser.push_line(line.as_bytes()));
    }
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    records.retain(|r| !r.is_routine());
    let stats = parser.stats();
    LogEvidence {
        records,
        version: stats.kopf_version,
        stats,
        ..Default::default()
    }
}

/// A captured log with every record built (as the previous container's log is read).
fn whole(name: &str) -> LogEvidence {
    let all = lines(name);
    super::super::tests::parse(&all.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The three checks' findings on a log.
fn faults(logs: &LogEvidence) -> Vec<Finding> {
    [
        credentials_lost::decide("op", logs),
        api_tls_failure::decide("op", logs),
        thread_exhaustion::decide("op", logs),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn only(logs: &LogEvidence, check: CheckId) -> Finding {
    let found = faults(logs);
    assert_eq!(
        found.iter().map(|f| f.check).collect::<Vec<_>>(),
        vec![check],
        "{found:#?}"
    );
    found.into_iter().next().expect("one finding")
}

#[test]
fn revoked_credentials_that_the_login_gives_again_are_lost() {
    for version in VERSIONS {
        for logs in [
            gathered(&format!("kopf-{version}-creds.full.log")),
            whole(&format!("kopf-{version}-creds.full.log")),
        ] {
            let f = only(&logs, CheckId::RuntimeCredentialsLost);
            let evidence = f.evidence.as_deref().unwrap_or_default();
            assert!(
                evidence.contains("Ran out of valid credentials"),
                "{version}: {evidence}"
            );
            assert!(
                evidence.chars().count() <= QUOTE_CHARS * 2 + 8,
                "{evidence}"
            );
            assert!(
                f.message
                    .contains("the operator's own login handler 'login' (@kopf.on.login)"),
                "{version}: {}",
                f.message
            );
            assert!(f.message.contains("stopped on it"), "{}", f.message);
            assert!(
                f.fix
                    .as_deref()
                    .is_some_and(|x| x.contains("@kopf.on.login()"))
            );
        }
    }
}

#[test]
fn a_rotated_token_that_re_authentication_renews_is_no_finding() {
    for version in VERSIONS {
        let name = format!("kopf-{version}-creds-ok.full.log");
        // The twin re-authenticates too: the 401 was real, and answered.
        let text = lines(&name).join("\n");
        assert!(text.contains("Re-authentication has finished."), "{name}");
        assert!(faults(&gathered(&name)).is_empty(), "{name}");
        assert!(faults(&whole(&name)).is_empty(), "{name}");
    }
}

#[test]
fn an_untrusted_certificate_names_the_host_the_reason_and_the_request() {
    for version in VERSIONS {
        for logs in [
            gathered(&format!("kopf-{version}-tls.full.log")),
            whole(&format!("kopf-{version}-tls.full.log")),
        ] {
            let f = only(&logs, CheckId::RuntimeApiTlsFailure);
            assert!(
                f.message.contains("the API server at 127.0.0.1:"),
                "{version}: {}",
                f.message
            );
            assert!(
                f.message.contains("(self-signed certificate)"),
                "{version}: {}",
                f.message
            );
            assert!(
                f.message.contains("at the request `GET /api"),
                "{version}: {}",
                f.message
            );
            let evidence = f.evidence.as_deref().unwrap_or_default();
            assert!(evidence.contains("CERTIFICATE_VERIFY_FAILED"), "{evidence}");
        }
    }
}

#[test]
fn a_trusted_certificate_is_no_finding() {
    for version in VERSIONS {
        let name = format!("kopf-{version}-tls-ok.full.log");
        assert!(faults(&gathered(&name)).is_empty(), "{name}");
        assert!(faults(&whole(&name)).is_empty(), "{name}");
    }
}

#[test]
fn sync_daemons_past_the_thread_limit_are_named() {
    for version in VERSIONS {
        for logs in [
            gathered(&format!("kopf-{version}-threads.full.log")),
            whole(&format!("kopf-{version}-threads.full.log")),
        ] {
            let f = only(&logs, CheckId::RuntimeThreadExhaustion);
            assert!(
                f.message.contains("Daemon 'poller'"),
                "{version}: {}",
                f.message
            );
            assert!(
                f.message.contains("Make long-running daemons async"),
                "{}",
                f.message
            );
            let evidence = f.evidence.as_deref().unwrap_or_default();
            assert!(evidence.contains("can't start new thread"), "{evidence}");
            assert!(f.fix.as_deref().is_some_and(|x| x.contains("max_workers")));
        }
    }
}

#[test]
fn sync_daemons_within_the_limit_are_no_finding() {
    for version in VERSIONS {
        let name = format!("kopf-{version}-threads-ok.full.log");
        assert!(faults(&gathered(&name)).is_empty(), "{name}");
        assert!(faults(&whole(&name)).is_empty(), "{name}");
    }
}

#[test]
fn no_other_captured_log_names_these_faults() {
    let dir = format!(
        "{}/crates/kopf-log/tests/data/captured",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let name = entry.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        let faulty = ["-creds.", "-tls.", "-threads."]
            .iter()
            .any(|run| name.contains(run));
        if faulty || !name.ends_with(".log") {
            continue;
        }
        read += 1;
        assert!(faults(&gathered(&name)).is_empty(), "{name}");
        assert!(faults(&whole(&name)).is_empty(), "{name}");
    }
    assert!(read >= 25, "read {read} logs");
}

#[test]
fn a_top_level_traceback_of_thread_exhaustion_quotes_the_exception() {
    // CPython's own output when the operator's process cannot start kopf's thread pool
    // (no kopf line attaches it): a traceback that ends in the exception.
    let logs = parse_gathered(&[
        "2026-12-07T04:14:53.500000000Z Traceback (most recent call last):",
        "2026-12-07T04:14:53.500000000Z   File \"/usr/lib/python3.11/threading.py\", line 964, in start",
        "2026-12-07T04:14:53.500000000Z     _start_new_thread(self._bootstrap, ())",
        "2026-12-07T04:14:53.500000000Z RuntimeError: can't start new thread",
    ]);
    let f = only(&logs, CheckId::RuntimeThreadExhaustion);
    assert!(
        f.message.contains("kopf's own machinery fails"),
        "{}",
        f.message
    );
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.ends_with("RuntimeError: can't start new thread")),
        "{:?}",
        f.evidence
    );
}

#[test]
fn a_failed_re_authentication_is_lost_credentials_and_says_kopf_s_login() {
    let logs = parse_gathered(&[
        "[2026-12-07 04:14:08,441] kopf.activities.auth [INFO    ] Activity 'login_via_client' succeeded.",
        "[2026-12-07 04:14:11,230] kopf._core.engines.a [INFO    ] Re-authentication has been initiated.",
        "[2026-12-07 04:14:11,236] kopf._core.engines.a [WARNING ] Re-authentication has failed: no credentials were retrieved from the login handlers.",
    ]);
    let f = only(&logs, CheckId::RuntimeCredentialsLost);
    assert!(f.message.contains("login_via_client"), "{}", f.message);
    assert!(
        f.evidence
            .as_deref()
            .is_some_and(|e| e.starts_with("Re-authentication has failed")),
        "{:?}",
        f.evidence
    );
}

#[test]
fn a_401_alone_is_no_lost_credentials() {
    let retry = "[2026-12-07 04:14:11,236] kopf._cogs.clients.w [ERROR   ] Request attempt #1/4 failed; will retry: GET http://x/api -> APIUnauthorizedError('Unauthorized', {})";
    assert!(faults(&parse_gathered(&[retry])).is_empty());
    let dead = "[2026-12-07 04:14:12,000] kopf._core.reactor.o [ERROR   ] Watcher for kopfexamples.v1.kopf.dev@capture has failed: ('Unauthorized', {})";
    let f = only(
        &parse_gathered(&[retry, dead]),
        CheckId::RuntimeCredentialsLost,
    );
    assert!(
        f.message.contains("watcher for kopfexamples"),
        "{}",
        f.message
    );
}

/// Sample lines as the gatherer keeps them.
fn parse_gathered(lines: &[&str]) -> LogEvidence {
    let mut logs = super::super::tests::parse(lines);
    logs.records.retain(|r| !r.is_routine());
    logs
}

/// What the status shows passes the redactor (model/bounded.rs): a message or fix that
/// reads like `credentials: VALUE` loses its middle. Seen on the credentials-lost
/// fixture's live finding, whose message read `kopf lost its credentials: ***) and ...`.
#[test]
fn messages_and_fixes_pass_the_redactor_whole() {
    let logs = [
        gathered("kopf-1.45.2-creds.full.log"),
        gathered("kopf-1.45.2-tls.full.log"),
        gathered("kopf-1.45.2-threads.full.log"),
        parse_gathered(&[
            "[2026-12-07 04:14:08,441] kopf.activities.auth [INFO    ] Activity 'login_via_client' succeeded.",
            "[2026-12-07 04:14:11,236] kopf._core.engines.a [WARNING ] Re-authentication has failed: no credentials were retrieved from the login handlers.",
        ]),
        parse_gathered(&[
            "[2026-12-07 04:14:08,441] kopf._core.engines.a [WARNING ] Initial authentication has failed: no credentials were retrieved from the login handlers.",
        ]),
    ];
    let mut checked = 0;
    for logs in &logs {
        for f in faults(logs) {
            assert_eq!(kopf_log::redact(&f.message), f.message, "{:?}", f.check);
            let fix = f.fix.as_deref().unwrap_or_default();
            assert_eq!(kopf_log::redact(fix), fix, "{:?}", f.check);
            checked += 1;
        }
    }
    assert_eq!(checked, logs.len(), "one finding per log");
}

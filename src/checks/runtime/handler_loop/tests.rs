//! Tests of runtime.handler-loop, live.

use super::*;
use crate::catalog::Severity;
use crate::checks::runtime::tests::{changed, parse};
use crate::model::evidence::Handling;

/// `n` rounds of kopf 1.45.2's lines for one handled update of `ns/obj`, 0.2 s apart:
/// `who` succeeded, then the cause was processed.
fn rounds(n: usize, who: &str, cause: &str, obj: &str) -> Vec<String> {
    (0..n)
        .flat_map(|i| {
            let at = format!("2026-12-02 10:00:{:02},{:03}", i / 5, (i % 5) * 200);
            [
                format!("[{at}] kopf.objects         [INFO    ] [ns/{obj}] {who} succeeded."),
                format!(
                    "[{at}] kopf.objects         [INFO    ] [ns/{obj}] {cause} is processed: 1 succeeded; 0 failed."
                ),
            ]
        })
        .collect()
}

fn loops(lines: &[String]) -> Vec<Finding> {
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    decide("op", &parse(&lines), &[])
}

#[test]
fn handler_loop_names_the_handler_the_object_and_the_rate() {
    let mut lines = rounds(12, "Handler 'stamp'", "Updating", "w1");
    lines.extend(rounds(3, "Handler 'stamp'", "Updating", "w2"));
    let found = loops(&lines);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f.check, CheckId::RuntimeHandlerLoop);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("Handler 'stamp'"), "{}", f.message);
    assert!(f.message.contains("ns/w1"), "{}", f.message);
    assert!(!f.message.contains("ns/w2"), "{}", f.message);
    assert!(f.message.contains("10 or more times"), "{}", f.message);
    assert!(
        f.message.contains("every few seconds") || f.message.contains("more than once a second"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("only when the value differs"),
        "{}",
        f.message
    );
}

#[test]
fn handler_loop_is_stable_as_the_loop_goes_on() {
    let a = loops(&rounds(12, "Handler 'stamp'", "Updating", "w1"));
    let b = loops(&rounds(40, "Handler 'stamp'", "Updating", "w1"));
    assert_eq!(a, b);
}

#[test]
fn handler_loop_spares_timers_daemons_and_rare_or_other_causes() {
    assert!(loops(&rounds(30, "Timer 'tick'", "Updating", "w1")).is_empty());
    assert!(loops(&rounds(30, "Daemon 'watch'", "Updating", "w1")).is_empty());
    assert!(loops(&rounds(9, "Handler 'stamp'", "Updating", "w1")).is_empty());
    // Successes without updates processed as often: not the loop of a change handler.
    assert!(loops(&rounds(30, "Handler 'stamp'", "Resuming", "w1")).is_empty());
}

#[test]
fn handler_loop_counts_the_fast_scan_as_the_full_parse() {
    let lines = rounds(12, "Handler 'stamp'", "Updating", "w1");
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default())
        .with_routine(kopf_log::Routine::Count);
    for l in &lines {
        assert!(parser.push_line(l.as_bytes()).is_none());
    }
    while parser.finish().is_some() {}
    let logs = LogEvidence {
        tally: parser.tally().clone(),
        ..Default::default()
    };
    assert_eq!(decide("op", &logs, &[]), loops(&lines));
}

#[test]
fn handler_loop_leaves_out_objects_others_keep_changing() {
    let lines = rounds(12, "Handler 'stamp'", "Updating", "w1");
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let logs = parse(&lines);
    let at = |s: &str| s.parse::<jiff::Timestamp>().expect("a time");
    // Created before the loop began: still the handler's own loop.
    let created = ObjectSample {
        handling: Handling {
            changed_by_others: Some(at("2026-12-02T09:59:00Z")),
            ..Handling::default()
        },
        ..changed("w1", 0, Handling::default())
    };
    assert_eq!(decide("op", &logs, std::slice::from_ref(&created)).len(), 1);
    // Changed by someone else while the handler kept succeeding: maybe their updates.
    let churned = ObjectSample {
        handling: Handling {
            changed_by_others: Some(at("2026-12-02T10:00:01Z")),
            ..Handling::default()
        },
        ..created
    };
    assert!(decide("op", &logs, &[churned]).is_empty());
}

//! Tests of the evaluate layer: running checks, the next status and Event planning.

use super::*;
use crate::api::{AuditTarget, Finding, KopfAuditStatus};
use crate::catalog::{CheckId, ConditionType, EventReason, SKIP_ANNOTATION_PREFIX, Severity};
use crate::model::evidence::{Evidence, LogEvidence, TargetEvidence};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::BTreeSet;
use std::time::Duration;

const HOLD: Duration = Duration::from_secs(600);

fn at(secs: i64) -> Time {
    Time(Timestamp::from_second(secs).expect("valid"))
}

fn spec() -> KopfAuditSpec {
    KopfAuditSpec {
        target: AuditTarget {
            deployment: Some("op".into()),
            ..Default::default()
        },
        handled_resources: Vec::new(),
        interval: "30s".into(),
        checks: Default::default(),
        thresholds: Default::default(),
        logs: Default::default(),
        suspend: false,
    }
}

fn evidence(args: &[&str], annotations: &[(&str, &str)]) -> Evidence {
    let mut d = Deployment::default();
    d.metadata.name = Some("op".into());
    d.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    d.spec.template.spec = Some(PodSpec {
        containers: vec![Container {
            name: "operator".into(),
            command: Some(vec!["kopf".into(), "run".into()]),
            args: Some(args.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }],
        ..Default::default()
    });
    Evidence {
        now: Timestamp::from_second(0).expect("valid"),
        targets: vec![TargetEvidence::new(d, Vec::new(), None)],
    }
}

fn outcome(ev: Evidence) -> Outcome {
    let spec = spec();
    let settings = AuditSettings::from_spec(&spec);
    evaluate(
        &spec,
        &settings,
        Ok(Observation::Evidence(ev)),
        &Policy::default(),
    )
}

/// The checks run on `ev` with the settings `spec` asks for.
fn run_spec(spec: &KopfAuditSpec, ev: &Evidence, policy: &Policy) -> Evaluation {
    run::evaluate(spec, &AuditSettings::from_spec(spec), ev, policy)
}

fn evaluation(ev: Evidence, policy: &Policy) -> Evaluation {
    run_spec(&spec(), &ev, policy)
}

fn audit(stored: Option<&KopfAuditStatus>, ev: Evidence, now: i64) -> StatusUpdate {
    next_status(stored, &outcome(ev), Some(1), &at(now), HOLD)
}

fn condition(
    status: &KopfAuditStatus,
    t: ConditionType,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    status.conditions.iter().find(|c| c.type_ == t.as_str())
}

fn cond(status: &KopfAuditStatus, t: ConditionType) -> &str {
    condition(status, t)
        .map(|c| c.status.as_str())
        .unwrap_or("missing")
}

#[test]
fn first_audit_writes_every_condition_and_one_headline_event() {
    let pending = pending_status(Some(1), &at(0));
    assert_eq!(pending.conditions.len(), ConditionType::ALL.len());
    let first = audit(Some(&pending), evidence(&["-A"], &[]), 10);
    assert!(first.changed);
    assert_eq!(first.status.conditions.len(), ConditionType::ALL.len());
    assert_eq!(
        cond(&first.status, ConditionType::WorkloadCompliant),
        "False"
    );
    assert_eq!(cond(&first.status, ConditionType::Compliant), "False");
    assert_eq!(cond(&first.status, ConditionType::Ready), "True");
    assert_eq!(first.events.len(), 1, "{:?}", first.events);
    assert_eq!(first.events[0].reason, EventReason::NonCompliant);
}

#[test]
fn steady_state_writes_nothing_and_emits_nothing() {
    let first = audit(None, evidence(&["-A"], &[]), 10);
    let second = audit(Some(&first.status), evidence(&["-A"], &[]), 40);
    assert!(!second.changed);
    assert!(second.events.is_empty());
    assert_eq!(second.status, first.status);
}

#[test]
fn a_requested_audit_is_echoed_once_and_then_writes_nothing_more() {
    let first = audit(None, evidence(&["-A"], &[]), 10);
    let mut asked = audit(Some(&first.status), evidence(&["-A"], &[]), 40);
    acknowledge_request(
        &mut asked,
        &first.status,
        Some("2026-12-02T19:00:00Z"),
        &at(40),
    );
    assert!(asked.changed, "the requester waits for the echo");
    assert_eq!(
        asked.status.last_handled_requested_at.as_deref(),
        Some("2026-12-02T19:00:00Z")
    );
    assert_eq!(asked.status.last_audit_time, Some(at(40)));
    assert!(asked.events.is_empty(), "no transition, no Event");
    let mut again = audit(Some(&asked.status), evidence(&["-A"], &[]), 70);
    acknowledge_request(
        &mut again,
        &asked.status,
        Some("2026-12-02T19:00:00Z"),
        &at(70),
    );
    assert!(!again.changed, "the same request is not echoed twice");
    let mut none = audit(Some(&asked.status), evidence(&["-A"], &[]), 70);
    acknowledge_request(&mut none, &asked.status, None, &at(70));
    assert!(!none.changed, "a removed annotation changes nothing");
}

#[test]
fn a_huge_or_hostile_request_is_echoed_bounded_and_only_once() {
    let first = audit(None, evidence(&["-A"], &[]), 10);
    let hostile = format!("now\u{202e}{}", "x".repeat(100_000));
    let mut asked = audit(Some(&first.status), evidence(&["-A"], &[]), 40);
    acknowledge_request(&mut asked, &first.status, Some(&hostile), &at(40));
    let echoed = asked
        .status
        .last_handled_requested_at
        .clone()
        .expect("echoed");
    assert!(
        echoed.len() <= crate::model::bounded::MAX_NAME_BYTES,
        "{}",
        echoed.len()
    );
    assert!(
        !echoed.contains('\u{202e}'),
        "no invisible controls in status"
    );
    let mut again = audit(Some(&asked.status), evidence(&["-A"], &[]), 70);
    acknowledge_request(&mut again, &asked.status, Some(&hostile), &at(70));
    assert!(
        !again.changed,
        "the bounded echo still matches: no write per audit"
    );
}

#[test]
fn a_new_finding_raises_one_event_and_keeps_since_of_others() {
    let first = audit(None, evidence(&["-A"], &[]), 10);
    let second = audit(Some(&first.status), evidence(&[], &[]), 40);
    assert!(second.changed);
    let reasons: Vec<EventReason> = second.events.iter().map(|e| e.reason).collect();
    assert_eq!(
        reasons,
        vec![EventReason::FindingRaised],
        "{:?}",
        second.events
    );
    assert!(
        second.events[0].note.contains("workload.no-scope-flag"),
        "{}",
        second.events[0].note
    );
    let since = |s: &KopfAuditStatus, c: CheckId| {
        s.findings
            .iter()
            .find(|f| f.check == c)
            .and_then(|f| f.since.clone())
    };
    assert_eq!(
        since(&second.status, CheckId::WorkloadLiveness),
        since(&first.status, CheckId::WorkloadLiveness)
    );
}

#[test]
fn target_lost_and_restored_emit_one_event_each() {
    let first = audit(None, evidence(&["-A"], &[]), 10);
    let lost = next_status(
        Some(&first.status),
        &Outcome::Stalled(crate::model::evidence::Stall {
            reason: crate::catalog::ConditionReason::TargetNotFound,
            message: "gone".into(),
        }),
        Some(1),
        &at(40),
        HOLD,
    );
    assert_eq!(cond(&lost.status, ConditionType::Stalled), "True");
    assert_eq!(lost.events.len(), 1);
    assert_eq!(lost.events[0].reason, EventReason::TargetMissing);
    assert!(lost.status.findings.is_empty());
    let back = audit(Some(&lost.status), evidence(&["-A"], &[]), 70);
    assert_eq!(back.events.len(), 1, "{:?}", back.events);
    assert_eq!(back.events[0].reason, EventReason::NonCompliant);
}

#[test]
fn exemptions_skip_with_a_reason_and_can_be_refused() {
    let key = format!("{SKIP_ANNOTATION_PREFIX}workload.liveness");
    let ev = evidence(&["-A"], &[(key.as_str(), "probed by the mesh")]);
    let eval = evaluation(ev.clone(), &Policy::default());
    assert!(
        !eval
            .findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadLiveness)
    );
    assert_eq!(eval.skipped.len(), 1);
    assert!(eval.skipped[0].honoured);
    let refused = evaluation(
        ev,
        &Policy {
            refuse_exemptions: true,
            ..Policy::default()
        },
    );
    assert!(
        refused
            .findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadLiveness)
    );
    assert!(!refused.skipped[0].honoured);
    let no_reason = evidence(&["-A"], &[(key.as_str(), " ")]);
    let eval = evaluation(no_reason, &Policy::default());
    assert!(
        eval.findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadLiveness)
    );
}

#[test]
fn disabled_checks_and_severity_overrides() {
    let mut s = spec();
    s.checks.disable = vec![CheckId::WorkloadLiveness];
    s.checks
        .severity
        .insert("workload.cpu-request".into(), Severity::Error);
    let eval = run_spec(&s, &evidence(&["-A"], &[]), &Policy::default());
    assert!(
        !eval
            .findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadLiveness)
    );
    let cpu = eval
        .findings
        .iter()
        .find(|f| f.check == CheckId::WorkloadCpuRequest)
        .expect("cpu-request");
    assert_eq!(cpu.severity, Severity::Error);
    assert_eq!(
        eval.findings[0].severity,
        Severity::Error,
        "most severe first"
    );
}

#[test]
fn refused_exemptions_refuse_disabled_checks_too() {
    let mut s = spec();
    s.checks.disable = vec![CheckId::WorkloadLiveness, CheckId::WorkloadLiveness];
    let refused = run_spec(
        &s,
        &evidence(&["-A"], &[]),
        &Policy {
            refuse_exemptions: true,
            ..Policy::default()
        },
    );
    assert!(
        refused
            .findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadLiveness),
        "the disabled check runs and reports"
    );
    assert_eq!(refused.skipped.len(), 1, "{:?}", refused.skipped);
    let skipped = &refused.skipped[0];
    assert_eq!(skipped.check, CheckId::WorkloadLiveness);
    assert!(!skipped.honoured);
    assert!(
        skipped.reason.starts_with("refused: ") && skipped.reason.contains("spec.checks.disable"),
        "{}",
        skipped.reason
    );
    let honoured = run_spec(&s, &evidence(&["-A"], &[]), &Policy::default());
    assert!(honoured.skipped.is_empty(), "{:?}", honoured.skipped);
}

#[test]
fn not_kopf_leaves_kopf_areas_unknown() {
    let mut ev = evidence(&[], &[]);
    if let Some(spec) = ev.targets[0].deployment.spec.template.spec.as_mut() {
        spec.containers[0].command = Some(vec!["nginx".into()]);
    }
    ev.targets[0] = TargetEvidence::new(ev.targets[0].deployment.clone(), Vec::new(), None);
    let update = audit(None, ev, 10);
    assert!(
        update
            .status
            .findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadNotKopf)
    );
    let rbac = condition(&update.status, ConditionType::RbacCompliant).expect("rbac");
    assert_eq!(rbac.status, "Unknown");
    assert_eq!(rbac.reason, "NotKopf");
}

#[test]
fn a_log_cut_by_the_byte_cap_is_stated_in_the_target_status() {
    let mut ev = evidence(&["-A"], &[]);
    if let Some(kopf) = ev.targets[0].kopf.as_mut() {
        kopf.logs = Ok(LogEvidence {
            truncated: true,
            ..Default::default()
        });
    }
    let update = audit(None, ev, 10);
    assert!(update.status.targets[0].logs_truncated);
    let quiet = audit(None, evidence(&["-A"], &[]), 10);
    assert!(!quiet.status.targets[0].logs_truncated);
}

#[test]
fn findings_are_capped_and_counted() {
    let many: Vec<Finding> = (0..(status::MAX_FINDINGS + 5))
        .map(|i| {
            crate::checks::finding(
                CheckId::WorkloadCpuLimit,
                &format!("t{i}"),
                "m".into(),
                None,
            )
        })
        .collect();
    let (kept, summary) = status::cap(&many);
    assert_eq!(kept.len(), status::MAX_FINDINGS);
    assert_eq!(summary.warnings as usize, status::MAX_FINDINGS + 5);
    assert_eq!(summary.omitted, 5);
}

#[test]
fn suspend_keeps_results_and_says_so() {
    let first = audit(None, evidence(&["-A"], &[]), 10);
    let suspended = next_status(
        Some(&first.status),
        &Outcome::Suspended,
        Some(2),
        &at(40),
        HOLD,
    );
    assert_eq!(suspended.status.findings, first.status.findings);
    let ready = condition(&suspended.status, ConditionType::Ready).expect("ready");
    assert_eq!(ready.reason, "Suspended");
    assert_eq!(suspended.events.len(), 1);
    assert_eq!(suspended.events[0].reason, EventReason::Suspended);
}

// ---- stale findings, hold-down, transient failures ----

const FAILING: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed temporarily: backend down";
const HEALTHY: &str = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";

/// Evidence whose every kopf area was read, the log holding `line`.
fn read(line: &str) -> Evidence {
    let mut ev = evidence(&["-A"], &[]);
    if let Some(kopf) = ev.targets[0].kopf.as_mut() {
        let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
        let mut records: Vec<kopf_log::Record> =
            parser.push_line(line.as_bytes()).into_iter().collect();
        while let Some(r) = parser.finish() {
            records.push(r);
        }
        kopf.logs = Ok(LogEvidence {
            records,
            ..Default::default()
        });
        kopf.handled = Ok(Vec::new());
        kopf.rbac = Ok(Default::default());
        kopf.events = Ok(Default::default());
        kopf.objects = Ok(Default::default());
    }
    ev
}

/// The same, but the log could not be read.
fn unreadable(why: crate::model::evidence::Obstacle) -> Evidence {
    let mut ev = read(HEALTHY);
    if let Some(kopf) = ev.targets[0].kopf.as_mut() {
        kopf.logs = Err(crate::model::evidence::Unavailable::new(
            why,
            "may not get pods/log",
        ));
    }
    ev
}

fn runtime_finding(status: &KopfAuditStatus) -> Option<&Finding> {
    status
        .findings
        .iter()
        .find(|f| f.check == CheckId::RuntimeHandlerFailures)
}

fn reasons_of(update: &StatusUpdate) -> Vec<EventReason> {
    update.events.iter().map(|e| e.reason).collect()
}

/// The reasons of the Events about one check.
fn reasons_of_check(update: &StatusUpdate, check: &str) -> Vec<EventReason> {
    update
        .events
        .iter()
        .filter(|e| e.note.starts_with(check))
        .map(|e| e.reason)
        .collect()
}

fn area(status: &KopfAuditStatus, t: ConditionType) -> (String, String) {
    condition(status, t)
        .map(|c| (c.status.clone(), c.reason.clone()))
        .unwrap_or_default()
}

#[test]
fn a_forbidden_area_keeps_its_findings_stale_and_nothing_is_resolved_or_raised_again() {
    let first = audit(None, read(FAILING), 0);
    assert!(runtime_finding(&first.status).is_some());
    let blind = audit(
        Some(&first.status),
        unreadable(crate::model::evidence::Obstacle::Forbidden),
        30,
    );
    let kept = runtime_finding(&blind.status).expect("kept");
    assert!(kept.stale, "{kept:?}");
    assert!(
        !reasons_of(&blind).contains(&EventReason::FindingResolved),
        "{:?}",
        blind.events
    );
    assert_eq!(
        area(&blind.status, ConditionType::RuntimeHealthy),
        ("Unknown".into(), "Forbidden".into())
    );
    let back = audit(Some(&blind.status), read(FAILING), 60);
    assert!(!runtime_finding(&back.status).expect("found").stale);
    assert!(
        !reasons_of(&back).contains(&EventReason::FindingRaised),
        "it was there before: {:?}",
        back.events
    );
}

#[test]
fn a_transient_read_failure_keeps_the_verdict_and_emits_nothing() {
    let first = audit(None, read(FAILING), 0);
    let before = area(&first.status, ConditionType::RuntimeHealthy);
    let blip = audit(
        Some(&first.status),
        unreadable(crate::model::evidence::Obstacle::Failed),
        30,
    );
    assert_eq!(area(&blip.status, ConditionType::RuntimeHealthy), before);
    assert!(blip.events.is_empty(), "{:?}", blip.events);
    let back = audit(Some(&blip.status), read(FAILING), 60);
    assert!(back.events.is_empty(), "{:?}", back.events);
}

#[test]
fn a_failed_audit_keeps_everything_stale_and_emits_nothing() {
    let first = audit(None, read(FAILING), 0);
    let failed = next_status(
        Some(&first.status),
        &Outcome::Failed(crate::model::evidence::AuditFailure {
            cause: crate::model::evidence::FailureCause::Unreachable,
            message: "the API server did not answer".into(),
        }),
        Some(1),
        &at(30),
        HOLD,
    );
    assert!(failed.events.is_empty(), "{:?}", failed.events);
    assert!(failed.status.findings.iter().all(|f| f.stale));
    assert_eq!(
        failed.status.findings.len(),
        first.status.findings.len(),
        "nothing resolved by not looking"
    );
    assert_eq!(
        area(&failed.status, ConditionType::Ready),
        ("False".into(), "AuditFailed".into())
    );
    assert_eq!(
        area(&failed.status, ConditionType::Compliant),
        area(&first.status, ConditionType::Compliant),
        "compliance is not re-decided"
    );
    let back = audit(Some(&failed.status), read(FAILING), 60);
    assert!(back.events.is_empty(), "{:?}", back.events);
    assert!(back.status.findings.iter().all(|f| !f.stale));
}

#[test]
fn a_flapping_failure_is_raised_once_and_resolved_once_after_the_hold_down() {
    // Raised at the second complete audit (the first has only its headline).
    let mut status = audit(None, read(HEALTHY), 0).status;
    let mut reasons = Vec::new();
    for i in 1..=20 {
        let line = if i % 3 == 0 { HEALTHY } else { FAILING };
        let update = audit(Some(&status), read(line), i * 30);
        reasons.extend(reasons_of_check(&update, "runtime.handler-failures"));
        status = update.status;
    }
    let raised = reasons
        .iter()
        .filter(|r| **r == EventReason::FindingRaised)
        .count();
    assert_eq!(raised, 1, "{reasons:?}");
    assert!(
        !reasons.contains(&EventReason::FindingResolved),
        "{reasons:?}"
    );
    // Quiet: absent at once, resolved only when the hold-down has passed.
    let quiet = audit(Some(&status), read(HEALTHY), 630);
    let absent = runtime_finding(&quiet.status).expect("kept during the hold-down");
    assert!(absent.absent_since.is_some());
    assert_eq!(
        area(&quiet.status, ConditionType::RuntimeHealthy).0,
        "False",
        "the area stays False during the hold-down"
    );
    let mut status = quiet.status;
    let mut resolved = 0;
    for t in (660..=1300).step_by(30) {
        let update = audit(Some(&status), read(HEALTHY), t);
        resolved += reasons_of_check(&update, "runtime.handler-failures")
            .iter()
            .filter(|r| **r == EventReason::FindingResolved)
            .count();
        status = update.status;
    }
    assert_eq!(resolved, 1);
    assert!(runtime_finding(&status).is_none());
}

#[test]
fn every_string_of_a_finding_is_redacted() {
    let mut f = crate::checks::finding(
        CheckId::RuntimeHandlerFailures,
        "op",
        "Handler failed for ns/a: password=hunter2-very-secret".into(),
        Some("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop".into()),
    );
    run::clean_finding(&mut f);
    assert!(!f.message.contains("hunter2-very-secret"), "{}", f.message);
    let evidence = f.evidence.unwrap_or_default();
    assert!(!evidence.contains("eyJzdWIiOiIxIn0"), "{evidence}");
}

/// The bidi controls a reader must never receive.
fn has_bidi(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
    })
}

#[test]
fn a_tenant_s_exemption_reason_and_args_reach_status_bounded_and_clean() {
    let mut reason = String::from("mesh \u{202E}probes\u{2066} password=hunter2\n");
    while reason.len() < 200 * 1024 {
        reason.push_str("we probe \u{202E}it elsewhere\u{2069}; ");
    }
    let names: Vec<String> = (0..1000).map(|i| format!("team-{i}")).collect();
    let peering = format!("p\u{202E}{}", "x".repeat(100 * 1024));
    let mut args: Vec<&str> = names.iter().flat_map(|n| ["-n", n.as_str()]).collect();
    args.extend(["--peering", peering.as_str()]);
    let liveness = format!("{SKIP_ANNOTATION_PREFIX}workload.liveness");
    let cpu = format!("{SKIP_ANNOTATION_PREFIX}workload.cpu-request");
    let annotations = [
        (liveness.as_str(), reason.as_str()),
        (cpu.as_str(), reason.as_str()),
    ];
    let pending = pending_status(Some(1), &at(0));
    for policy in [
        Policy::default(),
        Policy {
            refuse_exemptions: true,
            ..Policy::default()
        },
    ] {
        let outcome = evaluate(
            &spec(),
            &AuditSettings::from_spec(&spec()),
            Ok(Observation::Evidence(evidence(&args, &annotations))),
            &policy,
        );
        let update = next_status(Some(&pending), &outcome, Some(1), &at(10), HOLD);
        let status = &update.status;
        assert_eq!(status.skipped.len(), 2);
        let skipped = serde_json::to_string(&status.skipped).expect("JSON");
        assert!(skipped.len() < 4096, "{} bytes: {skipped}", skipped.len());
        let whole = serde_json::to_string(status).expect("JSON");
        assert!(!whole.contains("hunter2"), "{whole}");
        assert!(!has_bidi(&whole), "{whole:?}");
        assert!(whole.len() < 64 * 1024, "{} bytes", whole.len());
        let target = &status.targets[0];
        assert_eq!(target.namespaces.len(), 11, "{:?}", target.namespaces);
        assert_eq!(target.namespaces[10], "… and 990 more");
        assert!(target.peering.as_ref().is_some_and(|p| p.len() <= 253));
        for s in &status.skipped {
            assert_eq!(s.honoured, !policy.refuse_exemptions);
            if s.honoured {
                assert!(
                    s.reason.starts_with("mesh probes password=***"),
                    "{}",
                    s.reason
                );
                assert!(s.reason.ends_with('…'), "{}", s.reason);
            } else {
                assert!(s.reason.starts_with("refused: "), "{}", s.reason);
            }
        }
        for e in &update.events {
            assert!(e.note.len() <= 1000 && !has_bidi(&e.note), "{e:?}");
        }
    }
}

#[test]
fn a_status_with_every_list_and_string_at_its_bound_stays_far_below_etcd_s_limit() {
    use crate::api::{SkippedCheck, TargetStatus};
    use crate::model::bounded::*;
    use status::{MAX_FINDINGS, MAX_SKIPPED, MAX_TARGETS};
    // A quote needs an escape in JSON: the most expensive character there is.
    let text = |bytes: usize| "\"".repeat(bytes);
    let finding = Finding {
        target: text(MAX_NAME_BYTES),
        message: text(MAX_MESSAGE_BYTES),
        evidence: Some(text(MAX_EVIDENCE_BYTES)),
        since: Some(at(0)),
        absent_since: Some(at(0)),
        ..crate::checks::finding(
            CheckId::PersistenceOrphanedFinalizers,
            "",
            String::new(),
            None,
        )
    };
    let target = TargetStatus {
        name: text(MAX_NAME_BYTES),
        kopf: true,
        container: Some(text(MAX_NAME_BYTES)),
        recognised_by: Some(crate::api::Recognition::Log),
        recognition: Some(text(MAX_CONDITION_MESSAGE_BYTES)),
        mode: Some("cluster-wide".into()),
        namespaces: vec![text(MAX_NAME_BYTES); MAX_LISTED + 1],
        peering: Some(text(MAX_NAME_BYTES)),
        log_format: Some("plain".into()),
        service_account: Some(text(MAX_NAME_BYTES)),
        handled_resources: vec![text(MAX_NAME_BYTES); MAX_LISTED + 1],
        logs_truncated: true,
        events_truncated: true,
    };
    let skipped = SkippedCheck {
        check: CheckId::PersistenceOrphanedFinalizers,
        target: text(MAX_NAME_BYTES),
        reason: text(MAX_REASON_BYTES),
        honoured: true,
    };
    let mut status = pending_status(Some(1), &at(0));
    for c in &mut status.conditions {
        c.message = text(MAX_CONDITION_MESSAGE_BYTES);
    }
    status.findings = vec![finding; MAX_FINDINGS];
    status.targets = vec![target; MAX_TARGETS];
    status.skipped = vec![skipped; MAX_SKIPPED];
    let bytes = serde_json::to_string(&status).expect("JSON").len();
    // etcd takes 1.5 MiB a request and the KopfAudit's annotations may take 256 KiB of
    // it: this (about 785 KiB, with each target's recognition note and handled
    // resources) leaves over a third free. A raised bound shows here.
    assert!(bytes < 820 * 1024, "{bytes} bytes");
}

#[test]
fn with_no_handled_resource_known_events_and_persistence_are_not_compliant() {
    let failure = "[2026-12-01 10:00:00,000] kopf.objects         [ERROR   ] [ns/w1] Handler 'reconcile' failed temporarily: not yet";
    let update = audit(None, read(failure), 10);
    for t in [
        ConditionType::EventsCompliant,
        ConditionType::PersistenceCompliant,
    ] {
        assert_eq!(
            area(&update.status, t),
            ("Unknown".to_string(), "NothingHandled".to_string()),
            "{t:?}"
        );
    }
    // No Event was read, so a failure without one proves nothing.
    assert!(
        !update
            .status
            .findings
            .iter()
            .any(|f| f.check == CheckId::EventsSilentFailures),
        "{:#?}",
        update.status.findings
    );
}

#[test]
fn a_target_whose_kopf_cannot_be_told_waits_with_the_reason_and_is_not_called_not_kopf() {
    let mut ev = evidence(&[], &[]);
    if let Some(spec) = ev.targets[0].deployment.spec.template.spec.as_mut() {
        spec.containers[0].command = None;
        spec.containers[0].args = None;
    }
    let mut target = TargetEvidence::new(ev.targets[0].deployment.clone(), Vec::new(), None);
    target.undetermined = Some(crate::model::evidence::Unavailable::new(
        crate::model::evidence::Obstacle::NoRunningPod,
        "no pod ever ran",
    ));
    ev.targets[0] = target;
    let update = audit(None, ev, 10);
    let ids: Vec<CheckId> = update.status.findings.iter().map(|f| f.check).collect();
    assert!(!ids.contains(&CheckId::WorkloadNotKopf), "{ids:?}");
    // The checks that hold for any Deployment still run.
    assert!(ids.contains(&CheckId::WorkloadMemoryLimit), "{ids:?}");
    assert_eq!(
        area(&update.status, ConditionType::RuntimeHealthy),
        ("Unknown".to_string(), "NoRunningPod".to_string())
    );
}

#[test]
fn a_deployment_that_is_not_kopf_still_gets_the_checks_of_any_workload() {
    let mut ev = evidence(&[], &[]);
    if let Some(spec) = ev.targets[0].deployment.spec.template.spec.as_mut() {
        spec.containers[0].command = Some(vec!["nginx".into()]);
    }
    ev.targets[0] = TargetEvidence::new(ev.targets[0].deployment.clone(), Vec::new(), None);
    let update = audit(None, ev, 10);
    let ids: Vec<CheckId> = update.status.findings.iter().map(|f| f.check).collect();
    for id in [
        CheckId::WorkloadNotKopf,
        CheckId::WorkloadMemoryRequest,
        CheckId::WorkloadMemoryLimit,
        CheckId::WorkloadDefaultServiceAccount,
    ] {
        assert!(ids.contains(&id), "{id:?} in {ids:?}");
    }
    // kopf's own advice does not apply to it.
    assert!(!ids.contains(&CheckId::WorkloadLiveness), "{ids:?}");
    assert!(!ids.contains(&CheckId::WorkloadNoScopeFlag), "{ids:?}");
}

#[test]
fn a_run_recognised_by_its_log_says_so_and_is_not_judged_by_flags_it_cannot_see() {
    use crate::model::kopf_run::{KopfLogFormat, LogRecognition, from_log};
    let mut ev = evidence(&[], &[]);
    let spec = ev.targets[0].deployment.spec.template.spec.as_mut();
    let container = spec.map(|s| {
        let c = &mut s.containers[0];
        c.command = None;
        c.args = None;
        c.liveness_probe = Some(k8s_openapi::api::core::v1::Probe::default());
        c.clone()
    });
    let container = container.expect("a container");
    let seen = LogRecognition {
        pod: "op-1".into(),
        kopf_lines: 3,
        example: "Activity 'login_via_client' succeeded.".into(),
        implicit_scope: false,
        namespaces: Default::default(),
        peering: false,
        kinds: Default::default(),
        version: Default::default(),
    };
    let run = from_log(&container, Some("ns"), seen, KopfLogFormat::Json);
    ev.targets[0].kopf = Some(crate::model::evidence::KopfEvidence::unread(run));
    let update = audit(None, ev, 10);
    let target = &update.status.targets[0];
    assert!(target.kopf);
    assert_eq!(target.recognised_by, Some(crate::api::Recognition::Log));
    assert_eq!(target.mode.as_deref(), Some("unknown"));
    assert_eq!(target.log_format.as_deref(), Some("json"));
    let why = target.recognition.as_deref().unwrap_or_default();
    assert!(
        why.contains("op-1") && why.contains("login_via_client"),
        "{why}"
    );
    let ids: Vec<CheckId> = update.status.findings.iter().map(|f| f.check).collect();
    assert!(!ids.contains(&CheckId::WorkloadNotKopf), "{ids:?}");
    assert!(!ids.contains(&CheckId::WorkloadLiveness), "{ids:?}");
    assert!(!ids.contains(&CheckId::WorkloadNoScopeFlag), "{ids:?}");
    assert!(why.contains("own namespace only"), "{why}");

    // Its log names objects in another namespace, and kopf peers: the note says so.
    let mut ev = evidence(&[], &[]);
    ev.targets[0].deployment.metadata.namespace = Some("ns".into());
    let seen = LogRecognition {
        pod: "op-1".into(),
        kopf_lines: 3,
        example: "Activity 'login_via_client' succeeded.".into(),
        implicit_scope: false,
        namespaces: ["ns".to_string(), "team-b".to_string()].into(),
        peering: true,
        kinds: Default::default(),
        version: Default::default(),
    };
    let run = from_log(&container, Some("ns"), seen, KopfLogFormat::Full);
    ev.targets[0].kopf = Some(crate::model::evidence::KopfEvidence::unread(run));
    let update = audit(None, ev, 10);
    let target = &update.status.targets[0];
    assert_eq!(target.peering.as_deref(), Some("auto"));
    let why = target.recognition.as_deref().unwrap_or_default();
    assert!(why.contains("names objects in team-b:"), "{why}");
    assert!(why.contains("Peering: on"), "{why}");
}

/// `Not enough permissions to watch for resources`, as kopf 1.45 logs it when its CRD
/// watch is refused.
const BLIND: &str = "[2026-11-30 02:42:49,501] kopf._core.reactor.o [WARNING ] Not enough permissions to watch for resources: changes (creation/deletion/updates) will not be noticed; the resources are only refreshed on operator restarts.";

#[test]
fn a_refused_crd_watch_is_one_finding_the_rbac_one_with_the_rule() {
    // kopf logs the degradation because its CRD watch is refused: rbac.crd-scan names
    // the rule to add, so runtime.permission-degraded does not repeat it.
    let mut ev = read(BLIND);
    let kopf = ev.targets[0].kopf.as_mut().expect("kopf");
    let needs = crate::model::needs::needs(&kopf.run, Some(&[]), "ns", &Default::default());
    let denied: Vec<crate::model::rbac::Permission> = needs
        .iter()
        .filter(|n| n.check == CheckId::RbacCrdScan)
        .flat_map(|n| n.permissions())
        .collect();
    let answers = crate::model::needs::permissions(&needs)
        .into_iter()
        .map(|p| {
            let allowed = !denied.contains(&p);
            (p, allowed)
        })
        .collect();
    let rbac = crate::model::evidence::RbacEvidence {
        answers,
        needs,
        ..Default::default()
    };
    kopf.rbac = Ok(rbac.clone());
    let found: Vec<CheckId> = evaluation(ev.clone(), &Policy::default())
        .findings
        .iter()
        .map(|f| f.check)
        .collect();
    assert!(found.contains(&CheckId::RbacCrdScan), "{found:?}");
    assert!(
        !found.contains(&CheckId::RuntimePermissionDegraded),
        "{found:?}"
    );
    // Granted since (the log is older than the fix): the degradation stays reported.
    let kopf = ev.targets[0].kopf.as_mut().expect("kopf");
    kopf.rbac = Ok(crate::model::evidence::RbacEvidence {
        answers: rbac.answers.keys().map(|p| (p.clone(), true)).collect(),
        ..rbac
    });
    let found: Vec<CheckId> = evaluation(ev, &Policy::default())
        .findings
        .iter()
        .map(|f| f.check)
        .filter(|c| c.area() != crate::catalog::Area::Workload)
        .collect();
    assert_eq!(found, vec![CheckId::RuntimePermissionDegraded]);
}

#[test]
fn events_left_unread_in_default_make_the_events_area_say_so() {
    // kopf may file the Events of cluster-scoped objects in `default`, outside the
    // KopfAudit's namespace: the area says what it could not read, not "compliant".
    let mut ev = read(HEALTHY);
    let kopf = ev.targets[0].kopf.as_mut().expect("kopf");
    kopf.handled = Ok(vec![crate::model::testing::widget(false, true)]);
    kopf.events = Ok(crate::model::evidence::EventEvidence {
        unread: [(
            "default".to_string(),
            crate::model::evidence::Unavailable::new(
                crate::model::evidence::Obstacle::OutsideNamespace,
                "This area needs the Events in namespace default, outside the KopfAudit's namespace ns: the auditor reads other namespaces only when started with --allow-cross-namespace.",
            ),
        )]
        .into(),
        ..Default::default()
    });
    let update = audit(None, ev, 0);
    let (status, reason) = area(&update.status, ConditionType::EventsCompliant);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("Unknown", "OutsideNamespace")
    );
    let message = condition(&update.status, ConditionType::EventsCompliant)
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(message.contains("namespace default"), "{message}");
    assert!(message.contains("--allow-cross-namespace"), "{message}");
    // The other areas are unaffected.
    assert_eq!(cond(&update.status, ConditionType::RuntimeHealthy), "True");
}

#[test]
fn an_object_over_its_parse_budget_leaves_its_areas_partial() {
    let mut ev = read(HEALTHY);
    let kopf = ev.targets[0].kopf.as_mut().expect("kopf");
    kopf.handled = Ok(vec![crate::model::testing::widget(false, true)]);
    let complete = audit(None, ev.clone(), 10);
    assert_eq!(
        area(&complete.status, ConditionType::PersistenceCompliant),
        ("True".to_string(), "NoFindings".to_string()),
        "the same evidence without the object over budget is compliant"
    );
    let kopf = ev.targets[0].kopf.as_mut().expect("kopf");
    kopf.objects = Ok(crate::model::evidence::ObjectEvidence {
        samples: Vec::new(),
        over_budget: vec!["ns/big".into(), "ns/deep".into()],
    });
    let update = audit(None, ev, 10);
    for t in [
        ConditionType::PersistenceCompliant,
        ConditionType::RuntimeHealthy,
    ] {
        assert_eq!(
            area(&update.status, t),
            ("Unknown".to_string(), "ObjectsPartial".to_string()),
            "{t:?}"
        );
        let message = &condition(&update.status, t).expect("condition").message;
        assert!(message.contains("ns/big and 1 more"), "{message}");
    }
    assert_eq!(
        area(&update.status, ConditionType::EventsCompliant).0,
        "True",
        "the Events area reads no object"
    );
}

#[test]
fn handled_secrets_are_never_sampled_nor_called_healthy_nor_a_permission_to_grant() {
    let message = |update: &StatusUpdate| {
        condition(&update.status, ConditionType::PersistenceCompliant)
            .map(|c| c.message.clone())
            .unwrap_or_default()
    };
    // Secrets alone: nothing was sampled, so the area is not compliant, and it says why.
    let mut ev = read(HEALTHY);
    let kopf = ev.targets[0].kopf.as_mut().expect("kopf");
    kopf.handled = Ok(vec![crate::model::testing::secrets()]);
    let update = audit(None, ev, 0);
    assert_eq!(
        area(&update.status, ConditionType::PersistenceCompliant),
        ("Unknown".to_string(), "SecretsNotSampled".to_string())
    );
    let alone = message(&update);
    assert!(alone.contains("credentials and data"), "{alone}");
    assert!(
        alone.contains("persistence.patch-inconsistencies"),
        "{alone}"
    );
    assert!(
        !alone.contains("grant it"),
        "no permission to grant: {alone}"
    );
    // The Events about Secrets are read as usual.
    assert_eq!(cond(&update.status, ConditionType::EventsCompliant), "True");

    // Beside a custom resource: the area is judged on what was sampled and says what
    // was not.
    let mut ev = read(HEALTHY);
    let kopf = ev.targets[0].kopf.as_mut().expect("kopf");
    kopf.handled = Ok(vec![
        crate::model::testing::secrets(),
        crate::model::testing::widget(true, true),
    ]);
    let update = audit(None, ev, 0);
    assert_eq!(
        area(&update.status, ConditionType::PersistenceCompliant),
        ("True".to_string(), "NoFindings".to_string())
    );
    let beside = message(&update);
    assert!(beside.contains("Secrets"), "{beside}");
    assert!(beside.contains("were not sampled"), "{beside}");
}

/// An exemption annotation or a disabled check holds through its last day and lapses
/// the day after: the check's findings come back, and status says it lapsed, in the
/// words lint uses for a comment (`lint::tests`). The evidence is read on 1970-01-01.
#[test]
fn exemptions_lapse_after_their_date_in_each_form() {
    let liveness = format!("{SKIP_ANNOTATION_PREFIX}workload.liveness");
    let raised = |eval: &Evaluation, id: CheckId| eval.findings.iter().any(|f| f.check == id);
    let lapsed = |reason: &str| {
        format!(
            "lapsed on 1969-12-31: the check runs again; renew the date, or fix what it finds (given: \"{reason}\")"
        )
    };
    for (until, holds) in [("1970-01-01", true), ("1969-12-31", false)] {
        let text = format!("until {until}: probed by the mesh");
        let ev = evidence(&[], &[(liveness.as_str(), text.as_str())]);
        let eval = evaluation(ev, &Policy::default());
        assert_eq!(!raised(&eval, CheckId::WorkloadLiveness), holds, "{until}");
        let skipped = &eval.skipped[0];
        assert_eq!(skipped.honoured, holds);
        if !holds {
            assert_eq!(skipped.reason, lapsed("probed by the mesh"));
        }

        let eval = run_spec(
            &disabling(Some(until)),
            &evidence(&[], &[]),
            &Policy::default(),
        );
        assert_eq!(!raised(&eval, CheckId::WorkloadLiveness), holds, "{until}");
        let unhonoured: Vec<&str> = eval
            .skipped
            .iter()
            .filter(|s| !s.honoured)
            .map(|s| s.reason.as_str())
            .collect();
        if holds {
            assert!(unhonoured.is_empty(), "{unhonoured:?}");
        } else {
            assert_eq!(
                unhonoured,
                [lapsed("disabled in spec.checks.disable").as_str()]
            );
        }
    }
}

/// `spec.checks.disable` of workload.liveness, until `until` if given.
fn disabling(until: Option<&str>) -> KopfAuditSpec {
    let mut disabling = spec();
    disabling.checks.disable = vec![CheckId::WorkloadLiveness];
    if let Some(until) = until {
        disabling
            .checks
            .disabled_until
            .insert("workload.liveness".into(), until.into());
    }
    disabling
}

/// An undated exemption holds, unless the policy requires a date: then an annotation
/// and a disabled check are refused in the same words (lint's comment too,
/// `lint::tests`), and their checks run.
#[test]
fn a_policy_requiring_an_end_date_refuses_an_undated_exemption_in_each_form() {
    let liveness = format!("{SKIP_ANNOTATION_PREFIX}workload.liveness");
    let raised = |eval: &Evaluation| {
        eval.findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadLiveness)
    };
    let strict = Policy {
        require_exemption_expiry: true,
        ..Policy::default()
    };
    let refused = |how: &str, reason: &str| {
        format!(
            "refused: the auditor accepts only exemptions with an end date; give one as {how} (given: \"{reason}\")"
        )
    };
    let ev = || evidence(&[], &[(liveness.as_str(), "probed by the mesh")]);
    assert!(!raised(&evaluation(ev(), &Policy::default())));
    let eval = evaluation(ev(), &strict);
    assert!(raised(&eval));
    assert!(!eval.skipped[0].honoured);
    assert_eq!(
        eval.skipped[0].reason,
        refused("`until YYYY-MM-DD: reason`", "probed by the mesh")
    );

    let undated = disabling(None);
    assert!(!raised(&run_spec(
        &undated,
        &evidence(&[], &[]),
        &Policy::default()
    )));
    let eval = run_spec(&undated, &evidence(&[], &[]), &strict);
    assert!(raised(&eval));
    let reasons: Vec<&str> = eval.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [refused(
            "a date in spec.checks.disabledUntil",
            "disabled in spec.checks.disable"
        )
        .as_str()]
    );
    // A dated one holds.
    let dated = run_spec(&disabling(Some("1970-01-01")), &evidence(&[], &[]), &strict);
    assert!(!raised(&dated));
}

/// A `spec.checks.disabledUntil` entry the CRD's pattern lets through but that is no
/// date (2027-13-45) is refused as such, as `until tomorrow` is in an annotation, not
/// taken as undated (which would hold for ever).
#[test]
fn a_disabled_until_that_is_no_date_is_refused() {
    let eval = run_spec(
        &disabling(Some("2027-13-45")),
        &evidence(&[], &[]),
        &Policy::default(),
    );
    assert!(
        eval.findings
            .iter()
            .any(|f| f.check == CheckId::WorkloadLiveness)
    );
    assert_eq!(eval.skipped.len(), 1, "{:?}", eval.skipped);
    assert_eq!(
        eval.skipped[0].reason,
        "refused: spec.checks.disabledUntil needs a date as YYYY-MM-DD, not \"2027-13-45\" (given: \"disabled in spec.checks.disable\")"
    );
}

/// The checks `eval` lists as passed for target `op`.
fn passed(eval: &Evaluation) -> BTreeSet<CheckId> {
    eval.passed
        .iter()
        .filter(|(target, _)| target == "op")
        .map(|(_, check)| *check)
        .collect()
}

#[test]
fn passes_are_the_checks_that_ran_in_full_and_found_nothing() {
    use crate::catalog::Area;
    let eval = evaluation(read(HEALTHY), &Policy::default());
    let pass = passed(&eval);
    let found: BTreeSet<CheckId> = eval.findings.iter().map(|f| f.check).collect();
    assert!(found.contains(&CheckId::WorkloadLiveness), "{found:?}");
    assert!(pass.contains(&CheckId::WorkloadOomKilled), "{pass:?}");
    assert!(pass.contains(&CheckId::RuntimeHandlerFailures), "{pass:?}");
    assert!(
        !pass.contains(&CheckId::WorkloadLiveness),
        "a failure is no pass"
    );
    assert!(pass.is_disjoint(&found), "{:?}", pass.intersection(&found));
    for check in &pass {
        assert!(
            matches!(check.area(), Area::Workload | Area::Rbac | Area::Runtime),
            "{check:?}: no source check, none of an area read in part (no handled resource)"
        );
    }
    for (target, check) in &eval.unread {
        assert!(
            !eval.passed.contains(&(target.clone(), *check)),
            "{check:?}"
        );
    }
    // Disabled and exempted checks are skips, not passes.
    let mut s = spec();
    s.checks.disable = vec![CheckId::WorkloadOomKilled];
    let disabled = run_spec(&s, &read(HEALTHY), &Policy::default());
    assert!(!passed(&disabled).contains(&CheckId::WorkloadOomKilled));
    assert!(passed(&disabled).contains(&CheckId::RuntimeHandlerFailures));
    let key = format!("{SKIP_ANNOTATION_PREFIX}runtime.handler-failures");
    let mut exempted = read(HEALTHY);
    exempted.targets[0].deployment.metadata.annotations =
        Some([(key, "known".to_string())].into_iter().collect());
    let exempted = evaluation(exempted, &Policy::default());
    assert!(exempted.skipped.iter().any(|s| s.honoured));
    assert!(!passed(&exempted).contains(&CheckId::RuntimeHandlerFailures));
    // An area whose evidence was not read passes nothing; the others still do.
    let blind = evaluation(
        unreadable(crate::model::evidence::Obstacle::Forbidden),
        &Policy::default(),
    );
    let blind = passed(&blind);
    assert!(blind.iter().all(|c| c.area() != Area::Runtime), "{blind:?}");
    assert!(blind.contains(&CheckId::WorkloadOomKilled), "{blind:?}");
}

#[test]
fn an_audit_that_ran_nothing_passes_nothing() {
    let update = audit(None, read(HEALTHY), 0);
    assert!(!update.passed.is_empty());
    let failed = next_status(
        Some(&update.status),
        &Outcome::Failed(crate::model::evidence::AuditFailure {
            cause: crate::model::evidence::FailureCause::Unreachable,
            message: "the API server did not answer".into(),
        }),
        Some(1),
        &at(30),
        HOLD,
    );
    assert!(failed.passed.is_empty(), "{:?}", failed.passed);
    // Not known to run kopf: nothing ran in full.
    let mut ev = evidence(&[], &[]);
    if let Some(spec) = ev.targets[0].deployment.spec.template.spec.as_mut() {
        spec.containers[0].command = Some(vec!["nginx".into()]);
    }
    ev.targets[0] = TargetEvidence::new(ev.targets[0].deployment.clone(), Vec::new(), None);
    assert!(audit(None, ev, 10).passed.is_empty());
}

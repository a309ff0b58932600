//! The evaluate phase: from gathered evidence to findings, conditions, the next status
//! and the Events worth emitting. Pure: no client, the clock passed in.

use crate::api::{Finding, KopfAuditSpec, KopfAuditStatus, SkippedCheck, Summary, TargetStatus};
use crate::checks::workload::{self, WorkloadThresholds};
use crate::checks::{Area, CheckId, Severity, quantity};
use crate::checks::{events, persistence, rbac, runtime};
use crate::conditions::{self, ConditionType, DesiredCondition, Reason, Status};
use crate::evidence::{Evidence, Gathered, TargetEvidence};
use crate::kopf_mode::{self, KopfRun};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::{BTreeMap, BTreeSet};

/// The annotation prefix that exempts a target from a check: `skip.kopfaudit.dev/<check-id>: <reason>`.
pub const SKIP_ANNOTATION_PREFIX: &str = "skip.kopfaudit.dev/";

/// At most this many findings are kept in status, most severe first.
pub const MAX_FINDINGS: usize = 50;

/// Operator-wide rules that a KopfAudit cannot change.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Ignore exemption annotations (they are reported as refused).
    pub refuse_exemptions: bool,
}

/// What happened when the auditor tried to audit.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The evidence was gathered; evaluate it.
    Audited(Evidence),
    /// The audit cannot run; the reason and message say why.
    Stalled {
        /// CamelCase reason (e.g. `TargetNotFound`).
        reason: Reason,
        /// What a person can act on.
        message: String,
    },
    /// `spec.suspend` is set.
    Suspended,
}

/// How far an area could be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AreaVerdict {
    /// Its checks ran; its findings decide.
    Evaluated,
    /// It could not be decided.
    Unknown(Reason, String),
}

/// The result of evaluating evidence, before it is merged into status.
#[derive(Clone, Debug, Default)]
pub struct Evaluation {
    /// Every finding after disabling, exemptions and severity overrides, most severe first.
    pub findings: Vec<Finding>,
    /// Exemptions seen, honoured or refused.
    pub skipped: Vec<SkippedCheck>,
    /// What was learned about each target.
    pub targets: Vec<TargetStatus>,
    /// Areas that could not be decided.
    pub unknown_areas: BTreeMap<Area, (Reason, String)>,
}

/// The areas that need kopf; a target without kopf leaves them `Unknown`/`NotKopf`.
const KOPF_AREAS: [Area; 4] = [Area::Rbac, Area::Events, Area::Persistence, Area::Runtime];

/// Settings every check may read: the KopfAudit's thresholds and the clock.
#[derive(Clone, Debug)]
pub struct CheckConfig {
    /// Workload thresholds.
    pub workload: WorkloadThresholds,
    /// Identical events in the window that count as spam.
    pub event_repeats: usize,
    /// When the evidence was gathered.
    pub now: jiff::Timestamp,
}

/// Identical events that count as spam unless the KopfAudit says otherwise.
pub const DEFAULT_EVENT_REPEATS: usize = 3;

/// Runs every enabled check on every target.
pub fn evaluate(spec: &KopfAuditSpec, evidence: &Evidence, policy: &Policy) -> Evaluation {
    let config = CheckConfig {
        workload: workload_thresholds(spec),
        event_repeats: spec
            .thresholds
            .event_repeats
            .map_or(DEFAULT_EVENT_REPEATS, |n| n as usize),
        now: evidence.now,
    };
    let mut eval = Evaluation::default();
    for target in &evidence.targets {
        evaluate_target(spec, target, &config, policy, &mut eval);
    }
    apply_spec_to_findings(spec, &mut eval.findings);
    eval
}

fn evaluate_target(
    spec: &KopfAuditSpec,
    target: &TargetEvidence,
    config: &CheckConfig,
    policy: &Policy,
    eval: &mut Evaluation,
) {
    let name = workload::target_name(target).to_string();
    let pod_spec = target.deployment.spec.template.spec.as_ref();
    let mut findings = Vec::new();
    match (&target.kopf, target.kopf_container()) {
        (Some(run), Some(container)) => {
            let mut status = target_status(&name, Some(run), pod_spec);
            status.logs_truncated = target.logs.ready().is_some_and(|l| l.truncated);
            eval.targets.push(status);
            findings.extend(workload::check(target, container, run, &config.workload));
            for area in KOPF_AREAS {
                match evidence_for(area, target) {
                    Ok(()) => findings.extend(run_area(area, target, run, config)),
                    Err(why) => {
                        eval.unknown_areas.entry(area).or_insert(why);
                    }
                }
            }
        }
        _ => {
            eval.targets.push(target_status(&name, None, pod_spec));
            for area in KOPF_AREAS {
                eval.unknown_areas.insert(
                    area,
                    (
                        Reason::NotKopf,
                        format!("Deployment {name} runs no kopf operator; kopf-specific checks do not apply."),
                    ),
                );
            }
            findings.push(workload::not_kopf(target, spec.target.container.as_deref()));
        }
    }
    let exemptions = exemptions(target, &name, policy);
    let honoured: BTreeSet<CheckId> = exemptions
        .iter()
        .filter(|s| s.honoured)
        .map(|s| s.check)
        .collect();
    findings.retain(|f| !honoured.contains(&f.check));
    eval.skipped.extend(exemptions);
    eval.findings.extend(findings);
}

/// Runs one kopf area's checks on a target whose evidence for it is present.
fn run_area(
    area: Area,
    target: &TargetEvidence,
    run: &KopfRun,
    config: &CheckConfig,
) -> Vec<Finding> {
    match area {
        Area::Rbac => rbac::check(target, run, config),
        Area::Events => events::check(target, run, config),
        Area::Persistence => persistence::check(target, run, config),
        Area::Runtime => runtime::check(target, run, config),
        Area::Workload => Vec::new(),
    }
}

/// Whether the evidence an area needs was gathered, or why not.
fn evidence_for(area: Area, target: &TargetEvidence) -> Result<(), (Reason, String)> {
    fn need<T>(area: Area, gathered: &Gathered<T>) -> Result<(), (Reason, String)> {
        match gathered {
            Gathered::Ready(_) => Ok(()),
            Gathered::Unavailable(u) => Err((u.reason, u.message.clone())),
            Gathered::NotGathered => Err((
                Reason::NotAudited,
                format!(
                    "The {} checks are not run by this version of kopf-audit.",
                    area.prefix()
                ),
            )),
        }
    }
    match area {
        Area::Workload => Ok(()),
        Area::Rbac => need(area, &target.rbac),
        Area::Events => need(area, &target.logs).and(need(area, &target.events)),
        Area::Persistence => need(area, &target.handled).and(need(area, &target.objects)),
        Area::Runtime => need(area, &target.logs),
    }
}

fn target_status(
    name: &str,
    run: Option<&KopfRun>,
    pod_spec: Option<&k8s_openapi::api::core::v1::PodSpec>,
) -> TargetStatus {
    let service_account = pod_spec
        .and_then(|s| s.service_account_name.clone())
        .filter(|s| !s.is_empty())
        .or_else(|| Some("default".into()));
    let Some(run) = run else {
        return TargetStatus {
            name: name.into(),
            kopf: false,
            service_account,
            ..Default::default()
        };
    };
    let namespaces = match &run.scope {
        kopf_mode::Scope::Namespaced(ns) => ns.clone(),
        _ => Vec::new(),
    };
    TargetStatus {
        name: name.into(),
        kopf: true,
        container: Some(run.container.clone()),
        mode: Some(run.scope.mode_name().into()),
        namespaces,
        peering: Some(run.peering.display()),
        log_format: Some(run.log_format.as_str().into()),
        service_account,
        logs_truncated: false,
    }
}

/// Reads the exemption annotations of a target.
fn exemptions(target: &TargetEvidence, name: &str, policy: &Policy) -> Vec<SkippedCheck> {
    let annotations = target.deployment.metadata.annotations.iter().flatten();
    annotations
        .filter_map(|(key, value)| {
            let check = CheckId::parse(key.strip_prefix(SKIP_ANNOTATION_PREFIX)?)?;
            let reason = value.trim();
            let (honoured, reason) = if policy.refuse_exemptions {
                (
                    false,
                    format!("refused: the auditor does not accept exemption annotations (given: {reason:?})"),
                )
            } else if reason.is_empty() {
                (false, "refused: an exemption needs a reason as the annotation's value".into())
            } else {
                (true, reason.to_string())
            };
            Some(SkippedCheck {
                check,
                target: name.into(),
                reason,
                honoured,
            })
        })
        .collect()
}

fn workload_thresholds(spec: &KopfAuditSpec) -> WorkloadThresholds {
    let defaults = WorkloadThresholds::default();
    let read = |q: &Option<String>, default: f64| {
        q.as_deref()
            .and_then(quantity::bytes)
            .filter(|b| *b > 0.0)
            .unwrap_or(default)
    };
    WorkloadThresholds {
        memory_request: read(&spec.thresholds.memory_request, defaults.memory_request),
        memory_limit: read(&spec.thresholds.memory_limit, defaults.memory_limit),
    }
}

/// Drops disabled checks, applies severity overrides and sorts most severe first.
fn apply_spec_to_findings(spec: &KopfAuditSpec, findings: &mut Vec<Finding>) {
    findings.retain(|f| !spec.checks.disable.contains(&f.check));
    for f in findings.iter_mut() {
        if let Some(sev) = spec.checks.severity.get(f.check.as_str()) {
            f.severity = *sev;
        }
    }
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.check.cmp(&b.check))
            .then(a.target.cmp(&b.target))
            .then(a.message.cmp(&b.message))
    });
    findings.dedup_by(|a, b| a.check == b.check && a.target == b.target && a.message == b.message);
}

/// The conditions an outcome asks for. `stored` supplies the area conditions kept while
/// suspended.
pub fn desired_conditions(
    outcome: &Outcome,
    evaluation: Option<&Evaluation>,
) -> Vec<DesiredCondition> {
    use ConditionType as T;
    let mut out = Vec::new();
    match (outcome, evaluation) {
        (Outcome::Audited(_), Some(eval)) => {
            out.push(DesiredCondition::new(
                T::Ready,
                Status::True,
                Reason::AuditSucceeded,
                "The audit ran for the current generation.",
            ));
            out.push(DesiredCondition::new(
                T::Reconciling,
                Status::False,
                Reason::AuditSucceeded,
                "The audit is up to date.",
            ));
            out.push(DesiredCondition::new(
                T::Stalled,
                Status::False,
                Reason::AuditSucceeded,
                "The audit can run.",
            ));
            let areas: Vec<DesiredCondition> =
                Area::ALL.iter().map(|a| area_condition(*a, eval)).collect();
            out.push(compliant_condition(&areas));
            out.extend(areas);
        }
        (Outcome::Suspended, _) => {
            let msg = "spec.suspend is true: no audits run; the last results are kept.";
            out.push(DesiredCondition::new(
                T::Ready,
                Status::False,
                Reason::Suspended,
                msg,
            ));
            out.push(DesiredCondition::new(
                T::Reconciling,
                Status::False,
                Reason::Suspended,
                msg,
            ));
            out.push(DesiredCondition::new(
                T::Stalled,
                Status::False,
                Reason::Suspended,
                msg,
            ));
        }
        (Outcome::Stalled { .. }, _) | (Outcome::Audited(_), None) => {
            let (reason, message) = match outcome {
                Outcome::Stalled { reason, message } => (*reason, message.clone()),
                _ => (
                    Reason::AuditFailed,
                    "The audit produced no evaluation.".to_string(),
                ),
            };
            out.push(DesiredCondition::new(
                T::Ready,
                Status::False,
                reason,
                message.clone(),
            ));
            out.push(DesiredCondition::new(
                T::Reconciling,
                Status::False,
                reason,
                message.clone(),
            ));
            out.push(DesiredCondition::new(
                T::Stalled,
                Status::True,
                reason,
                message.clone(),
            ));
            let unknown = "The audit is stalled; see the Stalled condition.";
            out.push(DesiredCondition::new(
                T::Compliant,
                Status::Unknown,
                Reason::TargetStalled,
                unknown,
            ));
            for area in Area::ALL {
                out.push(DesiredCondition::new(
                    T::for_area(area),
                    Status::Unknown,
                    Reason::TargetStalled,
                    unknown,
                ));
            }
        }
    }
    out
}

/// The conditions written the first time a KopfAudit is seen, before its first audit.
pub fn pending_conditions() -> Vec<DesiredCondition> {
    let msg = "The first audit is running.";
    ConditionType::ALL
        .iter()
        .map(|t| {
            let status = if *t == ConditionType::Reconciling {
                Status::True
            } else {
                Status::Unknown
            };
            DesiredCondition::new(*t, status, Reason::AuditPending, msg)
        })
        .collect()
}

fn area_condition(area: Area, eval: &Evaluation) -> DesiredCondition {
    let type_ = ConditionType::for_area(area);
    let serious: Vec<&Finding> = eval
        .findings
        .iter()
        .filter(|f| f.check.area() == area && f.severity >= Severity::Warning)
        .collect();
    if !serious.is_empty() {
        let ids: BTreeSet<&str> = serious.iter().map(|f| f.check.as_str()).collect();
        let ids: Vec<&str> = ids.into_iter().collect();
        return DesiredCondition::new(
            type_,
            Status::False,
            Reason::FindingsPresent,
            format!(
                "{} finding(s) at warning or above: {}.",
                serious.len(),
                ids.join(", ")
            ),
        );
    }
    if let Some((reason, message)) = eval.unknown_areas.get(&area) {
        return DesiredCondition::new(type_, Status::Unknown, *reason, message.clone());
    }
    DesiredCondition::new(
        type_,
        Status::True,
        Reason::NoFindings,
        format!("No {} finding at warning or above.", area.prefix()),
    )
}

fn compliant_condition(areas: &[DesiredCondition]) -> DesiredCondition {
    let names = |status: Status| -> Vec<&str> {
        areas
            .iter()
            .filter(|c| c.status == status)
            .map(|c| c.type_.as_str())
            .collect()
    };
    let false_ = names(Status::False);
    let unknown = names(Status::Unknown);
    if !false_.is_empty() {
        DesiredCondition::new(
            ConditionType::Compliant,
            Status::False,
            Reason::AreasNotCompliant,
            format!("Not compliant: {}.", false_.join(", ")),
        )
    } else if !unknown.is_empty() {
        DesiredCondition::new(
            ConditionType::Compliant,
            Status::Unknown,
            Reason::AreasUnknown,
            format!("Undecided: {}.", unknown.join(", ")),
        )
    } else {
        DesiredCondition::new(
            ConditionType::Compliant,
            Status::True,
            Reason::AllAreasCompliant,
            "All areas are compliant.",
        )
    }
}

/// An Event the publish phase should emit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    /// `Warning` for problems, else `Normal`.
    pub warning: bool,
    /// CamelCase reason.
    pub reason: Reason,
    /// Under 1024 characters; names the check and the fix.
    pub note: String,
}

/// The next status, whether it differs from the stored one, and the Events to emit.
#[derive(Clone, Debug)]
pub struct StatusUpdate {
    /// The full status to apply.
    pub status: KopfAuditStatus,
    /// False when only timestamps would change: nothing is written.
    pub changed: bool,
    /// Transition events, empty in a steady state.
    pub events: Vec<PlannedEvent>,
}

/// Merges an outcome into the stored status.
pub fn next_status(
    stored: Option<&KopfAuditStatus>,
    outcome: &Outcome,
    evaluation: Option<&Evaluation>,
    generation: Option<i64>,
    now: &Time,
) -> StatusUpdate {
    let empty = KopfAuditStatus::default();
    let old = stored.unwrap_or(&empty);
    let desired = desired_conditions(outcome, evaluation);
    let mut status = old.clone();
    let (merged, _changes) = conditions::merge(&old.conditions, &desired, generation, now);
    status.conditions = keep_unlisted(&old.conditions, merged);
    status.observed_generation = generation;
    match (outcome, evaluation) {
        (Outcome::Audited(_), Some(eval)) => {
            let (findings, summary) = cap_findings(&eval.findings, &old.findings, now);
            status.findings = findings;
            status.summary = Some(summary);
            status.targets = eval.targets.clone();
            status.skipped = eval.skipped.clone();
        }
        (Outcome::Stalled { .. }, _) | (Outcome::Audited(_), None) => {
            status.findings.clear();
            status.targets.clear();
            status.skipped.clear();
            status.summary = Some(Summary::default());
        }
        (Outcome::Suspended, _) => {}
    }
    let mut unstamped = status.clone();
    unstamped.last_audit_time = old.last_audit_time.clone();
    let changed = stored.is_none() || unstamped != *old;
    if changed {
        status.last_audit_time = Some(now.clone());
    } else {
        status = old.clone();
    }
    let events = plan_events(old, &status);
    StatusUpdate {
        status,
        changed,
        events,
    }
}

/// The status written on first sight: every condition present, Reconciling=True.
pub fn pending_status(generation: Option<i64>, now: &Time) -> KopfAuditStatus {
    let (conditions, _) = conditions::merge(&[], &pending_conditions(), generation, now);
    KopfAuditStatus {
        observed_generation: generation,
        conditions,
        ..Default::default()
    }
}

/// Conditions in `merged` replace the stored ones of the same type; the rest are kept
/// (area conditions stay as they were while suspended).
fn keep_unlisted(
    stored: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    merged: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    ConditionType::ALL
        .iter()
        .filter_map(|t| {
            merged
                .iter()
                .find(|c| c.type_ == t.as_str())
                .or_else(|| stored.iter().find(|c| c.type_ == t.as_str()))
                .cloned()
        })
        .collect()
}

fn cap_findings(findings: &[Finding], stored: &[Finding], now: &Time) -> (Vec<Finding>, Summary) {
    let mut summary = Summary::default();
    for f in findings {
        match f.severity {
            Severity::Error => summary.errors += 1,
            Severity::Warning => summary.warnings += 1,
            Severity::Info => summary.infos += 1,
        }
    }
    let kept: Vec<Finding> = findings
        .iter()
        .take(MAX_FINDINGS)
        .map(|f| {
            let since = stored
                .iter()
                .find(|s| s.check == f.check && s.target == f.target)
                .and_then(|s| s.since.clone())
                .unwrap_or_else(|| now.clone());
            Finding {
                since: Some(since),
                ..f.clone()
            }
        })
        .collect();
    summary.omitted = u32::try_from(findings.len().saturating_sub(kept.len())).unwrap_or(u32::MAX);
    (kept, summary)
}

/// The state an Event headline is about: (Ready, Stalled, Compliant) status and reason.
fn headline(status: &KopfAuditStatus) -> Option<(String, String, String, String)> {
    let get = |t| conditions::status_of(&status.conditions, t);
    let stalled = get(ConditionType::Stalled)?;
    let compliant = get(ConditionType::Compliant)?;
    Some((
        stalled.status.clone(),
        stalled.reason.clone(),
        compliant.status.clone(),
        compliant.reason.clone(),
    ))
}

fn was_audited(status: &KopfAuditStatus) -> bool {
    conditions::status_of(&status.conditions, ConditionType::Ready)
        .is_some_and(|c| c.reason == Reason::AuditSucceeded.as_str())
}

fn is_pending(status: &KopfAuditStatus) -> bool {
    conditions::status_of(&status.conditions, ConditionType::Ready)
        .is_none_or(|c| c.reason == Reason::AuditPending.as_str())
}

/// Events for what changed between two statuses: at most one headline event (stalled,
/// suspended, compliant or not), plus one per finding raised or resolved between two
/// complete audits. Nothing for a steady state.
pub fn plan_events(old: &KopfAuditStatus, new: &KopfAuditStatus) -> Vec<PlannedEvent> {
    let mut events = Vec::new();
    if is_pending(new) {
        return events;
    }
    if headline(old) != headline(new) || is_pending(old) {
        events.extend(headline_event(new));
    }
    if was_audited(old) && was_audited(new) {
        let key = |f: &Finding| (f.check, f.target.clone());
        let old_keys: BTreeSet<_> = old.findings.iter().map(key).collect();
        let new_keys: BTreeSet<_> = new.findings.iter().map(key).collect();
        for f in new.findings.iter().filter(|f| !old_keys.contains(&key(f))) {
            events.push(PlannedEvent {
                warning: f.severity >= Severity::Warning,
                reason: Reason::FindingRaised,
                note: clip(&format!(
                    "{} ({}) on {}: {}",
                    f.check, f.severity, f.target, f.message
                )),
            });
        }
        for f in old.findings.iter().filter(|f| !new_keys.contains(&key(f))) {
            events.push(PlannedEvent {
                warning: false,
                reason: Reason::FindingResolved,
                note: clip(&format!("{} on {} is resolved.", f.check, f.target)),
            });
        }
    }
    events
}

fn headline_event(new: &KopfAuditStatus) -> Option<PlannedEvent> {
    let get = |t| conditions::status_of(&new.conditions, t);
    let ready = get(ConditionType::Ready)?;
    let stalled = get(ConditionType::Stalled)?;
    if ready.reason == Reason::Suspended.as_str() {
        return Some(PlannedEvent {
            warning: false,
            reason: Reason::Suspended,
            note: clip(&ready.message),
        });
    }
    if stalled.status == Status::True.as_str() {
        let reason = if stalled.reason == Reason::TargetNotFound.as_str() {
            Reason::TargetMissing
        } else {
            Reason::AuditStalled
        };
        return Some(PlannedEvent {
            warning: true,
            reason,
            note: clip(&stalled.message),
        });
    }
    let compliant = get(ConditionType::Compliant)?;
    let summary = new.summary.clone().unwrap_or_default();
    let counts = format!(
        "{} error(s), {} warning(s), {} info(s)",
        summary.errors, summary.warnings, summary.infos
    );
    let event = match compliant.status.as_str() {
        "True" => PlannedEvent {
            warning: false,
            reason: Reason::AuditPassed,
            note: clip(&format!("Compliant: {counts}.")),
        },
        "False" => {
            let ids: BTreeSet<&str> = new
                .findings
                .iter()
                .filter(|f| f.severity >= Severity::Warning)
                .map(|f| f.check.as_str())
                .collect();
            let ids: Vec<&str> = ids.into_iter().collect();
            PlannedEvent {
                warning: true,
                reason: Reason::NonCompliant,
                note: clip(&format!(
                    "Not compliant ({counts}): {}. See status.findings for the fixes.",
                    ids.join(", ")
                )),
            }
        }
        _ => PlannedEvent {
            warning: false,
            reason: Reason::ComplianceUnknown,
            note: clip(&format!("{} ({counts}).", compliant.message)),
        },
    };
    Some(event)
}

/// Event notes are capped at 1 KiB by the API; keep them well under.
fn clip(text: &str) -> String {
    const MAX: usize = 1000;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::AuditTarget;
    use jiff::Timestamp;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Container, PodSpec};

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

    fn audit(stored: Option<&KopfAuditStatus>, ev: Evidence, now: i64) -> StatusUpdate {
        let s = spec();
        let eval = evaluate(&s, &ev, &Policy::default());
        next_status(
            stored,
            &Outcome::Audited(ev),
            Some(&eval),
            Some(1),
            &at(now),
        )
    }

    fn cond(status: &KopfAuditStatus, t: ConditionType) -> &str {
        conditions::status_of(&status.conditions, t)
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
        assert_eq!(first.events[0].reason, Reason::NonCompliant);
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
    fn a_new_finding_raises_one_event_and_keeps_since_of_others() {
        let first = audit(None, evidence(&["-A"], &[]), 10);
        let second = audit(Some(&first.status), evidence(&[], &[]), 40);
        assert!(second.changed);
        let reasons: Vec<Reason> = second.events.iter().map(|e| e.reason).collect();
        assert_eq!(reasons, vec![Reason::FindingRaised], "{:?}", second.events);
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
            &Outcome::Stalled {
                reason: Reason::TargetNotFound,
                message: "gone".into(),
            },
            None,
            Some(1),
            &at(40),
        );
        assert_eq!(cond(&lost.status, ConditionType::Stalled), "True");
        assert_eq!(lost.events.len(), 1);
        assert_eq!(lost.events[0].reason, Reason::TargetMissing);
        assert!(lost.status.findings.is_empty());
        let back = audit(Some(&lost.status), evidence(&["-A"], &[]), 70);
        assert_eq!(back.events.len(), 1, "{:?}", back.events);
        assert_eq!(back.events[0].reason, Reason::NonCompliant);
    }

    #[test]
    fn exemptions_skip_with_a_reason_and_can_be_refused() {
        let key = format!("{SKIP_ANNOTATION_PREFIX}workload.liveness");
        let ev = evidence(&["-A"], &[(key.as_str(), "probed by the mesh")]);
        let eval = evaluate(&spec(), &ev, &Policy::default());
        assert!(
            !eval
                .findings
                .iter()
                .any(|f| f.check == CheckId::WorkloadLiveness)
        );
        assert_eq!(eval.skipped.len(), 1);
        assert!(eval.skipped[0].honoured);
        let refused = evaluate(
            &spec(),
            &ev,
            &Policy {
                refuse_exemptions: true,
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
        let eval = evaluate(&spec(), &no_reason, &Policy::default());
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
        let eval = evaluate(&s, &evidence(&["-A"], &[]), &Policy::default());
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
        let rbac = conditions::status_of(&update.status.conditions, ConditionType::RbacCompliant)
            .expect("rbac");
        assert_eq!(rbac.status, "Unknown");
        assert_eq!(rbac.reason, "NotKopf");
    }

    #[test]
    fn a_log_cut_by_the_byte_cap_is_stated_in_the_target_status() {
        let mut ev = evidence(&["-A"], &[]);
        ev.targets[0].logs = Gathered::Ready(crate::evidence::LogEvidence {
            truncated: true,
            ..Default::default()
        });
        let update = audit(None, ev, 10);
        assert!(update.status.targets[0].logs_truncated);
        let quiet = audit(None, evidence(&["-A"], &[]), 10);
        assert!(!quiet.status.targets[0].logs_truncated);
    }

    #[test]
    fn findings_are_capped_and_counted() {
        let many: Vec<Finding> = (0..(MAX_FINDINGS + 5))
            .map(|i| {
                crate::checks::finding(
                    CheckId::WorkloadCpuLimit,
                    &format!("t{i}"),
                    "m".into(),
                    None,
                )
            })
            .collect();
        let (kept, summary) = cap_findings(&many, &[], &at(0));
        assert_eq!(kept.len(), MAX_FINDINGS);
        assert_eq!(summary.warnings as usize, MAX_FINDINGS + 5);
        assert_eq!(summary.omitted, 5);
    }

    #[test]
    fn suspend_keeps_results_and_says_so() {
        let first = audit(None, evidence(&["-A"], &[]), 10);
        let suspended = next_status(
            Some(&first.status),
            &Outcome::Suspended,
            None,
            Some(2),
            &at(40),
        );
        assert_eq!(suspended.status.findings, first.status.findings);
        let ready = conditions::status_of(&suspended.status.conditions, ConditionType::Ready)
            .expect("ready");
        assert_eq!(ready.reason, "Suspended");
        assert_eq!(suspended.events.len(), 1);
        assert_eq!(suspended.events[0].reason, Reason::Suspended);
    }
}

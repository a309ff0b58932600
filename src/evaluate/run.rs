//! Running the checks: every enabled check on every target, then exemptions, disabled
//! checks, severity overrides, and one finding per root cause.

use crate::api::{Finding, KopfAuditSpec, Recognition, SkippedCheck, TargetStatus};
use crate::catalog::{Area, CheckId, ConditionReason, SKIP_ANNOTATION_PREFIX};
use crate::checks::{self, Cause, Raised, workload};
use crate::model::bounded::{
    MAX_CONDITION_MESSAGE_BYTES, MAX_EVIDENCE_BYTES, MAX_LISTED, MAX_MESSAGE_BYTES, MAX_NAME_BYTES,
    MAX_REASON_BYTES, clean, clean_lines, clean_list, clean_name,
};
use crate::model::evidence::Obstacle;
use crate::model::evidence::{
    Evidence, Gathered, HandledResource, KopfEvidence, TargetEvidence, Unavailable,
};
use crate::model::exemption::{self, Decision, Exemption, ExemptionPolicy, Form};
use crate::model::kopf_run::{Peering, RunOrigin, Scope};
use crate::model::settings::{AuditSettings, CheckSettings};
use std::collections::{BTreeMap, BTreeSet};

/// Operator-wide rules that a KopfAudit cannot change.
#[derive(Clone, Debug, Default)]
pub(crate) struct Policy {
    /// Ignore every exemption: annotations, a KopfAudit's `spec.checks.disable` and
    /// lint's comments (each is reported as refused, and the checks run): a tenant then
    /// cannot switch a check off.
    pub(crate) refuse_exemptions: bool,
    /// Honour only exemptions with an end date (`until YYYY-MM-DD: reason`,
    /// `spec.checks.disabledUntil`); the others are reported as refused.
    pub(crate) require_exemption_expiry: bool,
}

impl Policy {
    /// The rule every form of exemption is decided by.
    pub(crate) fn exemptions(&self) -> ExemptionPolicy {
        ExemptionPolicy {
            refuse: self.refuse_exemptions,
            require_expiry: self.require_exemption_expiry,
        }
    }
}

/// How far one area of one target could be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AreaState {
    /// Its checks ran on complete evidence.
    Evaluated,
    /// Its evidence could not be gathered.
    Unavailable(Unavailable),
    /// The target runs no kopf, so the kopf checks do not apply.
    NotKopf(String),
    /// Its checks ran on part of the evidence (the reason and message say which part
    /// is missing): what they found counts, what they did not find is not resolved.
    Partial(ConditionReason, String),
}

impl AreaState {
    /// Whether the area's findings are those of a complete look (nothing stays stale).
    pub(crate) fn is_complete(&self) -> bool {
        !matches!(self, AreaState::Unavailable(_) | AreaState::Partial(..))
    }
}

/// The result of running the checks, before it is merged into status.
#[derive(Clone, Debug, Default)]
pub(crate) struct Evaluation {
    /// Every finding after exemptions, disabling and severity overrides, most severe first.
    pub(crate) findings: Vec<Finding>,
    /// Exemptions seen, honoured or refused.
    pub(crate) skipped: Vec<SkippedCheck>,
    /// What was learned about each target.
    pub(crate) targets: Vec<TargetStatus>,
    /// How far each area of each target (by Deployment name) was evaluated.
    pub(crate) areas: BTreeMap<(String, Area), AreaState>,
    /// Checks whose own evidence could not be read this time (a transient failure):
    /// their stored findings are kept, stale, rather than resolved.
    pub(crate) unread: BTreeSet<(String, CheckId)>,
    /// What an evaluated area's condition adds to its message: what it left out on
    /// purpose (a target's Secrets, which are never sampled), per area.
    pub(crate) notes: BTreeMap<Area, BTreeSet<String>>,
    /// Checks with evidence of their own that exists only in a cluster, by target, with
    /// why: from files (`kopf-audit lint`) they are undecided.
    pub(crate) not_in_files: Vec<(String, CheckId, String)>,
    /// The checks that ran for a target (by its cleaned name) and found nothing: what a
    /// report lists as passes. Only checks of an area evaluated in full count (not one
    /// read in part, unavailable or not applying, nor a target without kopf, on which
    /// only some workload checks run), and not the lint-only source checks; a check
    /// exempted, disabled, out of reach or whose own evidence was not read is no pass.
    pub(crate) passed: BTreeSet<(String, CheckId)>,
}

impl Evaluation {
    /// The state of an area across targets: the first obstacle if any target had one,
    /// else `NotKopf` when no target runs kopf, else evaluated.
    pub(crate) fn area(&self, area: Area) -> AreaState {
        let states: Vec<&AreaState> = self
            .areas
            .iter()
            .filter(|((_, a), _)| *a == area)
            .map(|(_, s)| s)
            .collect();
        if let Some(u) = states
            .iter()
            .find(|s| matches!(s, AreaState::Unavailable(_)))
            .or_else(|| states.iter().find(|s| matches!(s, AreaState::Partial(..))))
        {
            return (*u).clone();
        }
        match states.first() {
            Some(first @ AreaState::NotKopf(_))
                if states.iter().all(|s| matches!(s, AreaState::NotKopf(_))) =>
            {
                (*first).clone()
            }
            _ => AreaState::Evaluated,
        }
    }

    /// Whether an area of a target was looked at completely.
    pub(crate) fn is_complete(&self, target: &str, check: CheckId) -> bool {
        self.areas
            .get(&(target.to_string(), check.area()))
            .is_none_or(AreaState::is_complete)
            && !self.unread.contains(&(target.to_string(), check))
    }
}

/// The areas that need kopf; a target without kopf leaves them `Unknown`/`NotKopf`.
const KOPF_AREAS: [Area; 4] = [Area::Rbac, Area::Events, Area::Persistence, Area::Runtime];

/// Runs every enabled check on every target, with the settings the audit read from
/// `spec` when it started.
pub(crate) fn evaluate(
    spec: &KopfAuditSpec,
    settings: &AuditSettings,
    evidence: &Evidence,
    policy: &Policy,
) -> Evaluation {
    let settings = settings.checks(evidence.now);
    let today = exemption::today(evidence.now);
    let disables = decided_disables(spec, policy, today);
    let mut eval = Evaluation::default();
    for target in &evidence.targets {
        evaluate_target(spec, target, &settings, policy, &mut eval);
        eval.skipped.extend(unhonoured_disables(&disables, target));
    }
    let honoured: Vec<CheckId> = disables
        .iter()
        .filter(|(_, d)| d.honoured())
        .map(|(check, _)| *check)
        .collect();
    apply_spec(spec, &honoured, &mut eval.findings);
    eval.passed.retain(|(_, check)| !honoured.contains(check));
    eval
}

/// Each check of `spec.checks.disable`, once, with whether it holds today: refused by
/// the policy, lapsed after its `spec.checks.disabledUntil` date, or honoured.
fn decided_disables(
    spec: &KopfAuditSpec,
    policy: &Policy,
    today: jiff::civil::Date,
) -> Vec<(CheckId, Decision)> {
    spec.checks
        .disable
        .iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|check| {
            let until = spec.checks.disabled_until.get(check.as_str());
            let exemption = Exemption::disabled(until.map(String::as_str));
            (*check, exemption.decide(policy.exemptions(), today))
        })
        .collect()
}

/// The disabled checks that do not hold (refused or lapsed), reported for `target` as
/// not honoured; their checks run as usual.
fn unhonoured_disables(
    disables: &[(CheckId, Decision)],
    target: &TargetEvidence,
) -> Vec<SkippedCheck> {
    disables
        .iter()
        .filter(|(_, d)| !d.honoured())
        .map(|(check, d)| d.skipped(*check, target.name()))
        .collect()
}

fn evaluate_target(
    spec: &KopfAuditSpec,
    target: &TargetEvidence,
    settings: &CheckSettings,
    policy: &Policy,
    eval: &mut Evaluation,
) {
    let name = target.name().to_string();
    let mut raised = Vec::new();
    // The areas whose every check ran on complete evidence.
    let mut complete: Vec<Area> = Vec::new();
    eval.areas
        .insert((name.clone(), Area::Workload), AreaState::Evaluated);
    match &target.kopf {
        Some(kopf) => {
            eval.targets.push(target_status(target, Some(kopf)));
            raised.extend(checks::run_area(Area::Workload, target, kopf, settings));
            complete.push(Area::Workload);
            for area in KOPF_AREAS {
                let state = match evidence_for(area, kopf) {
                    Ok(()) => {
                        raised.extend(checks::run_area(area, target, kopf, settings));
                        if let Some(note) = secrets_beside(area, kopf) {
                            eval.notes.entry(area).or_default().insert(note);
                        }
                        let state = partial(area, kopf);
                        if state == AreaState::Evaluated {
                            complete.push(area);
                        }
                        state
                    }
                    Err(why) => {
                        if decided_in_part_from_files(area, kopf, &why) {
                            raised.extend(checks::run_area(area, target, kopf, settings));
                        }
                        AreaState::Unavailable(why)
                    }
                };
                eval.areas.insert((name.clone(), area), state);
            }
        }
        None => {
            eval.targets.push(target_status(target, None));
            let wanted = spec.target.container.as_deref();
            match &target.undetermined {
                // Not known to run kopf or not: the kopf areas wait, with the reason.
                Some(why) => {
                    for area in KOPF_AREAS {
                        eval.areas
                            .insert((name.clone(), area), AreaState::Unavailable(why.clone()));
                    }
                }
                None => {
                    let why = format!(
                        "Deployment {name} runs no kopf operator; kopf-specific checks do not apply."
                    );
                    for area in KOPF_AREAS {
                        eval.areas
                            .insert((name.clone(), area), AreaState::NotKopf(why.clone()));
                    }
                    raised.push(Raised::alone(workload::not_kopf::live_on(target, wanted)));
                }
            }
            raised.extend(
                workload::any_workload(target, wanted)
                    .into_iter()
                    .map(Raised::alone),
            );
        }
    }
    if let Some(kopf) = &target.kopf {
        out_of_reach(target, kopf, eval);
    }
    let exemptions = exemptions(target, policy, exemption::today(settings.now));
    let honoured: BTreeSet<CheckId> = exemptions
        .iter()
        .filter(|s| s.honoured)
        .map(|s| s.check)
        .collect();
    let passed = passed(target, &complete, &raised, &honoured, eval);
    eval.passed.extend(passed);
    raised.retain(|r| !honoured.contains(&r.finding.check));
    eval.skipped.extend(exemptions);
    eval.findings.extend(one_per_cause(raised));
}

/// The checks of the `complete` areas that raised nothing for `target` (before one
/// finding per cause drops any: a check whose finding another explains found something),
/// less those exempted (`honoured`), out of reach, or whose own evidence was not read.
fn passed(
    target: &TargetEvidence,
    complete: &[Area],
    raised: &[Raised],
    honoured: &BTreeSet<CheckId>,
    eval: &Evaluation,
) -> Vec<(String, CheckId)> {
    let name = target.name();
    let found: BTreeSet<CheckId> = raised.iter().map(|r| r.finding.check).collect();
    let shown = clean_name(name);
    let out_of_reach = |check: CheckId| {
        eval.unread.contains(&(name.to_string(), check))
            || eval
                .not_in_files
                .iter()
                .any(|(t, c, _)| t == name && *c == check)
            || eval
                .skipped
                .iter()
                .any(|s| s.honoured && s.check == check && s.target == shown)
    };
    CheckId::ALL
        .iter()
        .copied()
        .filter(|c| complete.contains(&c.area()))
        .filter(|c| !found.contains(c) && !honoured.contains(c) && !out_of_reach(*c))
        .map(|c| (shown.clone(), c))
        .collect()
}

/// The checks that read evidence of their own beyond their area's: peering objects,
/// webhook configurations and the other kopf operators. Out of the auditor's reach (forbidden, or cluster-scoped
/// without the cross-namespace allowance), the check is listed as skipped with the
/// reason; after a transient failure its stored findings are kept.
fn out_of_reach(target: &TargetEvidence, kopf: &KopfEvidence, eval: &mut Evaluation) {
    let optional = [
        (CheckId::RuntimeForeignPeer, kopf.peering.as_ref().err()),
        (
            CheckId::RuntimeOperatorConflict,
            kopf.operators.as_ref().err(),
        ),
        (
            CheckId::WorkloadWebhookBlastRadius,
            kopf.webhooks.as_ref().err(),
        ),
        (
            CheckId::RuntimeWebhookCertificate,
            kopf.webhooks.as_ref().err(),
        ),
    ];
    for (check, why) in optional {
        let Some(why) = why else { continue };
        match why.why {
            Obstacle::Failed | Obstacle::NoRunningPod | Obstacle::Undecided => {
                eval.unread.insert((target.name().to_string(), check));
            }
            // From files (`kopf-audit lint`) the check is undecided, not exempted.
            Obstacle::NotInFiles => {
                eval.not_in_files
                    .push((target.name().to_string(), check, why.message.clone()))
            }
            Obstacle::Forbidden | Obstacle::OutsideNamespace => eval
                .skipped
                .push(out_of_reach_skipped(check, target, &why.message)),
        }
    }
}

/// Whether files decide part of an area whose evidence is otherwise only in a cluster:
/// the persistence area's CRD schemas (`persistence.status-schema`) come with the
/// handled resources. The area stays undecided for the checks that read objects.
fn decided_in_part_from_files(area: Area, kopf: &KopfEvidence, why: &Unavailable) -> bool {
    area == Area::Persistence && why.why == Obstacle::NotInFiles && kopf.handled.is_ok()
}

/// Whether the evidence an area needs was gathered, or why not.
fn evidence_for(area: Area, kopf: &KopfEvidence) -> Result<(), Unavailable> {
    fn need<T>(gathered: &Gathered<T>) -> Result<(), Unavailable> {
        gathered.as_ref().map(|_| ()).map_err(Clone::clone)
    }
    match area {
        Area::Workload | Area::Source => Ok(()),
        Area::Rbac => need(&kopf.rbac),
        // The Events' obstacle first: it names the reach a platform team can grant.
        Area::Events => need(&kopf.events).and(need(&kopf.logs)),
        Area::Persistence => need(&kopf.handled).and(need(&kopf.objects)),
        Area::Runtime => need(&kopf.logs),
    }
}

/// How far an area whose evidence was gathered could be evaluated: in full, or on part
/// of it (no handled resource known, the log or the Events read in part).
fn partial(area: Area, kopf: &KopfEvidence) -> AreaState {
    let parts: Vec<(ConditionReason, String)> = [
        nothing_handled(area, kopf).map(|why| (ConditionReason::NothingHandled, why)),
        only_secrets(area, kopf).map(|why| (ConditionReason::SecretsNotSampled, why)),
        partial_events(area, kopf),
        partial_logs(area, kopf).map(|why| (ConditionReason::LogsPartial, why)),
        partial_objects(area, kopf).map(|why| (ConditionReason::ObjectsPartial, why)),
    ]
    .into_iter()
    .flatten()
    .collect();
    match parts.first() {
        None => AreaState::Evaluated,
        Some((reason, _)) => {
            let why: Vec<&str> = parts.iter().map(|(_, why)| why.as_str()).collect();
            AreaState::Partial(*reason, why.join(" "))
        }
    }
}

/// Why the Events area saw only part of the Events, if it did: kopf may file the Events
/// of cluster-scoped objects in a namespace that was not read (`default`).
fn partial_events(area: Area, kopf: &KopfEvidence) -> Option<(ConditionReason, String)> {
    if area != Area::Events {
        return None;
    }
    let (namespace, why) = kopf.events.as_ref().ok()?.unread.iter().next()?;
    Some((
        why.reason(),
        format!(
            "The Events of the cluster-scoped objects it handles may be in namespace {namespace}, which was not read: kopf files them there when its login names no namespace (the kubernetes client's login; kopf 1.45 `_cogs/clients/events.py`), and none were found in the operator's own namespace. {} Findings seen are reported; none is resolved, and failures of cluster-scoped objects are not called silent.",
            why.message
        ),
    ))
}

/// Why the events or persistence area has no objects to look at: no handled resource is
/// known. An area with nothing to read is not a compliant one.
fn nothing_handled(area: Area, kopf: &KopfEvidence) -> Option<String> {
    if !matches!(area, Area::Events | Area::Persistence) {
        return None;
    }
    kopf.handled.as_ref().ok().filter(|h| h.is_empty())?;
    Some("No resource the operator handles is known: spec.handledResources is empty, and neither its log nor its RBAC rules name a custom resource it serves (wildcard rules, or rules on core kinds only, name none). The Events and objects of handled resources were not read: list them in spec.handledResources to have them audited.".to_string())
}

/// What the persistence area still checks of Secrets, which it never samples.
const SECRETS_STILL_CHECKED: &str = "the auditor never reads one, since a Secret carries credentials and data, and the auditor's RBAC (the chart's) grants no Secrets read, on purpose; there is nothing to grant. What kopf leaves on Secrets (finalizers, annotations, status) is not looked at; what is still checked is the operator's log (persistence.patch-inconsistencies), the Events kopf posts about Secrets, and its RBAC on them.";

/// Why the persistence area sampled no object at all: the operator handles core Secrets
/// only, which are never read. Not sampling is not health.
fn only_secrets(area: Area, kopf: &KopfEvidence) -> Option<String> {
    if area != Area::Persistence {
        return None;
    }
    let handled = kopf.handled.as_ref().ok()?;
    (!handled.is_empty() && handled.iter().all(HandledResource::is_secrets)).then(|| {
        format!(
            "The operator handles core Secrets only, so no handled object was sampled; {SECRETS_STILL_CHECKED} The area is not declared compliant on what it did not read."
        )
    })
}

/// What the persistence area says of Secrets handled beside other resources: the others
/// were sampled, the Secrets were not.
fn secrets_beside(area: Area, kopf: &KopfEvidence) -> Option<String> {
    if area != Area::Persistence {
        return None;
    }
    let handled = kopf.handled.as_ref().ok()?;
    let secrets = handled.iter().any(HandledResource::is_secrets);
    (secrets && handled.iter().any(|h| !h.is_secrets())).then(|| {
        format!(
            "Core Secrets, which the operator also handles, were not sampled; {SECRETS_STILL_CHECKED}"
        )
    })
}

/// Why an area that reads the log saw only part of it, if it did: records of the
/// window were read but not kept.
fn partial_logs(area: Area, kopf: &KopfEvidence) -> Option<String> {
    if !matches!(area, Area::Events | Area::Runtime) {
        return None;
    }
    let dropped = kopf.logs.as_ref().map_or(0, |l| l.dropped);
    (dropped > 0).then(|| {
        format!(
            "{dropped} distinct log record(s) of the window were read but not kept (the auditor keeps a bounded digest per container): findings seen are reported, none is resolved until a window is read whole. Shorten spec.logs.window, or fix the failures that fill the log."
        )
    })
}

/// Why an area that reads the handled objects saw only part of them, if it did: some
/// were over the parse budget of one object.
fn partial_objects(area: Area, kopf: &KopfEvidence) -> Option<String> {
    if !matches!(area, Area::Persistence | Area::Runtime) {
        return None;
    }
    let over = &kopf.objects.as_ref().ok()?.over_budget;
    let first = over.first()?;
    let more = match over.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    Some(format!(
        "Handled object {}{more} was listed but not read: its JSON's shape (many small maps or lists, or nesting deeper than {}) would cost more memory than the auditor spends on one object ({} MiB). Nothing is concluded from it: findings seen are reported, none is resolved. Keep large, many-keyed data out of the objects (in a ConfigMap, say).",
        clean_name(first),
        crate::model::shape::MAX_DEPTH,
        crate::model::shape::OBJECT_BUDGET_BYTES >> 20,
    ))
}

/// One finding per root cause: when several checks see one cause (a denial in the log
/// and the missing RBAC rule behind it), the RBAC finding, which names the rule to add,
/// is kept, and the others are dropped. Findings without a cause are all kept.
fn one_per_cause(mut raised: Vec<Raised>) -> Vec<Finding> {
    raised.sort_by_key(|r| r.finding.check.area() != Area::Rbac);
    let mut owned: BTreeSet<Cause> = BTreeSet::new();
    let mut out = Vec::with_capacity(raised.len());
    for r in raised {
        let explained = !r.causes.is_empty() && r.causes.iter().all(|c| owned.contains(c));
        if explained {
            continue;
        }
        owned.extend(r.causes);
        out.push(r.finding);
    }
    out
}

/// A check out of the auditor's reach, as status lists it among the skipped: what the
/// check would need [`clean`]ed, the target's name bounded. (Exemptions are listed by
/// [`Decision::skipped`].)
fn out_of_reach_skipped(check: CheckId, target: &TargetEvidence, why: &str) -> SkippedCheck {
    SkippedCheck {
        check,
        target: clean_name(target.name()),
        reason: clean(&format!("not run: {why}"), MAX_REASON_BYTES),
        honoured: true,
    }
}

/// What status shows of a target. Its names come from the Deployment and are bounded;
/// its namespaces and peering come from the container's args, which a tenant writes:
/// they are [`clean`]ed, and at most [`MAX_LISTED`] namespaces are shown.
fn target_status(target: &TargetEvidence, kopf: Option<&KopfEvidence>) -> TargetStatus {
    let name = clean_name;
    let service_account = Some(name(&target.service_account().name));
    let Some(kopf) = kopf else {
        return TargetStatus {
            name: name(target.name()),
            kopf: false,
            service_account,
            ..Default::default()
        };
    };
    let run = &kopf.run;
    let namespaces = match &run.scope {
        Scope::Namespaced(ns) => clean_list(ns, MAX_LISTED, MAX_NAME_BYTES),
        _ => Vec::new(),
    };
    let (recognised_by, recognition) = recognition(run, target.namespace());
    TargetStatus {
        name: name(target.name()),
        kopf: true,
        container: Some(name(&run.container)),
        recognised_by: Some(recognised_by),
        recognition: Some(clean(&recognition, MAX_CONDITION_MESSAGE_BYTES)),
        mode: Some(run.scope.mode_name().into()),
        namespaces,
        peering: Some(clean(&run.peering.display(), MAX_NAME_BYTES)),
        log_format: Some(run.log_format.as_str().into()),
        service_account,
        handled_resources: handled_status(kopf),
        logs_truncated: kopf.logs.as_ref().is_ok_and(|l| l.truncated),
        events_truncated: kopf.events.as_ref().is_ok_and(|e| e.truncated),
    }
}

/// The handled resources as status lists them, at most [`MAX_LISTED`].
fn handled_status(kopf: &KopfEvidence) -> Vec<String> {
    let Ok(handled) = &kopf.handled else {
        return Vec::new();
    };
    let lines: Vec<String> = handled
        .iter()
        .map(|h| {
            let group = if h.group.is_empty() { "core" } else { &h.group };
            format!("{}.{group}/{} ({})", h.plural, h.version, h.source.label())
        })
        .collect();
    clean_list(&lines, MAX_LISTED, MAX_NAME_BYTES)
}

/// How kopf was recognised, and where the run's facts come from; `own` is the
/// operator's namespace.
fn recognition(run: &crate::model::kopf_run::KopfRun, own: &str) -> (Recognition, String) {
    match &run.origin {
        RunOrigin::CommandLine => (
            Recognition::CommandLine,
            format!(
                "`kopf run` is in the command line of container {}: scope, peering, liveness and log format are read there and from KOPF_RUN_* variables.",
                run.container
            ),
        ),
        RunOrigin::Files(start) => (
            Recognition::Files,
            format!(
                "Container {} starts kopf from {}{}.",
                run.container,
                start.how,
                if start.flags_known {
                    ""
                } else {
                    "; not all of its arguments are known (not literals, or not in the repository), so what they set is not known"
                }
            ),
        ),
        RunOrigin::Log(seen) => {
            let elsewhere: Vec<&str> = seen
                .namespaces
                .iter()
                .map(String::as_str)
                .filter(|ns| *ns != own)
                .collect();
            let scope = match &run.scope {
                Scope::Unknown if elsewhere.is_empty() => {
                    "Namespaces served: not known, so checked in its own namespace only."
                        .to_string()
                }
                Scope::Unknown => format!(
                    "Namespaces served: not known from its flags, but its log names objects in {}: kopf serves at least these, so they are checked with its own namespace (it may serve more).",
                    elsewhere.join(", ")
                ),
                Scope::Implicit => {
                    "Namespaces served: all, by kopf's warning that no scope was given.".to_string()
                }
                _ => "Namespaces served: from KOPF_RUN_* variables.".to_string(),
            };
            let peering = if seen.peering && run.peering == Peering::Auto {
                "Peering: on, by kopf's peering lines in its log (their peering name is not known). Liveness: not known unless KOPF_RUN_* variables set it"
            } else {
                "Peering and liveness: not known unless KOPF_RUN_* variables set them"
            };
            (
                Recognition::Log,
                format!(
                    "Container {} does not show kopf on its command line; its log in pod {} does ({} of kopf's own lines, e.g. \"{}\"). Log format: {}, from the log. {scope} {peering}; write them as `kopf run` flags to have them audited.",
                    run.container,
                    seen.pod,
                    seen.kopf_lines,
                    seen.example,
                    run.log_format.as_str(),
                ),
            )
        }
    }
}

/// Reads the exemption annotations of a target, decided on `today`. Their values are
/// the tenant's text, up to 256 KiB: [`Decision::skipped`] cleans what status shows.
fn exemptions(
    target: &TargetEvidence,
    policy: &Policy,
    today: jiff::civil::Date,
) -> Vec<SkippedCheck> {
    let annotations = target.deployment.metadata.annotations.iter().flatten();
    annotations
        .filter_map(|(key, value)| {
            let check = CheckId::parse(key.strip_prefix(SKIP_ANNOTATION_PREFIX)?)?;
            let decision =
                Exemption::written(Form::Annotation, value).decide(policy.exemptions(), today);
            Some(decision.skipped(check, target.name()))
        })
        .collect()
}

/// Drops the findings of the `disabled` checks, applies severity overrides, cleans,
/// and sorts most severe first.
fn apply_spec(spec: &KopfAuditSpec, disabled: &[CheckId], findings: &mut Vec<Finding>) {
    findings.retain(|f| !disabled.contains(&f.check));
    for f in findings.iter_mut() {
        if let Some(sev) = spec.checks.severity.get(f.check.as_str()) {
            f.severity = *sev;
        }
        clean_finding(f);
    }
    Finding::sort(findings);
    findings.dedup_by(|a, b| a.check == b.check && a.target == b.target && a.message == b.message);
}

/// Masks secrets in everything a finding shows, whatever check wrote it, and bounds it
/// ([`clean`]; its target, a Deployment's name, is bounded): whoever can read the
/// KopfAudit reads its status, PolicyReport and Events. Quotes from logs are redacted where they are cut; this pass also covers
/// object, finalizer and handler names in messages, and lists of them.
pub(crate) fn clean_finding(finding: &mut Finding) {
    finding.target = clean_name(&finding.target);
    finding.message = clean_lines(&finding.message, MAX_MESSAGE_BYTES);
    finding.evidence = finding
        .evidence
        .as_deref()
        .map(|e| clean_lines(e, MAX_EVIDENCE_BYTES));
    finding.fix = finding
        .fix
        .as_deref()
        .map(|f| clean_lines(f, MAX_EVIDENCE_BYTES));
}

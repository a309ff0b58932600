//! `kopf-audit lint`'s evaluation, pure: the live checks run on the evidence the files
//! gatherer built (one engine, two sources), the `source.*` checks on the Python facts,
//! and every finding gets the file and line it points at. Exemptions: the
//! `skip.kopfaudit.dev/<check>` annotation on a Deployment, as live, and in Python a
//! comment `# kopf-audit: ignore[<check>] <reason>` on the finding's line or the line
//! above; either may end on a date (`until YYYY-MM-DD: <reason>`, see
//! [`crate::model::exemption`]).

use super::run::{self, AreaState, Policy};
use crate::api::{Finding, KopfAuditSpec, SkippedCheck, TargetStatus};
use crate::catalog::{Area, CheckId};
use crate::checks::registry;
use crate::gather::files::Linted;
use crate::gather::files::manifests::Manifests;
use crate::model::evidence::TargetEvidence;
use crate::model::exemption::{self, Exemption, Form};
use crate::model::rbac::{BindingKind, RoleKind, rule_of};
use crate::model::settings::AuditSettings;
use crate::model::source::{Location, Unread};
use std::collections::BTreeMap;

/// A finding of lint, with where it points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LintFinding {
    /// The finding, as the live auditor would write it.
    pub(crate) finding: Finding,
    /// The file and line; `None` when no linted file holds the cause.
    pub(crate) location: Option<Location>,
    /// Lines whose insertion before the location's line fixes it.
    pub(crate) insert_before: Option<String>,
}

/// An area lint could not decide, for which Deployments, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Undecided {
    /// The area.
    pub(crate) area: Area,
    /// The Deployments.
    pub(crate) targets: Vec<String>,
    /// Why.
    pub(crate) why: String,
}

/// What lint found.
#[derive(Clone, Debug, Default)]
pub(crate) struct LintReport {
    /// The findings, sorted by file and line.
    pub(crate) findings: Vec<LintFinding>,
    /// Exempted (or refused) checks.
    pub(crate) skipped: Vec<SkippedCheck>,
    /// How each Deployment runs kopf.
    pub(crate) targets: Vec<TargetStatus>,
    /// The areas lint could not decide.
    pub(crate) undecided: Vec<Undecided>,
    /// What could not be read but does not fail the run (a handled resource whose CRD
    /// is not in the manifests, Deployments that run no kopf).
    pub(crate) notes: Vec<String>,
    /// The inputs that could not be read: the run is no pass while one is left.
    pub(crate) unread: Vec<Unread>,
}

impl LintReport {
    /// The most severe finding, for `--fail-on`.
    pub(crate) fn worst(&self) -> Option<crate::catalog::Severity> {
        self.findings.iter().map(|f| f.finding.severity).max()
    }
}

/// Evaluates what the files gave.
pub(crate) fn lint(linted: &Linted, policy: &Policy) -> LintReport {
    let spec = KopfAuditSpec::for_deployment("lint");
    let settings = AuditSettings::from_spec(&spec);
    let eval = run::evaluate(&spec, &settings, &linted.evidence, policy);
    let mut report = LintReport {
        targets: eval.targets.clone(),
        notes: linted.notes.clone(),
        unread: linted.unread.clone(),
        ..LintReport::default()
    };
    let mut undecided: BTreeMap<(Area, String), Vec<String>> = BTreeMap::new();
    for target in &linted.evidence.targets {
        for area in Area::ALL {
            let why = match eval.areas.get(&(target.name().to_string(), area)) {
                Some(AreaState::Unavailable(u)) => u.message.clone(),
                Some(AreaState::Partial(_, why)) => why.clone(),
                _ => continue,
            };
            undecided
                .entry((area, why))
                .or_default()
                .push(target.name().to_string());
        }
    }
    // The checks that read cluster objects of their own (peering objects, webhook
    // configurations) are undecided too, not exempted.
    for (target, check, why) in eval.not_in_files {
        undecided
            .entry((check.area(), format!("{check}: {why}")))
            .or_default()
            .push(target);
    }
    report.skipped = eval.skipped;
    report.undecided = undecided
        .into_iter()
        .map(|((area, why), targets)| Undecided { area, targets, why })
        .collect();
    // What was reported already, for Deployments that share a ServiceAccount (and so its
    // RBAC findings): a set, since a repository of thousands of Deployments would make
    // a scan of the list per finding quadratic.
    let mut reported: std::collections::HashSet<(Option<Location>, CheckId, String)> =
        std::collections::HashSet::new();
    for finding in &eval.findings {
        let mut finding = finding.clone();
        if finding.check == CheckId::WorkloadNotKopf {
            // Live, the log is one more place kopf is looked for; from files, these are.
            finding.message = format!(
                "Deployment {}: no container runs kopf, neither on its command line (`kopf run`, `python -m kopf run`), nor by the CMD/ENTRYPOINT of a linted Dockerfile, nor through a `kopf.run()` call in the linted Python; kopf-specific checks are skipped. Lint the directory that holds the operator's Dockerfile and Python too.",
                finding.target
            );
        }
        let finding = &finding;
        let location = linted
            .evidence
            .targets
            .iter()
            .find(|t| t.name() == finding.target)
            .and_then(|t| location_of(finding, t, &linted.manifests));
        // Deployments that share a ServiceAccount share its RBAC findings: once.
        let first = reported.insert((location.clone(), finding.check, finding.message.clone()));
        if first {
            report.findings.push(LintFinding {
                finding: finding.clone(),
                location,
                insert_before: None,
            });
        }
    }
    let ignores = ignores(&linted.python);
    let today = exemption::today(linted.evidence.now);
    for found in registry::source_findings(&linted.source) {
        let exemption = ignored(&ignores, &found.location, found.finding.check);
        let mut honoured = false;
        if let Some(text) = exemption {
            let decision =
                Exemption::written(Form::Comment, &text).decide(policy.exemptions(), today);
            honoured = decision.honoured();
            report
                .skipped
                .push(decision.skipped(found.finding.check, &found.finding.target));
        }
        if !honoured {
            report.findings.push(LintFinding {
                finding: found.finding,
                location: Some(found.location),
                insert_before: found.insert_before,
            });
        }
    }
    report.findings.sort_by(|a, b| {
        a.location
            .cmp(&b.location)
            .then(b.finding.severity.cmp(&a.finding.severity))
            .then(a.finding.check.cmp(&b.finding.check))
    });
    report
}

/// Where a finding about a Deployment points: at the field the fix goes in when the
/// file was read as written (`resources.limits.memory`, `strategy`, the bound role's
/// `rules`), else at the object. RBAC findings point at the rules of the role that
/// binds the ServiceAccount (or the binding, or the ServiceAccount), a CRD's schema at
/// the CRD, the others at the Deployment.
fn location_of(finding: &Finding, target: &TargetEvidence, m: &Manifests) -> Option<Location> {
    let check = finding.check;
    let namespace = target.deployment.metadata.namespace.as_deref();
    let deployment = m.field_location(
        "Deployment",
        namespace,
        target.name(),
        &deployment_field(check, target),
    );
    if check == CheckId::PersistenceStatusSchema
        && let Some(crd) = crd_named_by(finding, m)
    {
        return Some(crd);
    }
    if check.area() != Area::Rbac {
        return deployment;
    }
    if check == CheckId::RbacOverPrivileged
        && let Some(grant) = over_grant_location(finding, target, m)
    {
        return Some(grant);
    }
    rbac_location(target, m).or(deployment)
}

/// Where an `rbac.over-privileged` finding points: the `roleRef` of a binding to
/// cluster-admin, else the first item of the bound role's own `rules` that grants too
/// much (the line to remove or narrow). The binding is the one the finding's evidence
/// names (`ClusterRoleBinding NAME -> ClusterRole NAME`). `None` when the files hold
/// neither, as for rules an aggregated ClusterRole lends from elsewhere.
fn over_grant_location(
    finding: &Finding,
    target: &TargetEvidence,
    m: &Manifests,
) -> Option<Location> {
    let evidence = finding.evidence.as_deref()?;
    let binding = target
        .kopf
        .as_ref()?
        .rbac
        .as_ref()
        .ok()?
        .bindings
        .iter()
        .find(|b| evidence == format!("{} -> {}", b.describe(), b.describe_role()))?;
    let (binding_kind, binding_namespace) = match &binding.kind {
        BindingKind::ClusterRoleBinding => ("ClusterRoleBinding", None),
        BindingKind::RoleBinding(ns) => ("RoleBinding", Some(ns.as_str())),
    };
    if binding.is_cluster_admin() {
        return m.field_location(binding_kind, binding_namespace, &binding.name, "roleRef");
    }
    let (role_kind, role_namespace, rules) = match binding.role_kind? {
        RoleKind::ClusterRole => {
            let role = m
                .cluster_roles
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(binding.role_name.as_str()))?;
            ("ClusterRole", None, role.rules.as_deref())
        }
        RoleKind::Role => {
            let role = m.roles.iter().find(|r| {
                r.metadata.name.as_deref() == Some(binding.role_name.as_str())
                    && r.metadata.namespace.as_deref() == binding_namespace
            })?;
            ("Role", binding_namespace, role.rules.as_deref())
        }
    };
    let index = rules?
        .iter()
        .position(|r| rule_of(r).is_some_and(|r| r.over_grants(&binding.kind)))?;
    m.field_location(
        role_kind,
        role_namespace,
        &binding.role_name,
        &format!("rules[{index}]"),
    )
}

/// The field of a Deployment a finding of `check` is about, as
/// [`Manifests::field_location`] takes it: the kopf container's own fields for the
/// checks of its resources, probe and arguments; the Deployment's for the others.
fn deployment_field(check: CheckId, target: &TargetEvidence) -> String {
    let containers = target
        .deployment
        .spec
        .template
        .spec
        .as_ref()
        .map(|p| p.containers.as_slice())
        .unwrap_or_default();
    let kopf = target.kopf.as_ref().map(|k| k.run.container.as_str());
    let index = containers
        .iter()
        .position(|c| Some(c.name.as_str()) == kopf)
        .unwrap_or(0);
    let container = format!("spec.template.spec.containers[{index}]");
    let args = match containers.get(index) {
        Some(c) if c.args.is_none() && c.command.is_some() => "command",
        _ => "args",
    };
    match check {
        CheckId::WorkloadMemoryRequest => format!("{container}.resources.requests.memory"),
        CheckId::WorkloadMemoryLimit => format!("{container}.resources.limits.memory"),
        CheckId::WorkloadCpuLimit => format!("{container}.resources.limits.cpu"),
        CheckId::WorkloadCpuRequest => format!("{container}.resources.requests.cpu"),
        CheckId::WorkloadLiveness => format!("{container}.livenessProbe"),
        CheckId::WorkloadNoScopeFlag | CheckId::WorkloadDebugLogging => {
            format!("{container}.{args}")
        }
        CheckId::WorkloadDefaultServiceAccount => "spec.template.spec.serviceAccountName".into(),
        CheckId::WorkloadStandaloneReplicas => "spec.replicas".into(),
        CheckId::WorkloadRolloutOverlap => "spec.strategy.type".into(),
        _ => String::new(),
    }
}

/// Where an RBAC finding of a target points: the `rules` of the first role bound to
/// its ServiceAccount that the files define, else that binding, else the
/// ServiceAccount.
fn rbac_location(target: &TargetEvidence, m: &Manifests) -> Option<Location> {
    let sa = target.service_account();
    let bindings = target
        .kopf
        .as_ref()
        .and_then(|k| k.rbac.as_ref().ok())
        .map(|r| r.bindings.as_slice())
        .unwrap_or_default();
    let role = bindings.iter().find_map(|b| match (&b.role_kind, &b.kind) {
        (Some(RoleKind::ClusterRole), _) => {
            m.field_location("ClusterRole", None, &b.role_name, "rules")
        }
        (Some(RoleKind::Role), BindingKind::RoleBinding(ns)) => {
            m.field_location("Role", Some(ns), &b.role_name, "rules")
        }
        _ => None,
    });
    let binding = || {
        bindings.first().and_then(|b| match &b.kind {
            BindingKind::ClusterRoleBinding => m.location("ClusterRoleBinding", None, &b.name),
            BindingKind::RoleBinding(ns) => m.location("RoleBinding", Some(ns), &b.name),
        })
    };
    role.or_else(|| binding().cloned()).or_else(|| {
        m.location("ServiceAccount", Some(&sa.namespace), &sa.name)
            .cloned()
    })
}

/// Where the CRD a `persistence.status-schema` finding is about is defined: its
/// evidence starts with `CRD <name>:`.
fn crd_named_by(finding: &Finding, m: &Manifests) -> Option<Location> {
    let evidence = finding.evidence.as_deref()?;
    m.crds
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .find(|name| evidence.starts_with(&format!("CRD {name}:")))
        .and_then(|name| m.location("CustomResourceDefinition", None, name))
        .cloned()
}

/// The marker of a Python exemption comment.
const IGNORE_MARKER: &str = "# kopf-audit: ignore[";

/// `(file, line)` → the check IDs a comment there exempts and its reason (empty when
/// none is given).
type Ignores = BTreeMap<(String, u32), Vec<(String, String)>>;

/// The exemption comments of the Python files.
fn ignores(python: &[(String, String)]) -> Ignores {
    let mut out = Ignores::new();
    for (file, text) in python {
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find(IGNORE_MARKER) else {
                continue;
            };
            let rest = &line[at + IGNORE_MARKER.len()..];
            let Some((ids, reason)) = rest.split_once(']') else {
                continue;
            };
            let number = u32::try_from(n + 1).unwrap_or(u32::MAX);
            let entry = out.entry((file.clone(), number)).or_default();
            for id in ids.split(',') {
                entry.push((id.trim().to_string(), reason.trim().to_string()));
            }
        }
    }
    out
}

/// The reason a finding at `at` is exempted, if a comment on its line or the line
/// above names its check.
fn ignored(ignores: &Ignores, at: &Location, check: CheckId) -> Option<String> {
    [at.line, at.line.saturating_sub(1)]
        .iter()
        .filter_map(|line| ignores.get(&(at.file.clone(), *line)))
        .flatten()
        .find(|(id, _)| id == check.as_str())
        .map(|(_, reason)| reason.clone())
}

#[cfg(test)]
mod tests;

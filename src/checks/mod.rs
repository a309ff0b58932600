//! The checks layer, pure: one module per check ID, `area.some-name` in
//! `checks/<area>/<some_name>.rs`, holding its deciders (`live`, from the cluster's
//! evidence; `source`, from the Python and its settings; or both, with the [`Wording`]
//! they share), its message and its fix; `checks/<area>.rs` holds what an area's checks
//! share (the preconditions of its live deciders, such as a log read or objects sampled).
//! [`registry`] lists every check ID with its deciders, and is what runs them: a check's
//! entry there is how its live decider runs ([`run_area`]) and how lint runs its source
//! one. The RBAC permission checks, whose needs `model/needs.rs` builds one function
//! per ID, are judged together in `checks/rbac.rs` ([`registry::Deciders::InArea`]).
//! Nothing here performs I/O.

pub(crate) mod events;
pub(crate) mod persistence;
pub(crate) mod rbac;
pub(crate) mod registry;
pub(crate) mod runtime;
pub(crate) mod source;
pub(crate) mod workload;

use crate::api::Finding;
use crate::catalog::{Area, CheckId};
use crate::model::evidence::{KopfEvidence, TargetEvidence};
use crate::model::rbac::Permission;
use crate::model::settings::CheckSettings;

/// A finding as a check raises it, with the root causes it names, so that one cause
/// gives one finding however many checks see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Raised {
    /// The finding, at the check's severity.
    pub(crate) finding: Finding,
    /// The causes it reports.
    pub(crate) causes: Vec<Cause>,
}

/// A root cause that several checks can see.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Cause {
    /// The API server refuses the operator this verb on `resource[/subresource]` of
    /// `group`, in `namespace` (`None`: at cluster scope).
    Denied {
        /// The verb.
        verb: String,
        /// The API group (empty for core).
        group: String,
        /// `plural` or `plural/subresource`.
        resource: String,
        /// The namespace, or `None` at cluster scope.
        namespace: Option<String>,
    },
}

impl Cause {
    /// The denial of a permission.
    pub(crate) fn denied(p: &Permission) -> Cause {
        let resource = if p.subresource.is_empty() {
            p.resource.clone()
        } else {
            format!("{}/{}", p.resource, p.subresource)
        };
        Cause::Denied {
            verb: p.verb.as_str().to_string(),
            group: p.group.clone(),
            resource,
            namespace: p.namespace.clone(),
        }
    }

    /// The denial a log record shows, if it shows one with a verb.
    pub(crate) fn from_log(denial: &kopf_log::Forbidden) -> Option<Cause> {
        if denial.verb.is_empty() {
            return None;
        }
        Some(Cause::Denied {
            verb: denial.verb.clone(),
            group: denial.api_group.clone().unwrap_or_default(),
            resource: denial.resource.clone(),
            namespace: if denial.cluster_scope {
                None
            } else {
                denial.namespace.clone()
            },
        })
    }
}

impl Raised {
    /// A finding with no shared cause.
    pub(crate) fn alone(finding: Finding) -> Raised {
        Raised {
            finding,
            causes: Vec::new(),
        }
    }
}

/// A finding at the check's default severity; `since` is filled in when merging status.
pub(crate) fn finding(
    check: CheckId,
    target: &str,
    message: String,
    evidence: Option<String>,
) -> Finding {
    Finding {
        check,
        severity: check.default_severity(),
        target: target.to_string(),
        message,
        evidence,
        fix: None,
        since: None,
        stale: false,
        absent_since: None,
    }
}

/// How a check with two deciders words its finding, whichever decided: each decider
/// says what it saw in its own terms (objects' marks or a log, live; handlers and
/// settings, from the source), then comes the check's advice, and the same fix. So
/// the two sources give one message shape, `<what was seen>: <advice>`, and one fix.
pub(crate) struct Wording {
    /// The check.
    pub(crate) check: CheckId,
    /// What the finding means and what to do, after what was seen.
    pub(crate) advice: &'static str,
    /// The fix both deciders carry.
    pub(crate) fix: fn() -> String,
}

impl Wording {
    /// The one way the check's finding is built, at its default severity.
    pub(crate) fn finding(&self, target: &str, seen: &str, evidence: Option<String>) -> Finding {
        let mut f = finding(
            self.check,
            target,
            format!("{seen}: {}", self.advice),
            evidence,
        );
        f.fix = Some((self.fix)());
        f
    }
}

/// The Python of an `@kopf.on.startup` handler that sets kopf's `settings`, one line
/// each: the fix of a check whose cure is a setting.
pub(crate) fn startup_settings(lines: &[&str]) -> String {
    let mut out =
        String::from("@kopf.on.startup()\ndef configure(settings: kopf.OperatorSettings, **_):\n");
    for line in lines {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A strategic-merge patch that sets `fields` (YAML, indented as under the container)
/// on the container named `container` of the target Deployment: containers merge by
/// name, so `kubectl patch deployment NAME --patch-file FILE` changes only these fields.
pub(crate) fn container_patch(container: &str, fields: &str) -> String {
    let mut out =
        format!("spec:\n  template:\n    spec:\n      containers:\n      - name: {container}\n");
    for line in fields.lines() {
        out.push_str("        ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// What every live decider reads: one target's evidence, the kopf evidence gathered
/// for it and the audit's check settings. One type, so that the registry can hold every
/// live decider as one kind of function, whatever it reads of these.
pub(crate) struct LiveInput<'a> {
    /// The target: its Deployment, pods and name.
    pub(crate) target: &'a TargetEvidence,
    /// What was gathered about the kopf operator it runs.
    pub(crate) kopf: &'a KopfEvidence,
    /// The audit's settings, read once from its spec.
    pub(crate) settings: &'a CheckSettings,
}

/// A live decider: every finding of its check in the input, with the causes it names.
pub(crate) type LiveDecider = fn(&LiveInput<'_>) -> Vec<Raised>;

/// Runs one kopf area's checks on a target whose evidence for it was gathered: the live
/// deciders [`registry::ENTRIES`] lists for the area, and what its own `check` still
/// decides ([`registry::Deciders::InArea`]: the RBAC checks).
pub(crate) fn run_area(
    area: Area,
    target: &TargetEvidence,
    kopf: &KopfEvidence,
    settings: &CheckSettings,
) -> Vec<Raised> {
    let mut out = match area {
        Area::Rbac => rbac::check(target, kopf),
        Area::Runtime | Area::Workload | Area::Events | Area::Persistence => Vec::new(),
        // The source checks read the Python facts, not live evidence (`kopf-audit lint`).
        Area::Source => return Vec::new(),
    };
    let input = LiveInput {
        target,
        kopf,
        settings,
    };
    out.extend(registry::live_findings(area, &input));
    out
}

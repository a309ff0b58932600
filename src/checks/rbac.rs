//! RBAC checks (`rbac.*`): what the operator's ServiceAccount may and may not do, as the
//! API server answers.
//!
//! The needs (`model/needs.rs`) derive every permission kopf needs from how it runs; the
//! gatherer asks the API server exactly these; [`check`] compares the answers with the
//! needs, explains them from the bindings that reach the ServiceAccount, quotes the log
//! line where the operator is refused right now, and finds over-privilege in those
//! bindings. Each message says what kopf does, citing its behaviour and version.

use super::{Cause, Raised, finding};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::evidence::{KopfEvidence, LogEvidence, RbacEvidence, TargetEvidence};
use crate::model::needs::Need;
use crate::model::rbac::{Binding, BindingKind, Rule, Verb, resource_name, yaml_word};
use std::collections::BTreeSet;

/// How long a quoted log line may be in a message.
const QUOTE_CHARS: usize = 320;
/// How many bindings an explanation lists.
const EXPLAIN_BINDINGS: usize = 6;

/// Runs every check of this area on one kopf target.
pub(crate) fn check(target: &TargetEvidence, kopf: &KopfEvidence) -> Vec<Raised> {
    let Ok(evidence) = &kopf.rbac else {
        return Vec::new();
    };
    let name = target.name();
    let logs = kopf.logs.as_ref().ok();
    let mut found: Vec<Raised> = evidence
        .needs
        .iter()
        .filter_map(|need| missing(name, need, evidence, logs))
        .collect();
    found.extend(
        over_privileged(name, evidence)
            .into_iter()
            .map(Raised::alone),
    );
    found
}

/// The finding for a need whose verbs are (partly) denied.
fn missing(
    target: &str,
    need: &Need,
    evidence: &RbacEvidence,
    logs: Option<&LogEvidence>,
) -> Option<Raised> {
    if let Some(required) = &need.only_if_granted
        && evidence.allowed(required) != Some(true)
    {
        return None;
    }
    let denied: Vec<(Verb, Severity)> = need
        .verbs
        .iter()
        .filter(|(v, _)| evidence.allowed(&need.permission(*v)) == Some(false))
        .copied()
        .collect();
    let severity = denied.iter().map(|(_, s)| *s).max()?;
    let verbs: Vec<Verb> = denied.iter().map(|(v, _)| *v).collect();
    let causes: Vec<Cause> = verbs
        .iter()
        .map(|v| Cause::denied(&need.permission(*v)))
        .collect();
    let probe = need.permission(verbs[0]);
    let what = probe.resource_name();
    let live = correlate(need, &verbs, logs)
        .map(|q| {
            format!(" This is failing now, not just possible: the operator's log shows `{q}`.")
        })
        .unwrap_or_default();
    let message = format!(
        "ServiceAccount {sa} may not {verbs} {what} {scope}{note}: {why}.{live} {fix}",
        sa = evidence.service_account,
        verbs = words(&verbs),
        scope = probe.scope_text(),
        note = need.scope_note.as_deref().unwrap_or(""),
        why = need.why,
        fix = fix(need),
    );
    let mut f = finding(
        need.check,
        target,
        message,
        Some(explain(need, &verbs, evidence)),
    );
    f.severity = severity;
    f.fix = Some(rule(need));
    Some(Raised { finding: f, causes })
}

/// Verbs as a list in a message: `list, watch`.
fn words(verbs: &[Verb]) -> String {
    verbs
        .iter()
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The rule to add, as YAML a person can paste into `rbac.rules`/`extraRules`, and where.
fn fix(need: &Need) -> String {
    let place = match &need.namespace {
        None => "Add to its ClusterRole (bound by a ClusterRoleBinding)".to_string(),
        Some(ns) => format!("Add to its Role in namespace {ns} (bound by a RoleBinding)"),
    };
    format!("{place}:\n{}", rule(need).trim_end())
}

/// The RBAC rule that grants a need, as one YAML list item.
fn rule(need: &Need) -> String {
    let resource = if need.subresource.is_empty() {
        need.resource.clone()
    } else {
        format!("{}/{}", need.resource, need.subresource)
    };
    format!(
        "- apiGroups: [{}]\n  resources: [{}]\n  verbs: [{}]\n",
        yaml_word(&need.group),
        yaml_word(&resource),
        words(&need.rule_verbs)
    )
}

/// Which bindings reach the ServiceAccount where the need applies, and what their rules
/// grant on the resource: the evidence of a missing-permission finding.
fn explain(need: &Need, denied: &[Verb], evidence: &RbacEvidence) -> String {
    let applicable: Vec<&Binding> = evidence
        .bindings
        .iter()
        .filter(|b| b.applies_in(need.namespace.as_deref()))
        .collect();
    // Bindings to every ServiceAccount or every user (the cluster's defaults) are named
    // only when their rules mention the resource.
    let specific: Vec<&Binding> = applicable
        .iter()
        .filter(|b| !b.via.is_broad())
        .copied()
        .collect();
    let what = resource_name(&need.group, &need.resource, &need.subresource);
    let mut partial = Vec::new();
    for b in &applicable {
        let verbs: BTreeSet<&str> = b
            .rules
            .iter()
            .filter(|r| r.covers_resource(&need.group, &need.resource, &need.subresource))
            .flat_map(|r| r.verbs.iter().map(String::as_str))
            .collect();
        if !verbs.is_empty() {
            partial.push(format!(
                "{} (bound by {}) grants only [{}] on {what}",
                b.describe_role(),
                b.describe(),
                verbs.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let scope = match &need.namespace {
        None => "at cluster scope".to_string(),
        Some(ns) => format!("in {ns}"),
    };
    let mut out = if partial.is_empty() {
        format!(
            "No rule bound to ServiceAccount {} {scope} mentions {what} (denied: {}).",
            evidence.service_account,
            words(denied)
        )
    } else {
        format!("{}.", partial.join("; "))
    };
    let unread = need
        .namespace
        .as_ref()
        .is_some_and(|ns| evidence.unread_namespaces.contains(ns));
    if unread {
        out.push_str(&format!(
            " RoleBindings {scope} were not read: they are outside the KopfAudit's namespace, which the auditor reads only when started with --allow-cross-namespace."
        ));
    } else if specific.is_empty() {
        out.push_str(&format!(
            " No Role or ClusterRole is bound to it {scope} (beyond the cluster's defaults for every ServiceAccount): bind one with a RoleBinding or ClusterRoleBinding."
        ));
    } else {
        let listed: Vec<String> = specific
            .iter()
            .take(EXPLAIN_BINDINGS)
            .map(|b| format!("{} -> {} via {}", b.describe(), b.describe_role(), b.via))
            .collect();
        let more = if specific.len() > EXPLAIN_BINDINGS {
            ", ..."
        } else {
            ""
        };
        out.push_str(&format!(" Bound {scope}: {}{more}.", listed.join("; ")));
    }
    out
}

/// A quote of the log line showing that a denied permission fails right now: a record
/// whose RBAC denial is one of the need's denied verbs, on its resource and scope. The
/// lexically first matching excerpt is quoted so the message stays identical between
/// audits.
fn correlate(need: &Need, denied: &[Verb], logs: Option<&LogEvidence>) -> Option<String> {
    let wanted: Vec<Cause> = denied
        .iter()
        .map(|v| Cause::denied(&need.permission(*v)))
        .collect();
    logs?
        .all_records()
        .filter(|r| {
            r.forbidden
                .as_ref()
                .and_then(Cause::from_log)
                .is_some_and(|c| wanted.contains(&c))
        })
        // The outcome (`Failed to post an event`, a watcher's failure) says more than
        // one of the retries before it.
        .map(|r| {
            let retry =
                matches!(r.kind, kopf_log::EventKind::Forbidden { .. }) && r.request.is_some();
            (retry, kopf_log::excerpt(&r.message, QUOTE_CHARS))
        })
        .min()
        .map(|(_, quote)| quote)
}

/// Which over-privileges a set of rules carries.
fn privileges(binding: &Binding) -> Vec<String> {
    let mut out = Vec::new();
    if binding.is_cluster_admin() {
        out.push("it is cluster-admin: every verb on every resource".to_string());
    }
    let wildcards: Vec<&Rule> = binding.rules.iter().filter(|r| r.has_wildcard()).collect();
    if !wildcards.is_empty() {
        let rules: Vec<String> = wildcards.iter().map(|r| r.flow_yaml()).collect();
        out.push(format!("wildcard rules {{{}}}", rules.join("}, {")));
    }
    let cluster_wide = binding.kind == BindingKind::ClusterRoleBinding;
    let secrets: BTreeSet<&str> = binding
        .rules
        .iter()
        .flat_map(Rule::secret_reads)
        .map(Verb::as_str)
        .collect();
    if cluster_wide && !secrets.is_empty() {
        out.push(format!(
            "cluster-wide {} on secrets",
            secrets.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    out
}

/// `rbac.over-privileged`: one finding per binding that grants wildcards, cluster-admin or
/// cluster-wide read of secrets (least privilege).
fn over_privileged(target: &str, evidence: &RbacEvidence) -> Vec<Finding> {
    evidence
        .bindings
        .iter()
        .filter_map(|b| {
            let what = privileges(b);
            if what.is_empty() {
                return None;
            }
            Some(finding(
                CheckId::RbacOverPrivileged,
                target,
                format!(
                    "ServiceAccount {sa} is granted more than kopf needs by {binding} -> {role} (via {via}): {what}. kopf uses only list/watch on CRDs, create on events, namespaces list/watch in namespaced mode, its peering objects and get/list/watch/patch on the resources it handles (plus their /status); bind a role with exactly those rules (the other rbac findings name any that are missing) and remove this binding (least privilege).",
                    sa = evidence.service_account,
                    binding = b.describe(),
                    role = b.describe_role(),
                    via = b.via,
                    what = what.join("; "),
                ),
                Some(format!("{} -> {}", b.describe(), b.describe_role())),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests;

//! RBAC checks (`rbac.*`): what the operator's ServiceAccount may and may not do, as the
//! API server answers.
//!
//! Two halves, both pure: [`needs`] derives every permission kopf needs from how it runs
//! (scope, peering), the resources it handles and its namespace — the gatherer asks the
//! API server exactly these, deduplicated — and [`check`] compares the answers with the
//! needs, explains them from the bindings that reach the ServiceAccount, and finds
//! over-privilege in those bindings. Each message says which source a rule follows:
//! kopf 1.45's own behaviour (kopf-facts.md) wins over the seed where they differ.

use super::{CheckId, Severity, finding};
use crate::api::Finding;
use crate::evaluate::CheckConfig;
use crate::evidence::rbac::{
    Binding, BindingKind, PEERING_CLUSTER, PEERING_GROUPS, PEERING_NAMESPACED, PeeringCrds,
    Permission, RbacEvidence, Rule, ServiceAccountRef, resource_name, yaml_word,
};
use crate::evidence::{HandledResource, HandledSource, LogEvidence, TargetEvidence};
use crate::kopf_mode::{KopfRun, Peering, Scope};
use std::collections::{BTreeMap, BTreeSet};

/// The API group of CustomResourceDefinitions.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";
/// The plural of CustomResourceDefinitions.
pub const CRD_RESOURCE: &str = "customresourcedefinitions";

/// How long a quoted log line may be in a message.
const QUOTE_CHARS: usize = 320;
/// How many bindings an explanation lists.
const EXPLAIN_BINDINGS: usize = 6;

/// One rule kopf needs on one resource in one scope: the verbs to ask (each with the
/// severity when it is denied), the rule to paste, and why (with its source).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    /// The check that reports it.
    pub check: CheckId,
    /// API group (empty for core).
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (`status`) or empty.
    pub subresource: String,
    /// Namespace; `None` for cluster scope.
    pub namespace: Option<String>,
    /// The verbs asked, with the severity when denied.
    pub verbs: Vec<(&'static str, Severity)>,
    /// The verbs of the rule to paste (a superset of `verbs`).
    pub rule_verbs: Vec<&'static str>,
    /// Why kopf needs it and which source says so.
    pub why: String,
    /// How the scope was chosen when it is an approximation (patterns, cluster-wide).
    pub scope_note: Option<String>,
    /// Report only when this permission is granted (events patch is advice on top of create).
    pub only_if_granted: Option<Permission>,
}

impl Need {
    /// The permission for one of its verbs.
    pub fn permission(&self, verb: &str) -> Permission {
        Permission {
            verb: verb.into(),
            group: self.group.clone(),
            resource: self.resource.clone(),
            subresource: self.subresource.clone(),
            namespace: self.namespace.clone(),
        }
    }

    /// The permissions to ask for this need.
    pub fn permissions(&self) -> impl Iterator<Item = Permission> + '_ {
        self.verbs
            .iter()
            .map(|(v, _)| self.permission(v))
            .chain(self.only_if_granted.iter().cloned())
    }
}

/// Every distinct permission behind a set of needs: what the gatherer asks (one
/// SubjectAccessReview each).
pub fn permissions(needs: &[Need]) -> BTreeSet<Permission> {
    needs.iter().flat_map(Need::permissions).collect()
}

/// The ServiceAccount of a target's pods (`default` when the template names none).
pub fn service_account(target: &TargetEvidence) -> ServiceAccountRef {
    let name = target
        .deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.as_deref())
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    ServiceAccountRef {
        namespace: target_namespace(target).to_string(),
        name: name.to_string(),
    }
}

/// The namespace of the target Deployment (the operator's own namespace).
pub fn target_namespace(target: &TargetEvidence) -> &str {
    target
        .deployment
        .metadata
        .namespace
        .as_deref()
        .unwrap_or("")
}

/// What kopf 1.45 does on every resource it serves, its peering objects
/// included: lists, watches and patches them (get per kopf's docs and the seed).
const SERVED_VERBS: [&str; 4] = ["get", "list", "watch", "patch"];

/// Where a permission is needed: once cluster-wide, or in every served
/// namespace with its note.
fn scopes(
    cluster_wide: bool,
    served: &BTreeMap<String, Option<String>>,
) -> Vec<(Option<String>, Option<String>)> {
    if cluster_wide {
        vec![(None, None)]
    } else {
        served
            .iter()
            .map(|(ns, note)| (Some(ns.clone()), note.clone()))
            .collect()
    }
}

/// The namespaces kopf serves that can be asked about, each with a note when it stands
/// in for something that cannot (patterns, every namespace); empty for cluster-wide.
fn served_namespaces(run: &KopfRun, own: &str) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    if let Scope::Namespaced(names) = &run.scope {
        for name in names {
            if Scope::Namespaced(vec![name.clone()]).has_patterns() {
                out.entry(own.to_string()).or_insert_with(|| {
                    Some(format!(
                        " (-n uses the pattern {name:?}: checked in the operator's own namespace)"
                    ))
                });
            } else {
                out.insert(name.clone(), None);
            }
        }
    }
    out
}

fn namespaced(
    check: CheckId,
    group: &str,
    resource: &str,
    subresource: &str,
    namespace: Option<&str>,
) -> Need {
    Need {
        check,
        group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.map(str::to_string),
        verbs: Vec::new(),
        rule_verbs: Vec::new(),
        why: String::new(),
        scope_note: None,
        only_if_granted: None,
    }
}

/// Every permission kopf 1.45 needs for a run mode, its handled resources (`None`: not
/// known, so none are needed), its own namespace and the peering CRDs that exist.
pub fn needs(
    run: &KopfRun,
    handled: Option<&[HandledResource]>,
    own_namespace: &str,
    peering: &PeeringCrds,
) -> Vec<Need> {
    let mut out = Vec::new();
    let served = served_namespaces(run, own_namespace);
    let cluster_wide = run.scope.is_cluster_wide();
    let handled = handled.unwrap_or(&[]);

    // CRDs: kopf scans them at startup (list+watch); get is in the seed and kopf's docs.
    let mut crd = namespaced(CheckId::RbacCrdScan, CRD_GROUP, CRD_RESOURCE, "", None);
    crd.verbs = vec![
        ("list", Severity::Error),
        ("watch", Severity::Error),
        ("get", Severity::Warning),
    ];
    crd.rule_verbs = vec!["get", "list", "watch"];
    crd.why = "kopf lists and watches CRDs at startup to resolve the resources it serves (kopf 1.45 retries for about 54 s, then runs on blind to changes; older versions crash-loop); get is asked by the seed and kopf's docs".into();
    out.push(crd);

    // Events: create where kopf posts; patch is the seed's advice only.
    let mut event_namespaces: BTreeMap<String, Option<String>> = if cluster_wide {
        BTreeMap::from([(
            own_namespace.to_string(),
            Some(" (kopf serves every namespace: checked in the operator's own namespace)".into()),
        )])
    } else {
        served.clone()
    };
    if handled.iter().any(|h| !h.namespaced) {
        event_namespaces
            .entry(own_namespace.to_string())
            .or_insert_with(|| {
                Some(
                    " (kopf posts the events of cluster-scoped objects into its own namespace)"
                        .into(),
                )
            });
    }
    for (ns, note) in &event_namespaces {
        let mut create = namespaced(CheckId::RbacEvents, "", "events", "", Some(ns));
        create.verbs = vec![("create", Severity::Error)];
        create.rule_verbs = vec!["create", "patch"];
        create.why = "kopf posts its events with create, and a denied POST is only logged as a warning, so events are silently absent (kopf 1.45 and the seed agree)".into();
        create.scope_note = note.clone();
        let mut patch = namespaced(CheckId::RbacEventsPatch, "", "events", "", Some(ns));
        patch.verbs = vec![("patch", Severity::Info)];
        patch.rule_verbs = vec!["create", "patch"];
        patch.why = "the seed asks for create and patch; kopf 1.45 only ever creates events (generateName, never patched), so this is advice, not a fault".into();
        patch.scope_note = note.clone();
        patch.only_if_granted = Some(create.permission("create"));
        out.push(create);
        out.push(patch);
    }

    // Namespaces: only in namespaced mode (kopf 1.45 observation.py), to resolve patterns.
    if let Scope::Namespaced(names) = &run.scope {
        let patterns = run.scope.has_patterns();
        let severity = if patterns {
            Severity::Error
        } else {
            Severity::Info
        };
        let mut ns = namespaced(CheckId::RbacNamespaces, "", "namespaces", "", None);
        ns.verbs = vec![("list", severity), ("watch", severity)];
        ns.rule_verbs = vec!["list", "watch"];
        ns.why = if patterns {
            format!(
                "kopf 1.45 lists and watches namespaces in namespaced mode to resolve the -n patterns {}; without it, it falls back to the exact names only and serves no namespace a pattern matches (the seed asks for this in cluster-wide mode instead; kopf's source wins: cluster-wide it never lists namespaces)",
                names.join(", ")
            )
        } else {
            "kopf 1.45 lists and watches namespaces in namespaced mode, then falls back to the exact -n names with a warning: harmless with exact names, needed as soon as a pattern is used (the seed asks for this in cluster-wide mode instead; kopf's source wins)".into()
        };
        out.push(ns);
    }

    // Peering, unless --standalone; with neither flag only when the CRD exists.
    let plural = if cluster_wide {
        PEERING_CLUSTER
    } else {
        PEERING_NAMESPACED
    };
    let present = PEERING_GROUPS.iter().find(|g| peering.has(plural, g));
    let peering_group = match (&run.peering, present) {
        (Peering::Standalone, _) => None,
        (Peering::Auto, None) => None,
        (Peering::Auto, Some(g)) => Some((
            *g,
            format!("peering is on: --standalone is not given and the CRD {plural}.{g} exists"),
        )),
        (Peering::Named(name), g) => Some((
            g.copied().unwrap_or(PEERING_GROUPS[0]),
            format!("peering is mandatory: --peering {name}"),
        )),
    };
    if let Some((group, reason)) = peering_group {
        for (ns, note) in scopes(cluster_wide, &served) {
            let mut p = namespaced(CheckId::RbacPeering, group, plural, "", ns.as_deref());
            p.verbs = SERVED_VERBS.iter().map(|v| (*v, Severity::Error)).collect();
            p.rule_verbs = SERVED_VERBS.to_vec();
            p.why = format!(
                "{reason}; kopf 1.45 lists, watches and patches its peering objects (get per kopf's docs and the seed), or peering fails. Alternatively run with --standalone and one replica"
            );
            p.scope_note = note;
            out.push(p);
        }
    }

    // Handled resources: get/list/watch/patch where served; /status patch with a status subresource.
    let mut seen = BTreeSet::new();
    for h in handled {
        if !seen.insert((h.group.clone(), h.plural.clone())) {
            continue;
        }
        let source = match h.source {
            HandledSource::Spec => "it is listed in spec.handledResources",
            HandledSource::InferredFromRbac => {
                "it is inferred as handled: a custom resource its RBAC grants watch on"
            }
            HandledSource::InferredFromMarks => {
                "it is inferred as handled: its objects carry kopf's annotations or finalizers"
            }
        };
        let status = h.crd.as_ref().is_some_and(|c| c.status_subresource);
        for (ns, note) in scopes(cluster_wide || !h.namespaced, &served) {
            let mut r = namespaced(
                CheckId::RbacHandledResources,
                &h.group,
                &h.plural,
                "",
                ns.as_deref(),
            );
            r.verbs = SERVED_VERBS.iter().map(|v| (*v, Severity::Error)).collect();
            r.rule_verbs = SERVED_VERBS.to_vec();
            r.why = format!(
                "kopf 1.45 lists, watches and patches every resource it serves (get per kopf's docs and the seed), else its handlers never fire ({source})"
            );
            r.scope_note = note.clone();
            out.push(r);
            if status {
                let mut s = namespaced(
                    CheckId::RbacHandledResources,
                    &h.group,
                    &h.plural,
                    "status",
                    ns.as_deref(),
                );
                s.verbs = vec![("patch", Severity::Error)];
                s.rule_verbs = vec!["patch"];
                s.why = format!(
                    "its CRD has a status subresource, so kopf 1.45 patches {}/status for its progress and handler results, which are lost otherwise ({source})",
                    h.plural
                );
                s.scope_note = note;
                out.push(s);
            }
        }
    }
    out
}

/// Runs every check of this area on one kopf target.
pub fn check(target: &TargetEvidence, run: &KopfRun, _config: &CheckConfig) -> Vec<Finding> {
    let Some(evidence) = target.rbac.ready() else {
        return Vec::new();
    };
    let name = super::workload::target_name(target);
    let handled = target.handled.ready().map(Vec::as_slice);
    let own = target_namespace(target);
    let logs = target.logs.ready();
    let mut findings: Vec<Finding> = needs(run, handled, own, &evidence.peering_crds)
        .iter()
        .filter_map(|need| missing(name, need, evidence, logs))
        .collect();
    findings.extend(over_privileged(name, evidence));
    findings
}

/// The finding for a need whose verbs are (partly) denied.
pub fn missing(
    target: &str,
    need: &Need,
    evidence: &RbacEvidence,
    logs: Option<&LogEvidence>,
) -> Option<Finding> {
    if let Some(required) = &need.only_if_granted
        && evidence.allowed(required) != Some(true)
    {
        return None;
    }
    let denied: Vec<(&str, Severity)> = need
        .verbs
        .iter()
        .filter(|(v, _)| evidence.allowed(&need.permission(v)) == Some(false))
        .copied()
        .collect();
    let severity = denied.iter().map(|(_, s)| *s).max()?;
    let verbs: Vec<&str> = denied.iter().map(|(v, _)| *v).collect();
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
        verbs = verbs.join(", "),
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
    Some(f)
}

/// The rule to add, as YAML a person can paste into `rbac.rules`/`extraRules`, and where.
pub fn fix(need: &Need) -> String {
    let resource = if need.subresource.is_empty() {
        need.resource.clone()
    } else {
        format!("{}/{}", need.resource, need.subresource)
    };
    let place = match &need.namespace {
        None => "Add to its ClusterRole (bound by a ClusterRoleBinding)".to_string(),
        Some(ns) => format!("Add to its Role in namespace {ns} (bound by a RoleBinding)"),
    };
    format!(
        "{place}:\n- apiGroups: [{}]\n  resources: [{}]\n  verbs: [{}]",
        yaml_word(&need.group),
        yaml_word(&resource),
        need.rule_verbs.join(", ")
    )
}

/// Which bindings reach the ServiceAccount where the need applies, and what their rules
/// grant on the resource: the evidence of a missing-permission finding.
fn explain(need: &Need, denied: &[&str], evidence: &RbacEvidence) -> String {
    let applicable: Vec<&Binding> = evidence
        .bindings
        .iter()
        .filter(|b| b.applies_in(need.namespace.as_deref()))
        .collect();
    // Bindings to every ServiceAccount or every user (the cluster's defaults) are named
    // only when their rules mention the resource.
    let specific: Vec<&Binding> = applicable
        .iter()
        .filter(|b| !is_broad(b))
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
            denied.join(", ")
        )
    } else {
        format!("{}.", partial.join("; "))
    };
    if specific.is_empty() {
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

/// Whether a binding reaches the ServiceAccount only as one of all ServiceAccounts or all
/// authenticated users (the cluster's default bindings), not as itself or its namespace.
fn is_broad(binding: &Binding) -> bool {
    binding.via == "Group system:serviceaccounts" || binding.via == "Group system:authenticated"
}

/// A quote of the log line showing that a denied permission fails right now, for the
/// checks kopf's logs reveal: events create (`Failed to post an event ... 403`) and the CRD
/// scan (`customresourcedefinitions ... is forbidden` retries). The lexically first
/// matching excerpt is quoted so the message stays identical between audits.
pub fn correlate(need: &Need, denied: &[&str], logs: Option<&LogEvidence>) -> Option<String> {
    let logs = logs?;
    let records = logs.records.iter().chain(logs.previous.iter());
    let matching: Vec<&kopf_log::Record> = match need.check {
        CheckId::RbacEvents if denied.contains(&"create") => records
            .filter(|r| {
                matches!(
                    r.kind,
                    kopf_log::EventKind::EventPostFailed { code: Some(403) }
                )
            })
            .filter(|r| {
                let ns = r.forbidden.as_ref().and_then(|f| f.namespace.as_deref());
                ns.is_none() || ns == need.namespace.as_deref()
            })
            .collect(),
        CheckId::RbacCrdScan if denied.iter().any(|v| *v == "list" || *v == "watch") => records
            .filter(|r| {
                r.forbidden
                    .as_ref()
                    .is_some_and(|f| f.resource == CRD_RESOURCE)
            })
            .collect(),
        _ => return None,
    };
    matching
        .iter()
        .map(|r| kopf_log::excerpt(&r.message, QUOTE_CHARS))
        .min()
}

/// Which over-privileges a set of rules carries.
fn privileges(binding: &Binding) -> Vec<String> {
    let mut out = Vec::new();
    if binding.role_kind == "ClusterRole" && binding.role_name == "cluster-admin" {
        out.push("it is cluster-admin: every verb on every resource".to_string());
    }
    let wildcards: Vec<&Rule> = binding
        .rules
        .iter()
        .filter(|r| r.verbs.iter().any(|v| v == "*") || r.resources.iter().any(|x| x == "*"))
        .collect();
    if !wildcards.is_empty() {
        let rules: Vec<String> = wildcards.iter().map(|r| r.flow_yaml()).collect();
        out.push(format!("wildcard rules {{{}}}", rules.join("}, {")));
    }
    let cluster_wide = binding.kind == BindingKind::ClusterRoleBinding;
    let secrets: BTreeSet<&str> = binding
        .rules
        .iter()
        .filter(|r| r.covers_resource("", "secrets", ""))
        .flat_map(|r| {
            ["get", "list", "watch"]
                .into_iter()
                .filter(|v| r.has_verb(v))
        })
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
/// cluster-wide read of secrets (least privilege: the seed's chart rules hold only what
/// the operator uses).
pub fn over_privileged(target: &str, evidence: &RbacEvidence) -> Vec<Finding> {
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
                    "ServiceAccount {sa} is granted more than kopf needs by {binding} -> {role} (via {via}): {what}. kopf uses only get/list/watch on CRDs, create on events, namespaces list/watch in namespaced mode, its peering objects and get/list/watch/patch on the resources it handles (plus their /status); bind a role with exactly those rules (the other rbac findings name any that are missing) and remove this binding (least privilege, the seed's rbac.rules).",
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
mod tests {
    use super::*;
    use crate::evidence::rbac::{Rule, test_rule as rule};
    use crate::evidence::{CrdInfo, Gathered};
    use crate::kopf_mode::LogFormat;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Container, PodSpec};

    fn run(scope: Scope, peering: Peering) -> KopfRun {
        KopfRun {
            container: "operator".into(),
            scope,
            peering,
            log_format: LogFormat::Full,
            liveness: None,
        }
    }

    fn widget(namespaced: bool, status: bool) -> HandledResource {
        HandledResource {
            group: "example.com".into(),
            version: "v1".into(),
            plural: "widgets".into(),
            kind: Some("Widget".into()),
            namespaced,
            crd: Some(CrdInfo {
                name: "widgets.example.com".into(),
                status_subresource: status,
                status_preserves_unknown_fields: true,
            }),
            source: HandledSource::InferredFromRbac,
        }
    }

    /// The needs as `check verb resource scope` lines, sorted.
    fn lines(needs: &[Need]) -> Vec<String> {
        let mut out: Vec<String> = needs
            .iter()
            .flat_map(|n| {
                n.verbs.iter().map(move |(v, s)| {
                    let p = n.permission(v);
                    format!(
                        "{} {v}:{s} {} {}",
                        n.check.as_str(),
                        p.resource_name(),
                        p.namespace.as_deref().unwrap_or("*")
                    )
                })
            })
            .collect();
        out.sort();
        out
    }

    fn ns(names: &[&str]) -> Scope {
        Scope::Namespaced(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn namespaced_exact_standalone() {
        let n = needs(
            &run(ns(&["a", "b"]), Peering::Standalone),
            Some(&[widget(true, true)]),
            "op",
            &PeeringCrds::default(),
        );
        assert_eq!(
            lines(&n),
            vec![
                "rbac.crd-scan get:warning customresourcedefinitions.apiextensions.k8s.io *",
                "rbac.crd-scan list:error customresourcedefinitions.apiextensions.k8s.io *",
                "rbac.crd-scan watch:error customresourcedefinitions.apiextensions.k8s.io *",
                "rbac.events create:error events a",
                "rbac.events create:error events b",
                "rbac.events-patch patch:info events a",
                "rbac.events-patch patch:info events b",
                "rbac.handled-resources get:error widgets.example.com a",
                "rbac.handled-resources get:error widgets.example.com b",
                "rbac.handled-resources list:error widgets.example.com a",
                "rbac.handled-resources list:error widgets.example.com b",
                "rbac.handled-resources patch:error widgets.example.com a",
                "rbac.handled-resources patch:error widgets.example.com b",
                "rbac.handled-resources patch:error widgets.example.com/status a",
                "rbac.handled-resources patch:error widgets.example.com/status b",
                "rbac.handled-resources watch:error widgets.example.com a",
                "rbac.handled-resources watch:error widgets.example.com b",
                "rbac.namespaces list:info namespaces *",
                "rbac.namespaces watch:info namespaces *",
            ]
        );
        // Distinct permissions: events patch requires create, which is already asked.
        assert_eq!(permissions(&n).len(), 3 + 4 + 2 + 10);
    }

    #[test]
    fn namespaced_patterns_check_the_own_namespace_and_need_namespaces() {
        let n = needs(
            &run(ns(&["team-*", "fixed"]), Peering::Standalone),
            Some(&[widget(true, false)]),
            "op",
            &PeeringCrds::default(),
        );
        let l = lines(&n);
        assert!(l.contains(&"rbac.namespaces list:error namespaces *".to_string()));
        assert!(l.contains(&"rbac.events create:error events op".to_string()));
        assert!(l.contains(&"rbac.events create:error events fixed".to_string()));
        assert!(!l.iter().any(|x| x.contains("team-")), "{l:#?}");
        assert!(
            !l.iter().any(|x| x.contains("/status")),
            "no status subresource"
        );
        let events_op = n
            .iter()
            .find(|x| x.check == CheckId::RbacEvents && x.namespace.as_deref() == Some("op"))
            .expect("own namespace");
        assert!(
            events_op
                .scope_note
                .as_deref()
                .is_some_and(|s| s.contains("team-*")),
            "{events_op:?}"
        );
    }

    #[test]
    fn cluster_wide_needs_no_namespaces_and_asks_at_cluster_scope() {
        for scope in [Scope::ClusterWide, Scope::Implicit] {
            let n = needs(
                &run(scope, Peering::Standalone),
                Some(&[widget(true, true)]),
                "op",
                &PeeringCrds::default(),
            );
            let l = lines(&n);
            assert!(
                !l.iter().any(|x| x.starts_with("rbac.namespaces")),
                "{l:#?}"
            );
            assert!(l.contains(&"rbac.handled-resources list:error widgets.example.com *".into()));
            assert!(l.contains(
                &"rbac.handled-resources patch:error widgets.example.com/status *".into()
            ));
            assert!(l.contains(&"rbac.events create:error events op".into()));
            assert!(!l.iter().any(|x| x.starts_with("rbac.peering")));
        }
    }

    #[test]
    fn peering_modes() {
        let crds = |names: &[&str]| PeeringCrds {
            present: names.iter().map(|s| s.to_string()).collect(),
        };
        let peering_lines = |r: KopfRun, c: PeeringCrds| -> Vec<String> {
            lines(&needs(&r, Some(&[]), "op", &c))
                .into_iter()
                .filter(|l| l.starts_with("rbac.peering"))
                .collect()
        };
        // Standalone: never.
        assert!(
            peering_lines(
                run(ns(&["a"]), Peering::Standalone),
                crds(&["kopfpeerings.kopf.dev"])
            )
            .is_empty()
        );
        // Auto: only when the CRD for the mode exists.
        assert!(peering_lines(run(ns(&["a"]), Peering::Auto), crds(&[])).is_empty());
        assert!(
            peering_lines(
                run(ns(&["a"]), Peering::Auto),
                crds(&["clusterkopfpeerings.kopf.dev"])
            )
            .is_empty()
        );
        assert_eq!(
            peering_lines(
                run(ns(&["a"]), Peering::Auto),
                crds(&["kopfpeerings.kopf.dev"])
            ),
            vec![
                "rbac.peering get:error kopfpeerings.kopf.dev a",
                "rbac.peering list:error kopfpeerings.kopf.dev a",
                "rbac.peering patch:error kopfpeerings.kopf.dev a",
                "rbac.peering watch:error kopfpeerings.kopf.dev a",
            ]
        );
        // zalando.org only when that is the CRD present.
        assert_eq!(
            peering_lines(
                run(Scope::ClusterWide, Peering::Auto),
                crds(&["clusterkopfpeerings.zalando.org"])
            )[0],
            "rbac.peering get:error clusterkopfpeerings.zalando.org *"
        );
        assert!(
            peering_lines(
                run(Scope::ClusterWide, Peering::Auto),
                crds(&[
                    "clusterkopfpeerings.zalando.org",
                    "clusterkopfpeerings.kopf.dev"
                ])
            )[0]
            .contains("clusterkopfpeerings.kopf.dev")
        );
        // Named: mandatory, kopf.dev when no CRD is known.
        assert_eq!(
            peering_lines(
                run(Scope::ClusterWide, Peering::Named("x".into())),
                crds(&[])
            )
            .len(),
            4
        );
    }

    #[test]
    fn cluster_scoped_handled_resources_post_events_in_the_own_namespace() {
        let n = needs(
            &run(ns(&["a"]), Peering::Standalone),
            Some(&[widget(false, false)]),
            "op",
            &PeeringCrds::default(),
        );
        let l = lines(&n);
        assert!(
            l.contains(&"rbac.events create:error events op".into()),
            "{l:#?}"
        );
        assert!(l.contains(&"rbac.events create:error events a".into()));
        assert!(l.contains(&"rbac.handled-resources watch:error widgets.example.com *".into()));
        assert!(!l.contains(&"rbac.handled-resources watch:error widgets.example.com a".into()));
    }

    #[test]
    fn unknown_handled_resources_need_nothing() {
        let n = needs(
            &run(ns(&["a"]), Peering::Standalone),
            None,
            "a",
            &PeeringCrds::default(),
        );
        assert!(!n.iter().any(|x| x.check == CheckId::RbacHandledResources));
    }

    // ---- findings ----

    fn target(namespace: &str, sa: &str) -> TargetEvidence {
        let mut d = Deployment::default();
        d.metadata.name = Some("op".into());
        d.metadata.namespace = Some(namespace.into());
        d.spec.template.spec = Some(PodSpec {
            service_account_name: Some(sa.into()),
            containers: vec![Container {
                name: "operator".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        TargetEvidence {
            deployment: d,
            ..Default::default()
        }
    }

    /// Evidence answering every need of `r` as allowed except `denied`.
    fn answered(r: &KopfRun, t: &TargetEvidence, denied: &[Permission]) -> RbacEvidence {
        let handled = t.handled.ready().map(Vec::as_slice);
        let n = needs(r, handled, target_namespace(t), &PeeringCrds::default());
        RbacEvidence {
            service_account: service_account(t),
            answers: permissions(&n)
                .into_iter()
                .map(|p| {
                    let ok = !denied.contains(&p);
                    (p, ok)
                })
                .collect(),
            bindings: vec![Binding {
                kind: BindingKind::ClusterRoleBinding,
                name: "op-ns".into(),
                role_kind: "ClusterRole".into(),
                role_name: "op-ns".into(),
                via: "ServiceAccount ns/op".into(),
                rules: vec![rule(&[CRD_GROUP], &[CRD_RESOURCE], &["get"])],
                role_missing: false,
                aggregated: false,
            }],
            peering_crds: PeeringCrds::default(),
        }
    }

    fn config() -> CheckConfig {
        CheckConfig {
            workload: Default::default(),
            event_repeats: 3,
            now: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    fn checks(f: &[Finding]) -> Vec<(CheckId, Severity)> {
        f.iter().map(|f| (f.check, f.severity)).collect()
    }

    #[test]
    fn all_granted_means_no_finding() {
        let mut t = target("ns", "op");
        t.handled = Gathered::Ready(vec![widget(true, true)]);
        let r = run(ns(&["ns"]), Peering::Standalone);
        t.rbac = Gathered::Ready(answered(&r, &t, &[]));
        assert_eq!(check(&t, &r, &config()), Vec::new());
    }

    #[test]
    fn missing_crd_list_is_an_error_with_the_rule_to_paste_and_the_explanation() {
        let mut t = target("ns", "op");
        let r = run(ns(&["ns"]), Peering::Standalone);
        let denied = [
            Permission::new("list", CRD_GROUP, CRD_RESOURCE, None),
            Permission::new("watch", CRD_GROUP, CRD_RESOURCE, None),
        ];
        t.rbac = Gathered::Ready(answered(&r, &t, &denied));
        let f = check(&t, &r, &config());
        assert_eq!(checks(&f), vec![(CheckId::RbacCrdScan, Severity::Error)]);
        let msg = &f[0].message;
        assert!(
            msg.starts_with("ServiceAccount ns/op may not list, watch customresourcedefinitions.apiextensions.k8s.io at cluster scope: kopf"),
            "{msg}"
        );
        assert!(
            msg.ends_with("Add to its ClusterRole (bound by a ClusterRoleBinding):\n- apiGroups: [apiextensions.k8s.io]\n  resources: [customresourcedefinitions]\n  verbs: [get, list, watch]"),
            "{msg}"
        );
        let ev = f[0].evidence.as_deref().unwrap_or("");
        assert!(
            ev.contains("ClusterRole op-ns (bound by ClusterRoleBinding op-ns) grants only [get]"),
            "{ev}"
        );
    }

    #[test]
    fn missing_crd_get_only_is_a_warning() {
        let mut t = target("ns", "op");
        let r = run(ns(&["ns"]), Peering::Standalone);
        let denied = [Permission::new("get", CRD_GROUP, CRD_RESOURCE, None)];
        t.rbac = Gathered::Ready(answered(&r, &t, &denied));
        assert_eq!(
            checks(&check(&t, &r, &config())),
            vec![(CheckId::RbacCrdScan, Severity::Warning)]
        );
    }

    #[test]
    fn events_patch_is_advice_only_when_create_is_granted() {
        let mut t = target("ns", "op");
        let r = run(ns(&["ns"]), Peering::Standalone);
        let patch = Permission::new("patch", "", "events", Some("ns"));
        let create = Permission::new("create", "", "events", Some("ns"));
        t.rbac = Gathered::Ready(answered(&r, &t, std::slice::from_ref(&patch)));
        let f = check(&t, &r, &config());
        assert_eq!(checks(&f), vec![(CheckId::RbacEventsPatch, Severity::Info)]);
        assert!(f[0].message.contains("kopf 1.45 only ever creates"));
        t.rbac = Gathered::Ready(answered(&r, &t, &[patch, create]));
        let f = check(&t, &r, &config());
        assert_eq!(checks(&f), vec![(CheckId::RbacEvents, Severity::Error)]);
        assert!(
            f[0].message.contains(
                "Add to its Role in namespace ns (bound by a RoleBinding):\n- apiGroups: [\"\"]\n  resources: [events]\n  verbs: [create, patch]"
            ),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn namespaces_severity_follows_patterns() {
        let denied = [Permission::new("watch", "", "namespaces", None)];
        for (scope, want) in [
            (ns(&["ns"]), Severity::Info),
            (ns(&["ns", "team-*"]), Severity::Error),
        ] {
            let mut t = target("ns", "op");
            let r = run(scope, Peering::Standalone);
            t.rbac = Gathered::Ready(answered(&r, &t, &denied));
            let f = check(&t, &r, &config());
            assert_eq!(checks(&f), vec![(CheckId::RbacNamespaces, want)]);
            assert!(f[0].message.contains("kopf's source wins"));
        }
    }

    #[test]
    fn handled_status_patch_names_the_source() {
        let mut t = target("ns", "op");
        t.handled = Gathered::Ready(vec![widget(true, true)]);
        let r = run(ns(&["ns"]), Peering::Standalone);
        let mut denied = Permission::new("patch", "example.com", "widgets", Some("ns"));
        denied.subresource = "status".into();
        t.rbac = Gathered::Ready(answered(&r, &t, &[denied]));
        let f = check(&t, &r, &config());
        assert_eq!(
            checks(&f),
            vec![(CheckId::RbacHandledResources, Severity::Error)]
        );
        assert!(
            f[0].message
                .contains("widgets.example.com/status in namespace ns")
        );
        assert!(f[0].message.contains("inferred as handled"));
        assert!(
            f[0].message
                .contains("resources: [widgets/status]\n  verbs: [patch]")
        );
    }

    #[test]
    fn over_privilege_cluster_admin_wildcards_and_secrets() {
        let mut t = target("ns", "op");
        let r = run(ns(&["ns"]), Peering::Standalone);
        let mut ev = answered(&r, &t, &[]);
        let bind = |kind: BindingKind, name: &str, rules: Vec<Rule>| Binding {
            kind,
            name: name.into(),
            role_kind: "ClusterRole".into(),
            role_name: name.into(),
            via: "Group system:serviceaccounts:ns".into(),
            rules,
            role_missing: false,
            aggregated: false,
        };
        ev.bindings = vec![
            bind(
                BindingKind::ClusterRoleBinding,
                "cluster-admin",
                vec![rule(&["*"], &["*"], &["*"])],
            ),
            bind(
                BindingKind::ClusterRoleBinding,
                "secrets-reader",
                vec![rule(&[""], &["secrets"], &["get", "list"])],
            ),
            // In one namespace only: not cluster-wide.
            bind(
                BindingKind::RoleBinding("ns".into()),
                "ns-secrets",
                vec![rule(&[""], &["secrets"], &["get"])],
            ),
            bind(
                BindingKind::ClusterRoleBinding,
                "fine",
                vec![rule(
                    &[CRD_GROUP],
                    &[CRD_RESOURCE],
                    &["get", "list", "watch"],
                )],
            ),
        ];
        t.rbac = Gathered::Ready(ev);
        let f = check(&t, &r, &config());
        assert_eq!(
            checks(&f),
            vec![
                (CheckId::RbacOverPrivileged, Severity::Warning),
                (CheckId::RbacOverPrivileged, Severity::Warning)
            ]
        );
        assert!(
            f[0].message.contains("cluster-admin: every verb"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("wildcard rules"));
        assert!(f[1].message.contains("cluster-wide get, list on secrets"));
    }

    fn log_record(line: &str) -> kopf_log::Record {
        kopf_log::records(line.as_bytes(), Default::default())
            .next()
            .and_then(Result::ok)
            .expect("one record")
    }

    #[test]
    fn correlated_with_live_log_lines() {
        let mut t = target("ns", "op");
        let r = run(ns(&["ns"]), Peering::Standalone);
        let denied = [
            Permission::new("list", CRD_GROUP, CRD_RESOURCE, None),
            Permission::new("create", "", "events", Some("ns")),
        ];
        t.rbac = Gathered::Ready(answered(&r, &t, &denied));
        let crd_line = r#"[2026-11-30 02:41:55,039] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: GET https://127.0.0.1:6443/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User "system:serviceaccount:ns:op" cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope', {})"#;
        let event_line = r#"[2026-11-30 02:41:56,039] kopf.objects         [WARNING ] [ns/alpha] Failed to post an event. Ignoring and continuing. Code: 403. Message: events is forbidden: User "system:serviceaccount:ns:op" cannot create resource "events" in API group "" in the namespace "ns"."#;
        t.logs = Gathered::Ready(LogEvidence {
            records: vec![log_record(crd_line), log_record(event_line)],
            ..Default::default()
        });
        let f = check(&t, &r, &config());
        let crd = f
            .iter()
            .find(|f| f.check == CheckId::RbacCrdScan)
            .expect("crd");
        assert!(crd.message.contains("failing now"), "{}", crd.message);
        assert!(
            crd.message.contains("Request attempt #1/9 failed"),
            "{}",
            crd.message
        );
        let ev = f
            .iter()
            .find(|f| f.check == CheckId::RbacEvents)
            .expect("events");
        assert!(
            ev.message.contains("Failed to post an event"),
            "{}",
            ev.message
        );
        // Without logs: the same finding, without the live part.
        t.logs = Gathered::NotGathered;
        let f = check(&t, &r, &config());
        assert!(f.iter().all(|f| !f.message.contains("failing now")));
    }
}

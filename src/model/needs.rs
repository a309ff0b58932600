//! Every permission kopf needs, derived from how it runs (scope, peering), the resources
//! it handles and its namespace. Pure: the gatherer asks the API server exactly these
//! (one SubjectAccessReview per distinct permission) and the RBAC checks compare the
//! answers with them. Each need says why kopf needs it, citing kopf's behaviour; one
//! function per check ID (`rbac.crd-scan` is [`crd_scan`]).

use super::handled::HandledResource;
use super::kopf_run::{KopfRun, Peering, Scope};
use super::rbac::{
    PEERING_CLUSTER, PEERING_GROUPS, PEERING_NAMESPACED, PeeringCrds, Permission, Verb,
};
use crate::catalog::{CheckId, Severity};
use std::collections::{BTreeMap, BTreeSet};

/// The API group of CustomResourceDefinitions.
pub(crate) const CRD_GROUP: &str = "apiextensions.k8s.io";
/// The plural of CustomResourceDefinitions.
pub(crate) const CRD_RESOURCE: &str = "customresourcedefinitions";

/// One rule kopf needs on one resource in one scope: the verbs to ask (each with the
/// severity when it is denied), the rule to paste, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Need {
    /// The check that reports it.
    pub(crate) check: CheckId,
    /// API group (empty for core).
    pub(crate) group: String,
    /// Plural resource.
    pub(crate) resource: String,
    /// Subresource (`status`) or empty.
    pub(crate) subresource: String,
    /// Namespace; `None` for cluster scope.
    pub(crate) namespace: Option<String>,
    /// The verbs asked, with the severity when denied.
    pub(crate) verbs: Vec<(Verb, Severity)>,
    /// The verbs of the rule to paste (a superset of `verbs`).
    pub(crate) rule_verbs: Vec<Verb>,
    /// Why kopf needs it, citing kopf's behaviour.
    pub(crate) why: String,
    /// How the scope was chosen when it is an approximation (patterns, cluster-wide).
    pub(crate) scope_note: Option<String>,
    /// Report only when this permission is granted (events patch is advice on top of create).
    pub(crate) only_if_granted: Option<Permission>,
}

impl Need {
    fn new(check: CheckId, group: &str, resource: &str, namespace: Option<&str>) -> Need {
        Need {
            check,
            group: group.into(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: namespace.map(str::to_string),
            verbs: Vec::new(),
            rule_verbs: Vec::new(),
            why: String::new(),
            scope_note: None,
            only_if_granted: None,
        }
    }

    /// The permission for one of its verbs.
    pub(crate) fn permission(&self, verb: Verb) -> Permission {
        Permission {
            verb,
            group: self.group.clone(),
            resource: self.resource.clone(),
            subresource: self.subresource.clone(),
            namespace: self.namespace.clone(),
        }
    }

    /// The permissions to ask for this need.
    pub(crate) fn permissions(&self) -> impl Iterator<Item = Permission> + '_ {
        self.verbs
            .iter()
            .map(|(v, _)| self.permission(*v))
            .chain(self.only_if_granted.iter().cloned())
    }
}

/// Every distinct permission behind a set of needs: what the gatherer asks (one
/// SubjectAccessReview each).
pub(crate) fn permissions(needs: &[Need]) -> BTreeSet<Permission> {
    needs.iter().flat_map(Need::permissions).collect()
}

/// What kopf 1.45 does on every resource it serves, its peering objects included: it
/// lists, watches and patches them (`get` is in kopf's documented RBAC).
const SERVED_VERBS: [Verb; 4] = [Verb::Get, Verb::List, Verb::Watch, Verb::Patch];

/// Where a permission is needed: once cluster-wide, or in every served namespace with
/// its note.
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
/// in for something that cannot (patterns); empty for cluster-wide.
fn served_namespaces(run: &KopfRun, own: &str) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    if run.scope == Scope::Unknown {
        out.insert(
            own.to_string(),
            Some(" (the command line does not show kopf's namespaces: checked in the operator's own namespace)".into()),
        );
        for name in run.served_names() {
            out.entry(name).or_insert_with(|| {
                Some(" (the command line does not show kopf's namespaces: its log names objects in this one)".into())
            });
        }
    }
    if let Scope::Namespaced(values) = &run.scope {
        let specific = run.scope.specific_names();
        for name in &specific {
            out.insert(name.clone(), None);
        }
        for pattern in values.iter().filter(|v| !specific.contains(v)) {
            out.entry(own.to_string()).or_insert_with(|| {
                Some(format!(
                    " (-n uses the pattern {pattern:?}: checked in the operator's own namespace)"
                ))
            });
        }
    }
    out
}

/// The namespaces whose RoleBindings can change what an audit of this run finds: the
/// operator's own and those it serves by name. Every namespaced permission it needs lies
/// in one of them (a cluster-wide run, or one with `-n` patterns, is checked in its own
/// namespace and at cluster scope, which no RoleBinding grants), and the bindings that
/// explain the answers are read there; a RoleBinding anywhere else grants it nothing
/// this audit asks about.
pub(crate) fn binding_namespaces(run: &KopfRun, own_namespace: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::from([own_namespace.to_string()]);
    out.extend(run.served_names());
    out
}

/// Every permission kopf 1.45 needs for a run mode, its handled resources (`None`: not
/// known, so none are needed), its own namespace and the peering CRDs that exist.
pub(crate) fn needs(
    run: &KopfRun,
    handled: Option<&[HandledResource]>,
    own_namespace: &str,
    peering_crds: &PeeringCrds,
) -> Vec<Need> {
    let handled = handled.unwrap_or(&[]);
    let served = served_namespaces(run, own_namespace);
    let mut out = vec![crd_scan()];
    out.extend(events(run, handled, own_namespace, &served));
    out.extend(namespaces(run));
    out.extend(peering(run, peering_crds, &served));
    out.extend(handled_resources(run, handled, &served));
    out
}

/// `rbac.crd-scan`: kopf lists and watches CRDs, and never gets one: it learns the
/// resources it serves from API discovery (`_cogs/clients/scanning.py`) and then
/// watches CRDs for changes (`_core/reactor/observation.py` `resource_observer`, a
/// list followed by a watch). kopf's documented RBAC grants exactly `[list, watch]`
/// (`docs/deployment-rbac.yaml`, 1.37 to 1.45).
fn crd_scan() -> Need {
    let mut crd = Need::new(CheckId::RbacCrdScan, CRD_GROUP, CRD_RESOURCE, None);
    crd.verbs = vec![
        (Verb::List, Severity::Error),
        (Verb::Watch, Severity::Error),
    ];
    crd.rule_verbs = vec![Verb::List, Verb::Watch];
    crd.why = "kopf lists and watches CRDs to notice the resources it serves appear and change (kopf 1.45 retries for about 54 s, then runs on blind to changes; older versions crash-loop); it never gets a single CRD, so kopf's documented RBAC grants only list and watch".into();
    crd
}

/// `rbac.events` and `rbac.events-patch`: kopf creates Events where it posts them.
fn events(
    run: &KopfRun,
    handled: &[HandledResource],
    own_namespace: &str,
    served: &BTreeMap<String, Option<String>>,
) -> Vec<Need> {
    let mut event_namespaces: BTreeMap<String, Option<String>> = if run.scope.is_cluster_wide() {
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
                    " (kopf posts the events of cluster-scoped objects into the namespace its login names, its own in a cluster; into default when the login names none, as the kubernetes client's does)"
                        .into(),
                )
            });
    }
    let mut out = Vec::new();
    for (ns, note) in &event_namespaces {
        let mut create = Need::new(CheckId::RbacEvents, "", "events", Some(ns));
        create.verbs = vec![(Verb::Create, Severity::Error)];
        create.rule_verbs = vec![Verb::Create, Verb::Patch];
        create.why = "kopf posts its events with create, and a denied POST is only logged as a warning (kopf 1.45 `_cogs/clients/events.py`), so events are silently absent".into();
        create.scope_note = note.clone();
        let patch = events_patch(&create);
        out.push(create);
        out.push(patch);
    }
    out
}

/// `rbac.events-patch`: advice on top of a granted create.
fn events_patch(create: &Need) -> Need {
    let mut patch = Need::new(
        CheckId::RbacEventsPatch,
        "",
        "events",
        create.namespace.as_deref(),
    );
    patch.verbs = vec![(Verb::Patch, Severity::Info)];
    patch.rule_verbs = vec![Verb::Create, Verb::Patch];
    patch.why = "RBAC templates for kopf often grant create and patch on events, but kopf 1.45 only ever creates them (generateName, never patched), so this is advice, not a fault".into();
    patch.scope_note = create.scope_note.clone();
    patch.only_if_granted = Some(create.permission(Verb::Create));
    patch
}

/// `rbac.namespaces`: kopf lists and watches namespaces only in namespaced mode.
fn namespaces(run: &KopfRun) -> Option<Need> {
    let Scope::Namespaced(values) = &run.scope else {
        return None;
    };
    let patterns = run.scope.has_patterns();
    let severity = if patterns {
        Severity::Error
    } else {
        Severity::Warning
    };
    let mut need = Need::new(CheckId::RbacNamespaces, "", "namespaces", None);
    need.verbs = vec![(Verb::List, severity), (Verb::Watch, severity)];
    need.rule_verbs = vec![Verb::List, Verb::Watch];
    let fallback = "without it, kopf 1.45 retries the list 9 times and then the watch 9 times at every start (about 2 minutes and 18 ERROR lines), falls back to the exact -n names, and never notices a namespace created or deleted later";
    need.why = if patterns {
        format!(
            "kopf 1.45 lists and watches namespaces in namespaced mode to resolve the -n patterns {}; {fallback}, so it serves no namespace a pattern matches (cluster-wide, -A, it never lists namespaces: `_core/reactor/observation.py`)",
            values.join(", ")
        )
    } else {
        format!(
            "kopf 1.45 lists and watches namespaces in namespaced mode; {fallback} (cluster-wide, -A, it never lists namespaces: `_core/reactor/observation.py`)"
        )
    };
    Some(need)
}

/// `rbac.peering`: unless `--standalone`, kopf lists, watches and patches its peering
/// objects (with neither flag, only when the peering CRD exists).
fn peering(
    run: &KopfRun,
    crds: &PeeringCrds,
    served: &BTreeMap<String, Option<String>>,
) -> Vec<Need> {
    let cluster_wide = run.scope.is_cluster_wide();
    let plural = if cluster_wide {
        PEERING_CLUSTER
    } else {
        PEERING_NAMESPACED
    };
    // With the scope unknown, so is the peering resource kopf uses (`kopfpeerings` in
    // namespaced mode, `clusterkopfpeerings` cluster-wide): nothing is asked.
    if run.scope == Scope::Unknown {
        return Vec::new();
    }
    let present = PEERING_GROUPS.iter().find(|g| crds.has(plural, g));
    let group_and_reason = match (&run.peering, present) {
        (Peering::Standalone | Peering::Unknown, _) | (Peering::Auto, None) => return Vec::new(),
        (Peering::Auto, Some(g)) => (
            *g,
            format!("peering is on: --standalone is not given and the CRD {plural}.{g} exists"),
        ),
        (Peering::Named(name), g) => (
            g.copied().unwrap_or(PEERING_GROUPS[0]),
            format!("peering is mandatory: --peering {name}"),
        ),
    };
    let (group, reason) = group_and_reason;
    scopes(cluster_wide, served)
        .into_iter()
        .map(|(ns, note)| {
            let mut p = Need::new(CheckId::RbacPeering, group, plural, ns.as_deref());
            p.verbs = SERVED_VERBS.iter().map(|v| (*v, Severity::Error)).collect();
            p.rule_verbs = SERVED_VERBS.to_vec();
            p.why = format!(
                "{reason}; kopf 1.45 lists, watches and patches its peering objects (get is in kopf's documented RBAC), or peering fails. Alternatively run with --standalone and one replica"
            );
            p.scope_note = note;
            p
        })
        .collect()
}

/// `rbac.handled-resources`: get, list, watch and patch where each handled resource is
/// served, and `/status` patch when its CRD has a status subresource.
fn handled_resources(
    run: &KopfRun,
    handled: &[HandledResource],
    served: &BTreeMap<String, Option<String>>,
) -> Vec<Need> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for h in handled {
        if !seen.insert((h.group.clone(), h.plural.clone())) {
            continue;
        }
        let source = h.source.describe();
        let status = h.crd.as_ref().is_some_and(|c| c.status_subresource);
        for (ns, note) in scopes(run.scope.is_cluster_wide() || !h.namespaced, served) {
            let mut r = Need::new(
                CheckId::RbacHandledResources,
                &h.group,
                &h.plural,
                ns.as_deref(),
            );
            r.verbs = SERVED_VERBS.iter().map(|v| (*v, Severity::Error)).collect();
            r.rule_verbs = SERVED_VERBS.to_vec();
            r.why = format!(
                "kopf 1.45 lists, watches and patches every resource it serves (get is in kopf's documented RBAC), else its handlers never fire ({source})"
            );
            r.scope_note = note.clone();
            out.push(r);
            if status {
                let mut s = r_status(h, ns.as_deref(), source);
                s.scope_note = note;
                out.push(s);
            }
        }
    }
    out
}

fn r_status(h: &HandledResource, namespace: Option<&str>, source: &str) -> Need {
    let mut s = Need::new(
        CheckId::RbacHandledResources,
        &h.group,
        &h.plural,
        namespace,
    );
    s.subresource = "status".into();
    s.verbs = vec![(Verb::Patch, Severity::Error)];
    s.rule_verbs = vec![Verb::Patch];
    s.why = format!(
        "its CRD has a status subresource, so kopf 1.45 patches {}/status for its progress and handler results, which are lost otherwise ({source})",
        h.plural
    );
    s
}

#[cfg(test)]
mod tests;

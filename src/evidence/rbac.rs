//! What the operator's ServiceAccount may do, as the API server answered
//! (SubjectAccessReviews), and the RBAC objects that reach it (read only to explain the
//! answers and to find over-privilege; the answers themselves are never re-computed).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The ServiceAccount the operator's pods run as; findings name it and reviews ask as it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceAccountRef {
    /// Its namespace (the Deployment's).
    pub namespace: String,
    /// Its name (`default` when the pod template names none).
    pub name: String,
}

impl ServiceAccountRef {
    /// The user name the API server authenticates its token as.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// The groups every ServiceAccount token carries, so that bindings to groups count.
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{}", self.namespace),
            "system:authenticated".into(),
        ]
    }
}

impl fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// One permission as a SubjectAccessReview asks it: the unit of asking, deduplicating and
/// caching.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Permission {
    /// The verb (`list`, `create`, ...).
    pub verb: String,
    /// The API group (empty for core).
    pub group: String,
    /// The plural resource.
    pub resource: String,
    /// The subresource (`status`), or empty.
    pub subresource: String,
    /// The namespace; `None` asks at cluster scope (all namespaces for namespaced kinds).
    pub namespace: Option<String>,
}

impl Permission {
    /// A permission on a resource without subresource.
    pub fn new(verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> Permission {
        Permission {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: namespace.map(str::to_string),
        }
    }

    /// `resource.group` (`events` for core), with `/subresource` when there is one: how
    /// messages name what is denied.
    pub fn resource_name(&self) -> String {
        resource_name(&self.group, &self.resource, &self.subresource)
    }

    /// `at cluster scope` or `in namespace NS`.
    pub fn scope_text(&self) -> String {
        match &self.namespace {
            None => "at cluster scope".into(),
            Some(ns) => format!("in namespace {ns}"),
        }
    }
}

/// `resource.group` (`events` for core), with `/subresource` when there is one.
pub fn resource_name(group: &str, resource: &str, subresource: &str) -> String {
    let mut out = resource.to_string();
    if !group.is_empty() {
        out.push('.');
        out.push_str(group);
    }
    if !subresource.is_empty() {
        out.push('/');
        out.push_str(subresource);
    }
    out
}

/// One RBAC rule on resources (non-resource URL rules are dropped when read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources` (may include `plural/subresource`).
    pub resources: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
    /// `resourceNames`: when set, the rule covers only those objects.
    pub resource_names: Vec<String>,
}

impl Rule {
    /// Whether the rule covers the group and `resource[/subresource]` (wildcards included),
    /// whatever the verbs; rules restricted by `resourceNames` cover no collection.
    pub fn covers_resource(&self, group: &str, resource: &str, subresource: &str) -> bool {
        if !self.resource_names.is_empty() {
            return false;
        }
        let full = if subresource.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{subresource}")
        };
        let group_ok = self.api_groups.iter().any(|g| g == "*" || g == group);
        let resource_ok = self.resources.iter().any(|r| {
            r == "*" || *r == full || (!subresource.is_empty() && *r == format!("*/{subresource}"))
        });
        group_ok && resource_ok
    }

    /// Whether the rule grants `verb` (or `*`).
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb)
    }

    /// The rule in one line of YAML flow style, for evidence.
    pub fn flow_yaml(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|s| yaml_word(s))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!(
            "apiGroups: [{}], resources: [{}], verbs: [{}]",
            list(&self.api_groups),
            list(&self.resources),
            list(&self.verbs)
        );
        if !self.resource_names.is_empty() {
            out.push_str(&format!(
                ", resourceNames: [{}]",
                list(&self.resource_names)
            ));
        }
        out
    }
}

/// A word as YAML writes it in flow style: quoted when empty or when it would not parse
/// as a plain string (`""`, `"*"`).
pub fn yaml_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/'));
    if plain {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}

/// How a binding is scoped.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BindingKind {
    /// A ClusterRoleBinding: its role applies in every namespace and at cluster scope.
    ClusterRoleBinding,
    /// A RoleBinding in this namespace: its role applies there only.
    RoleBinding(String),
}

/// A binding that reaches the ServiceAccount (directly, as its user, or through one of
/// its groups), with the rules of the role it binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// ClusterRoleBinding, or RoleBinding and its namespace.
    pub kind: BindingKind,
    /// The binding's name.
    pub name: String,
    /// `Role` or `ClusterRole`.
    pub role_kind: String,
    /// The bound role's name.
    pub role_name: String,
    /// How the binding reaches the ServiceAccount (`ServiceAccount ns/name`,
    /// `Group system:serviceaccounts:ns`, ...).
    pub via: String,
    /// The role's resource rules (after aggregation, for aggregated ClusterRoles).
    pub rules: Vec<Rule>,
    /// The bound role does not exist: the binding grants nothing.
    pub role_missing: bool,
    /// The ClusterRole is aggregated (its rules are filled from labelled ClusterRoles).
    pub aggregated: bool,
}

impl Binding {
    /// Whether the binding's rules apply to a permission asked in `namespace`
    /// (`None`: cluster scope).
    pub fn applies_in(&self, namespace: Option<&str>) -> bool {
        match (&self.kind, namespace) {
            (BindingKind::ClusterRoleBinding, _) => true,
            (BindingKind::RoleBinding(ns), Some(want)) => ns == want,
            (BindingKind::RoleBinding(_), None) => false,
        }
    }

    /// `ClusterRoleBinding NAME` or `RoleBinding NS/NAME`.
    pub fn describe(&self) -> String {
        match &self.kind {
            BindingKind::ClusterRoleBinding => format!("ClusterRoleBinding {}", self.name),
            BindingKind::RoleBinding(ns) => format!("RoleBinding {ns}/{}", self.name),
        }
    }

    /// `ClusterRole NAME` or `Role NAME`, marked when aggregated or missing.
    pub fn describe_role(&self) -> String {
        let mut out = format!("{} {}", self.role_kind, self.role_name);
        if self.aggregated {
            out.push_str(" (aggregated)");
        }
        if self.role_missing {
            out.push_str(" (missing)");
        }
        out
    }
}

/// Which of kopf's peering CRDs exist, by CRD name (`kopfpeerings.kopf.dev`, ...): kopf
/// peers by default only when the CRD exists, and uses `zalando.org` when only that one does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeeringCrds {
    /// The names of the peering CRDs that exist.
    pub present: BTreeSet<String>,
}

/// The API groups kopf accepts for its peering resources, preferred first.
pub const PEERING_GROUPS: [&str; 2] = ["kopf.dev", "zalando.org"];
/// The namespaced peering resource (`-n` mode).
pub const PEERING_NAMESPACED: &str = "kopfpeerings";
/// The cluster-scoped peering resource (`-A` mode).
pub const PEERING_CLUSTER: &str = "clusterkopfpeerings";

impl PeeringCrds {
    /// Whether `plural.group` exists.
    pub fn has(&self, plural: &str, group: &str) -> bool {
        self.present.contains(&format!("{plural}.{group}"))
    }

    /// The CRD names worth looking up.
    pub fn candidates() -> Vec<String> {
        PEERING_GROUPS
            .iter()
            .flat_map(|g| {
                [PEERING_NAMESPACED, PEERING_CLUSTER]
                    .iter()
                    .map(move |p| format!("{p}.{g}"))
            })
            .collect()
    }
}

/// The RBAC evidence of one target (filled by the RBAC gatherer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RbacEvidence {
    /// The ServiceAccount asked about.
    pub service_account: ServiceAccountRef,
    /// The API server's answer to every permission the checks need (true: allowed).
    pub answers: BTreeMap<Permission, bool>,
    /// The bindings that reach the ServiceAccount, sorted, with their roles' rules.
    pub bindings: Vec<Binding>,
    /// kopf's peering CRDs that exist (read only when peering is not `--standalone`).
    pub peering_crds: PeeringCrds,
}

impl RbacEvidence {
    /// The answer for a permission; `None` when it was not asked.
    pub fn allowed(&self, permission: &Permission) -> Option<bool> {
        self.answers.get(permission).copied()
    }
}

/// A rule on `groups`/`resources` with `verbs` and no resource names: unit
/// tests of the RBAC evidence, gathering and checks build many.
#[cfg(test)]
pub(crate) fn test_rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Rule {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
    Rule {
        api_groups: v(groups),
        resources: v(resources),
        verbs: v(verbs),
        resource_names: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_rule as rule;

    #[test]
    fn rules_cover_resources_and_subresources() {
        let r = rule(&["g"], &["widgets", "widgets/status"], &["get"]);
        assert!(r.covers_resource("g", "widgets", ""));
        assert!(r.covers_resource("g", "widgets", "status"));
        assert!(!r.covers_resource("h", "widgets", ""));
        assert!(!r.covers_resource("g", "gadgets", ""));
        let star = rule(&["*"], &["*"], &["*"]);
        assert!(star.covers_resource("", "secrets", ""));
        assert!(star.has_verb("patch"));
        assert_eq!(
            star.flow_yaml(),
            r#"apiGroups: ["*"], resources: ["*"], verbs: ["*"]"#
        );
        assert_eq!(yaml_word(""), r#""""#);
    }

    #[test]
    fn service_account_identity() {
        let sa = ServiceAccountRef {
            namespace: "ns".into(),
            name: "op".into(),
        };
        assert_eq!(sa.username(), "system:serviceaccount:ns:op");
        assert!(
            sa.groups()
                .contains(&"system:serviceaccounts:ns".to_string())
        );
        assert_eq!(
            Permission::new(
                "list",
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                None
            )
            .resource_name(),
            "customresourcedefinitions.apiextensions.k8s.io"
        );
    }
}

//! What the operator's ServiceAccount may do, as the API server answered
//! (SubjectAccessReviews), and the RBAC objects that reach it (read only to explain the
//! answers and to find over-privilege; the answers themselves are never re-computed).

mod resolve;

pub(crate) use resolve::{
    BoundRole, Reached, aggregation_selectors, bound_role, reached, reaches, rule_of, rules_of,
    service_accounts, valid_aggregation_selectors,
};

use std::collections::BTreeSet;
use std::fmt;

/// The group every ServiceAccount token carries.
pub(crate) const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The group every authenticated user carries.
pub(crate) const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// The ServiceAccount the operator's pods run as; findings name it and reviews ask as it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ServiceAccountRef {
    /// Its namespace (the Deployment's).
    pub(crate) namespace: String,
    /// Its name (`default` when the pod template names none).
    pub(crate) name: String,
}

impl ServiceAccountRef {
    /// The ServiceAccount a pod runs as when its template names none.
    pub(crate) const DEFAULT: &'static str = "default";

    /// The ServiceAccount a Deployment's pods run as (`default` when the template names
    /// none).
    pub(crate) fn of_deployment(
        deployment: &k8s_openapi::api::apps::v1::Deployment,
    ) -> ServiceAccountRef {
        let name = deployment
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or(Self::DEFAULT);
        ServiceAccountRef {
            namespace: deployment.metadata.namespace.clone().unwrap_or_default(),
            name: name.to_string(),
        }
    }

    /// Whether this is its namespace's `default` ServiceAccount.
    pub(crate) fn is_default(&self) -> bool {
        self.name == Self::DEFAULT
    }

    /// The user name the API server authenticates its token as.
    pub(crate) fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// The groups every ServiceAccount token carries, so that bindings to groups count.
    pub(crate) fn groups(&self) -> Vec<String> {
        vec![
            SERVICE_ACCOUNTS_GROUP.into(),
            format!("{SERVICE_ACCOUNTS_GROUP}:{}", self.namespace),
            AUTHENTICATED_GROUP.into(),
        ]
    }
}

impl fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The verbs kopf needs, as RBAC spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Verb {
    /// `get`.
    Get,
    /// `list`.
    List,
    /// `watch`.
    Watch,
    /// `create`.
    Create,
    /// `patch`.
    Patch,
}

impl Verb {
    /// The word in rules and SubjectAccessReviews.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Patch => "patch",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One permission as a SubjectAccessReview asks it: the unit of asking, deduplicating and
/// caching.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Permission {
    /// The verb.
    pub(crate) verb: Verb,
    /// The API group (empty for core).
    pub(crate) group: String,
    /// The plural resource.
    pub(crate) resource: String,
    /// The subresource (`status`), or empty.
    pub(crate) subresource: String,
    /// The namespace; `None` asks at cluster scope (all namespaces for namespaced kinds).
    pub(crate) namespace: Option<String>,
}

impl Permission {
    /// A permission on a resource without subresource.
    #[cfg(test)]
    pub(crate) fn new(
        verb: Verb,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Permission {
        Permission {
            verb,
            group: group.into(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: namespace.map(str::to_string),
        }
    }

    /// `resource.group` (`events` for core), with `/subresource` when there is one: how
    /// messages name what is denied.
    pub(crate) fn resource_name(&self) -> String {
        resource_name(&self.group, &self.resource, &self.subresource)
    }

    /// `at cluster scope` or `in namespace NS`.
    pub(crate) fn scope_text(&self) -> String {
        match &self.namespace {
            None => "at cluster scope".into(),
            Some(ns) => format!("in namespace {ns}"),
        }
    }
}

/// `resource.group` (`events` for core), with `/subresource` when there is one.
pub(crate) fn resource_name(group: &str, resource: &str, subresource: &str) -> String {
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
pub(crate) struct Rule {
    /// `apiGroups`.
    pub(crate) api_groups: Vec<String>,
    /// `resources` (may include `plural/subresource`).
    pub(crate) resources: Vec<String>,
    /// `verbs`.
    pub(crate) verbs: Vec<String>,
    /// `resourceNames`: when set, the rule covers only those objects.
    pub(crate) resource_names: Vec<String>,
}

impl Rule {
    /// Whether the rule covers the group and `resource[/subresource]` (wildcards included),
    /// whatever the verbs; rules restricted by `resourceNames` cover no collection.
    pub(crate) fn covers_resource(&self, group: &str, resource: &str, subresource: &str) -> bool {
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
    pub(crate) fn has_verb(&self, verb: Verb) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb.as_str())
    }

    /// Whether the rule grants every verb or covers every resource.
    pub(crate) fn has_wildcard(&self) -> bool {
        self.verbs.iter().any(|v| v == "*") || self.resources.iter().any(|x| x == "*")
    }

    /// The read verbs (get, list, watch) the rule grants on core secrets: what a
    /// cluster-wide binding must not give an operator that handles no secrets.
    pub(crate) fn secret_reads(&self) -> Vec<Verb> {
        if !self.covers_resource("", "secrets", "") {
            return Vec::new();
        }
        [Verb::Get, Verb::List, Verb::Watch]
            .into_iter()
            .filter(|v| self.has_verb(*v))
            .collect()
    }

    /// Whether the rule grants more than kopf needs under a binding of `kind`: a
    /// wildcard, or, bound cluster-wide, read of secrets (`rbac.over-privileged`).
    pub(crate) fn over_grants(&self, kind: &BindingKind) -> bool {
        self.has_wildcard()
            || (*kind == BindingKind::ClusterRoleBinding && !self.secret_reads().is_empty())
    }

    /// The rule in one line of YAML flow style, for evidence.
    pub(crate) fn flow_yaml(&self) -> String {
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
pub(crate) fn yaml_word(s: &str) -> String {
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
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum BindingKind {
    /// A ClusterRoleBinding: its role applies in every namespace and at cluster scope.
    ClusterRoleBinding,
    /// A RoleBinding in this namespace: its role applies there only.
    RoleBinding(String),
}

/// The kind of a bound role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RoleKind {
    /// A Role (namespaced; only a RoleBinding in its namespace can bind it).
    Role,
    /// A ClusterRole.
    ClusterRole,
}

impl RoleKind {
    /// Reads a `roleRef.kind`; `None` for anything the API server would refuse.
    pub(crate) fn parse(kind: &str) -> Option<RoleKind> {
        match kind {
            "Role" => Some(RoleKind::Role),
            "ClusterRole" => Some(RoleKind::ClusterRole),
            _ => None,
        }
    }

    /// The kind as written.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RoleKind::Role => "Role",
            RoleKind::ClusterRole => "ClusterRole",
        }
    }
}

/// The ClusterRole that grants everything.
pub(crate) const CLUSTER_ADMIN: &str = "cluster-admin";

/// How a binding's subject reaches the ServiceAccount.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Subject {
    /// As itself.
    ServiceAccount(ServiceAccountRef),
    /// As its user name (`system:serviceaccount:NS:NAME`).
    User(String),
    /// As one of its groups.
    Group(String),
}

impl Subject {
    /// Whether the subject is every ServiceAccount or every authenticated user: the
    /// cluster's default bindings, not bindings made for this operator.
    pub(crate) fn is_broad(&self) -> bool {
        matches!(self, Subject::Group(g) if g == SERVICE_ACCOUNTS_GROUP || g == AUTHENTICATED_GROUP)
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::ServiceAccount(sa) => write!(f, "ServiceAccount {sa}"),
            Subject::User(u) => write!(f, "User {u}"),
            Subject::Group(g) => write!(f, "Group {g}"),
        }
    }
}

/// A binding that reaches the ServiceAccount (directly, as its user, or through one of
/// its groups), with the rules of the role it binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Binding {
    /// ClusterRoleBinding, or RoleBinding and its namespace.
    pub(crate) kind: BindingKind,
    /// The binding's name.
    pub(crate) name: String,
    /// `Role` or `ClusterRole`; `None` for a roleRef of another kind (it grants nothing).
    pub(crate) role_kind: Option<RoleKind>,
    /// The bound role's name.
    pub(crate) role_name: String,
    /// How the binding reaches the ServiceAccount.
    pub(crate) via: Subject,
    /// The role's resource rules (after aggregation, for aggregated ClusterRoles).
    pub(crate) rules: Vec<Rule>,
    /// The bound role does not exist: the binding grants nothing.
    pub(crate) role_missing: bool,
    /// The ClusterRole is aggregated (its rules are filled from labelled ClusterRoles).
    pub(crate) aggregated: bool,
}

impl Binding {
    /// Whether the binding's rules apply to a permission asked in `namespace`
    /// (`None`: cluster scope).
    pub(crate) fn applies_in(&self, namespace: Option<&str>) -> bool {
        match (&self.kind, namespace) {
            (BindingKind::ClusterRoleBinding, _) => true,
            (BindingKind::RoleBinding(ns), Some(want)) => ns == want,
            (BindingKind::RoleBinding(_), None) => false,
        }
    }

    /// `ClusterRoleBinding NAME` or `RoleBinding NS/NAME`.
    pub(crate) fn describe(&self) -> String {
        match &self.kind {
            BindingKind::ClusterRoleBinding => format!("ClusterRoleBinding {}", self.name),
            BindingKind::RoleBinding(ns) => format!("RoleBinding {ns}/{}", self.name),
        }
    }

    /// Whether it binds cluster-admin.
    pub(crate) fn is_cluster_admin(&self) -> bool {
        self.role_kind == Some(RoleKind::ClusterRole) && self.role_name == CLUSTER_ADMIN
    }

    /// `ClusterRole NAME` or `Role NAME`, marked when aggregated or missing.
    pub(crate) fn describe_role(&self) -> String {
        let kind = self.role_kind.map_or("role", RoleKind::as_str);
        let mut out = format!("{kind} {}", self.role_name);
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
pub(crate) struct PeeringCrds {
    /// The names of the peering CRDs that exist.
    pub(crate) present: BTreeSet<String>,
}

/// The API groups kopf accepts for its peering resources, preferred first.
pub(crate) const PEERING_GROUPS: [&str; 2] = ["kopf.dev", "zalando.org"];
/// The namespaced peering resource (`-n` mode).
pub(crate) const PEERING_NAMESPACED: &str = "kopfpeerings";
/// The cluster-scoped peering resource (`-A` mode).
pub(crate) const PEERING_CLUSTER: &str = "clusterkopfpeerings";

impl PeeringCrds {
    /// Whether `plural.group` exists.
    pub(crate) fn has(&self, plural: &str, group: &str) -> bool {
        self.present.contains(&format!("{plural}.{group}"))
    }

    /// The CRD names worth looking up.
    pub(crate) fn candidates() -> Vec<String> {
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
mod tests;

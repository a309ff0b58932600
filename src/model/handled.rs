//! The resources an operator handles, as the auditor learned them: where each came from
//! and what its CRD says about status storage.

/// Where a handled resource was learned from; findings say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum HandledSource {
    /// `spec.handledResources`.
    Spec,
    /// A custom resource the operator's ServiceAccount is granted watch on.
    RbacWatch,
    /// A custom resource the operator's rules name with other verbs (get, patch...).
    RbacRule,
    /// A custom resource the operator's own log names (a denial, an unresolved resource).
    Log,
    /// A resource whose objects kopf posted Events about, and that the operator's rules
    /// let it watch (learned when its rules are wildcards or name core kinds only).
    Events,
    /// A kopf handler in the operator's Python source names it (`kopf-audit lint`).
    Source,
    /// A resource whose objects kopf's JSON log records name (their `object`'s
    /// `apiVersion` and `kind`), and that the operator's rules let it watch (learned
    /// when its rules are wildcards or name core kinds only).
    LogObjects,
}

impl HandledSource {
    /// Where it was learned, in a few words (for status).
    pub(crate) fn label(self) -> &'static str {
        match self {
            HandledSource::Spec => "spec.handledResources",
            HandledSource::RbacWatch | HandledSource::RbacRule => "RBAC rules",
            HandledSource::Log => "the operator's log",
            HandledSource::Events => "kopf's Events",
            HandledSource::Source => "the source's handlers",
            HandledSource::LogObjects => "kopf's JSON log",
        }
    }

    /// How a message says where the resource was learned from.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            HandledSource::Spec => "it is listed in spec.handledResources",
            HandledSource::RbacWatch => {
                "it is inferred as handled: a custom resource its RBAC grants watch on"
            }
            HandledSource::RbacRule => {
                "it is inferred as handled: a custom resource its RBAC rules name"
            }
            HandledSource::Log => {
                "it is inferred as handled: the operator's own log names it (kopf tried to serve it)"
            }
            HandledSource::Events => {
                "it is inferred as handled: kopf posted Events about its objects, and the operator's RBAC lets it watch them"
            }
            HandledSource::Source => "a kopf handler in the operator's source names it",
            HandledSource::LogObjects => {
                "it is inferred as handled: kopf's JSON log records name its objects, and the operator's RBAC lets it watch them"
            }
        }
    }
}

/// One resource the operator handles, with what its CRD says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HandledResource {
    /// API group (empty for core).
    pub(crate) group: String,
    /// API version.
    pub(crate) version: String,
    /// Plural name.
    pub(crate) plural: String,
    /// Kind, when known (from the CRD or discovery).
    pub(crate) kind: Option<String>,
    /// Whether the resource is namespaced.
    pub(crate) namespaced: bool,
    /// From its CRD, when it is a custom resource.
    pub(crate) crd: Option<CrdInfo>,
    /// Where this entry came from.
    pub(crate) source: HandledSource,
}

impl HandledResource {
    /// Whether an object of this group and kind is of this resource.
    pub(crate) fn is_kind(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind.as_deref() == Some(kind)
    }

    /// Whether this is core Secrets, whose objects the auditor never reads: they carry
    /// credentials and data, whatever kopf left on them.
    pub(crate) fn is_secrets(&self) -> bool {
        self.group.is_empty() && self.plural == "secrets"
    }
}

/// What a handled resource's CRD says about status storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CrdInfo {
    /// The CRD's name (`plural.group`).
    pub(crate) name: String,
    /// The served version has a status subresource.
    pub(crate) status_subresource: bool,
    /// The served version's schema keeps what kopf writes into status: `status` (or
    /// the whole object) preserves unknown fields or takes any key, or `status.kopf`,
    /// kopf's own storage, does.
    pub(crate) status_preserves_unknown_fields: bool,
}

//! The `ClusterKopfAudit` custom resource: a cluster admin's request to audit every kopf
//! operator in scope. Its controller discovers the operators and keeps one generated
//! KopfAudit per operator in the operator's namespace, so that dashboards, alerts,
//! Argo CD and `kubectl wait` work for discovered operators as for declared ones.
//!
//! It is cluster-scoped, so only whoever may create cluster-scoped objects of this
//! group (a cluster admin, by RBAC) can ask for it: that is why its controller reads
//! Deployments, pods and logs across namespaces without `--allow-cross-namespace`.

use super::{
    CheckSelection, DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, GO_DURATION_PATTERN, LogsConfig,
    Thresholds, interval_rule,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which kopf operators to audit across the cluster, and the settings their audits get.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "kopfaudit.dev",
    version = "v1alpha1",
    kind = "ClusterKopfAudit",
    status = "ClusterKopfAuditStatus",
    doc = "ClusterKopfAudit discovers every Python operator written with kopf among the Deployments of the selected namespaces and keeps one KopfAudit per operator in the operator's namespace, owned by it, labelled kopfaudit.dev/cluster-audit and carrying spec.defaults. A KopfAudit written elsewhere for the same Deployment replaces the generated one only when the auditor runs it and, as spec.declaredAudits says, it audits no less than spec.defaults. Its status counts the operators discovered, compliant and non-compliant, and lists the worst offenders.",
    shortname = "cka",
    printcolumn = r#"{"name":"Ready","type":"string","description":"The Ready condition: discovery ran for the current generation","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","description":"The Ready condition's reason: why discovery is stalled or failed","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Discovered","type":"integer","description":"kopf operators found in scope","jsonPath":".status.summary.discovered"}"#,
    printcolumn = r#"{"name":"Compliant","type":"integer","description":"Operators whose KopfAudit is Compliant","jsonPath":".status.summary.compliant"}"#,
    printcolumn = r#"{"name":"Non-Compliant","type":"integer","description":"Operators whose KopfAudit is not Compliant","jsonPath":".status.summary.nonCompliant"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterKopfAuditSpec {
    /// The namespaces to look in, by their labels; every namespace when absent. Select
    /// on `kubernetes.io/metadata.name` to name namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "namespace_selector_schema")]
    pub namespace_selector: Option<LabelSelector>,

    /// The Deployments to look at, by their labels; every Deployment of the selected
    /// namespaces when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "deployment_selector_schema")]
    pub selector: Option<LabelSelector>,

    /// Namespaces and Deployments never audited, even when the selectors match them.
    #[serde(default, skip_serializing_if = "Exclusions::is_empty")]
    pub exclusions: Exclusions,

    /// The settings every generated KopfAudit gets; `defaults.interval` is also how
    /// often discovery runs again.
    #[serde(default)]
    pub defaults: AuditDefaults,

    /// What a KopfAudit written elsewhere (by a tenant, by hand) for a discovered
    /// operator does to the one generated for it. `Replace` (the default): it replaces
    /// the generated one only when it audits no less than `defaults`: no check disabled
    /// or lowered in severity, no longer interval, no looser threshold, no shorter log
    /// window or smaller log cap, no handledResources list of its own; so that a tenant
    /// cannot switch off what the platform audits. One that does is left to run, and the generated one is kept beside it
    /// and counted in the status. `Beside`: the generated one is always kept, and the
    /// status counts only generated ones. Either way a KopfAudit written elsewhere
    /// covers an operator only when the auditor would run it against that operator: in
    /// the operator's namespace, or in another one with `--allow-cross-namespace`.
    #[serde(default)]
    pub declared_audits: DeclaredAudits,
}

/// What a KopfAudit written elsewhere for a discovered operator does to the one a
/// ClusterKopfAudit generates for it: the platform, not the tenant, decides whether a
/// tenant's audit may stand in for the platform's.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DeclaredAudits {
    /// It replaces the generated one when it audits at least as strictly as
    /// `spec.defaults.checks` (no check disabled, no severity lowered).
    #[default]
    Replace,
    /// The generated one is kept beside it.
    Beside,
}

/// Fixes a shared label-selector schema's description to say what it selects.
fn described(mut schema: schemars::Schema, description: &str) -> schemars::Schema {
    schema.insert("description".into(), description.into());
    schema
}

/// The schema of `spec.namespaceSelector`: a LabelSelector with the label grammars.
fn namespace_selector_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    described(
        super::label_selector_schema(generator),
        "The namespaces to look in, by their labels; every namespace when absent. Select on kubernetes.io/metadata.name to name namespaces.",
    )
}

/// The schema of `spec.selector`: a LabelSelector with the label grammars.
fn deployment_selector_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    described(
        super::label_selector_schema(generator),
        "The Deployments to look at, by their labels; every Deployment of the selected namespaces when absent.",
    )
}

/// Namespaces and Deployments left out of discovery.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Exclusions {
    /// Namespaces whose Deployments are never audited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256), inner(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN)))]
    pub namespaces: Vec<String>,

    /// Deployments never audited, by namespace and name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub deployments: Vec<DeploymentRef>,
}

impl Exclusions {
    fn is_empty(&self) -> bool {
        self.namespaces.is_empty() && self.deployments.is_empty()
    }

    /// Whether the Deployment `namespace/name` is excluded.
    pub(crate) fn excludes(&self, namespace: &str, name: &str) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
            || self
                .deployments
                .iter()
                .any(|d| d.namespace == namespace && d.name == name)
    }
}

/// One Deployment, by namespace and name.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRef {
    /// The Deployment's namespace.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub namespace: String,
    /// The Deployment's name.
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN_PATTERN))]
    pub name: String,
}

/// What every generated KopfAudit's spec carries besides its target (the KopfAudit
/// fields of the same names). It re-declares those fields rather than sharing a type
/// with `KopfAuditSpec` because their descriptions in the CRDs differ; the grammar,
/// CEL rules and default are shared (`GO_DURATION_PATTERN`, `interval_rule`,
/// `default_interval`), and the audit reads both through `AuditSettings`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditDefaults {
    /// How often each generated KopfAudit re-audits, and how often discovery runs
    /// again, as a Go duration (`30s`, `5m`, `1h`); at least 30s.
    #[serde(default = "super::default_interval")]
    #[schemars(length(max = 32), regex(pattern = GO_DURATION_PATTERN))]
    #[x_kube(validation = interval_rule())]
    pub interval: String,

    /// Checks to disable and severities to override, in every generated KopfAudit.
    #[serde(default, skip_serializing_if = "CheckSelection::is_empty")]
    pub checks: CheckSelection,

    /// Thresholds the workload and events checks compare against, in every generated
    /// KopfAudit.
    #[serde(default, skip_serializing_if = "Thresholds::is_empty")]
    pub thresholds: Thresholds,

    /// How much of each operator's log to read per audit, in every generated KopfAudit.
    #[serde(default, skip_serializing_if = "LogsConfig::is_empty")]
    pub logs: LogsConfig,
}

impl Default for AuditDefaults {
    fn default() -> Self {
        AuditDefaults {
            interval: super::default_interval(),
            checks: CheckSelection::default(),
            thresholds: Thresholds::default(),
            logs: LogsConfig::default(),
        }
    }
}

/// What the last discovery found, for dashboards, `kubectl wait` and alerting.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterKopfAuditStatus {
    /// The generation the status describes (kstatus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// When discovery last completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_discovery_time: Option<Time>,

    /// Ready, Reconciling and Stalled (kstatus).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = kube::core::ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,

    /// How many operators were found, and how their audits stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ClusterSummary>,

    /// The non-compliant operators with the most error findings, then warnings, at most
    /// ten.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worst_offenders: Vec<Offender>,
}

/// Operator counts of one discovery.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSummary {
    /// kopf operators found in scope (each counted once, by the KopfAudit that stands
    /// for the platform's view of it).
    // `format: int32`, not the `uint32` schemars writes for a u32: for integers Kubernetes
    // knows int32 and int64 only, and its API server answers the CRD's creation with a
    // warning, `unrecognized format "uint32"`. The values never come near 2^31.
    #[schemars(extend("format" = "int32"))]
    pub discovered: u32,
    /// Operators whose KopfAudit's Compliant condition is True.
    #[schemars(extend("format" = "int32"))]
    pub compliant: u32,
    /// Operators whose KopfAudit's Compliant condition is False.
    #[schemars(extend("format" = "int32"))]
    pub non_compliant: u32,
    /// Operators whose KopfAudit has not decided compliance yet (first audit pending,
    /// stalled or unknown).
    #[schemars(extend("format" = "int32"))]
    pub pending: u32,
    /// Operators audited by a KopfAudit this ClusterKopfAudit generated.
    #[schemars(extend("format" = "int32"))]
    pub generated: u32,
    /// Operators audited by a KopfAudit someone else wrote, standing in for a generated
    /// one (see `spec.declaredAudits`).
    #[schemars(extend("format" = "int32"))]
    pub declared: u32,
    /// Deployments whose spec could not tell whether they run kopf and whose log could
    /// not be read (no pod ran yet, or the log is forbidden): tried again next time.
    #[schemars(extend("format" = "int32"))]
    pub undetermined: u32,
}

/// A non-compliant operator.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Offender {
    /// The operator's namespace.
    pub namespace: String,
    /// The operator's Deployment.
    pub deployment: String,
    /// The KopfAudit that audits it (in the same namespace).
    pub audit: String,
    /// Its error findings.
    #[schemars(extend("format" = "int32"))]
    pub errors: u32,
    /// Its warning findings.
    #[schemars(extend("format" = "int32"))]
    pub warnings: u32,
}

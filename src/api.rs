//! The `KopfAudit` custom resource: what platform teams apply through GitOps, and the
//! status that dashboards, `kubectl wait` and alerting read.
//!
//! Validation lives in the schema (OpenAPI and CEL) so that a bad object is refused by
//! the API server at apply time; what only the controller can judge becomes a condition.

use crate::catalog::{CheckId, Severity};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::core::Rule;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod cluster;
pub use cluster::{
    AuditDefaults, ClusterKopfAudit, ClusterKopfAuditSpec, ClusterKopfAuditStatus, ClusterSummary,
    DeclaredAudits, DeploymentRef, Exclusions, Offender,
};

/// Desired audit: which kopf operator to audit, how often and how strictly.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "kopfaudit.dev",
    version = "v1alpha1",
    kind = "KopfAudit",
    namespaced,
    status = "KopfAuditStatus",
    doc = "KopfAudit audits one Python operator written with kopf, its Deployment (or the Deployments a selector matches), on an interval, and reports in status.conditions (Ready, Compliant and one condition per area: workload, RBAC, events, persistence, runtime), in Events when a condition changes, and in Prometheus metrics.",
    shortname = "ka",
    category = "all",
    category = "kopfaudit",
    printcolumn = r#"{"name":"Ready","type":"string","description":"The Ready condition: the audit ran for the current generation","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","description":"The Ready condition's reason: why an audit is stalled, failed or suspended","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Compliant","type":"string","jsonPath":".status.conditions[?(@.type==\"Compliant\")].status"}"#,
    printcolumn = r#"{"name":"Errors","type":"integer","jsonPath":".status.summary.errors"}"#,
    printcolumn = r#"{"name":"Warnings","type":"integer","jsonPath":".status.summary.warnings"}"#,
    printcolumn = r#"{"name":"Last Audit","type":"date","jsonPath":".status.lastAuditTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KopfAuditSpec {
    /// The Deployment(s) running the kopf operator to audit.
    pub target: AuditTarget,

    /// The resources the operator handles. When absent they are inferred from the
    /// operator's RBAC and from kopf's marks on objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub handled_resources: Vec<HandledResourceSpec>,

    /// How often to re-audit, as a Go duration (`30s`, `5m`, `1h`); at least 30s.
    #[serde(default = "default_interval")]
    #[schemars(length(max = 32), regex(pattern = GO_DURATION_PATTERN))]
    #[x_kube(validation = interval_rule())]
    pub interval: String,

    /// Checks to disable and severities to override.
    #[serde(default, skip_serializing_if = "CheckSelection::is_empty")]
    pub checks: CheckSelection,

    /// Thresholds the workload and events checks compare against.
    #[serde(default, skip_serializing_if = "Thresholds::is_empty")]
    pub thresholds: Thresholds,

    /// How much of the operator's log to read per audit.
    #[serde(default, skip_serializing_if = "LogsConfig::is_empty")]
    pub logs: LogsConfig,

    /// Stop auditing (the last results stay, and a condition says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspend: bool,
}

/// The schema pattern of an RFC 1123 DNS label: namespaces, container names, API
/// versions and resource plurals. Every spec string that becomes part of a request
/// path has a name grammar, so the API server refuses at apply time what would steer
/// a request elsewhere (kube builds paths by plain formatting).
const DNS_LABEL_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/// The schema pattern of an RFC 1123 DNS subdomain: Deployment names.
const DNS_SUBDOMAIN_PATTERN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// An API group: empty for the core group, else a DNS subdomain.
const API_GROUP_PATTERN: &str =
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$";

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// alphanumerics, `-`, `_` and `.`.
const LABEL_KEY_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$";
/// A label value: empty, or at most 63 alphanumerics, `-`, `_` and `.`.
const LABEL_VALUE_PATTERN: &str = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

/// The schema of `spec.target.selector`: metav1.LabelSelector with the label grammars
/// and bounds, so that a key or value that would add terms of its own to the request's
/// `labelSelector` (`a,b!=c`, `x)`) is refused at apply time, and CEL's cost stays
/// within the API server's budget.
fn label_selector_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let key_rule = format!(
        "self.all(k, k.size() <= 317 && k.matches('{}'))",
        LABEL_KEY_PATTERN.replace('\\', "\\\\")
    );
    schemars::json_schema!({
        "description": "A label selector matching one or more Deployments.",
        "nullable": true,
        "type": "object",
        "properties": {
            "matchLabels": {
                "description": "Labels the Deployments must carry (keys and values in the Kubernetes label grammar).",
                "type": "object",
                "maxProperties": 64,
                "additionalProperties": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN},
                "x-kubernetes-validations": [{
                    "rule": key_rule,
                    "message": "matchLabels keys must be label keys ([prefix/]name, the name at most 63 characters)"
                }]
            },
            "matchExpressions": {
                "description": "Label requirements, ANDed.",
                "type": "array",
                "maxItems": 64,
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"description": "The label key the requirement applies to.", "type": "string", "maxLength": 317, "pattern": LABEL_KEY_PATTERN},
                        "operator": {"description": "How the key relates to the values: In, NotIn, Exists or DoesNotExist.", "type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                        "values": {
                            "description": "The label values: at least one for In and NotIn, none for Exists and DoesNotExist.",
                            "type": "array",
                            "maxItems": 64,
                            "items": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN}
                        }
                    }
                }
            }
        }
    })
}

/// The schema pattern of a Go duration (`30s`, `5m`, `1h30m`), the grammar of every
/// duration in a spec.
const GO_DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$";

/// The CEL rule of an interval (a KopfAudit's `spec.interval`, a ClusterKopfAudit's
/// `spec.defaults.interval`): at least 30s, so that no audit runs more often.
fn interval_rule() -> Rule {
    Rule::new("duration(self) >= duration('30s')").message("interval must be at least 30s")
}

/// The default re-audit period.
pub const DEFAULT_INTERVAL: &str = "5m";

impl KopfAuditSpec {
    /// The spec of `kopf-audit check --deployment NAME`: that Deployment, every default.
    pub(crate) fn for_deployment(name: &str) -> KopfAuditSpec {
        KopfAuditSpec {
            target: AuditTarget {
                deployment: Some(name.to_string()),
                ..Default::default()
            },
            handled_resources: Vec::new(),
            interval: DEFAULT_INTERVAL.to_string(),
            checks: CheckSelection::default(),
            thresholds: Thresholds::default(),
            logs: LogsConfig::default(),
            suspend: false,
        }
    }
}

fn default_interval() -> String {
    DEFAULT_INTERVAL.to_string()
}

/// Which workload runs the kopf operator.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.deployment) != has(self.selector)").message("set exactly one of target.deployment or target.selector"))]
pub struct AuditTarget {
    /// The name of one Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = DNS_SUBDOMAIN_PATTERN))]
    pub deployment: Option<String>,

    /// A label selector matching one or more Deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub selector: Option<LabelSelector>,

    /// The namespace of the target; defaults to the KopfAudit's own. Another namespace
    /// is refused unless the auditor is started with cross-namespace targets allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub namespace: Option<String>,

    /// The container running kopf; by default the first container that runs kopf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub container: Option<String>,
}

/// A resource the audited operator handles.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandledResourceSpec {
    /// API group (empty for the core group), e.g. `example.com`.
    #[serde(default)]
    #[schemars(length(max = 253), regex(pattern = API_GROUP_PATTERN))]
    pub group: String,
    /// API version, e.g. `v1`.
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub version: String,
    /// Plural resource name, e.g. `tenants` (no subresource).
    #[schemars(length(min = 1, max = 63), regex(pattern = DNS_LABEL_PATTERN))]
    pub plural: String,
}

/// Check selection and severity overrides.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CheckSelection {
    /// Check IDs not to run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub disable: Vec<CheckId>,

    /// Severity per check ID, replacing the default.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[x_kube(validation = known_check_ids_rule())]
    #[schemars(extend("maxProperties" = 64))]
    pub severity: BTreeMap<String, Severity>,

    /// The last day (`YYYY-MM-DD`, UTC) a check of `disable` stays disabled, per check
    /// ID: from the day after it runs again, and `status.skipped` says the exemption
    /// lapsed (an exemption that comes back by itself, as Trivy's and Snyk's do).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[x_kube(validation = disabled_until_rule())]
    #[schemars(schema_with = "disabled_until_schema")]
    pub disabled_until: BTreeMap<String, String>,
}

impl CheckSelection {
    fn is_empty(&self) -> bool {
        self.disable.is_empty() && self.severity.is_empty() && self.disabled_until.is_empty()
    }
}

/// The CEL rule of `checks.disabledUntil`: its keys are known check IDs (its values'
/// grammar is in [`disabled_until_schema`], which costs CEL nothing).
fn disabled_until_rule() -> Rule {
    let ids: Vec<String> = CheckId::ALL
        .iter()
        .map(|c| format!("'{}'", c.as_str()))
        .collect();
    Rule::new(format!("self.all(k, k in [{}])", ids.join(", "))).message(
        "checks.disabledUntil names an unknown check ID (the check IDs: docs/reference.md in the kopf-audit repository)",
    )
}

/// The schema of `checks.disabledUntil`: at most 64 check IDs, each to a date as
/// `YYYY-MM-DD`.
fn disabled_until_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "The last day (YYYY-MM-DD, UTC) a check of `disable` stays disabled, per check ID: from the day after it runs again, and status.skipped says the exemption lapsed.",
        "maxProperties": 64,
        "additionalProperties": {
            "type": "string",
            "maxLength": 10,
            "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
        }
    })
}

/// The CEL rule that refuses severity overrides for checks that do not exist.
fn known_check_ids_rule() -> Rule {
    let ids: Vec<String> = CheckId::ALL
        .iter()
        .map(|c| format!("'{}'", c.as_str()))
        .collect();
    Rule::new(format!("self.all(k, k in [{}])", ids.join(", ")))
        .message("checks.severity names an unknown check ID (the check IDs: docs/reference.md in the kopf-audit repository)")
}

/// A positive Kubernetes quantity, such as `256Mi`.
fn positive_quantity_rule() -> Rule {
    Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))")
        .message("must be a positive quantity such as 256Mi")
}

/// Thresholds that override the catalogue's defaults.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    /// Minimum memory request (default 256Mi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = positive_quantity_rule())]
    pub memory_request: Option<String>,

    /// Minimum memory limit (default 512Mi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = positive_quantity_rule())]
    pub memory_limit: Option<String>,

    /// How many identical events in the window count as spam (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2, max = 1000))]
    // `format: int32`, not the `uint32` schemars writes for a u32: for integers Kubernetes
    // knows int32 and int64 only, and its API server answers the CRD's creation with a
    // warning, `unrecognized format "uint32"`. The values never come near 2^31.
    #[schemars(extend("format" = "int32"))]
    pub event_repeats: Option<u32>,

    /// How long a handled object may differ from its last-handled diff-base while the
    /// operator's pod runs before `runtime.not-handling` fires, as a Go duration
    /// (default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), regex(pattern = GO_DURATION_PATTERN))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1m') && duration(self) <= duration('24h')").message("thresholds.unhandledAfter must be between 1m and 24h"))]
    pub unhandled_after: Option<String>,

    /// How long a finding must stay absent from complete audits before it is resolved,
    /// as a Go duration (default: two intervals, at least 10m; `0s` resolves at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), regex(pattern = GO_DURATION_PATTERN))]
    #[x_kube(validation = Rule::new("duration(self) <= duration('24h')").message("thresholds.resolveAfter must be at most 24h"))]
    pub resolve_after: Option<String>,
}

impl Thresholds {
    fn is_empty(&self) -> bool {
        *self == Thresholds::default()
    }
}

/// Bounds on the log read per audit.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LogsConfig {
    /// How far back to read (default 10m), as a Go duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), regex(pattern = GO_DURATION_PATTERN))]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1m') && duration(self) <= duration('24h')").message("logs.window must be between 1m and 24h"))]
    pub window: Option<String>,

    /// At most this many bytes per container and audit (default 4Mi, at most 64Mi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    #[x_kube(validation = Rule::new("isQuantity(self) && quantity(self).isGreaterThan(quantity('0')) && quantity(self).compareTo(quantity('64Mi')) <= 0").message("logs.limitBytes must be a positive quantity of at most 64Mi"))]
    pub limit_bytes: Option<String>,
}

impl LogsConfig {
    fn is_empty(&self) -> bool {
        *self == LogsConfig::default()
    }
}

/// What the last audit found, for dashboards, `kubectl wait` and alerting.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KopfAuditStatus {
    /// The generation the status describes (kstatus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// When the status last changed as the result of an audit. Audits that change
    /// nothing do not rewrite the status; the metrics carry every audit's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_audit_time: Option<Time>,

    /// Ready, Reconciling, Stalled, Compliant and one condition per area.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = kube::core::ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,

    /// Finding counts by severity, skipped checks counted apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,

    /// What the auditor learned about each target workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetStatus>,

    /// The findings, most severe first, capped far below etcd's object size limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,

    /// Checks skipped (by exemption annotations, or out of the auditor's reach), with
    /// their reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedCheck>,
    /// The `kopfaudit.dev/requested-at` annotation's value the last audit ran for: equal
    /// to the annotation once the audit it asked for has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_requested_at: Option<String>,
    /// When a `kopfaudit.dev/requested-at` request came sooner after the last audit than
    /// the auditor allows (`--audit-now-min-interval`), the time its audit runs at; gone
    /// once it ran. Requests before then collapse into that one audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_deferred_until: Option<Time>,
}

/// Finding counts by severity.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Findings of severity error.
    #[schemars(extend("format" = "int32"))]
    pub errors: u32,
    /// Findings of severity warning.
    #[schemars(extend("format" = "int32"))]
    pub warnings: u32,
    /// Findings of severity info.
    #[schemars(extend("format" = "int32"))]
    pub infos: u32,
    /// Findings left out of `findings` by the cap.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(extend("format" = "int32"))]
    pub omitted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How the auditor knows that a target runs kopf.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Recognition {
    /// `kopf run` or `python -m kopf run` in the container's command or args.
    CommandLine,
    /// kopf's own lines in the container's log.
    Log,
    /// The operator's files (`kopf-audit lint`): the image's `CMD` in its Dockerfile, or
    /// `kopf.run()` in its Python.
    Files,
    /// kopf's peering objects (discovery): one of the Deployment's pods is a peer in a
    /// `KopfPeering` of its namespace or in a `ClusterKopfPeering`.
    Peering,
}

/// The auditor's reading of one target Deployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    /// The Deployment's name.
    pub name: String,
    /// Whether a container runs kopf.
    pub kopf: bool,
    /// The container that runs kopf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// How kopf was recognised: by the container's command line (its flags are read
    /// there), or by its log when the command line hides kopf (the image's CMD,
    /// `kopf.run()` from Python, a wrapper script).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recognised_by: Option<Recognition>,
    /// What showed kopf and where the facts below come from, for a person to check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recognition: Option<String>,
    /// `namespaced` (with `namespaces`), `cluster-wide`, or `unknown` when the command
    /// line hides kopf's flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The namespaces (or glob patterns) served in namespaced mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// `standalone`, `auto` or the peering name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peering: Option<String>,
    /// kopf's `--log-format`: `full`, `plain` or `json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_format: Option<String>,
    /// The ServiceAccount the pods run as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// The resources the operator handles (`plural.group/version`), each with where it
    /// was learned: spec.handledResources, its RBAC rules, its log, or kopf's Events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handled_resources: Vec<String>,
    /// The log read hit `spec.logs.limitBytes`: the window was not read in full, so the
    /// log-based checks saw only part of it. Raise the limit or shorten the window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logs_truncated: bool,
    /// The Event read stopped at its bound (the newest Events per namespace are read):
    /// the events checks saw only part of the window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub events_truncated: bool,
}

/// One thing wrong, and how to fix it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The stable check ID.
    pub check: CheckId,
    /// The effective severity (after overrides).
    pub severity: Severity,
    /// The target Deployment the finding is about.
    pub target: String,
    /// What is wrong and how to fix it.
    pub message: String,
    /// Short, redacted evidence: a log line, a rule, an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// A mechanical fix, ready to apply where the message says: a strategic-merge
    /// patch of the target Deployment (`kubectl patch deployment NAME --patch-file`), an
    /// RBAC rule to add, or Python lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// When the finding was first seen (kept while it persists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
    /// The last complete audit of its area found it, but this audit could not read the
    /// area (see the area's condition): it is kept, not resolved by not looking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// When a complete audit first no longer found it. It stays, and keeps its area's
    /// condition, until it has been absent for `spec.thresholds.resolveAfter`, so that a
    /// flapping operator gives one FindingRaised and, once quiet, one FindingResolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent_since: Option<Time>,
}

impl Finding {
    /// The one order of findings, in an evaluation and in status: most severe first,
    /// then by check, target and message, so that the same findings always read the
    /// same.
    pub(crate) fn sort(findings: &mut [Finding]) {
        findings.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.check.cmp(&b.check))
                .then(a.target.cmp(&b.target))
                .then(a.message.cmp(&b.message))
        });
    }
}

/// A check not run: exempted by an annotation, or its evidence out of the auditor's
/// reach (cluster-scoped objects without the cross-namespace allowance, or a read the
/// auditor's RBAC forbids).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkippedCheck {
    /// The exempted check.
    pub check: CheckId,
    /// The target it was skipped for.
    pub target: String,
    /// The reason given in the annotation, why the exemption was refused, or what the
    /// check would need to read.
    pub reason: String,
    /// False when the exemption was refused (no reason given, or exemptions disabled):
    /// the check then ran as usual.
    pub honoured: bool,
}

//! What the gather phase hands to the pure checks: plain data, no clients.
//! Each area's evidence is [`Gathered`]: present, unavailable with a reason a person can
//! act on (e.g. the auditor may not read it), or not gathered by this version.

pub mod rbac;

use crate::conditions::Reason;
use crate::kopf_mode::KopfRun;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use std::collections::BTreeMap;

pub use rbac::RbacEvidence;

/// Evidence for one area, or why there is none.
#[derive(Clone, Debug, Default)]
pub enum Gathered<T> {
    /// Not gathered by this version: the area is reported `Unknown`/`NotAudited`.
    #[default]
    NotGathered,
    /// Could not be gathered: the area is reported `Unknown` with this reason.
    Unavailable(Unavailable),
    /// Gathered.
    Ready(T),
}

impl<T> Gathered<T> {
    /// The evidence, when gathered.
    pub fn ready(&self) -> Option<&T> {
        match self {
            Gathered::Ready(t) => Some(t),
            _ => None,
        }
    }
}

/// Everything gathered about one target Deployment.
#[derive(Clone, Debug, Default)]
pub struct TargetEvidence {
    /// The Deployment as the watch cache has it.
    pub deployment: Deployment,
    /// Its pods (matched by the Deployment's selector).
    pub pods: Vec<Pod>,
    /// The kopf container and how it runs kopf; `None` when no container runs kopf.
    pub kopf: Option<KopfRun>,
    /// The first lines of the previous container's log, per pod, for restarted pods.
    pub previous_logs: BTreeMap<String, PreviousLog>,
    /// The resources the operator handles (from the spec, or inferred).
    pub handled: Gathered<Vec<HandledResource>>,
    /// What the operator's ServiceAccount may do.
    pub rbac: Gathered<RbacEvidence>,
    /// The operator's parsed logs in the window.
    pub logs: Gathered<LogEvidence>,
    /// Events about handled objects in the window.
    pub events: Gathered<Vec<EventRecord>>,
    /// A bounded sample of handled objects.
    pub objects: Gathered<Vec<ObjectSample>>,
}

impl TargetEvidence {
    /// Evidence for a Deployment and its pods, with the kopf container (the `wanted` one
    /// if named) read from the pod template; the other areas start ungathered.
    pub fn new(deployment: Deployment, pods: Vec<Pod>, wanted: Option<&str>) -> TargetEvidence {
        let containers = deployment
            .spec
            .template
            .spec
            .as_ref()
            .map(|s| s.containers.as_slice())
            .unwrap_or(&[]);
        let namespace = deployment.metadata.namespace.as_deref();
        let kopf = crate::kopf_mode::find_kopf(containers, wanted, namespace).map(|(_, run)| run);
        TargetEvidence {
            deployment,
            pods,
            kopf,
            ..Default::default()
        }
    }

    /// The container that runs kopf.
    pub fn kopf_container(&self) -> Option<&k8s_openapi::api::core::v1::Container> {
        let run = self.kopf.as_ref()?;
        self.deployment
            .spec
            .template
            .spec
            .as_ref()?
            .containers
            .iter()
            .find(|c| c.name == run.container)
    }
}

/// The head of a previous container's log, or why it could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreviousLog {
    /// The first lines, already redacted.
    Lines(Vec<String>),
    /// The auditor could not read it (the message names the permission or error).
    Unreadable(String),
}

/// Why an area's evidence could not be gathered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The condition reason (e.g. `Forbidden`).
    pub reason: Reason,
    /// What a person can act on (e.g. the permission to grant the auditor).
    pub message: String,
}

/// Where the list of handled resources came from; findings say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandledSource {
    /// `spec.handledResources`.
    Spec,
    /// Custom resources the operator's ServiceAccount may watch.
    InferredFromRbac,
    /// Kinds carrying kopf's annotations or finalizers.
    InferredFromMarks,
}

/// One resource the operator handles, with what its CRD says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandledResource {
    /// API group (empty for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural name.
    pub plural: String,
    /// Kind, when known (from the CRD or discovery).
    pub kind: Option<String>,
    /// Whether the resource is namespaced.
    pub namespaced: bool,
    /// From its CRD, when it is a custom resource.
    pub crd: Option<CrdInfo>,
    /// Where this entry came from.
    pub source: HandledSource,
}

/// What a handled resource's CRD says about status storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdInfo {
    /// The CRD's name (`plural.group`).
    pub name: String,
    /// The served version has a status subresource.
    pub status_subresource: bool,
    /// The served version's `status` schema preserves unknown fields (or the whole
    /// object does).
    pub status_preserves_unknown_fields: bool,
}

/// The operator's logs in the window, parsed.
#[derive(Clone, Debug, Default)]
pub struct LogEvidence {
    /// Records of the current containers' logs, oldest first.
    pub records: Vec<kopf_log::Record>,
    /// Records of the previous containers' logs (restarted pods), oldest first.
    pub previous: Vec<kopf_log::Record>,
    /// Line counts, for `runtime.unparsed-logs`.
    pub stats: kopf_log::Stats,
    /// The byte cap cut the log: the window was not fully read.
    pub truncated: bool,
}

/// An Event about a handled object (core/v1 or events.k8s.io, flattened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRecord {
    /// The Event's namespace.
    pub namespace: String,
    /// The involved object's kind.
    pub kind: String,
    /// The involved object's namespace (empty for cluster-scoped objects).
    pub object_namespace: String,
    /// The involved object's name.
    pub name: String,
    /// The involved object's uid.
    pub uid: String,
    /// `Normal`, `Warning`, `Error`, `Debug`...
    pub type_: String,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
    /// Posted by kopf (`source.component`/`reportingComponent` `kopf`).
    pub from_kopf: bool,
    /// How many times the API aggregated it (kopf never does: always 1).
    pub count: u32,
    /// When it was posted (first/last timestamp or eventTime).
    pub time: Option<Timestamp>,
}

/// One handled object, reduced to what the persistence checks read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSample {
    /// Index into the target's handled resources.
    pub resource: usize,
    /// Namespace (empty for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Annotation keys, with the byte size of key plus value.
    pub annotations: BTreeMap<String, usize>,
    /// Finalizers.
    pub finalizers: Vec<String>,
    /// When deletion was requested, if it was.
    pub deletion_timestamp: Option<Timestamp>,
    /// Keys under `status.kopf` (kopf's status storage), if any.
    pub status_kopf_keys: Vec<String>,
}

/// The clock and the target set of one audit.
#[derive(Clone, Debug)]
pub struct Evidence {
    /// When the evidence was gathered.
    pub now: Timestamp,
    /// One entry per target Deployment.
    pub targets: Vec<TargetEvidence>,
}

//! The publish phase: API I/O only. One server-side-apply status patch with a single
//! field manager, written only when the status changed; one Event per transition.

pub mod policy_report;

use crate::api::{KopfAudit, KopfAuditStatus};
use crate::evaluate::PlannedEvent;
use jiff::Timestamp;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};

/// The field manager of every status write: one owner for the whole status.
pub const FIELD_MANAGER: &str = "kopf-audit";

/// The `reportingController` of the auditor's Events.
pub const REPORTING_CONTROLLER: &str = "kopfaudit.dev/kopf-audit";

/// Why publishing failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The status patch was refused or failed.
    #[error("writing the status of {name}: {source}")]
    Status {
        /// The KopfAudit.
        name: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// An Event could not be created.
    #[error("creating an Event for {name}: {source}")]
    Event {
        /// The KopfAudit.
        name: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

/// Applies the whole status with server-side apply.
pub async fn write_status(
    api: &Api<KopfAudit>,
    name: &str,
    status: &KopfAuditStatus,
) -> Result<(), PublishError> {
    let patch = serde_json::json!({
        "apiVersion": KopfAudit::api_version(&()),
        "kind": KopfAudit::kind(&()),
        "status": status,
    });
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map(|_| ())
    .map_err(|source| PublishError::Status {
        name: name.to_string(),
        source,
    })
}

/// Creates `events.k8s.io/v1` Events about KopfAudits. Transitions are detected by the
/// evaluate phase, so every call is a new Event: no aggregation cache is needed.
#[derive(Clone)]
pub struct EventPublisher {
    client: Client,
    instance: String,
}

impl EventPublisher {
    /// A publisher reporting as `instance` (the pod name, or the host for the CLI).
    pub fn new(client: Client, instance: String) -> Self {
        EventPublisher { client, instance }
    }

    /// Creates one Event regarding `audit`.
    pub async fn emit(
        &self,
        audit: &KopfAudit,
        planned: &PlannedEvent,
    ) -> Result<(), PublishError> {
        let namespace = audit.namespace().unwrap_or_default();
        let now = Timestamp::now();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", audit.name_any(), now.as_nanosecond())),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some("Audit".into()),
            reason: Some(planned.reason.as_str().into()),
            note: Some(planned.note.clone()),
            type_: Some(if planned.warning { "Warning" } else { "Normal" }.into()),
            regarding: Some(audit.object_ref(&())),
            reporting_controller: Some(REPORTING_CONTROLLER.into()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &event)
            .await
            .map(|_| ())
            .map_err(|source| PublishError::Event {
                name: audit.name_any(),
                source,
            })
    }
}

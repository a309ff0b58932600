//! The publish layer: API I/O only. One server-side-apply status patch with a single
//! field manager, written only when the status changed; one Event per transition; the
//! optional PolicyReport; the metrics.

pub(crate) mod metrics;
pub(crate) mod policy_report;

use crate::api::{KopfAudit, KopfAuditStatus};
use crate::catalog::{EventType, FIELD_MANAGER, REPORTING_CONTROLLER};
use crate::evaluate::events::PlannedEvent;
use crate::model::names::{MAX_OBJECT_NAME, derived};
use jiff::Timestamp;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};

/// Why publishing failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PublishError {
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

/// Applies the whole status with server-side apply; returns the resourceVersion it
/// produced.
pub(crate) async fn write_status(
    api: &Api<KopfAudit>,
    name: &str,
    status: &KopfAuditStatus,
) -> Result<Option<String>, PublishError> {
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
    .map(|written| written.metadata.resource_version)
    .map_err(|source| PublishError::Status {
        name: name.to_string(),
        source,
    })
}

/// The name of an Event about a KopfAudit: its name and the time in nanoseconds (hex),
/// made to fit the API's bound on names (a KopfAudit's name may take all of it) by a
/// stable hash of the KopfAudit's name.
fn event_name(audit: &str, nanos: i128) -> String {
    derived("", audit, &format!(".{nanos:x}"), MAX_OBJECT_NAME)
}

/// Creates `events.k8s.io/v1` Events about KopfAudits. Transitions are detected by the
/// evaluate phase, so every call is a new Event: no aggregation cache is needed.
#[derive(Clone)]
pub(crate) struct EventPublisher {
    client: Client,
    instance: String,
}

impl EventPublisher {
    /// A publisher reporting as `instance` (the pod name, or the host for the CLI).
    pub(crate) fn new(client: Client, instance: String) -> Self {
        EventPublisher { client, instance }
    }

    /// Creates one Event regarding `audit`.
    pub(crate) async fn emit(
        &self,
        audit: &KopfAudit,
        planned: &PlannedEvent,
    ) -> Result<(), PublishError> {
        let namespace = audit.namespace().unwrap_or_default();
        let now = Timestamp::now();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(event_name(&audit.name_any(), now.as_nanosecond())),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some("Audit".into()),
            reason: Some(planned.reason.as_str().into()),
            note: Some(planned.note.clone()),
            type_: Some(
                if planned.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                }
                .as_str()
                .into(),
            ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::names::is_dns_subdomain;

    #[test]
    fn a_253_character_audit_gets_valid_event_names() {
        let audit = format!("{}end", "long-name-".repeat(25));
        assert_eq!(audit.len(), 253);
        let nanos = 1_767_225_600_123_456_789;
        let name = event_name(&audit, nanos);
        assert!(is_dns_subdomain(&name), "{name} ({} bytes)", name.len());
        assert!(name.starts_with("long-name-long-name-"), "{name}");
        assert!(name.ends_with(&format!(".{nanos:x}")), "{name}");
        assert_ne!(name, event_name(&audit, nanos + 1));
        assert_eq!(event_name("op", nanos), format!("op.{nanos:x}"));
    }
}

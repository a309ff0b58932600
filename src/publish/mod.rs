//! The publish layer: API I/O only. One server-side-apply status patch with a single
//! field manager, written only when the status changed; one Event per transition; the
//! optional PolicyReport; the metrics.

pub(crate) mod metrics;
mod process;
pub(crate) mod reports;

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

impl PublishError {
    /// Whether trying again cannot help: the API server refused the request itself as
    /// invalid (400, 422), not for a reason that may pass (refused, throttled,
    /// unavailable, timed out).
    pub(crate) fn is_permanent(&self) -> bool {
        let source = match self {
            PublishError::Status { source, .. } | PublishError::Event { source, .. } => source,
        };
        matches!(source, kube::Error::Api(s) if s.code == 400 || s.code == 422)
    }
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

/// An Event to create about a KopfAudit, with the name and time it keeps until it is
/// delivered: a retried POST of one that did reach the API server fails with
/// AlreadyExists, which counts as delivered, so a retry never duplicates it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OutgoingEvent {
    /// What to say.
    pub(crate) planned: PlannedEvent,
    /// Its name.
    name: String,
    /// When it happened (its `eventTime`).
    at: Timestamp,
}

impl OutgoingEvent {
    /// The `index`th Event an audit of `audit` (its name) planned at `at`: its time is
    /// `at` plus `index` microseconds, so that the Events of one audit keep their order
    /// and each has a name of its own.
    pub(crate) fn new(
        audit: &str,
        planned: PlannedEvent,
        at: Timestamp,
        index: usize,
    ) -> OutgoingEvent {
        let offset = jiff::SignedDuration::from_micros(i64::try_from(index).unwrap_or(i64::MAX));
        let at = at.checked_add(offset).unwrap_or(at);
        OutgoingEvent {
            name: event_name(audit, at),
            planned,
            at,
        }
    }

    /// Its name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

/// An Event's name: the audit's name and its time in hex nanoseconds, made to fit the
/// API's bound on names (a KopfAudit's name may take all of it) by a readable prefix and
/// a stable hash of the KopfAudit's name.
fn event_name(audit: &str, at: Timestamp) -> String {
    derived(
        "",
        audit,
        &format!(".{:x}", at.as_nanosecond()),
        MAX_OBJECT_NAME,
    )
}

/// What became of one Event's POST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// It was created now.
    Created,
    /// An earlier POST of it had been created (its answer was lost): it is there once.
    AlreadyThere,
}

/// Creates `events.k8s.io/v1` Events about KopfAudits. Transitions are detected by the
/// evaluate phase, so every Event is a new one: no aggregation cache is needed.
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
        event: &OutgoingEvent,
    ) -> Result<Delivery, PublishError> {
        let namespace = audit.namespace().unwrap_or_default();
        let planned = &event.planned;
        let body = Event {
            metadata: ObjectMeta {
                name: Some(event.name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(event.at)),
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
        match api.create(&PostParams::default(), &body).await {
            Ok(_) => Ok(Delivery::Created),
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                Ok(Delivery::AlreadyThere)
            }
            Err(source) => Err(PublishError::Event {
                name: audit.name_any(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_name_fits_and_ends_well_whatever_the_audit_name() {
        let at = Timestamp::from_second(1_800_000_000).expect("a valid time");
        assert_eq!(event_name("audit", at), "audit.18fae27693b40000");
        // The longest names a KopfAudit may have, cut where the Event's name must end.
        let label = "a".repeat(62);
        let long = [label.as_str(); 4].join(".");
        let name = event_name(&long, at);
        assert!(name.len() <= MAX_OBJECT_NAME, "{name}");
        assert!(crate::model::names::is_dns_subdomain(&name), "{name}");
        for separator in [".", "-"] {
            let audit = format!(
                "{}.{}{separator}{}",
                [label.as_str(); 3].join("."),
                "c".repeat(46),
                "b".repeat(10)
            );
            assert_eq!(&audit[235..236], separator, "cut right after it");
            let name = event_name(&audit, at);
            assert!(crate::model::names::is_dns_subdomain(&name), "{name}");
        }
    }

    #[test]
    fn the_events_of_one_audit_keep_their_order_and_names_of_their_own() {
        let at = Timestamp::from_second(1_800_000_000).expect("a valid time");
        let planned = PlannedEvent {
            warning: false,
            reason: crate::catalog::EventReason::AuditPassed,
            note: "n".into(),
        };
        let first = OutgoingEvent::new("a", planned.clone(), at, 0);
        let second = OutgoingEvent::new("a", planned, at, 1);
        assert!(first.at < second.at);
        assert_ne!(first.name(), second.name());
    }

    #[test]
    fn a_253_character_audit_gets_valid_event_names() {
        let audit = format!("{}end", "long-name-".repeat(25));
        assert_eq!(audit.len(), 253);
        let at = Timestamp::from_second(1_767_225_600).expect("a valid time");
        let name = event_name(&audit, at);
        assert!(
            crate::model::names::is_dns_subdomain(&name),
            "{name} ({} bytes)",
            name.len()
        );
        assert!(name.starts_with("long-name-long-name-"), "{name}");
        assert!(
            name.ends_with(&format!(".{:x}", at.as_nanosecond())),
            "{name}"
        );
        let later = at
            .checked_add(jiff::SignedDuration::from_nanos(1))
            .expect("a time");
        assert_ne!(name, event_name(&audit, later));
    }
}

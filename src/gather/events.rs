//! Reads the Events that tell whether the operator surfaced its failures: core/v1 Events
//! (kopf posts those) in the namespaces it serves and in its own namespace (where kopf
//! posts the Events of cluster-scoped objects), within the log window.

use crate::conditions::Reason;
use crate::evidence::{EventRecord, Gathered, Unavailable};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};
use std::time::Duration;

/// At most this many Events are read per namespace and audit.
const MAX_EVENTS_PER_NAMESPACE: u32 = 2000;

/// Lists the Events of `namespaces` (all when `None`) newer than `now - window`.
pub async fn gather(
    client: &Client,
    namespaces: Option<&[String]>,
    now: Timestamp,
    window: Duration,
) -> Gathered<Vec<EventRecord>> {
    let since = now
        .checked_sub(jiff::SignedDuration::try_from(window).unwrap_or_default())
        .unwrap_or(now);
    let all = [String::new()];
    let mut out = Vec::new();
    for ns in namespaces.unwrap_or(&all) {
        let api: Api<Event> = if ns.is_empty() {
            Api::all(client.clone())
        } else {
            Api::namespaced(client.clone(), ns)
        };
        let ns = if ns.is_empty() {
            "any namespace"
        } else {
            ns.as_str()
        };
        let list = match api
            .list(&ListParams::default().limit(MAX_EVENTS_PER_NAMESPACE))
            .await
        {
            Ok(list) => list,
            Err(kube::Error::Api(s)) if s.code == 403 => {
                return Gathered::Unavailable(Unavailable {
                    reason: Reason::Forbidden,
                    message: format!(
                        "The auditor may not list events in {ns}: grant it list on events there."
                    ),
                });
            }
            Err(e) => {
                return Gathered::Unavailable(Unavailable {
                    reason: Reason::AuditFailed,
                    message: format!("Listing events in {ns} failed: {e}"),
                });
            }
        };
        out.extend(
            list.items
                .iter()
                .map(record)
                .filter(|r| r.time.is_none_or(|t| t >= since)),
        );
    }
    Gathered::Ready(out)
}

/// Flattens a core/v1 Event.
pub fn record(event: &Event) -> EventRecord {
    let obj = &event.involved_object;
    let from_kopf = event.source.as_ref().and_then(|s| s.component.as_deref()) == Some("kopf")
        || event.reporting_component.as_deref() == Some("kopf");
    let time = event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0));
    EventRecord {
        namespace: event.metadata.namespace.clone().unwrap_or_default(),
        kind: obj.kind.clone().unwrap_or_default(),
        object_namespace: obj.namespace.clone().unwrap_or_default(),
        name: obj.name.clone().unwrap_or_default(),
        uid: obj.uid.clone().unwrap_or_default(),
        type_: event.type_.clone().unwrap_or_default(),
        reason: event.reason.clone().unwrap_or_default(),
        message: event.message.clone().unwrap_or_default(),
        from_kopf,
        count: event.count.unwrap_or(1).max(1) as u32,
        time,
    }
}

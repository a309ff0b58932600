//! Reads the Events that tell whether the operator surfaced its failures: core/v1 Events
//! (kopf posts those) in the namespaces it serves and where kopf posts the Events of
//! cluster-scoped objects (its own namespace, or `default`), within the log window. A
//! field selector narrows the read to the handled kind where there is one; pages are
//! followed up to a bound, and only Events about handled objects in served namespaces
//! are kept.

use super::{Namespaces, Reach, obstacle};
use crate::catalog::EventType;
use crate::model::evidence::{
    EventEvidence, EventRecord, Gathered, HandledResource, Reporter, Unavailable, group_of,
};
use crate::model::kopf_run::KopfRun;
use crate::model::names::field_selector_value;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::time::Duration;

/// Events per list page.
const PAGE: u32 = 500;
/// At most this many Events are read per namespace and audit; past it the read stops and
/// the status says `eventsTruncated`.
pub(crate) const MAX_EVENTS_PER_NAMESPACE: usize = 5000;

/// Where kopf files the Events of cluster-scoped objects when its login names no
/// namespace. kopf 1.45 `_cogs/clients/events.py` posts them into `ref.namespace or
/// get_default_namespace() or 'default'`; the login through the `kubernetes` client
/// (`login_via_client`, `_core/intents/piggybacking.py`, chosen whenever that package is
/// installed and pykube is not) names no namespace, in a cluster as on a laptop. kopf's
/// own logins name one (the service account's namespace, the kubeconfig context's), and
/// pykube's the one of its config.
const KOPF_FALLBACK_NAMESPACE: &str = "default";

/// Where the Events that concern the operator are read.
struct EventNamespaces {
    /// Those it serves (with cluster-scoped objects, its own too): each must be read.
    required: Namespaces,
    /// `default`, where kopf files the Events of cluster-scoped objects when its login
    /// names no namespace, if within reach and not already required: read when it can
    /// be.
    fallback: Option<&'static str>,
    /// Where such Events may be that is not read, and why.
    unread: BTreeMap<String, Unavailable>,
}

/// Where the Events that concern the operator are, and what of it the reach excludes.
fn event_namespaces(
    run: &KopfRun,
    handled: &[HandledResource],
    own: &str,
    reach: &Reach,
) -> EventNamespaces {
    let mut out = EventNamespaces {
        required: Namespaces::served(run, own),
        fallback: None,
        unread: BTreeMap::new(),
    };
    if let Namespaces::Only(list) = &mut out.required
        && handled.iter().any(|h| !h.namespaced)
    {
        list.insert(own.to_string());
        // When its own namespace is `default`, that is read already.
        if list.contains(KOPF_FALLBACK_NAMESPACE) {
            return out;
        }
        if reach.may_read(Some(KOPF_FALLBACK_NAMESPACE)) {
            out.fallback = Some(KOPF_FALLBACK_NAMESPACE);
        } else {
            out.unread.insert(
                KOPF_FALLBACK_NAMESPACE.to_string(),
                reach.outside(&format!(
                    "the Events in namespace {KOPF_FALLBACK_NAMESPACE}"
                )),
            );
        }
    }
    out
}

/// Whether kopf is seen filing the Events of cluster-scoped objects in the operator's
/// own namespace: one login, one namespace, so `default` holds none of them.
fn files_at_home(events: &[EventRecord], own: &str) -> bool {
    events
        .iter()
        .any(|e| e.reporter == Reporter::Kopf && e.object_namespace.is_empty() && e.filed_in == own)
}

/// Lists the Events about the handled objects, newer than `now - window`;
/// `operator_namespace` is where kopf files the Events of cluster-scoped objects unless
/// its login names no namespace ([`KOPF_FALLBACK_NAMESPACE`]). A namespace the operator
/// serves that cannot be read makes the area unavailable; `default` that cannot be read
/// is named in [`EventEvidence::unread`].
pub(crate) async fn gather(
    client: &Client,
    run: &KopfRun,
    handled: &[HandledResource],
    operator_namespace: &str,
    reach: &Reach,
    now: Timestamp,
    window: Duration,
) -> Gathered<EventEvidence> {
    let EventNamespaces {
        required,
        fallback,
        mut unread,
    } = event_namespaces(run, handled, operator_namespace, reach);
    if !required.within(reach) {
        return Err(reach.outside("the Events of the namespaces the operator serves"));
    }
    let kinds: BTreeSet<&str> = handled.iter().filter_map(|h| h.kind.as_deref()).collect();
    if kinds.is_empty() {
        return Ok(EventEvidence::default());
    }
    let since = now
        .checked_sub(jiff::SignedDuration::try_from(window).unwrap_or_default())
        .unwrap_or(now);
    let selector = match kinds.iter().collect::<Vec<_>>().as_slice() {
        [one] => Some(format!("involvedObject.kind={}", field_selector_value(one))),
        _ => None,
    };
    let namespaced = |ns: &str| (Api::namespaced(client.clone(), ns), Some(ns.to_string()));
    let mut apis: Vec<(Api<Event>, Option<String>)> = match &required {
        Namespaces::All => vec![(Api::all(client.clone()), None)],
        Namespaces::Only(list) => list.iter().map(|ns| namespaced(ns)).collect(),
    };
    let required_reads = apis.len();
    apis.extend(fallback.map(namespaced));
    let homes = [operator_namespace, KOPF_FALLBACK_NAMESPACE];
    let mut out = EventEvidence::default();
    for (index, (api, namespace)) in apis.into_iter().enumerate() {
        let where_ = match &namespace {
            Some(ns) => format!("namespace {ns}"),
            None => "every namespace".to_string(),
        };
        let read = list_paged(&api, selector.as_deref()).await.map_err(|e| {
            obstacle(
                &e,
                &format!("list events in {where_}"),
                &format!("list on events in {where_}"),
            )
        });
        let (events, cut) = match (read, namespace) {
            (Ok(read), _) => read,
            (Err(why), Some(ns)) if index >= required_reads => {
                unread.insert(ns, why);
                continue;
            }
            (Err(why), _) => return Err(why),
        };
        out.truncated |= cut;
        out.events.extend(
            events
                .iter()
                .map(record)
                .filter(|r| r.time.is_none_or(|t| t >= since))
                .filter_map(|r| r.about_handled(handled, &run.scope, &homes)),
        );
    }
    if !files_at_home(&out.events, operator_namespace) {
        out.unread = unread;
    }
    Ok(out)
}

/// Lists Events page by page up to the bound; returns them and whether the bound cut.
async fn list_paged(
    api: &Api<Event>,
    selector: Option<&str>,
) -> Result<(Vec<Event>, bool), kube::Error> {
    let mut params = ListParams::default().limit(PAGE);
    if let Some(s) = selector {
        params = params.fields(s);
    }
    let mut out = Vec::new();
    let listed = super::paged::each_page(api, params, |page| {
        out.extend(page);
        if out.len() >= MAX_EVENTS_PER_NAMESPACE {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .await?;
    Ok((out, !listed.complete))
}

/// Flattens a core/v1 Event.
pub(crate) fn record(event: &Event) -> EventRecord {
    let obj = &event.involved_object;
    let reporter = event
        .reporting_component
        .as_deref()
        .filter(|c| !c.is_empty())
        .or_else(|| event.source.as_ref().and_then(|s| s.component.as_deref()))
        .map(Reporter::parse)
        .unwrap_or_else(|| Reporter::Other(String::new()));
    let time = event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0));
    EventRecord {
        group: group_of(obj.api_version.as_deref().unwrap_or("")).to_string(),
        kind: obj.kind.clone().unwrap_or_default(),
        object_namespace: obj.namespace.clone().unwrap_or_default(),
        filed_in: String::new(),
        name: obj.name.clone().unwrap_or_default(),
        uid: obj.uid.clone().unwrap_or_default(),
        type_: EventType::parse(event.type_.as_deref().unwrap_or("")),
        reason: event.reason.clone().unwrap_or_default(),
        message: event.message.clone().unwrap_or_default(),
        reporter,
        count: event.count.unwrap_or(1).max(1) as u32,
        time,
    }
}

#[cfg(test)]
mod tests;

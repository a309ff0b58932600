//! Reads a bounded sample of the objects the operator handles: what kopf left in their
//! annotations, finalizers and status. Only in namespaces the operator serves, and only
//! within the audit's reach. Never core Secrets: they carry credentials and data, and
//! the auditor reads none (its chart grants no Secrets read), whatever kopf left on them.

use super::{Namespaces, Reach, obstacle};
use crate::model::diffbase;
use crate::model::evidence::{Gathered, HandledResource, Handling, ObjectSample};
use crate::model::kopf_run::KopfRun;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::collections::BTreeMap;

/// At most this many objects are read per handled resource and namespace.
pub(crate) const SAMPLE_PER_RESOURCE: u32 = 50;

/// Objects per list request: a tenant can make each handled object ~1.5 MiB (the API
/// server's bound), so a page of [`SAMPLE_PER_RESOURCE`] could hold 75 MiB of JSON and
/// more once parsed; a page of 10 holds a fifth of it, and the few objects of a usual
/// namespace still come in one request.
pub(crate) const SAMPLE_PAGE: u32 = 10;

/// Pages of sampled objects that the whole process holds at once, whatever the number
/// of audits running (`--max-concurrent-audits`): each is listed and reduced to its
/// [`ObjectSample`]s under a permit, so the memory of sampling is this many pages, not
/// one per audit.
pub(crate) const PAGES_IN_FLIGHT: usize = 2;

/// The permits of [`PAGES_IN_FLIGHT`], shared by every audit of the process.
pub(crate) struct ObjectPages(tokio::sync::Semaphore);

impl Default for ObjectPages {
    fn default() -> ObjectPages {
        ObjectPages(tokio::sync::Semaphore::new(PAGES_IN_FLIGHT))
    }
}

/// Samples the objects of every handled resource but Secrets (see [`sampled`]) in the
/// namespaces the operator serves (and cluster-wide for cluster-scoped resources).
/// Nothing is read, and nothing needs reach, when Secrets are all it handles (with
/// nothing handled, the reach still decides: the area then says what it would need).
pub(crate) async fn gather(
    client: &Client,
    run: &KopfRun,
    handled: &[HandledResource],
    operator_namespace: &str,
    reach: &Reach,
    pages: &ObjectPages,
) -> Gathered<Vec<ObjectSample>> {
    let served = Namespaces::served(run, operator_namespace);
    let sampled: Vec<(usize, &HandledResource)> = sampled(handled).collect();
    if sampled.is_empty() && !handled.is_empty() {
        return Ok(Vec::new());
    }
    if sampled.iter().any(|(_, h)| !h.namespaced) && !reach.cross_namespace {
        return Err(reach.outside("cluster-scoped objects the operator handles"));
    }
    if !served.within(reach) {
        return Err(reach.outside("objects in the namespaces the operator serves"));
    }
    let mut out = Vec::new();
    for (index, resource) in sampled {
        let ar = api_resource(resource);
        let apis: Vec<Api<DynamicObject>> = match (resource.namespaced, &served) {
            (true, Namespaces::Only(list)) => list
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, &ar))
                .collect(),
            _ => vec![Api::all_with(client.clone(), &ar)],
        };
        let group = if resource.group.is_empty() {
            "core"
        } else {
            &resource.group
        };
        for api in apis {
            let mut read = 0;
            let mut token: Option<String> = None;
            while read < SAMPLE_PER_RESOURCE {
                let mut params =
                    ListParams::default().limit(SAMPLE_PAGE.min(SAMPLE_PER_RESOURCE - read));
                if let Some(t) = &token {
                    params = params.continue_token(t);
                }
                // Closed only when the runtime shuts down: the page is then read unbounded.
                let permit = pages.0.acquire().await.ok();
                let list = api.list(&params).await.map_err(|e| {
                    obstacle(
                        &e,
                        &format!("list {} ({group})", resource.plural),
                        "get and list on them",
                    )
                })?;
                read += u32::try_from(list.items.len()).unwrap_or(u32::MAX);
                token = list.metadata.continue_.filter(|t| !t.is_empty());
                out.extend(
                    list.items
                        .into_iter()
                        .filter(|o| {
                            !resource.namespaced
                                || o.metadata
                                    .namespace
                                    .as_deref()
                                    .is_some_and(|ns| run.scope.serves(ns))
                        })
                        .map(|o| sample(index, o)),
                );
                drop(permit);
                if token.is_none() {
                    break;
                }
            }
        }
    }
    Ok(out)
}

/// The handled resources whose objects are sampled, with their index in `handled`:
/// all but core Secrets, which the auditor never reads.
pub(crate) fn sampled(
    handled: &[HandledResource],
) -> impl Iterator<Item = (usize, &HandledResource)> {
    handled.iter().enumerate().filter(|(_, h)| !h.is_secrets())
}

fn api_resource(resource: &HandledResource) -> ApiResource {
    let kind = resource.kind.clone().unwrap_or_default();
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&resource.group, &resource.version, &kind),
        &resource.plural,
    )
}

/// Reduces an object to what the persistence checks read.
pub(crate) fn sample(resource: usize, object: DynamicObject) -> ObjectSample {
    let meta = &object.metadata;
    let annotations: BTreeMap<String, usize> = meta
        .annotations
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), k.len() + v.len()))
        .collect();
    let status_kopf_keys = object
        .data
        .get("status")
        .and_then(|s| s.get("kopf"))
        .and_then(|k| k.as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    ObjectSample {
        resource,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        annotations,
        finalizers: meta.finalizers.clone().unwrap_or_default(),
        deletion_timestamp: meta.deletion_timestamp.as_ref().map(|t| t.0),
        status_kopf_keys,
        handling: handling(object),
    }
}

/// The field manager kopf's requests get: the apiserver names managers after the
/// User-Agent's first part, and kopf sends `kopf/<version>` (kopf 1.38-1.45
/// `_cogs/clients/auth.py`).
const KOPF_MANAGER: &str = "kopf";

/// Whether kopf handled the object's last change: its diff-base against its essence
/// (kopf's own comparison), its progress marks, and who changed it last. Takes the
/// object whole: its body becomes the JSON the comparison reads without a copy of it.
fn handling(mut object: DynamicObject) -> Handling {
    let managed = object.metadata.managed_fields.take().unwrap_or_default();
    let metadata = serde_json::to_value(&object.metadata).unwrap_or_default();
    let mut body = std::mem::take(&mut object.data);
    if let serde_json::Value::Object(map) = &mut body {
        map.insert("metadata".to_string(), metadata);
    }
    let base = diffbase::stored(&body);
    let differs = base.as_ref().is_some_and(|b| {
        let now = diffbase::essence(&body, &diffbase::extra_fields(b));
        !diffbase::same(b, &now)
    });
    let prefix = format!("{}/", diffbase::prefix(&body));
    let in_progress = object.metadata.annotations.iter().flatten().any(|(k, _)| {
        k.strip_prefix(prefix.as_str()).is_some_and(|rest| {
            !rest.starts_with("last-handled-configuration") && rest != "touch-dummy"
        })
    }) || body
        .pointer("/status/kopf/progress")
        .is_some_and(|p| p.as_object().is_some_and(|m| !m.is_empty()));
    let mut changed_by_others = None;
    let mut changed_by_kopf = None;
    for entry in &managed {
        let Some(at) = entry.time.as_ref().map(|t| t.0) else {
            continue;
        };
        // A status writer changes nothing kopf compares.
        if entry.subresource.as_deref() == Some("status") {
            continue;
        }
        let slot = if entry.manager.as_deref() == Some(KOPF_MANAGER) {
            &mut changed_by_kopf
        } else {
            &mut changed_by_others
        };
        *slot = (*slot).max(Some(at));
    }
    Handling {
        diffbase: base.is_some(),
        differs,
        in_progress,
        changed_by_others,
        changed_by_kopf,
    }
}

#[cfg(test)]
mod tests;

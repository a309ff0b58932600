//! Reads a bounded sample of the objects the operator handles: what kopf left in their
//! annotations, finalizers and status. Only in namespaces the operator serves, and only
//! within the audit's reach. Never core Secrets: they carry credentials and data, and
//! the auditor reads none (its chart grants no Secrets read), whatever kopf left on them.

use super::{Namespaces, Reach, obstacle};
use crate::model::evidence::{
    Gathered, HandledResource, Handling, ObjectEvidence, ObjectSample, qualified,
};
use crate::model::kopf_run::KopfRun;
use crate::model::shape::{self, Budget, ParsedObject};
use crate::model::{diffbase, kopf_marks};
use kube::Client;
use kube::api::{DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind, Request, Resource};
use serde_json::Value;
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
) -> Gathered<ObjectEvidence> {
    let served = Namespaces::served(run, operator_namespace);
    let sampled: Vec<(usize, &HandledResource)> = sampled(handled).collect();
    if sampled.is_empty() && !handled.is_empty() {
        return Ok(ObjectEvidence::default());
    }
    if sampled.iter().any(|(_, h)| !h.namespaced) && !reach.cross_namespace {
        return Err(reach.outside("cluster-scoped objects the operator handles"));
    }
    if !served.within(reach) {
        return Err(reach.outside("objects in the namespaces the operator serves"));
    }
    let mut out = ObjectEvidence::default();
    for (index, resource) in sampled {
        let ar = api_resource(resource);
        let paths: Vec<String> = match (resource.namespaced, &served) {
            (true, Namespaces::Only(list)) => list
                .iter()
                .map(|ns| DynamicObject::url_path(&ar, Some(ns)))
                .collect(),
            _ => vec![DynamicObject::url_path(&ar, None)],
        };
        let group = if resource.group.is_empty() {
            "core"
        } else {
            &resource.group
        };
        for path in paths {
            let mut read = 0;
            let mut token: Option<String> = None;
            while read < SAMPLE_PER_RESOURCE {
                let mut params =
                    ListParams::default().limit(SAMPLE_PAGE.min(SAMPLE_PER_RESOURCE - read));
                if let Some(t) = &token {
                    params = params.continue_token(t);
                }
                let what = format!("list {} ({group})", resource.plural);
                // Closed only when the runtime shuts down: the page is then read unbounded.
                let permit = pages.0.acquire().await.ok();
                let text = list_text(client, &path, &params)
                    .await
                    .map_err(|e| obstacle(&e, &what, "get and list on them"))?;
                let mut listed = 0usize;
                let page = shape::list(&text, shape::OBJECT_BUDGET_BYTES, |o| {
                    listed += 1;
                    let served = !resource.namespaced
                        || (!o.namespace.is_empty() && run.scope.serves(&o.namespace));
                    served.then(|| sample(index, o))
                })
                .map_err(|e| {
                    obstacle(&kube::Error::SerdeError(e), &what, "get and list on them")
                })?;
                drop(text);
                read += u32::try_from(listed).unwrap_or(u32::MAX);
                token = page.continue_token.filter(|t| !t.is_empty());
                for item in page.items {
                    match item {
                        Ok(s) => out.samples.push(s),
                        Err(name) => out.over_budget.push(name),
                    }
                }
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

/// Lists one page as JSON text, as `Api::list` would request it: the text is parsed
/// here within a budget ([`shape::list`]) instead of whole into `DynamicObject`s.
async fn list_text(client: &Client, path: &str, params: &ListParams) -> kube::Result<String> {
    let mut request = Request::new(path)
        .list(params)
        .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("list");
    client.request_text(request).await
}

/// Reduces an object to what the persistence checks read, or names it
/// (`namespace/name`) when it was over its parse budget: nothing is concluded from it.
pub(crate) fn sample(resource: usize, object: ParsedObject) -> Result<ObjectSample, String> {
    let name = qualified(Some(&object.namespace), &object.name);
    if object.budget.is_over() {
        return Err(name);
    }
    let meta = object.body.get("metadata");
    let annotations: BTreeMap<String, usize> = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), k.len() + v.as_str().map_or(0, str::len)))
        .collect();
    let finalizers = meta
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect();
    let deletion_timestamp = meta
        .and_then(|m| m.get("deletionTimestamp"))
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok());
    let status_kopf_keys = object
        .body
        .pointer("/status/kopf")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let Some(handling) = handling(&object) else {
        return Err(name);
    };
    Ok(ObjectSample {
        resource,
        namespace: object.namespace,
        name: object.name,
        annotations,
        finalizers,
        deletion_timestamp,
        status_kopf_keys,
        handling,
    })
}

/// Whether kopf handled the object's last change: its diff-base against its essence
/// (kopf's own comparison), its progress marks, and who changed it last. `None` when
/// the comparison does not fit in what is left of the object's parse budget (the
/// stored diff-base is parsed, and the essence built, within it).
fn handling(object: &ParsedObject) -> Option<Handling> {
    let body = &object.body;
    let budget: &Budget = &object.budget;
    let base = diffbase::stored_within(body, budget);
    if budget.is_over() {
        return None;
    }
    let differs = match &base {
        Some(b) => {
            // The essence is a copy of the body, less metadata and status.
            if !budget.spend(Budget::cost(body)) {
                return None;
            }
            let now = diffbase::essence(body, &diffbase::extra_fields(b));
            !diffbase::same(b, &now)
        }
        None => false,
    };
    let prefix = diffbase::prefix(body);
    let in_progress = body
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .any(|(k, _)| kopf_marks::is_progress_annotation(k, &prefix))
        || body
            .pointer("/status/kopf/progress")
            .is_some_and(|p| p.as_object().is_some_and(|m| !m.is_empty()));
    let mut changed_by_others = None;
    let mut changed_by_kopf = None;
    for entry in &object.managed {
        let Some(at) = entry.at() else {
            continue;
        };
        // A status writer changes nothing kopf compares.
        if entry.subresource.as_deref() == Some("status") {
            continue;
        }
        let slot = if entry.manager.as_deref() == Some(kopf_marks::MANAGER) {
            &mut changed_by_kopf
        } else {
            &mut changed_by_others
        };
        *slot = (*slot).max(Some(at));
    }
    Some(Handling {
        diffbase: base.is_some(),
        differs,
        in_progress,
        changed_by_others,
        changed_by_kopf,
    })
}

#[cfg(test)]
mod tests;

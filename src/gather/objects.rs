//! Reads a bounded sample of the objects the operator handles: what kopf left in their
//! annotations, finalizers and status. Only in namespaces the operator serves, and only
//! within the audit's reach.

use super::{Namespaces, Reach, obstacle};
use crate::model::evidence::{Gathered, HandledResource, ObjectSample};
use crate::model::kopf_run::KopfRun;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::collections::BTreeMap;

/// At most this many objects are read per handled resource and namespace.
pub(crate) const SAMPLE_PER_RESOURCE: u32 = 50;

/// Samples the objects of every handled resource in the namespaces the operator serves
/// (and cluster-wide for cluster-scoped resources).
pub(crate) async fn gather(
    client: &Client,
    run: &KopfRun,
    handled: &[HandledResource],
    reach: &Reach,
) -> Gathered<Vec<ObjectSample>> {
    let served = Namespaces::served(&run.scope);
    if handled.iter().any(|h| !h.namespaced) && !reach.cross_namespace {
        return Err(reach.outside("cluster-scoped objects the operator handles"));
    }
    if !served.within(reach) {
        return Err(reach.outside("objects in the namespaces the operator serves"));
    }
    let mut out = Vec::new();
    for (index, resource) in handled.iter().enumerate() {
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
            let list = api
                .list(&ListParams::default().limit(SAMPLE_PER_RESOURCE))
                .await
                .map_err(|e| {
                    obstacle(
                        &e,
                        &format!("list {} ({group})", resource.plural),
                        "get and list on them",
                    )
                })?;
            out.extend(
                list.items
                    .iter()
                    .filter(|o| {
                        !resource.namespaced
                            || o.metadata
                                .namespace
                                .as_deref()
                                .is_some_and(|ns| run.scope.serves(ns))
                    })
                    .map(|o| sample(index, o)),
            );
        }
    }
    Ok(out)
}

fn api_resource(resource: &HandledResource) -> ApiResource {
    let kind = resource.kind.clone().unwrap_or_default();
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&resource.group, &resource.version, &kind),
        &resource.plural,
    )
}

/// Reduces an object to what the persistence checks read.
pub(crate) fn sample(resource: usize, object: &DynamicObject) -> ObjectSample {
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
    }
}

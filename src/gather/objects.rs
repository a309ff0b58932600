//! Reads a bounded sample of the objects the operator handles: what kopf left in their
//! annotations, finalizers and status.

use crate::conditions::Reason;
use crate::evidence::{Gathered, HandledResource, ObjectSample, Unavailable};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::collections::BTreeMap;

/// At most this many objects are read per handled resource and namespace.
pub const SAMPLE_PER_RESOURCE: u32 = 50;

/// Samples the objects of every handled resource in `namespaces` (all namespaces when
/// `None`, and always for cluster-scoped resources).
pub async fn gather(
    client: &Client,
    handled: &[HandledResource],
    namespaces: Option<&[String]>,
) -> Gathered<Vec<ObjectSample>> {
    let mut out = Vec::new();
    for (index, resource) in handled.iter().enumerate() {
        let ar = api_resource(resource);
        let apis: Vec<Api<DynamicObject>> = match (resource.namespaced, namespaces) {
            (true, Some(list)) => list
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, &ar))
                .collect(),
            _ => vec![Api::all_with(client.clone(), &ar)],
        };
        for api in apis {
            let list = match api
                .list(&ListParams::default().limit(SAMPLE_PER_RESOURCE))
                .await
            {
                Ok(list) => list,
                Err(kube::Error::Api(s)) if s.code == 403 => {
                    return Gathered::Unavailable(Unavailable {
                        reason: Reason::Forbidden,
                        message: format!(
                            "The auditor may not list {} ({}): grant it get and list on them.",
                            resource.plural,
                            if resource.group.is_empty() {
                                "core"
                            } else {
                                &resource.group
                            }
                        ),
                    });
                }
                Err(e) => {
                    return Gathered::Unavailable(Unavailable {
                        reason: Reason::AuditFailed,
                        message: format!("Listing {} failed: {e}", resource.plural),
                    });
                }
            };
            out.extend(list.items.iter().map(|o| sample(index, o)));
        }
    }
    Gathered::Ready(out)
}

fn api_resource(resource: &HandledResource) -> ApiResource {
    let kind = resource.kind.clone().unwrap_or_default();
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&resource.group, &resource.version, &kind),
        &resource.plural,
    )
}

/// Reduces an object to what the persistence checks read.
pub fn sample(resource: usize, object: &DynamicObject) -> ObjectSample {
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

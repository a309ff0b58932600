//! What re-audits a KopfAudit at once besides its own changes: its target Deployment,
//! the target's pods, and the RBAC objects that can change what its ServiceAccount may
//! do.

use crate::api::KopfAudit;
use futures::Stream;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};

/// Adds every watch that maps to KopfAudits to the controller.
pub(super) fn attach(
    controller: Controller<KopfAudit>,
    client: &Client,
    namespace: Option<&str>,
    audits: &Store<KopfAudit>,
    deployments: &Store<Deployment>,
    dep_stream: impl Stream<Item = Result<Deployment, watcher::Error>> + Send + 'static,
    pod_stream: impl Stream<Item = Result<Pod, watcher::Error>> + Send + 'static,
) -> Controller<KopfAudit> {
    let controller = controller
        .watches_stream(dep_stream, {
            let audits = audits.clone();
            move |d: Deployment| audits_for_deployment(&audits, &d)
        })
        .watches_stream(pod_stream, {
            let (audits, deployments) = (audits.clone(), deployments.clone());
            move |p: Pod| audits_for_pod(&audits, &deployments, &p)
        })
        .watches_stream(rbac_changes::<Role>(client, namespace), {
            let audits = audits.clone();
            move |r| audits_in_namespace(&audits, r.metadata.namespace.as_deref())
        })
        .watches_stream(rbac_changes::<RoleBinding>(client, namespace), {
            let audits = audits.clone();
            move |r| audits_in_namespace(&audits, r.metadata.namespace.as_deref())
        });
    // Cluster-scoped RBAC can only be watched by a cluster-wide install.
    if namespace.is_some() {
        return controller;
    }
    controller
        .watches_stream(cluster_rbac_changes::<ClusterRole>(client), {
            let audits = audits.clone();
            move |_| audits_in_namespace(&audits, None)
        })
        .watches_stream(cluster_rbac_changes::<ClusterRoleBinding>(client), {
            let audits = audits.clone();
            move |_| audits_in_namespace(&audits, None)
        })
}

/// Changes to namespaced RBAC objects (metadata only: what changed is asked again by
/// the next audit's SubjectAccessReviews).
fn rbac_changes<K>(
    client: &Client,
    namespace: Option<&str>,
) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<PartialObjectMeta<K>> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    watcher(api, watcher::Config::default())
        .default_backoff()
        .touched_objects()
}

/// Changes to cluster-scoped RBAC objects.
fn cluster_rbac_changes<K>(
    client: &Client,
) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    watcher(
        Api::<PartialObjectMeta<K>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects()
}

/// The namespace a KopfAudit's target lives in.
fn target_namespace(audit: &KopfAudit) -> String {
    audit
        .spec
        .target
        .namespace
        .clone()
        .unwrap_or_else(|| audit.namespace().unwrap_or_default())
}

/// The audits whose target lives in `namespace`; every audit for `None` (cluster-scoped
/// changes).
fn audits_in_namespace(
    audits: &Store<KopfAudit>,
    namespace: Option<&str>,
) -> Vec<ObjectRef<KopfAudit>> {
    audits
        .state()
        .iter()
        .filter(|a| namespace.is_none_or(|ns| ns == target_namespace(a)))
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

/// Whether a KopfAudit targets this Deployment (by name or selector, same namespace).
fn targets(audit: &KopfAudit, deployment: &Deployment) -> bool {
    if deployment.metadata.namespace.as_deref() != Some(target_namespace(audit).as_str()) {
        return false;
    }
    if let Some(name) = &audit.spec.target.deployment {
        return deployment.metadata.name.as_ref() == Some(name);
    }
    audit
        .spec
        .target
        .selector
        .clone()
        .and_then(|s| Selector::try_from(s).ok())
        .is_some_and(|s| s.matches(deployment.labels()))
}

fn audits_for_deployment(
    audits: &Store<KopfAudit>,
    deployment: &Deployment,
) -> Vec<ObjectRef<KopfAudit>> {
    audits
        .state()
        .iter()
        .filter(|a| targets(a, deployment))
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

fn audits_for_pod(
    audits: &Store<KopfAudit>,
    deployments: &Store<Deployment>,
    pod: &Pod,
) -> Vec<ObjectRef<KopfAudit>> {
    let owners = deployments.state_filter(|d| {
        d.metadata.namespace == pod.metadata.namespace
            && Selector::try_from(d.spec.selector.clone()).is_ok_and(|s| s.matches(pod.labels()))
    });
    owners
        .iter()
        .flat_map(|d| audits_for_deployment(audits, d))
        .collect()
}

//! kopf's peering objects as a discovery fingerprint: each kopf instance that takes
//! part in peering writes its identity into the `status` of its peering object, and
//! that identity names its pod. kopf 1.45 `_core/engines/peering.py` `detect_own_id`:
//! the `POD_ID` environment variable when set (kopf's docs set it from
//! `metadata.name`), else `user@host/YYYYmmddHHMMSS/xyz`, where `host` is the
//! machine's descriptive hostname (`_cogs/helpers/hostnames.py`): in a pod, its
//! hostname, which is the pod's name unless `spec.hostname` says otherwise.
//!
//! A pod named by a peering object runs kopf, so its Deployment is decided without
//! reading its log; and a Deployment whose spec shows another program (a console
//! script of its own that calls `kopf.run()`) is kopf when a peer has the name of one
//! of its pods. Who may write a peering object is trusted only as far as it
//! reaches: a `KopfPeering` is namespaced (a tenant may write its own), so it names
//! pods of its own namespace only; a `ClusterKopfPeering` is cluster-scoped (written by
//! operators granted it cluster-wide) and names pods anywhere.

use super::Discovered;
use crate::api::Recognition;
use crate::model::evidence::PeeringObject;
use std::collections::HashMap;

/// Identities kept per peering object: kopf's own peering has one per running
/// instance (and the dead ones not yet cleaned), so a status with more is not kopf's
/// doing and the rest is ignored.
const IDENTITIES_PER_OBJECT: usize = 20;

/// The characters Kubernetes draws a pod name's generated parts from (apimachinery
/// `util/rand` `SafeEncodeString` and `String`: no vowels, no 0, 1, 3).
const GENERATED: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Longest identity kept: a pod name is at most 253 characters, and `user@host/…`
/// adds a user and a timestamp.
const IDENTITY_MAX: usize = 512;

/// Where a pod was seen as a kopf peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sighting {
    /// The `KopfPeering`'s namespace; `None` for a `ClusterKopfPeering`.
    pub(crate) namespace: Option<String>,
    /// The peering object's name (the operator's `--peering`).
    pub(crate) peering: String,
}

impl Sighting {
    /// The peering object, as a person reads it.
    fn object(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("KopfPeering {ns}/{}", self.peering),
            None => format!("ClusterKopfPeering {}", self.peering),
        }
    }

    /// Whether this sighting may name a pod of `namespace`.
    fn reaches(&self, namespace: &str) -> bool {
        self.namespace.as_deref().is_none_or(|ns| ns == namespace)
    }
}

/// The host names kopf's peering objects name, each with where it was seen.
#[derive(Debug, Default)]
pub(crate) struct PeerPods {
    by_host: HashMap<String, Vec<Sighting>>,
    /// The hosts shaped like a Deployment's pod names, by that Deployment's name.
    by_deployment: HashMap<String, Vec<String>>,
}

impl PeerPods {
    /// The pods `objects` name, at most [`IDENTITIES_PER_OBJECT`] from each.
    #[cfg(test)]
    fn new(objects: &[PeeringObject]) -> PeerPods {
        let mut peers = PeerPods::default();
        for object in objects {
            peers.add(object);
        }
        peers
    }

    /// Adds the pods `object` names, at most [`IDENTITIES_PER_OBJECT`].
    pub(crate) fn add(&mut self, object: &PeeringObject) {
        let sighting = Sighting {
            namespace: object.namespace.clone(),
            peering: object.name.clone(),
        };
        for peer in object.peers.iter().take(IDENTITIES_PER_OBJECT) {
            let Some(host) = identity_host(&peer.id) else {
                continue;
            };
            let sightings = self.by_host.entry(host.to_string()).or_default();
            if sightings.is_empty()
                && let Some(deployment) = deployment_of_pod(host)
            {
                self.by_deployment
                    .entry(deployment.to_string())
                    .or_default()
                    .push(host.to_string());
            }
            sightings.push(sighting.clone());
        }
    }

    /// Whether no peering object names any pod.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_host.is_empty()
    }

    /// The first of `pods` (namespace, name, `spec.hostname`) a peering object that
    /// reaches its namespace names, and where.
    pub(crate) fn find<'p>(
        &self,
        pods: impl IntoIterator<Item = PodName<'p>>,
    ) -> Option<(PodName<'p>, &Sighting)> {
        pods.into_iter().find_map(|pod| {
            let hosts = [Some(pod.name), pod.hostname];
            let sighting = hosts.into_iter().flatten().find_map(|host| {
                self.by_host
                    .get(host)?
                    .iter()
                    .find(|s| s.reaches(pod.namespace))
            })?;
            Some((pod, sighting))
        })
    }
}

impl PeerPods {
    /// A pod of the Deployment `namespace`/`name`, by the names a Deployment gives its
    /// pods (`NAME-<template hash>-<5 characters>`), that a peering object reaching
    /// `namespace` names, and where.
    pub(crate) fn of_deployment<'a>(
        &'a self,
        namespace: &'a str,
        name: &str,
    ) -> Option<(PodName<'a>, &'a Sighting)> {
        let hosts = self.by_deployment.get(name)?;
        let pods = hosts.iter().map(|host| PodName {
            namespace,
            name: host,
            hostname: None,
        });
        self.find(pods)
    }
}

/// The Deployment a pod name says it belongs to: `NAME` of `NAME-<hash>-<xxxxx>`, where
/// the ReplicaSet's `pod-template-hash` (up to 10 characters) and the 5 random ones are
/// drawn from [`GENERATED`]. `None` for a name of another shape.
fn deployment_of_pod(pod: &str) -> Option<&str> {
    let generated = |part: &str| part.bytes().all(|b| GENERATED.contains(&b));
    let (rest, random) = pod.rsplit_once('-')?;
    let (deployment, hash) = rest.rsplit_once('-')?;
    let shaped = random.len() == 5
        && generated(random)
        && (1..=10).contains(&hash.len())
        && generated(hash)
        && !deployment.is_empty();
    shaped.then_some(deployment)
}

/// What names a pod to kopf's identity: its namespace, its name, and its hostname when
/// `spec.hostname` sets one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PodName<'p> {
    /// The pod's namespace.
    pub(crate) namespace: &'p str,
    /// The pod's name.
    pub(crate) name: &'p str,
    /// `spec.hostname`, when set.
    pub(crate) hostname: Option<&'p str>,
}

/// The host a kopf identity names: `POD_ID` itself, or the host of `user@host/…` and
/// `user@host` (`kopf freeze`), its first DNS label (a pod with a subdomain resolves
/// its hostname to `host.subdomain.ns.svc…`). `None` for what no pod could be named.
pub(crate) fn identity_host(id: &str) -> Option<&str> {
    if id.is_empty() || id.len() > IDENTITY_MAX {
        return None;
    }
    let host = match id.split_once('@') {
        Some((_, rest)) => rest.split('/').next().unwrap_or(rest),
        None => id,
    };
    let label = host.split('.').next().unwrap_or(host);
    let dns_label = !label.is_empty()
        && label.len() <= 253
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    dns_label.then_some(label)
}

impl Discovered {
    /// The row of a Deployment whose pod `pod` a peering object names as a kopf peer;
    /// `container` is its one container whose command line does not show what it runs.
    pub(crate) fn by_peering(
        deployment: &str,
        container: &str,
        pod: PodName<'_>,
        sighting: &Sighting,
    ) -> Discovered {
        let (scope, namespaces) = match &sighting.namespace {
            None => ("cluster-wide", Vec::new()),
            Some(ns) => ("namespaced", vec![ns.clone()]),
        };
        Discovered {
            namespace: pod.namespace.to_string(),
            deployment: deployment.to_string(),
            container: container.to_string(),
            recognised_by: Recognition::Peering,
            evidence: format!("pod {} is a peer in kopf's {}", pod.name, sighting.object()),
            kopf_version: None,
            scope: scope.to_string(),
            namespaces,
            labels: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::evidence::Peer;

    fn object(namespace: Option<&str>, ids: &[&str]) -> PeeringObject {
        PeeringObject {
            namespace: namespace.map(str::to_string),
            name: "default".to_string(),
            peers: ids
                .iter()
                .map(|id| Peer {
                    id: id.to_string(),
                    priority: 0,
                    lifetime_seconds: 60,
                    lastseen: None,
                })
                .collect(),
        }
    }

    fn pod<'p>(namespace: &'p str, name: &'p str) -> PodName<'p> {
        PodName {
            namespace,
            name,
            hostname: None,
        }
    }

    #[test]
    fn an_identity_names_its_pod_or_host() {
        assert_eq!(identity_host("op-7d9f-x2k4z"), Some("op-7d9f-x2k4z"));
        assert_eq!(
            identity_host("kopf@op-7d9f-x2k4z/20261203101600/abc"),
            Some("op-7d9f-x2k4z")
        );
        assert_eq!(identity_host("jane@laptop"), Some("laptop"));
        assert_eq!(
            identity_host("root@op-0.ops.team.svc.cluster.local/20261203101600/abc"),
            Some("op-0")
        );
        for nothing in ["", "Jane@Laptop.local/x", "a b", &"x".repeat(600)] {
            assert_eq!(identity_host(nothing), None, "{nothing}");
        }
    }

    #[test]
    fn a_cluster_peering_names_pods_anywhere_a_namespaced_one_only_its_own() {
        let peers = PeerPods::new(&[
            object(None, &["root@op-a-1/20261203101600/abc"]),
            object(Some("team"), &["op-b-1", "op-c-1"]),
        ]);
        let (found, where_) = peers.find([pod("ops", "op-a-1")]).expect("cluster-wide");
        assert_eq!(found.name, "op-a-1");
        assert_eq!(where_.namespace, None);
        assert!(peers.find([pod("team", "op-b-1")]).is_some());
        assert!(
            peers.find([pod("other", "op-c-1")]).is_none(),
            "a tenant's KopfPeering names no pod of another namespace"
        );
        let hostname = PodName {
            namespace: "team",
            name: "op-x-9",
            hostname: Some("op-c-1"),
        };
        assert!(peers.find([hostname]).is_some(), "spec.hostname counts");
    }

    #[test]
    fn a_peering_status_stuffed_with_identities_is_read_only_so_far() {
        let ids: Vec<String> = (0..1000).map(|i| format!("pod-{i}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let peers = PeerPods::new(&[object(Some("team"), &ids)]);
        assert!(peers.find([pod("team", "pod-19")]).is_some());
        assert!(peers.find([pod("team", "pod-20")]).is_none());
    }

    #[test]
    fn a_pod_name_tells_its_deployment() {
        assert_eq!(deployment_of_pod("my-op-7d9f8c5b4-x2k4z"), Some("my-op"));
        assert_eq!(deployment_of_pod("op-5c6b9-bcd22"), Some("op"));
        for other in [
            "my-op",
            "my-op-0",
            "my-op-7d9f8c5b4",
            "my-op-7d9f8c5b4-x2k4",
            "my-op-7d9f8c5b4-aeiou",
            "my-op-7d9f8c5b41abc-x2k4z",
            "-7d9f8c5b4-x2k4z",
        ] {
            assert_eq!(deployment_of_pod(other), None, "{other}");
        }
    }

    #[test]
    fn a_deployment_is_found_by_its_pods_names_in_reach_only() {
        let peers = PeerPods::new(&[
            object(Some("team"), &["op-7d9f8c5b4-x2k4z"]),
            object(None, &["root@web-api-5c6b9-bcd22/20261203101600/abc"]),
        ]);
        let (pod, _) = peers.of_deployment("team", "op").expect("its pod");
        assert_eq!(pod.name, "op-7d9f8c5b4-x2k4z");
        assert!(
            peers.of_deployment("other", "op").is_none(),
            "another namespace's KopfPeering"
        );
        assert!(
            peers.of_deployment("apps", "web-api").is_some(),
            "a ClusterKopfPeering"
        );
        assert!(
            peers.of_deployment("apps", "web").is_none(),
            "web-api's pod is not web's"
        );
    }

    #[test]
    fn the_row_says_which_peering_named_which_pod() {
        let sighting = Sighting {
            namespace: Some("team".to_string()),
            peering: "default".to_string(),
        };
        let row = Discovered::by_peering("op", "main", pod("team", "op-1"), &sighting);
        assert_eq!(row.recognised_by, Recognition::Peering);
        assert_eq!(
            row.evidence,
            "pod op-1 is a peer in kopf's KopfPeering team/default"
        );
        assert_eq!(
            (row.scope.as_str(), row.namespaces.as_slice()),
            ("namespaced", &["team".to_string()][..])
        );
    }
}

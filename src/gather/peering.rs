//! Reads the peering objects an operator takes part in: the `ClusterKopfPeering` of a
//! cluster-wide operator, or the `KopfPeering` of each namespace a namespaced one serves,
//! in both of kopf's API groups (kopf 1.38-1.45 `_cogs/structs/references.py`
//! `CLUSTER_PEERINGS_K/_Z`, `NAMESPACED_PEERINGS_K/_Z`). Only within the audit's reach.

use super::{Namespaces, Reach, obstacle};
use crate::model::discovery::peers::PeerPods;
use crate::model::evidence::{Gathered, Peer, PeeringObject};
use crate::model::kopf_run::{KopfRun, Peering};
use crate::model::names::{name_selector, path_segment};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};

/// kopf's peering API groups, current first.
const GROUPS: [&str; 2] = ["kopf.dev", "zalando.org"];
/// The peering name when `--peering` is not given (kopf `settings.peering.name`).
const DEFAULT_PEERING: &str = "default";

/// Which peering objects kopf reads for this run.
enum Place {
    /// `ClusterKopfPeering` NAME.
    Cluster,
    /// `KopfPeering` NAME in each of these namespaces.
    Namespaces(Vec<String>),
    /// `KopfPeering` NAME in every namespace the patterns match.
    Matching,
}

/// The peering objects of the run (empty when standalone, or when kopf's peering CRDs
/// are not installed and peering is optional).
pub(crate) async fn gather(
    client: &Client,
    run: &KopfRun,
    operator_namespace: &str,
    reach: &Reach,
) -> Gathered<Vec<PeeringObject>> {
    let name = match &run.peering {
        Peering::Standalone => return Ok(Vec::new()),
        Peering::Named(name) => name.as_str(),
        // Unknown: kopf's default peering is what an instance would join.
        Peering::Auto | Peering::Unknown => DEFAULT_PEERING,
    };
    let place = if run.scope.is_cluster_wide() {
        Place::Cluster
    } else {
        match Namespaces::served(run, operator_namespace) {
            Namespaces::Only(list) => Place::Namespaces(list.into_iter().collect()),
            Namespaces::All => Place::Matching,
        }
    };
    let outside = match &place {
        Place::Cluster | Place::Matching => !reach.cross_namespace,
        Place::Namespaces(list) => !list.iter().all(|ns| reach.may_read(Some(ns))),
    };
    if outside {
        return Err(reach.outside("the operator's peering objects"));
    }
    let mut out = Vec::new();
    for group in GROUPS {
        match &place {
            Place::Cluster => {
                let api = Api::all_with(client.clone(), &resource(group, true));
                out.extend(read(&api, name).await?);
            }
            Place::Namespaces(list) => {
                for ns in list {
                    let api = Api::namespaced_with(client.clone(), ns, &resource(group, false));
                    out.extend(read(&api, name).await?);
                }
            }
            Place::Matching => {
                let api: Api<DynamicObject> =
                    Api::all_with(client.clone(), &resource(group, false));
                let params = ListParams::default().fields(&name_selector(name));
                let list = match api.list(&params).await {
                    Ok(list) => list.items,
                    Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
                    Err(e) => return Err(denied(&e)),
                };
                out.extend(
                    list.iter()
                        .filter(|o| {
                            o.metadata
                                .namespace
                                .as_deref()
                                .is_some_and(|ns| run.scope.serves(ns))
                        })
                        .map(peering_object),
                );
            }
        }
    }
    Ok(out)
}

/// Peering objects read per request by discovery: a status may be as large as an
/// object may be, and a tenant may fill its own, so a small page bounds what is held.
const DISCOVERY_PAGE: u32 = 5;

/// Pages read per list by discovery: 200 peering objects of a kind and group.
const DISCOVERY_PAGES: u64 = 40;

/// The peering objects discovery reads to recognise kopf's pods: the
/// `ClusterKopfPeering`s, and the `KopfPeering`s of `namespace` (of every namespace:
/// `None`), in both of kopf's groups, at most [`DISCOVERY_PAGES`] pages of
/// [`DISCOVERY_PAGE`] per list. A group not installed, or not readable, adds nothing:
/// peering only adds to what the spec and the logs show. Also returns the requests
/// made.
pub(crate) async fn for_discovery(client: &Client, namespace: Option<&str>) -> (PeerPods, u64) {
    let mut objects = PeerPods::default();
    let mut requests = 0;
    for group in GROUPS {
        let cluster = Api::all_with(client.clone(), &resource(group, true));
        requests += list_pages(&cluster, &mut objects).await;
        let namespaced = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource(group, false)),
            None => Api::all_with(client.clone(), &resource(group, false)),
        };
        requests += list_pages(&namespaced, &mut objects).await;
    }
    (objects, requests)
}

/// Reads up to [`DISCOVERY_PAGES`] pages of `api` into `out`; the requests made.
async fn list_pages(api: &Api<DynamicObject>, out: &mut PeerPods) -> u64 {
    let mut pages: u64 = 0;
    let params = ListParams::default().limit(DISCOVERY_PAGE);
    let listed = super::paged::each_page(api, params, |page| {
        pages += 1;
        for item in &page {
            out.add(&peering_object(item));
        }
        if pages >= DISCOVERY_PAGES {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })
    .await;
    // A refused or failed page was a request too; the pages before it are kept.
    match listed {
        Ok(listed) => listed.pages,
        Err(_) => pages + 1,
    }
}

/// `kopf.dev/v1` `clusterkopfpeerings` or `kopfpeerings` (likewise `zalando.org/v1`).
fn resource(group: &str, cluster: bool) -> ApiResource {
    let (kind, plural) = if cluster {
        ("ClusterKopfPeering", "clusterkopfpeerings")
    } else {
        ("KopfPeering", "kopfpeerings")
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

/// One peering object, if it (and its CRD) exists.
async fn read(api: &Api<DynamicObject>, name: &str) -> Gathered<Option<PeeringObject>> {
    match api.get_opt(&path_segment(name)).await {
        Ok(found) => Ok(found.as_ref().map(peering_object)),
        // The CRD of this group is not installed.
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(denied(&e)),
    }
}

fn denied(error: &kube::Error) -> crate::model::evidence::Unavailable {
    obstacle(
        error,
        "read kopf's peering objects",
        "get and list on kopfpeerings and clusterkopfpeerings (kopf.dev, zalando.org)",
    )
}

/// A peering object's status, as kopf writes it: `{id: {priority, lifetime, lastseen}}`.
pub(crate) fn peering_object(object: &DynamicObject) -> PeeringObject {
    let peers = object
        .data
        .get("status")
        .and_then(|s| s.as_object())
        .map(|status| {
            status
                .iter()
                .filter_map(|(id, info)| {
                    let info = info.as_object()?;
                    Some(Peer {
                        id: id.clone(),
                        priority: info.get("priority").and_then(|p| p.as_i64()).unwrap_or(0),
                        lifetime_seconds: info
                            .get("lifetime")
                            .and_then(|l| l.as_i64())
                            .unwrap_or(60),
                        lastseen: info
                            .get("lastseen")
                            .and_then(|l| l.as_str())
                            .and_then(parse_lastseen),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    PeeringObject {
        namespace: object.metadata.namespace.clone(),
        name: object.metadata.name.clone().unwrap_or_default(),
        peers,
    }
}

/// kopf writes `datetime.isoformat()`, with an offset from 1.38 on; a naive time is UTC
/// (as `iso8601.parse_date` reads it).
fn parse_lastseen(text: &str) -> Option<jiff::Timestamp> {
    text.parse::<jiff::Timestamp>().ok().or_else(|| {
        text.parse::<jiff::civil::DateTime>()
            .ok()
            .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
            .map(|z| z.timestamp())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_kopf_writes_is_read_with_or_without_an_offset() {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "kopf.dev/v1", "kind": "KopfPeering",
            "metadata": {"name": "default", "namespace": "ns"},
            "status": {
                "op-7d9f-x2k4z": {"priority": 0, "lifetime": 60, "lastseen": "2026-12-01T10:16:00.620285+00:00"},
                "jane@laptop/20261201101600/abc": {"priority": 666, "lifetime": 60, "lastseen": "2026-12-01T10:16:00.620285"},
                "broken": "not a map"
            }
        }))
        .expect("an object");
        let read = peering_object(&object);
        assert_eq!(read.namespace.as_deref(), Some("ns"));
        assert_eq!(read.peers.len(), 2);
        let seen: jiff::Timestamp = "2026-12-01T10:16:00.620285Z".parse().expect("a time");
        for peer in &read.peers {
            assert_eq!(peer.lastseen, Some(seen), "{peer:?}");
        }
        let dev = read
            .peers
            .iter()
            .find(|p| p.priority == 666)
            .expect("the --dev peer");
        assert!(dev.alive_at(seen + jiff::SignedDuration::from_secs(59)));
        assert!(!dev.alive_at(seen + jiff::SignedDuration::from_secs(60)));
    }
}

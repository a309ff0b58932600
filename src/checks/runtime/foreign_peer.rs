//! `runtime.foreign-peer`: the operator's peering objects list live peers that are
//! not its own pods (a `--dev` laptop, a forgotten `kopf freeze`), so it pauses for
//! them.

use super::{alone, logs, quote};
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::checks::{LiveInput, Raised, finding};
use crate::model::bounded::{MAX_LISTED, listed};
use crate::model::evidence::{LogEvidence, Peer, PeeringObject, TargetEvidence};
use crate::model::kopf_run::KopfRun;
use kopf_log::EventKind;

/// Decided from the peering objects, when they and the log (which may confirm the
/// pause) were read.
pub(crate) fn live(input: &LiveInput<'_>) -> Vec<Raised> {
    let (Some(logs), Ok(peerings)) = (logs(input), &input.kopf.peering) else {
        return Vec::new();
    };
    alone(decide(
        input.target,
        &input.kopf.run,
        peerings,
        logs,
        input.settings.now,
    ))
}

/// The peering priority `--dev` sets (kopf `cli.py`).
const DEV_PRIORITY: i64 = 666;

/// The priority `kopf freeze` takes by default (kopf `cli.py`).
const FREEZE_PRIORITY: i64 = 100;

/// `runtime.foreign-peer`: live peers in the operator's peering objects that are not its
/// own pods. One finding per peering object, naming the peers (without their times, so
/// that keep-alives do not change it).
pub(super) fn decide(
    target: &TargetEvidence,
    run: &KopfRun,
    peerings: &[PeeringObject],
    logs: &LogEvidence,
    now: jiff::Timestamp,
) -> Vec<Finding> {
    let own = OwnIdentity::of(target, run);
    peerings
        .iter()
        .filter_map(|peering| {
            let live: Vec<&Peer> = peering.peers.iter().filter(|p| p.alive_at(now)).collect();
            let own_priority = live
                .iter()
                .filter(|p| own.is(&p.id))
                .map(|p| p.priority)
                .max()
                .unwrap_or(own.priority);
            let mut foreign: Vec<String> = live
                .iter()
                .filter(|p| !own.is(&p.id))
                .filter_map(|p| describe_foreign(p, own_priority))
                .collect();
            if foreign.is_empty() {
                return None;
            }
            foreign.sort();
            let object = match &peering.namespace {
                Some(ns) => format!("KopfPeering {ns}/{}", peering.name),
                None => format!("ClusterKopfPeering {}", peering.name),
            };
            let confirmed = logs.records.iter().find(|r| {
                matches!(r.kind, EventKind::PeeringPaused | EventKind::PeeringConflict)
            });
            let effect = if confirmed.is_some() {
                "The operator's log confirms it paused"
            } else {
                "Peers of higher or equal priority make kopf pause (a lower one pauses itself)"
            };
            Some(finding(
                CheckId::RuntimeForeignPeer,
                target.name(),
                format!(
                    "{object} lists live peers that are not this operator's pods: {}. {effect}. Stop them (a `kopf run --dev` on a laptop, a forgotten `kopf freeze`, another deployment of the same operator), or give this operator a peering of its own with --peering.",
                    listed(&foreign, "; ", MAX_LISTED)
                ),
                confirmed.map(quote),
            ))
        })
        .collect()
}

/// What a foreign peer is, if it matters: a higher or equal priority pauses this
/// operator; a developer's identity is flagged at any priority.
fn describe_foreign(peer: &Peer, own_priority: i64) -> Option<String> {
    let laptop = looks_like_a_person(&peer.id);
    let why = match peer.priority {
        DEV_PRIORITY if own_priority < DEV_PRIORITY => {
            "priority 666, what --dev sets: this operator pauses in its favour".to_string()
        }
        p if p > own_priority && p == FREEZE_PRIORITY => {
            "priority 100, kopf freeze's default: this operator pauses in its favour".to_string()
        }
        p if p > own_priority => format!(
            "priority {p}, above this operator's {own_priority}: this operator pauses in its favour"
        ),
        p if p == own_priority => format!("the same priority {p}: both pause"),
        p if laptop => format!(
            "priority {p}, below this operator's: it pauses itself, but a developer's machine takes part in this peering"
        ),
        _ => return None,
    };
    Some(format!("{} ({why})", peer.id))
}

/// `user@host/...` or `user@host` on a host that is not a Deployment's pod: kopf's
/// identity on a machine (without `POD_ID`).
fn looks_like_a_person(id: &str) -> bool {
    id.split_once('@')
        .is_some_and(|(_, rest)| !looks_like_a_pod(host_of(rest)))
}

/// The host of `host/...`, without a domain (a descriptive hostname may be a FQDN).
fn host_of(rest: &str) -> &str {
    let host = rest.split('/').next().unwrap_or_default();
    host.split('.').next().unwrap_or_default()
}

/// `<deployment>-<replicaset hash>-<5 characters>`: a Deployment's pod name.
fn looks_like_a_pod(name: &str) -> bool {
    let mut parts = name.rsplitn(3, '-');
    let (Some(suffix), Some(hash), Some(base)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let alnum = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    };
    !base.is_empty()
        && suffix.len() == 5
        && alnum(suffix)
        && (1..=10).contains(&hash.len())
        && alnum(hash)
}

/// How to tell the operator's own peers: `POD_ID` (a pod's name, or a fixed value),
/// else `user@<pod hostname>/...`; the Deployment's other pods (a rollout's old
/// ReplicaSet) count as its own.
struct OwnIdentity {
    pod_names: Vec<String>,
    pod_prefix: String,
    fixed: Option<String>,
    priority: i64,
}

impl OwnIdentity {
    fn of(target: &TargetEvidence, run: &KopfRun) -> OwnIdentity {
        let fixed = target
            .kopf_container()
            .and_then(|c| c.env.as_ref())
            .and_then(|env| env.iter().find(|e| e.name == "POD_ID"))
            .and_then(|e| e.value.clone());
        OwnIdentity {
            pod_names: target
                .pods
                .iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect(),
            pod_prefix: format!("{}-", target.name()),
            fixed,
            priority: if run.dev {
                DEV_PRIORITY
            } else {
                run.priority.unwrap_or(0)
            },
        }
    }

    fn is(&self, id: &str) -> bool {
        let pod = match id.split_once('@') {
            Some((_, rest)) => host_of(rest),
            None => id,
        };
        let of_this_deployment = pod.strip_prefix(&self.pod_prefix).is_some_and(|rest| {
            rest.matches('-').count() == 1 && looks_like_a_pod(&format!("x-{rest}"))
        });
        self.fixed.as_deref() == Some(id)
            || self.pod_names.iter().any(|n| n == pod)
            || of_this_deployment
    }
}

#[cfg(test)]
mod tests;

//! The `resource` label of the API metrics, bounded. The auditor reads the resources a
//! KopfAudit names in `spec.handledResources`, which a tenant writes: each made-up
//! plural it requested used to add a counter and an 11-bucket histogram for good. Now a
//! resource outside the auditor's own set is named only once the API server answered a
//! request for it with success (so it exists and the auditor may read it: the cluster's
//! CRDs bound these), at most [`MAX_EXTRA`] of them, and its series are removed when no
//! request touched it for [`FORGET_AFTER`]; everything else is `other`.

use super::{LatencyLabels, ResponseLabels};
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// The resources the auditor reads or writes for itself, always named.
const KNOWN: [&str; 26] = [
    "pods",
    "deployments",
    "replicasets",
    "events",
    "namespaces",
    "serviceaccounts",
    "roles",
    "rolebindings",
    "clusterroles",
    "clusterrolebindings",
    "subjectaccessreviews",
    "selfsubjectaccessreviews",
    "tokenreviews",
    "customresourcedefinitions",
    "leases",
    "kopfaudits",
    "clusterkopfaudits",
    "kopfpeerings",
    "clusterkopfpeerings",
    "policyreports",
    "clusterpolicyreports",
    "reports",
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
    "apigroups",
    "other",
];

/// The most resources named besides [`KNOWN`].
pub(super) const MAX_EXTRA: usize = 64;

/// A resource named besides [`KNOWN`] loses its series after this long unrequested.
pub(super) const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);

/// How often stale series are looked for.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// The label sets exported for one resource besides [`KNOWN`].
#[derive(Default)]
struct Extra {
    last_used: Option<Instant>,
    responses: BTreeSet<ResponseLabels>,
    latencies: BTreeSet<LatencyLabels>,
}

/// The resources named besides [`KNOWN`], with their series.
#[derive(Default)]
pub(super) struct ExtraResources {
    by_name: HashMap<String, Extra>,
    last_prune: Option<Instant>,
}

/// Series to remove: those of resources no request touched for [`FORGET_AFTER`].
pub(super) type Stale = Vec<(BTreeSet<ResponseLabels>, BTreeSet<LatencyLabels>)>;

impl ExtraResources {
    /// The label of `resource` (with its subresource) for an answer with `code`.
    pub(super) fn label(&self, resource: &str, code: Option<u16>) -> String {
        let base = resource.split('/').next().unwrap_or(resource);
        let succeeded = code.is_some_and(|c| (200..300).contains(&c));
        let room = self.by_name.contains_key(resource) || self.by_name.len() < MAX_EXTRA;
        if KNOWN.contains(&base) || (succeeded && room) || self.by_name.contains_key(resource) {
            resource.to_string()
        } else {
            "other".to_string()
        }
    }

    /// Records that the series `response` and `latency` were written at `now`.
    pub(super) fn used(
        &mut self,
        response: &ResponseLabels,
        latency: &LatencyLabels,
        now: Instant,
    ) {
        let base = response.resource.split('/').next().unwrap_or_default();
        if KNOWN.contains(&base) {
            return;
        }
        let extra = self.by_name.entry(response.resource.clone()).or_default();
        extra.last_used = Some(now);
        extra.responses.insert(response.clone());
        extra.latencies.insert(latency.clone());
    }

    /// Forgets the resources unrequested for [`FORGET_AFTER`] (looked for at most every
    /// [`PRUNE_EVERY`]) and returns their series, for the caller to remove.
    pub(super) fn stale(&mut self, now: Instant) -> Stale {
        if self
            .last_prune
            .is_some_and(|at| now.saturating_duration_since(at) < PRUNE_EVERY)
        {
            return Vec::new();
        }
        self.last_prune = Some(now);
        let old: Vec<String> = self
            .by_name
            .iter()
            .filter(|(_, e)| {
                e.last_used
                    .is_none_or(|at| now.saturating_duration_since(at) >= FORGET_AFTER)
            })
            .map(|(name, _)| name.clone())
            .collect();
        old.iter()
            .filter_map(|name| self.by_name.remove(name))
            .map(|e| (e.responses, e.latencies))
            .collect()
    }

    /// How many resources are named besides [`KNOWN`].
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_name.len()
    }
}

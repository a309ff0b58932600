//! Gathers the resources the operator handles (API I/O only): `spec.handledResources`
//! when given, else every custom resource whose CRD exists and that the operator's
//! bound rules grant `watch` on, or name with `get`/`patch` but not `create` (what kopf
//! does to what it serves, unlike the children an operator creates), or that its own log
//! names in a refused list or watch. Each entry carries what its CRD says about status
//! storage, and where it came from, so findings can say so.

use super::Reach;
use super::rbac::{CrdDigest, CrdVersion, RbacReader, binding_namespaces};
use crate::api::KopfAuditSpec;
use crate::model::evidence::{
    CrdInfo, Gathered, HandledResource, HandledSource, LogEvidence, TargetEvidence, Unavailable,
};
use crate::model::kopf_run::{KopfRun, RunOrigin};
use crate::model::names::{is_dns_label, is_dns_subdomain};
use crate::model::needs::CRD_GROUP;
use crate::model::rbac::{Binding, PEERING_CLUSTER, PEERING_GROUPS, PEERING_NAMESPACED, Verb};
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};
use std::collections::{BTreeMap, BTreeSet};

/// Gathers the handled resources of one target.
pub(crate) async fn gather(
    client: &Client,
    spec: &KopfAuditSpec,
    target: &TargetEvidence,
    run: &KopfRun,
    logs: Option<&LogEvidence>,
    reach: &Reach,
    cache: &RbacReader,
) -> Gathered<Vec<HandledResource>> {
    if !spec.handled_resources.is_empty() {
        return from_spec(client, spec, cache).await;
    }
    let sa = target.service_account();
    let (namespaces, _) = binding_namespaces(run, &sa.namespace, reach);
    let bindings = cache.bindings(client, &sa, &namespaces).await?;
    let mut found = candidates(&bindings);
    for (key, source) in logged(logs) {
        found.entry(key).or_insert(source);
    }
    let mut handled = inferred(client, found, cache).await?;
    if handled.is_empty() {
        handled = posted_about(client, target, run, logs, reach, &bindings, cache).await?;
    }
    Ok(handled)
}

/// Events read per namespace to learn what kopf posts about.
const POSTED_EVENTS_READ: u32 = 500;

/// When neither the RBAC rules on custom resources nor the log's denials name a handled
/// resource (wildcard rules, or rules on core kinds only), the kinds of the objects kopf
/// posted Events about in the operator's own namespace (and the ones it serves by name,
/// within reach), and of the objects its JSON log records name, each only when the
/// operator's rules let it watch them: another kopf operator in the same namespace posts
/// Events too, and only this one's rules say what it may serve.
async fn posted_about(
    client: &Client,
    target: &TargetEvidence,
    run: &KopfRun,
    logs: Option<&LogEvidence>,
    reach: &Reach,
    bindings: &[Binding],
    cache: &RbacReader,
) -> Result<Vec<HandledResource>, Unavailable> {
    let mut namespaces = vec![target.namespace().to_string()];
    namespaces.extend(
        run.served_names()
            .into_iter()
            .filter(|ns| reach.may_read(Some(ns)) && *ns != target.namespace()),
    );
    let mut kinds: BTreeMap<(String, String), (String, HandledSource)> = BTreeMap::new();
    for ns in &namespaces {
        let api: Api<Event> = Api::namespaced(client.clone(), ns);
        let params = ListParams::default()
            .fields(&format!("source={}", crate::model::kopf_marks::MANAGER))
            .limit(POSTED_EVENTS_READ);
        let list = api.list(&params).await.map_err(|e| {
            super::obstacle(
                &e,
                &format!("list the Events kopf posted in {ns}"),
                &format!("list on events in {ns}"),
            )
        })?;
        for event in &list.items {
            let object = &event.involved_object;
            let (Some(api_version), Some(kind)) = (&object.api_version, &object.kind) else {
                continue;
            };
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            kinds.insert(
                (group.to_string(), kind.clone()),
                (version.to_string(), HandledSource::Events),
            );
        }
    }
    for (api_version, kind) in logged_kinds(run, logs) {
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        kinds
            .entry((group.to_string(), kind))
            .or_insert((version.to_string(), HandledSource::LogObjects));
    }
    let mut out = Vec::new();
    for ((group, kind), (version, source)) in kinds {
        if !is_valid_group_version(&group, &version) {
            continue;
        }
        let Some((plural, namespaced)) = plural_of(client, &group, &version, &kind).await? else {
            continue;
        };
        let watched = bindings
            .iter()
            .flat_map(|b| b.rules.iter())
            .any(|r| r.has_verb(Verb::Watch) && r.covers_resource(&group, &plural, ""));
        if !watched {
            continue;
        }
        let crd = if group.contains('.') && is_custom(&group, &plural) {
            cache.crd(client, &format!("{plural}.{group}")).await?
        } else {
            None
        };
        out.push(match crd {
            Some(crd) => from_crd(&crd, Some(&version), source),
            None => HandledResource {
                group,
                version,
                plural,
                kind: Some(kind),
                namespaced,
                crd: None,
                source,
            },
        });
    }
    Ok(out)
}

/// At most this many kinds are learned from a log's JSON records.
const MAX_LOGGED_KINDS: usize = 20;

/// The `apiVersion` and `kind` of the objects kopf's JSON records name: in the first
/// lines of its log (when kopf was recognised by them) and in the records of the
/// window. At most [`MAX_LOGGED_KINDS`].
fn logged_kinds(run: &KopfRun, logs: Option<&LogEvidence>) -> BTreeSet<(String, String)> {
    let head = match &run.origin {
        RunOrigin::Log(seen) => seen.kinds.iter().cloned().collect(),
        RunOrigin::CommandLine | RunOrigin::Files(_) => Vec::new(),
    };
    let window = logs
        .into_iter()
        .flat_map(LogEvidence::all_records)
        .filter_map(|r| {
            let o = r.object.as_ref()?;
            Some((o.api_version.clone()?, o.kind.clone()?))
        });
    let mut out = BTreeSet::new();
    for kind in head.into_iter().chain(window) {
        if out.len() >= MAX_LOGGED_KINDS {
            break;
        }
        out.insert(kind);
    }
    out
}

/// Whether an Event's `apiVersion` can be asked about: its group a DNS subdomain (or
/// core), its version a DNS label. An Event's fields may hold anything.
fn is_valid_group_version(group: &str, version: &str) -> bool {
    (group.is_empty() || is_dns_subdomain(group)) && is_dns_label(version)
}

/// The plural and scope of a kind, from discovery; `None` when discovery does not know
/// it (404).
async fn plural_of(
    client: &Client,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Option<(String, bool)>, Unavailable> {
    let why = format!("to learn the plural of {kind}");
    let resources = api_resources(client, group, version, &why).await?;
    Ok(resources.and_then(|list| {
        list.into_iter()
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .map(|r| (r.name, r.namespaced))
    }))
}

/// A custom resource: `(group, plural)`.
pub(crate) type ResourceKey = (String, String);

/// Whether a rule's `(group, resource)` can name a custom resource kopf serves: no
/// wildcards (reported as over-privilege, not guessed at), no core or built-in group, no
/// subresource, not CRDs themselves nor kopf's peering resources. Both must be valid
/// names (a Role's rules and a log line may hold anything): they become a CRD name in a
/// request path.
fn is_custom(group: &str, resource: &str) -> bool {
    let peering = [PEERING_NAMESPACED, PEERING_CLUSTER];
    group.contains('.')
        && group != CRD_GROUP
        && is_dns_subdomain(group)
        && is_dns_label(resource)
        && !(PEERING_GROUPS.contains(&group) && peering.contains(&resource))
}

/// The custom resources the bound rules point at as handled: watched, or read and
/// patched without being created.
pub(crate) fn candidates(bindings: &[Binding]) -> BTreeMap<ResourceKey, HandledSource> {
    let mut out = BTreeMap::new();
    for rule in bindings.iter().flat_map(|b| b.rules.iter()) {
        let source = if rule.has_verb(Verb::Watch) {
            HandledSource::RbacWatch
        } else if (rule.has_verb(Verb::Get) || rule.has_verb(Verb::Patch))
            && !rule.has_verb(Verb::Create)
        {
            HandledSource::RbacRule
        } else {
            continue;
        };
        for group in &rule.api_groups {
            for resource in rule.resources.iter().filter(|r| is_custom(group, r)) {
                let entry = out
                    .entry((group.clone(), resource.clone()))
                    .or_insert(source);
                *entry = (*entry).min(source);
            }
        }
    }
    out
}

/// The custom resources the operator's log shows kopf trying to list or watch.
fn logged(logs: Option<&LogEvidence>) -> BTreeMap<ResourceKey, HandledSource> {
    logs.into_iter()
        .flat_map(LogEvidence::all_records)
        .filter_map(|r| r.forbidden.as_ref())
        .filter(|f| f.verb == "list" || f.verb == "watch")
        .filter_map(|f| {
            let group = f.api_group.clone()?;
            is_custom(&group, &f.resource)
                .then(|| ((group, f.resource.clone()), HandledSource::Log))
        })
        .collect()
}

async fn inferred(
    client: &Client,
    found: BTreeMap<ResourceKey, HandledSource>,
    cache: &RbacReader,
) -> Result<Vec<HandledResource>, Unavailable> {
    let mut out = Vec::new();
    for ((group, plural), source) in found {
        if let Some(crd) = cache.crd(client, &format!("{plural}.{group}")).await? {
            out.push(from_crd(&crd, None, source));
        }
    }
    Ok(out)
}

async fn from_spec(
    client: &Client,
    spec: &KopfAuditSpec,
    cache: &RbacReader,
) -> Result<Vec<HandledResource>, Unavailable> {
    let mut out = Vec::new();
    for h in &spec.handled_resources {
        let crd = if h.group.contains('.') {
            cache
                .crd(client, &format!("{}.{}", h.plural, h.group))
                .await?
        } else {
            None
        };
        let entry = match crd {
            Some(crd) => {
                let mut e = from_crd(&crd, Some(&h.version), HandledSource::Spec);
                e.version = h.version.clone();
                e
            }
            None => {
                let (namespaced, kind) = discover(client, &h.group, &h.version, &h.plural).await?;
                HandledResource {
                    group: h.group.clone(),
                    version: h.version.clone(),
                    plural: h.plural.clone(),
                    kind,
                    namespaced,
                    crd: None,
                    source: HandledSource::Spec,
                }
            }
        };
        out.push(entry);
    }
    Ok(out)
}

/// Scope and kind of a built-in (or aggregated-API) resource from discovery; a resource
/// discovery does not know (404) is assumed namespaced (kopf will report it
/// unresolved). Any other failure leaves the handled resources unknown: taken for an
/// unknown kind, it would make the events and persistence areas read nothing and pass.
async fn discover(
    client: &Client,
    group: &str,
    version: &str,
    plural: &str,
) -> Result<(bool, Option<String>), Unavailable> {
    let why = format!("to learn the kind and scope of {plural}");
    let resources = api_resources(client, group, version, &why).await?;
    Ok(resources
        .and_then(|list| list.into_iter().find(|r| r.name == plural))
        .map_or((true, None), |r| (r.namespaced, Some(r.kind))))
}

/// The resources discovery lists for a group and version (`None` when it does not know
/// the group version: 404). Any other failure is the obstacle, naming the URL and `why`
/// it was read.
async fn api_resources(
    client: &Client,
    group: &str,
    version: &str,
    why: &str,
) -> Result<Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource>>, Unavailable> {
    let list = if group.is_empty() {
        client.list_core_api_resources(version).await
    } else {
        client
            .list_api_group_resources(&format!("{group}/{version}"))
            .await
    };
    match list {
        Ok(list) => Ok(Some(list.resources)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => {
            let api = if group.is_empty() {
                format!("/api/{version}")
            } else {
                format!("/apis/{group}/{version}")
            };
            Err(super::obstacle(
                &e,
                &format!("discover the resources of {api} ({why})"),
                &format!("get on the non-resource URL {api}"),
            ))
        }
    }
}

/// The version of a CRD kopf would use: `wanted` when served, else the storage version,
/// else the first served one.
fn pick_version<'a>(crd: &'a CrdDigest, wanted: Option<&str>) -> Option<&'a CrdVersion> {
    let versions = &crd.versions;
    wanted
        .and_then(|w| versions.iter().find(|v| v.name == w && v.served))
        .or_else(|| versions.iter().find(|v| v.storage && v.served))
        .or_else(|| versions.iter().find(|v| v.served))
        .or_else(|| versions.first())
}

/// A handled resource from its CRD, with what the CRD says about status storage.
pub(crate) fn from_crd(
    crd: &CrdDigest,
    wanted_version: Option<&str>,
    source: HandledSource,
) -> HandledResource {
    let version = pick_version(crd, wanted_version);
    HandledResource {
        group: crd.group.clone(),
        version: version.map(|v| v.name.clone()).unwrap_or_default(),
        plural: crd.plural.clone(),
        kind: Some(crd.kind.clone()),
        namespaced: crd.namespaced,
        crd: Some(CrdInfo {
            name: crd.name.clone(),
            status_subresource: version.is_some_and(|v| v.status_subresource),
            status_preserves_unknown_fields: version
                .is_some_and(|v| v.status_preserves_unknown_fields),
        }),
        source,
    }
}

#[cfg(test)]
mod tests;

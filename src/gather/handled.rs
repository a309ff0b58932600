//! Gathers the resources the operator handles (API I/O only): `spec.handledResources`
//! when given, else the custom resources its ServiceAccount's bound rules grant `watch`
//! on and whose CRD exists. Each entry carries what its CRD says about status storage,
//! and where it came from, so findings can say so.

use super::rbac::{Cache, binding_namespaces};
use crate::api::KopfAuditSpec;
use crate::checks::rbac as checks;
use crate::evidence::rbac::{Binding, PEERING_CLUSTER, PEERING_GROUPS, PEERING_NAMESPACED};
use crate::evidence::{
    CrdInfo, Gathered, HandledResource, HandledSource, TargetEvidence, Unavailable,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use kube::Client;
use std::collections::BTreeSet;

/// Gathers the handled resources of one target.
pub async fn gather(
    client: &Client,
    spec: &KopfAuditSpec,
    target: &TargetEvidence,
    cache: &Cache,
) -> Gathered<Vec<HandledResource>> {
    let Some(run) = &target.kopf else {
        return Gathered::NotGathered;
    };
    let result = if spec.handled_resources.is_empty() {
        let sa = checks::service_account(target);
        let namespaces = binding_namespaces(run, &sa.namespace);
        match cache.bindings(client, &sa, &namespaces).await {
            Ok(bindings) => inferred(client, &bindings, cache).await,
            Err(u) => Err(u),
        }
    } else {
        from_spec(client, spec, cache).await
    };
    match result {
        Ok(list) => Gathered::Ready(list),
        Err(u) => Gathered::Unavailable(u),
    }
}

/// The `(group, plural)` of custom resources the bound rules grant `watch` on, without
/// wildcards (reported as over-privilege, not guessed at), core groups and kopf's own
/// peering resources.
pub fn watch_candidates(bindings: &[Binding]) -> BTreeSet<(String, String)> {
    let peering = [PEERING_NAMESPACED, PEERING_CLUSTER];
    bindings
        .iter()
        .flat_map(|b| b.rules.iter())
        .filter(|r| r.has_verb("watch"))
        .flat_map(|r| {
            r.api_groups
                .iter()
                .flat_map(move |g| r.resources.iter().map(move |res| (g.clone(), res.clone())))
        })
        .filter(|(g, res)| {
            !g.is_empty()
                && g.contains('.')
                && g != "*"
                && res != "*"
                && !res.contains('/')
                && !(PEERING_GROUPS.contains(&g.as_str()) && peering.contains(&res.as_str()))
        })
        .collect()
}

async fn inferred(
    client: &Client,
    bindings: &[Binding],
    cache: &Cache,
) -> Result<Vec<HandledResource>, Unavailable> {
    let mut out = Vec::new();
    for (group, plural) in watch_candidates(bindings) {
        if let Some(crd) = cache.crd(client, &format!("{plural}.{group}")).await? {
            out.push(from_crd(&crd, None, HandledSource::InferredFromRbac));
        }
    }
    Ok(out)
}

async fn from_spec(
    client: &Client,
    spec: &KopfAuditSpec,
    cache: &Cache,
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
                let (namespaced, kind) = discover(client, &h.group, &h.version, &h.plural).await;
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
/// discovery does not know is assumed namespaced (kopf will report it unresolved).
async fn discover(
    client: &Client,
    group: &str,
    version: &str,
    plural: &str,
) -> (bool, Option<String>) {
    let list = if group.is_empty() {
        client.list_core_api_resources(version).await
    } else {
        client
            .list_api_group_resources(&format!("{group}/{version}"))
            .await
    };
    match list {
        Ok(list) => list
            .resources
            .iter()
            .find(|r| r.name == plural)
            .map(|r| (r.namespaced, Some(r.kind.clone())))
            .unwrap_or((true, None)),
        Err(e) => {
            tracing::debug!(error = %e, group, version, plural, "discovery of a handled resource failed");
            (true, None)
        }
    }
}

/// The version of a CRD kopf would use: `wanted` when served, else the storage version,
/// else the first served one.
fn pick_version<'a>(
    crd: &'a CustomResourceDefinition,
    wanted: Option<&str>,
) -> Option<&'a CustomResourceDefinitionVersion> {
    let versions = &crd.spec.versions;
    wanted
        .and_then(|w| versions.iter().find(|v| v.name == w && v.served))
        .or_else(|| versions.iter().find(|v| v.storage && v.served))
        .or_else(|| versions.iter().find(|v| v.served))
        .or_else(|| versions.first())
}

/// A handled resource from its CRD, with what the CRD says about status storage.
pub fn from_crd(
    crd: &CustomResourceDefinition,
    wanted_version: Option<&str>,
    source: HandledSource,
) -> HandledResource {
    let version = pick_version(crd, wanted_version);
    let status_subresource = version
        .and_then(|v| v.subresources.as_ref())
        .is_some_and(|s| s.status.is_some());
    let schema = version
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref());
    let preserves = |p: Option<bool>| p == Some(true);
    let status_preserves_unknown_fields = schema.is_some_and(|root| {
        preserves(root.x_kubernetes_preserve_unknown_fields)
            || root
                .properties
                .as_ref()
                .and_then(|p| p.get("status"))
                .is_some_and(|s| preserves(s.x_kubernetes_preserve_unknown_fields))
    });
    HandledResource {
        group: crd.spec.group.clone(),
        version: version.map(|v| v.name.clone()).unwrap_or_default(),
        plural: crd.spec.names.plural.clone(),
        kind: Some(crd.spec.names.kind.clone()),
        namespaced: crd.spec.scope == "Namespaced",
        crd: Some(CrdInfo {
            name: crd.metadata.name.clone().unwrap_or_default(),
            status_subresource,
            status_preserves_unknown_fields,
        }),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::rbac::{BindingKind, Rule, test_rule as rule};

    fn binding(rules: Vec<Rule>) -> Binding {
        Binding {
            kind: BindingKind::RoleBinding("ns".into()),
            name: "b".into(),
            role_kind: "Role".into(),
            role_name: "r".into(),
            via: "ServiceAccount ns/op".into(),
            rules,
            role_missing: false,
            aggregated: false,
        }
    }

    #[test]
    fn candidates_are_watched_custom_resources_only() {
        let b = binding(vec![
            rule(
                &["good.example.com"],
                &["widgets", "widgets/status"],
                &["get", "list", "watch", "patch"],
            ),
            rule(&["other.example.com"], &["gizmos"], &["get"]),
            rule(&[""], &["configmaps"], &["watch"]),
            rule(&["kopf.dev"], &["kopfpeerings"], &["watch"]),
            rule(&["*"], &["*"], &["*"]),
            rule(
                &["apiextensions.k8s.io"],
                &["customresourcedefinitions"],
                &["list", "watch"],
            ),
        ]);
        let got = watch_candidates(&[b]);
        assert_eq!(
            got,
            BTreeSet::from([
                (
                    "apiextensions.k8s.io".to_string(),
                    "customresourcedefinitions".to_string()
                ),
                ("good.example.com".to_string(), "widgets".to_string()),
            ])
        );
    }

    #[test]
    fn crd_status_storage() {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.good.example.com"},
            "spec": {
                "group": "good.example.com", "scope": "Cluster",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}
                ]
            }
        }))
        .expect("crd");
        let h = from_crd(&crd, None, HandledSource::InferredFromRbac);
        assert_eq!(h.version, "v1");
        assert!(!h.namespaced);
        let info = h.crd.expect("crd info");
        assert!(info.status_subresource && info.status_preserves_unknown_fields);
        let old = from_crd(&crd, Some("v1beta1"), HandledSource::Spec);
        let info = old.crd.expect("crd info");
        assert!(!info.status_subresource && !info.status_preserves_unknown_fields);
    }
}

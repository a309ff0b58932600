//! Reads the admission webhook configurations kopf manages (`settings.admission.managed`,
//! kopf 1.38-1.45 `_core/engines/admission.py` `configuration_manager`): those whose
//! managed fields name the manager `kopf`, or whose webhooks are all named the way kopf
//! names them (`_normalize_name`: `<handler id>.<configuration name>`; an API server
//! does not always record managed fields for kopf's writes). They are cluster-scoped,
//! so they are read only with the cross-namespace allowance.

use super::{Reach, obstacle};
use crate::model::ca_bundle::CaBundle;
use crate::model::evidence::{Gathered, Webhook, WebhookConfig, WebhookKind, webhook_host};
use crate::model::labels;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhookConfiguration,
    WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::Client;
use kube::api::{Api, ListParams};
use kube::core::SelectorExt;
use std::collections::BTreeMap;

/// The label every namespace carries with its own name (Kubernetes 1.21+).
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Every webhook configuration kopf last wrote.
pub(crate) async fn gather(client: &Client, reach: &Reach) -> Gathered<Vec<WebhookConfig>> {
    if !reach.cross_namespace {
        return Err(reach.outside("admission webhook configurations (cluster-scoped)"));
    }
    let denied = |e: kube::Error| {
        obstacle(
            &e,
            "list admission webhook configurations",
            "list on validatingwebhookconfigurations and mutatingwebhookconfigurations (admissionregistration.k8s.io)",
        )
    };
    let params = ListParams::default();
    let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .list(&params)
        .await
        .map_err(denied)?;
    let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .list(&params)
        .await
        .map_err(denied)?;
    // The two kinds are different types with the same webhook fields.
    let validating = validating.items.iter().filter_map(|c| {
        let hooks = c.webhooks.iter().flatten().map(|w| {
            webhook(
                &w.name,
                w.failure_policy.as_deref(),
                w.namespace_selector.as_ref(),
                &w.client_config,
                w.rules.as_deref(),
            )
        });
        config(WebhookKind::Validating, &c.metadata, hooks.collect())
    });
    let mutating = mutating.items.iter().filter_map(|c| {
        let hooks = c.webhooks.iter().flatten().map(|w| {
            webhook(
                &w.name,
                w.failure_policy.as_deref(),
                w.namespace_selector.as_ref(),
                &w.client_config,
                w.rules.as_deref(),
            )
        });
        config(WebhookKind::Mutating, &c.metadata, hooks.collect())
    });
    Ok(validating.chain(mutating).collect())
}

/// Whether kopf wrote the configuration: a managed-fields entry of manager `kopf`, or
/// every webhook named `<handler id>.<configuration name>` as kopf names them.
fn by_kopf(meta: &ObjectMeta, webhook_names: &[String]) -> bool {
    let managed = meta
        .managed_fields
        .iter()
        .flatten()
        .any(|m| m.manager.as_deref() == Some(crate::model::kopf_marks::MANAGER));
    let suffix = format!(".{}", meta.name.as_deref().unwrap_or_default());
    let named = !webhook_names.is_empty()
        && suffix.len() > 1
        && webhook_names
            .iter()
            .all(|n| n.len() > suffix.len() && n.ends_with(&suffix));
    managed || named
}

/// The configuration, if kopf wrote it.
fn config(kind: WebhookKind, meta: &ObjectMeta, webhooks: Vec<Webhook>) -> Option<WebhookConfig> {
    let names: Vec<String> = webhooks.iter().map(|w| w.name.clone()).collect();
    by_kopf(meta, &names).then(|| WebhookConfig {
        kind,
        name: meta.name.clone().unwrap_or_default(),
        webhooks,
    })
}

/// One webhook, reduced.
pub(crate) fn webhook(
    name: &str,
    failure_policy: Option<&str>,
    namespace_selector: Option<&LabelSelector>,
    client: &WebhookClientConfig,
    rules: Option<&[RuleWithOperations]>,
) -> Webhook {
    let resources = rules
        .into_iter()
        .flatten()
        .flat_map(|r| {
            let groups = r.api_groups.clone().unwrap_or_default();
            let plurals = r.resources.clone().unwrap_or_default();
            groups.into_iter().flat_map(move |g| {
                plurals.clone().into_iter().map(move |p| {
                    (
                        g.clone(),
                        p.split('/').next().unwrap_or_default().to_string(),
                    )
                })
            })
        })
        .collect();
    Webhook {
        name: name.to_string(),
        // The API server's default is Fail, as is kopf's.
        fails_closed: failure_policy.is_none_or(|p| p == "Fail"),
        spares_kube_system: namespace_selector.is_some_and(spares_kube_system),
        url: client.url.clone(),
        service_namespace: client.service.as_ref().map(|s| s.namespace.clone()),
        host: webhook_host(
            client.url.as_deref(),
            client
                .service
                .as_ref()
                .map(|s| (s.name.as_str(), s.namespace.as_str())),
        ),
        resources,
        ca_bundle: CaBundle::parse(client.ca_bundle.as_ref().map(|b| b.0.as_slice())),
    }
}

/// Whether a namespaceSelector leaves kube-system out: it does not match kube-system's
/// labels (kube-system carries only its name label). A selector the API server would
/// refuse (it refuses to store one) matches nothing, so spares it too.
fn spares_kube_system(selector: &LabelSelector) -> bool {
    let kube_system =
        BTreeMap::from([(NAMESPACE_NAME_LABEL.to_string(), "kube-system".to_string())]);
    labels::selector(selector).is_none_or(|s| !s.matches(&kube_system))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(value: serde_json::Value) -> LabelSelector {
        serde_json::from_value(value).expect("a selector")
    }

    #[test]
    fn kopf_s_configurations_are_known_by_manager_or_by_kopf_s_webhook_names() {
        let meta = |name: &str, manager: Option<&str>| ObjectMeta {
            name: Some(name.into()),
            managed_fields: manager.map(|m| {
                vec![
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
                        manager: Some(m.into()),
                        ..Default::default()
                    },
                ]
            }),
            ..Default::default()
        };
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cfg = "auto.example.dev";
        assert!(by_kopf(&meta(cfg, Some("kopf")), &[]));
        assert!(by_kopf(
            &meta(cfg, None),
            &names(&["validate.auto.example.dev", "check-size.auto.example.dev"])
        ));
        assert!(!by_kopf(
            &meta(cfg, None),
            &names(&["validate.auto.example.dev", "other.webhook.io"])
        ));
        assert!(!by_kopf(
            &meta(cfg, Some("helm")),
            &names(&["auto.example.dev"])
        ));
        assert!(!by_kopf(&meta(cfg, None), &[]));
    }

    #[test]
    fn which_namespace_selectors_spare_kube_system() {
        for (value, spares) in [
            (serde_json::json!({}), false),
            (serde_json::json!({"matchLabels": {"team": "a"}}), true),
            (
                serde_json::json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system", "kube-public"]}]}),
                true,
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["default"]}]}),
                false,
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": ["default", "ops"]}]}),
                true,
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "Exists"}]}),
                false,
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}),
                false,
            ),
            (
                serde_json::json!({"matchLabels": {NAMESPACE_NAME_LABEL: "kube-system"}}),
                false,
            ),
            // Matches no namespace at all (each carries its name label): the
            // hand-written reading took it for one that keeps kube-system in.
            (
                serde_json::json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "DoesNotExist"}]}),
                true,
            ),
            // Refused by the API server: matches nothing.
            (
                serde_json::json!({"matchExpressions": [{"key": "team", "operator": "In"}]}),
                true,
            ),
        ] {
            assert_eq!(
                spares_kube_system(&selector(value.clone())),
                spares,
                "{value}"
            );
        }
    }

    #[test]
    fn kopf_s_webhook_is_reduced_to_its_blast_radius() {
        let hook: k8s_openapi::api::admissionregistration::v1::ValidatingWebhook =
            serde_json::from_value(serde_json::json!({
                "name": "check-widget.auto.kopf.dev",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://abcd.ngrok-free.app/check-widget"},
                "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets/status"], "operations": ["*"], "scope": "*"}],
            }))
            .expect("a webhook");
        let w = webhook(
            &hook.name,
            hook.failure_policy.as_deref(),
            hook.namespace_selector.as_ref(),
            &hook.client_config,
            hook.rules.as_deref(),
        );
        assert!(w.fails_closed, "the default policy is Fail");
        assert!(!w.spares_kube_system);
        assert_eq!(
            w.resources,
            vec![("example.com".to_string(), "widgets".to_string())]
        );
        assert_eq!(
            w.url.as_deref(),
            Some("https://abcd.ngrok-free.app/check-widget")
        );
    }
}

//! Tests of choosing targets and of the tenancy rule.

use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

fn deployment(ns: &str, name: &str, labels: &[(&str, &str)]) -> Deployment {
    let mut d = Deployment::default();
    d.metadata.namespace = Some(ns.into());
    d.metadata.name = Some(name.into());
    d.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    d
}

fn reach(own: &str, cross_namespace: bool) -> Reach {
    Reach {
        own: own.into(),
        cross_namespace,
        reader: format!("{own}/audit"),
    }
}

fn spec(target: AuditTarget) -> KopfAuditSpec {
    KopfAuditSpec {
        target,
        ..KopfAuditSpec::for_deployment("unused")
    }
}

fn resolved(spec: &KopfAuditSpec, own: &str) -> ResolvedTarget {
    match resolve(spec, &reach(own, false)) {
        Resolution::Target(t) => t,
        other => panic!("not resolved: {other:?}"),
    }
}

#[test]
fn selects_by_name_or_selector_within_the_namespace() {
    let all = [
        deployment("a", "op", &[("app", "op")]),
        deployment("b", "op", &[("app", "op")]),
        deployment("a", "web", &[("app", "web")]),
    ];
    let by_name = spec(AuditTarget {
        deployment: Some("op".into()),
        ..Default::default()
    });
    let found = resolved(&by_name, "a").select(&all);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].metadata.namespace.as_deref(), Some("a"));
    let by_label = spec(AuditTarget {
        selector: Some(LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    let found = resolved(&by_label, "a").select(&all);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].metadata.name.as_deref(), Some("web"));
}

#[test]
fn an_invalid_selector_stalls_until_the_spec_changes() {
    let bad = spec(AuditTarget {
        selector: Some(LabelSelector {
            match_expressions: Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
                    key: "app".into(),
                    operator: "Bogus".into(),
                    values: None,
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    });
    match resolve(&bad, &reach("a", false)) {
        Resolution::Stalled(stall) => assert_eq!(stall.reason, ConditionReason::InvalidSpec),
        other => panic!("{other:?}"),
    }
}

#[test]
fn suspend_and_every_stall_are_decided_once_before_anything_is_read() {
    let mut suspended = spec(AuditTarget {
        deployment: Some("op".into()),
        ..Default::default()
    });
    suspended.suspend = true;
    assert!(matches!(
        resolve(&suspended, &reach("a", false)),
        Resolution::Suspended
    ));
    let elsewhere = spec(AuditTarget {
        deployment: Some("op".into()),
        namespace: Some("b".into()),
        ..Default::default()
    });
    match resolve(&elsewhere, &reach("a", false)) {
        Resolution::Stalled(stall) => {
            assert_eq!(stall.reason, ConditionReason::CrossNamespaceRefused)
        }
        other => panic!("{other:?}"),
    }
    let nothing = spec(AuditTarget::default());
    match resolve(&nothing, &reach("a", false)) {
        Resolution::Stalled(stall) => assert_eq!(stall.reason, ConditionReason::TargetNotFound),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cross_namespace_needs_the_allowance() {
    let t = AuditTarget {
        deployment: Some("op".into()),
        namespace: Some("other".into()),
        ..Default::default()
    };
    let mine = reach("mine", false);
    let refused = resolve_target_namespace(&t, &mine).expect_err("refused");
    assert_eq!(refused.reason, ConditionReason::CrossNamespaceRefused);
    let platform = reach("mine", true);
    assert_eq!(resolve_target_namespace(&t, &platform), Ok("other"));
}

#[test]
fn served_namespaces_within_the_reach() {
    use crate::model::kopf_run::Peering;
    use crate::model::testing::run;
    let served = |scope: Scope| Namespaces::served(&run(scope, Peering::Auto), "own");
    let own = reach("a", false);
    let only_a = served(Scope::Namespaced(vec!["a".into()]));
    assert!(only_a.within(&own));
    let a_and_b = served(Scope::Namespaced(vec!["a".into(), "b".into()]));
    assert!(!a_and_b.within(&own));
    assert!(a_and_b.within(&reach("a", true)));
    assert_eq!(served(Scope::ClusterWide), Namespaces::All);
    assert_eq!(
        served(Scope::Namespaced(vec!["a*".into()])),
        Namespaces::All
    );
    assert!(!Namespaces::All.within(&own));
    assert!(!own.may_read(None), "cluster-scoped objects are outside");
}

#[test]
fn with_the_scope_unknown_the_namespaces_its_log_names_are_served_too() {
    use crate::model::testing::logged_run;
    let served = Namespaces::served(&logged_run(&["own", "team-b"]), "own");
    assert_eq!(
        served,
        Namespaces::Only(["own".to_string(), "team-b".to_string()].into())
    );
    // Reading team-b needs the allowance: the area then says so, it is not skipped.
    assert!(!served.within(&reach("own", false)));
    assert!(served.within(&reach("own", true)));
    assert_eq!(
        Namespaces::served(&logged_run(&[]), "own"),
        Namespaces::Only(["own".to_string()].into())
    );
}

#[test]
fn a_failed_list_is_classified_by_what_the_api_server_answered() {
    let failed = |code: u16| GatherError::List {
        what: "listing the target Deployments in ns".into(),
        source: kube::Error::Api(
            kube::core::Status::failure("no", "Reason")
                .with_code(code)
                .boxed(),
        ),
    };
    assert_eq!(failed(403).failure().cause, FailureCause::Forbidden);
    assert_eq!(failed(429).failure().cause, FailureCause::Throttled);
    assert_eq!(failed(503).failure().cause, FailureCause::ServerError);
    assert_eq!(failed(404).failure().cause, FailureCause::Other);
    let failure = failed(429).failure();
    assert!(
        failure
            .message
            .starts_with("listing the target Deployments in ns"),
        "{}",
        failure.message
    );
}

/// A fake API server holding `deployments` (JSON) in `team` and `pods_each` pods per
/// Deployment, answering lists page by page (`limit`, `continue`) as the API server does.
fn paging_api(
    deployments: Vec<serde_json::Value>,
    pods_each: usize,
) -> (Client, crate::testing::FakeApi) {
    use crate::testing::{FakeApi, json};
    use http::{Method, StatusCode};
    FakeApi::start(
        "team",
        move |_: &Method, path: &str, _: &serde_json::Value| {
            let all: Vec<serde_json::Value> = if path.contains("/deployments") {
                deployments.clone()
            } else {
                (0..pods_each)
                    .map(|i| {
                        serde_json::json!({"metadata": {
                            "name": format!("op-{i}"), "namespace": "team", "uid": format!("u{i}"),
                            "labels": {"app": "op"},
                            "managedFields": [{"manager": "kubelet"}],
                        }})
                    })
                    .collect()
            };
            let (range, next) = crate::testing::page_of(path, all.len());
            json(
                StatusCode::OK,
                serde_json::json!({"metadata": {"continue": next}, "items": all[range]}),
            )
        },
    )
}

/// A Deployment of `team` labelled `app: op`, with an environment value of `env_bytes`.
fn listed_deployment(name: &str, env_bytes: usize) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "namespace": "team", "labels": {"app": "op"}},
        "spec": {
            "selector": {"matchLabels": {"app": "op"}},
            "template": {"metadata": {"labels": {"app": "op"}}, "spec": {"containers": [{
                "name": "main", "image": "op:1", "command": ["kopf", "run", "op.py"],
                "env": [{"name": "BLOB", "value": "x".repeat(env_bytes)}],
            }]}},
        },
    })
}

fn by_selector() -> ResolvedTarget {
    resolved(
        &spec(AuditTarget {
            selector: Some(LabelSelector {
                match_labels: Some([("app".to_string(), "op".to_string())].into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        "team",
    )
}

/// Pods are listed a page at a time, and kept without their managedFields.
#[tokio::test]
async fn the_target_pods_are_read_page_by_page() {
    let (client, api) = paging_api(vec![listed_deployment("op", 10)], 250);
    let candidates = read_candidates(&client, &by_selector())
        .await
        .expect("read");
    assert_eq!(candidates.pods.len(), 250);
    assert!(candidates.too_large.is_none());
    assert!(candidates.pods.iter().all(|p| {
        p.metadata
            .managed_fields
            .as_ref()
            .is_none_or(|m| m.is_empty())
    }));
    let seen = api.take();
    let pod_lists: Vec<&str> = seen
        .iter()
        .filter(|s| s.path.contains("/pods"))
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(pod_lists.len(), 3, "{pod_lists:?}");
    assert!(pod_lists.iter().all(|p| p.contains("limit=100")));
}

/// A selector that matches a namespace of fat Deployments (each with 1.4 MB of
/// environment, as a tenant may write) stops at the target budget, and the audit stalls
/// with TargetTooLarge, naming the list, instead of holding them all.
#[tokio::test]
async fn a_target_over_the_budget_stalls_and_is_not_held() {
    let fat: Vec<serde_json::Value> = (0..30)
        .map(|i| listed_deployment(&format!("fat-{i:02}"), 1_400_000))
        .collect();
    let (client, api) = paging_api(fat, 1);
    let target = by_selector();
    let candidates = read_candidates(&client, &target).await.expect("read");
    let why = candidates.too_large.clone().expect("over the budget");
    assert!(why.contains("target Deployments in team"), "{why}");
    assert!(
        candidates.deployments.len() < 30,
        "{} held",
        candidates.deployments.len()
    );
    assert_eq!(
        api.take()
            .iter()
            .filter(|s| s.path.contains("/pods"))
            .count(),
        0,
        "no pod is listed once the budget is spent"
    );
    let spec = KopfAuditSpec::for_deployment("unused");
    let observation = gather(
        &client,
        &spec,
        &crate::model::settings::AuditSettings::from_spec(&spec),
        &target,
        &reach("team", false),
        &Shared::default(),
        &candidates,
    )
    .await;
    match observation {
        Observation::Stalled(stall) => {
            assert_eq!(stall.reason, ConditionReason::TargetTooLarge);
            assert!(stall.message.contains("16 MiB"), "{}", stall.message);
        }
        other => panic!("not stalled: {other:?}"),
    }
}

/// One Deployment over the page budget on its own is named, never parsed.
#[tokio::test]
async fn a_single_deployment_over_a_page_is_named() {
    let (client, _api) = paging_api(vec![listed_deployment("huge", paged::PAGE_BYTES + 1)], 1);
    let candidates = read_candidates(&client, &by_selector())
        .await
        .expect("read");
    let why = candidates.too_large.expect("over");
    assert!(why.contains("Deployment huge"), "{why}");
    assert!(candidates.deployments.is_empty());
}

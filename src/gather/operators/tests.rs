//! Tests of finding the other kopf operators against a fake API server: what is read,
//! what is learned of each, and that one discovery serves the audits of an interval.

use super::*;
use crate::testing::{FakeApi, json};
use http::{Method, Response, StatusCode};
use kube::client::Body;
use std::collections::BTreeSet;

/// A kopf Deployment in `team`, running as `<name>-sa` with these `kopf run` args.
fn deployment(name: &str, args: &[&str]) -> serde_json::Value {
    let mut command = vec!["kopf", "run"];
    command.extend(args);
    command.push("/app/op.py");
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"serviceAccountName": format!("{name}-sa"),
                                  "containers": [{"name": "operator", "image": "op:1", "command": command}]}}
        }
    })
}

fn role_binding(name: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "namespace": "team"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": format!("{name}-sa"), "namespace": "team"}]
    })
}

fn role(name: &str, plural: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": name, "namespace": "team"},
        "rules": [{"apiGroups": ["example.com"], "resources": [plural],
                   "verbs": ["get", "list", "watch", "patch"]}]
    })
}

/// Two standalone kopf operators serving `team` (a on widgets, b on widgets and gizmos),
/// one serving only `elsewhere`, and a web server.
fn cluster(method: &Method, path: &str, _: &serde_json::Value) -> Response<Body> {
    assert_eq!(method, Method::GET, "finding operators only reads: {path}");
    let list = |items: Vec<serde_json::Value>| {
        json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": items}),
        )
    };
    let mut web = deployment("web", &[]);
    web["spec"]["template"]["spec"]["containers"][0]["command"] = serde_json::json!(["nginx"]);
    let a = deployment("a", &["--standalone", "-n", "team"]);
    let b = deployment("b", &["--standalone", "--namespace=team"]);
    let far = deployment("far", &["--standalone", "-n", "elsewhere"]);
    match path.split('?').next().unwrap_or_default() {
        "/apis/apps/v1/namespaces/team/deployments" => list(vec![a, web, far, b]),
        "/apis/apps/v1/namespaces/team/deployments/a" => json(StatusCode::OK, a),
        "/apis/apps/v1/namespaces/team/deployments/b" => json(StatusCode::OK, b),
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" => list(vec![]),
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings" => {
            list(vec![role_binding("a"), role_binding("b")])
        }
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/a" => {
            json(StatusCode::OK, role("a", "widgets"))
        }
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/b" => {
            let mut r = role("b", "widgets");
            r["rules"][0]["resources"] = serde_json::json!(["widgets", "gizmos"]);
            json(StatusCode::OK, r)
        }
        _ => json(StatusCode::NOT_FOUND, serde_json::json!({"code": 404})),
    }
}

/// The audited operator: `team/c`, on `team`.
fn own() -> Operator {
    Operator {
        namespace: "team".into(),
        deployment: "c".into(),
        service_account: ServiceAccountRef::default(),
        scope: Scope::Namespaced(vec!["team".into()]),
        served_names: vec!["team".into()],
        peering: Peering::Standalone,
        resources: None,
    }
}

fn reach(cross_namespace: bool) -> Reach {
    Reach {
        own: "team".into(),
        cross_namespace,
        reader: "team/audit".into(),
    }
}

#[tokio::test]
async fn finds_the_kopf_operators_of_the_namespace_with_what_they_serve() {
    let (client, api) = FakeApi::start("team", cluster);
    let shared = Shared::default();
    let found = gather(&client, &reach(false), &shared, &own(), None, None)
        .await
        .expect("operators found");
    assert_eq!(found.searched, Searched::Namespace("team".into()));
    let names: Vec<String> = found.found.iter().map(Operator::name).collect();
    assert_eq!(names, ["team/a", "team/b"]);
    let b = &found.found[1];
    assert_eq!(b.peering, Peering::Standalone);
    assert_eq!(b.served_names, ["team"]);
    assert_eq!(b.service_account.name, "b-sa");
    let key = |p: &str| ("example.com".to_string(), p.to_string());
    assert_eq!(
        b.resources,
        Some(BTreeSet::from([key("gizmos"), key("widgets")]))
    );
    assert_eq!(
        found.found[0].resources,
        Some(BTreeSet::from([key("widgets")]))
    );
    let seen = api.take();
    assert!(
        seen.iter()
            .all(|s| !s.path.starts_with("/apis/apps/v1/deployments")),
        "nothing outside the namespace is listed: {seen:?}"
    );
    assert!(
        seen.iter().all(|s| !s.path.contains("/deployments/far")),
        "an operator serving none of the audited one's namespaces is not read further: {seen:?}"
    );
    assert!(
        seen.iter().all(|s| !s.path.contains("/pods")),
        "every command line decided: no pod or log is read: {seen:?}"
    );
    // A second audit within the interval reuses what the first found.
    let again = gather(&client, &reach(false), &shared, &own(), None, None)
        .await
        .expect("remembered");
    assert_eq!(again.found, found.found);
    assert!(api.take().is_empty(), "no request the second time");
}

#[tokio::test]
async fn a_refused_list_is_the_obstacle() {
    let (client, _api) = FakeApi::start("team", |_: &Method, _: &str, _: &serde_json::Value| {
        json(
            StatusCode::FORBIDDEN,
            serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "message": "forbidden", "reason": "Forbidden", "code": 403}),
        )
    });
    let shared = Shared::default();
    let why = gather(&client, &reach(true), &shared, &own(), None, None)
        .await
        .expect_err("refused");
    assert_eq!(why.why, Obstacle::Forbidden);
    assert!(
        why.message.contains("list on deployments"),
        "{}",
        why.message
    );
}

/// No other kopf Deployment in reach; in `team`, RoleBindings let `ops/beta-sa` patch
/// Widgets (a Role naming them), `ops/viewer` only read them and `ops/admin` do anything
/// (cluster-admin: wildcards, not counted); a ClusterRoleBinding lets `ops/wide` patch
/// them everywhere.
fn rbac_only(method: &Method, path: &str, _: &serde_json::Value) -> Response<Body> {
    assert_eq!(
        method,
        Method::GET,
        "finding who may patch only reads: {path}"
    );
    let list = |items: Vec<serde_json::Value>| {
        json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": items}),
        )
    };
    let binding = |name: &str, kind: &str, role: &str, ns: Option<&str>| {
        serde_json::json!({
            "metadata": {"name": name, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "ops"}]
        })
    };
    let rules = |verbs: serde_json::Value, resources: serde_json::Value| {
        serde_json::json!({"metadata": {"name": "r"},
            "rules": [{"apiGroups": ["example.com"], "resources": resources, "verbs": verbs}]})
    };
    match path.split('?').next().unwrap_or_default() {
        "/apis/apps/v1/namespaces/team/deployments" | "/apis/apps/v1/deployments" => list(vec![]),
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings" => list(vec![
            binding("beta-sa", "Role", "beta", Some("team")),
            binding("viewer", "Role", "viewer", Some("team")),
            binding("admin", "ClusterRole", "cluster-admin", Some("team")),
        ]),
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/beta" => json(
            StatusCode::OK,
            rules(
                serde_json::json!(["get", "patch"]),
                serde_json::json!(["widgets"]),
            ),
        ),
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles/viewer" => json(
            StatusCode::OK,
            rules(serde_json::json!(["get"]), serde_json::json!(["widgets"])),
        ),
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin" => json(
            StatusCode::OK,
            serde_json::json!({"metadata": {"name": "cluster-admin"},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
        ),
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" => {
            list(vec![binding("wide", "ClusterRole", "widget-editor", None)])
        }
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/widget-editor" => json(
            StatusCode::OK,
            rules(serde_json::json!(["*"]), serde_json::json!(["widgets"])),
        ),
        _ => json(StatusCode::NOT_FOUND, serde_json::json!({"code": 404})),
    }
}

/// A Widget in `team` with these diff-base prefixes.
fn widget_marked(prefixes: &[&str]) -> ObjectSample {
    ObjectSample {
        resource: 0,
        namespace: "team".into(),
        name: "w1".into(),
        annotations: prefixes
            .iter()
            .map(|p| (format!("{p}/last-handled-configuration"), 10))
            .collect(),
        finalizers: Vec::new(),
        deletion_timestamp: None,
        status_kopf_keys: Vec::new(),
        handling: Default::default(),
    }
}

#[tokio::test]
async fn who_may_patch_objects_in_dispute_is_read_from_the_bindings_in_reach() {
    let (client, api) = FakeApi::start("team", rbac_only);
    let handled = [crate::model::testing::widget(true, true)];
    let fought = [widget_marked(&["alpha.org", "beta.org"])];
    let sa = |ns: &str, name: &str| ServiceAccountRef {
        namespace: ns.into(),
        name: name.into(),
    };
    let place = (
        ("example.com".to_string(), "widgets".to_string()),
        "team".to_string(),
    );
    // Without --allow-cross-namespace: the RoleBindings of `team` only.
    let shared = Shared::default();
    let found = gather(
        &client,
        &reach(false),
        &shared,
        &own(),
        Some(&handled),
        Some(&fought),
    )
    .await
    .expect("operators found");
    let patchers = found.patchers.expect("who may patch is known");
    assert!(!patchers.cluster_bindings);
    assert_eq!(
        patchers.accounts.get(&place),
        Some(&BTreeSet::from([sa("ops", "beta-sa")])),
        "read-only and wildcard grants do not count"
    );
    let seen = api.take();
    assert!(
        seen.iter().all(|s| !s.path.contains("clusterrolebindings")),
        "no ClusterRoleBinding is read without the allowance: {seen:?}"
    );
    // With it: the ClusterRoleBindings too.
    let shared = Shared::default();
    let found = gather(
        &client,
        &reach(true),
        &shared,
        &own(),
        Some(&handled),
        Some(&fought),
    )
    .await
    .expect("operators found");
    let patchers = found.patchers.expect("who may patch is known");
    assert!(patchers.cluster_bindings);
    assert_eq!(
        patchers.accounts.get(&place),
        Some(&BTreeSet::from([sa("ops", "beta-sa"), sa("ops", "wide")]))
    );
    // Nothing in dispute: no binding is read for it.
    api.take();
    let shared = Shared::default();
    let calm = [widget_marked(&["alpha.org"])];
    let found = gather(
        &client,
        &reach(false),
        &shared,
        &own(),
        Some(&handled),
        Some(&calm),
    )
    .await
    .expect("operators found");
    assert_eq!(found.patchers, None);
    assert!(
        api.take().iter().all(|s| !s.path.contains("rbac")),
        "no RBAC read without a dispute"
    );
}

#[test]
fn a_discovery_is_reused_past_its_interval_only_while_the_watches_show_no_change() {
    use crate::gather::changes::Watched;
    let changes = WatchedChanges::default();
    changes.listed(Watched::Deployments);
    changes.listed(Watched::Pods);
    let mark = changes.mark();
    let long_ago = REMEMBERED_FOR * 2;
    let now = Duration::ZERO;
    assert!(still_current(&changes, Some("a"), now, mark));
    assert!(still_current(&changes, Some("a"), long_ago, mark));
    assert!(still_current(&changes, None, long_ago, mark));
    changes.changed(Watched::Pods, "a");
    assert!(!still_current(&changes, Some("a"), long_ago, mark));
    assert!(
        still_current(&changes, Some("a"), now, mark),
        "within the interval, as before"
    );
    assert!(still_current(&changes, None, long_ago, mark), "pods only");
    changes.changed(Watched::Deployments, "b");
    assert!(!still_current(&changes, None, long_ago, mark));
    let unwatched = WatchedChanges::default();
    assert!(!still_current(
        &unwatched,
        Some("a"),
        long_ago,
        unwatched.mark()
    ));
}

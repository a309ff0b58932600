//! Tests of discovery against a fake API server: the requests it makes, and which
//! Deployments it reads logs of.

use super::*;
use crate::api::Recognition;
use crate::testing::{FakeApi, json};
use http::{Method, Response, StatusCode};
use kube::client::Body;

/// A Deployment in `team` whose one container runs `command` (none: the image's).
fn deployment(name: &str, command: &[&str]) -> serde_json::Value {
    let mut container = serde_json::json!({"name": "main", "image": format!("{name}:1")});
    if !command.is_empty() {
        container["command"] = serde_json::json!(command);
    }
    serde_json::json!({
        "metadata": {"name": name, "namespace": "team"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [container]}}
        }
    })
}

/// A running pod of the Deployment `app`.
fn pod(app: &str) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"name": format!("{app}-0"), "namespace": "team", "uid": format!("uid-{app}"),
                     "labels": {"app": app}},
        "status": {"containerStatuses": [{
            "name": "main", "ready": true, "restartCount": 0, "image": "x", "imageID": "x",
            "state": {"running": {}}
        }]}
    })
}

fn text(body: &str) -> Response<Body> {
    Response::new(Body::from(body.as_bytes().to_vec()))
}

/// Two pages of Deployments: written-out kopf, nginx, a hidden kopf, a hidden web app,
/// `python main.py` starting kopf, and a hidden one with no pod.
fn cluster(method: &Method, path: &str, _: &serde_json::Value) -> Response<Body> {
    assert_eq!(method, Method::GET, "discovery only reads: {path}");
    let list = |items: Vec<serde_json::Value>, next: &str| {
        json(
            StatusCode::OK,
            serde_json::json!({"metadata": {"continue": next}, "items": items}),
        )
    };
    if path.starts_with("/apis/apps/v1/deployments?") {
        return if path.contains("continue=p2") {
            list(
                vec![
                    deployment("python-op", &["python", "/app/main.py"]),
                    deployment("no-pods", &[]),
                ],
                "",
            )
        } else {
            list(
                vec![
                    deployment("kopf-cmd", &["kopf", "run", "-A", "op.py"]),
                    deployment("site", &["nginx"]),
                    deployment("hidden-kopf", &[]),
                    deployment("hidden-web", &[]),
                ],
                "p2",
            )
        };
    }
    if let Some(rest) = path.strip_prefix("/api/v1/namespaces/team/pods?") {
        let app = ["hidden-kopf", "hidden-web", "python-op"]
            .into_iter()
            .find(|a| rest.contains(&format!("app%3D{a}")) || rest.contains(&format!("app={a}")));
        return list(app.map(pod).into_iter().collect(), "");
    }
    if path.starts_with("/api/v1/namespaces/team/pods/hidden-web-0/log") {
        return text("10.0.0.1 - - [02/Dec/2026:11:00:00 +0000] \"GET / HTTP/1.1\" 200 612\n");
    }
    if path.starts_with("/api/v1/namespaces/team/pods/hidden-kopf-0/log") {
        return text(
            "[2026-12-02 11:00:00,000] kopf.activities.auth [INFO    ] Activity 'login_via_client' succeeded.\n",
        );
    }
    if path.starts_with("/api/v1/namespaces/team/pods/python-op-0/log") {
        return text("INFO:kopf.activities.startup:Activity 'configure' succeeded.\n");
    }
    json(StatusCode::NOT_FOUND, serde_json::json!({"code": 404}))
}

#[tokio::test]
async fn finds_kopf_by_command_line_and_reads_logs_only_where_the_spec_cannot_decide() {
    let (client, api) = FakeApi::start("team", cluster);
    let found = discover(&client, &Verdicts::default(), Scope::default())
        .await
        .expect("discovered");
    let rows: Vec<(&str, Recognition)> = found
        .found
        .iter()
        .map(|d| (d.deployment.as_str(), d.recognised_by))
        .collect();
    assert_eq!(
        rows,
        [
            ("hidden-kopf", Recognition::Log),
            ("kopf-cmd", Recognition::CommandLine),
            ("python-op", Recognition::Log),
        ]
    );
    let [undetermined] = &found.undetermined[..] else {
        panic!("{:?}", found.undetermined)
    };
    assert_eq!(undetermined.deployment, "no-pods");
    assert_eq!(
        found.cost,
        DiscoveryCost {
            deployments: 6,
            pages: 2,
            list_bytes: found.cost.list_bytes,
            decided_by_spec: 2,
            decided_by_log: 3,
            decided_by_peering: 0,
            pod_lists: 4,
            peering_lists: 4,
            remembered: 0,
        }
    );
    assert!(found.cost.list_bytes > 0);
    let seen = api.take();
    for decided in ["kopf-cmd", "site"] {
        assert!(
            !seen.iter().any(|s| s.path.contains(decided)),
            "{decided} was decided by its spec: {seen:#?}"
        );
    }
    let logs: Vec<&str> = seen
        .iter()
        .filter(|s| s.path.contains("/log"))
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(logs.len(), 3, "one read per pod that ran: {logs:#?}");
    assert!(
        logs.iter().all(|p| p.contains("limitBytes=65536")),
        "{logs:#?}"
    );
    assert!(
        seen.iter()
            .filter(|s| s.path.contains("/pods?"))
            .all(|s| s.path.contains("limit=10")),
        "{seen:#?}"
    );
}

#[tokio::test]
async fn a_namespace_and_a_selector_narrow_the_list() {
    // A web server's Deployment: its spec shows another program, so the peering objects
    // are read (a console script of its own may run kopf).
    let (client, api) = FakeApi::start("team", |_: &Method, path: &str, _: &serde_json::Value| {
        let items = if path.contains("/deployments") {
            vec![deployment("site", &["nginx"])]
        } else {
            Vec::new()
        };
        json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": items}),
        )
    });
    let scope = Scope {
        namespace: Some("team"),
        selector: Some("tier=ops"),
    };
    let found = discover(&client, &Verdicts::default(), scope)
        .await
        .expect("discovered");
    assert!(found.found.is_empty());
    let seen = api.take();
    let [list] = &seen
        .iter()
        .filter(|s| s.path.contains("/deployments"))
        .collect::<Vec<_>>()[..]
    else {
        panic!("one list: {seen:#?}")
    };
    assert!(
        list.path
            .starts_with("/apis/apps/v1/namespaces/team/deployments?"),
        "{}",
        list.path
    );
    let kopf_peerings: Vec<&str> = seen
        .iter()
        .filter(|s| s.path.contains("/kopfpeerings"))
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(kopf_peerings.len(), 2, "{seen:#?}");
    assert!(
        kopf_peerings
            .iter()
            .all(|p| p.contains("/namespaces/team/kopfpeerings")),
        "the namespace's KopfPeerings only: {kopf_peerings:#?}"
    );
    assert!(
        list.path.contains("labelSelector=tier%3Dops"),
        "{}",
        list.path
    );
}

#[tokio::test]
async fn a_refused_list_is_an_error() {
    let (client, _api) = FakeApi::start("team", |_: &Method, _: &str, _: &serde_json::Value| {
        json(
            StatusCode::FORBIDDEN,
            serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "message": "forbidden", "reason": "Forbidden", "code": 403}),
        )
    });
    let error = discover(&client, &Verdicts::default(), Scope::default())
        .await
        .expect_err("refused");
    assert!(matches!(error, DiscoverError::List(_)), "{error}");
}

/// One hidden kopf Deployment at generation `generation`, its pod running kopf.
fn one_rollout(generation: i64) -> impl Fn(&Method, &str, &serde_json::Value) -> Response<Body> {
    move |_: &Method, path: &str, _: &serde_json::Value| {
        if path.starts_with("/apis/apps/v1/deployments?") {
            let mut d = deployment("hidden-kopf", &[]);
            d["metadata"]["uid"] = "uid-dep".into();
            d["metadata"]["generation"] = generation.into();
            return json(
                StatusCode::OK,
                serde_json::json!({"metadata": {}, "items": [d]}),
            );
        }
        if path.starts_with("/api/v1/namespaces/team/pods?") {
            return json(
                StatusCode::OK,
                serde_json::json!({"metadata": {}, "items": [pod("hidden-kopf")]}),
            );
        }
        cluster(&Method::GET, path, &serde_json::Value::Null)
    }
}

#[tokio::test]
async fn a_deployment_is_fingerprinted_once_per_rollout() {
    let fingerprints = Fingerprints::default();
    let everything = |_: &str, _: &str| true;
    let reads =
        |seen: &[crate::testing::Seen]| seen.iter().filter(|s| s.path.contains("/pods")).count();
    // A fresh process each time: the per-pod verdicts are not what saves the reads.
    for (generation, expect_reads, expect_remembered) in [(1, 2, 0), (1, 0, 1), (2, 2, 0)] {
        let (client, api) = FakeApi::start("team", one_rollout(generation));
        let found = discover_in(
            &client,
            &Verdicts::default(),
            &fingerprints,
            Scope::default(),
            &everything,
        )
        .await
        .expect("discovered");
        assert_eq!(found.found.len(), 1, "generation {generation}: {found:?}");
        assert_eq!(found.found[0].recognised_by, Recognition::Log);
        let seen = api.take();
        assert_eq!(
            reads(&seen),
            expect_reads,
            "generation {generation}: a pod list and a log read, or nothing: {seen:#?}"
        );
        assert_eq!(found.cost.remembered, expect_remembered);
        assert_eq!(fingerprints.len(), 1, "only the current rollout is kept");
    }
}

#[tokio::test]
async fn what_keep_leaves_out_is_never_read() {
    let (client, api) = FakeApi::start("team", cluster);
    let found = discover_in(
        &client,
        &Verdicts::default(),
        &Fingerprints::default(),
        Scope::default(),
        &|_, name| name != "hidden-kopf" && name != "kopf-cmd",
    )
    .await
    .expect("discovered");
    let names: Vec<&str> = found.found.iter().map(|d| d.deployment.as_str()).collect();
    assert_eq!(names, ["python-op"]);
    assert!(
        !api.take().iter().any(|s| s.path.contains("hidden-kopf")),
        "an excluded Deployment's pods are not listed"
    );
}

#[tokio::test]
async fn a_hidden_deployment_scaled_to_zero_costs_no_pod_list() {
    let (client, api) = FakeApi::start("team", |_: &Method, path: &str, _: &serde_json::Value| {
        assert!(
            path.starts_with("/apis/apps/v1/deployments?") || path.contains("peerings"),
            "only the Deployment list and kopf's peering objects: {path}"
        );
        let mut idle = deployment("idle-app", &["gunicorn", "app:wsgi"]);
        idle["spec"]["replicas"] = 0.into();
        json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": [idle]}),
        )
    });
    let found = discover(&client, &Verdicts::default(), Scope::default())
        .await
        .expect("discovered");
    assert!(found.found.is_empty(), "{found:?}");
    assert_eq!(found.undetermined.len(), 1, "{found:?}");
    assert!(
        found.undetermined[0].reason.contains("scaled to zero"),
        "{:?}",
        found.undetermined[0]
    );
    assert_eq!(found.cost.pod_lists, 0);
    assert_eq!(
        api.take().len(),
        1 + found.cost.peering_lists as usize,
        "the list and the peering objects' only"
    );
}

/// An audit looks for the other kopf operators of its namespace every few minutes:
/// where the spec shows every Deployment as kopf, kopf's peering objects are not read.
#[tokio::test]
async fn peering_objects_are_not_read_when_every_spec_shows_kopf() {
    let (client, api) = FakeApi::start("team", |_: &Method, path: &str, _: &serde_json::Value| {
        assert!(
            path.starts_with("/apis/apps/v1/deployments?"),
            "only the Deployment list: {path}"
        );
        json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": [
                deployment("op", &["kopf", "run", "-n", "team", "op.py"]),
                deployment("other-op", &["python", "-m", "kopf", "run", "-A", "op.py"]),
            ]}),
        )
    });
    let found = discover(&client, &Verdicts::default(), Scope::default())
        .await
        .expect("discovered");
    assert_eq!(found.found.len(), 2, "{found:?}");
    assert_eq!(found.cost.peering_lists, 0);
    assert_eq!(api.take().len(), 1, "the Deployment list only");
}

/// `hidden-kopf` and `hidden-web` as in [`cluster`], with kopf's peering objects: a
/// `ClusterKopfPeering` naming `hidden-kopf-0` by `user@host/…` when `cluster_names` is
/// set, and in namespace `elsewhere` a tenant's `KopfPeering` naming `hidden-web-0` of
/// `team` (not believed: `hidden-web` is decided by its log).
fn with_peering(
    cluster_names: bool,
) -> impl Fn(&Method, &str, &serde_json::Value) -> Response<Body> {
    move |method: &Method, path: &str, body: &serde_json::Value| {
        let peering = |namespace: Option<&str>, id: &str| {
            let mut metadata = serde_json::json!({"name": "default"});
            if let Some(ns) = namespace {
                metadata["namespace"] = ns.into();
            }
            serde_json::json!({
                "apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": metadata,
                "status": {id: {"priority": 0, "lifetime": 60, "lastseen": "2026-12-03T10:00:00+00:00"}}
            })
        };
        let list = |items: Vec<serde_json::Value>| {
            json(
                StatusCode::OK,
                serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}),
            )
        };
        if path.starts_with("/apis/kopf.dev/v1/clusterkopfpeerings") {
            let items = if cluster_names {
                vec![peering(None, "root@hidden-kopf-0/20261203100000/abc")]
            } else {
                Vec::new()
            };
            return list(items);
        }
        if path.starts_with("/apis/kopf.dev/v1/kopfpeerings") {
            // The tenant of `elsewhere` names a pod of `team`: never believed.
            return list(vec![peering(Some("elsewhere"), "hidden-web-0")]);
        }
        if path.starts_with("/apis/apps/v1/deployments?") {
            return list(vec![
                deployment("hidden-kopf", &[]),
                deployment("hidden-web", &[]),
            ]);
        }
        cluster(method, path, body)
    }
}

#[tokio::test]
async fn a_pod_kopf_peering_names_is_kopf_without_a_log_read() {
    let (client, api) = FakeApi::start("team", with_peering(true));
    let found = discover(&client, &Verdicts::default(), Scope::default())
        .await
        .expect("discovered");
    let [row] = &found.found[..] else {
        panic!("{found:?}")
    };
    assert_eq!(
        (
            row.deployment.as_str(),
            row.recognised_by,
            row.scope.as_str()
        ),
        ("hidden-kopf", Recognition::Peering, "cluster-wide")
    );
    assert_eq!(row.container, "main");
    assert!(
        row.evidence.contains("ClusterKopfPeering default"),
        "{}",
        row.evidence
    );
    assert_eq!(
        (found.cost.decided_by_peering, found.cost.decided_by_log),
        (1, 1)
    );
    let seen = api.take();
    let logs: Vec<&str> = seen
        .iter()
        .filter(|s| s.path.contains("/log"))
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(logs.len(), 1, "only hidden-web's log: {logs:#?}");
    assert!(logs[0].contains("hidden-web-0"), "{logs:#?}");
    let peering_lists: Vec<&str> = seen
        .iter()
        .filter(|s| s.path.contains("peerings"))
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(peering_lists.len(), 4, "{peering_lists:#?}");
    assert!(
        peering_lists.iter().all(|p| p.contains("limit=5")),
        "{peering_lists:#?}"
    );
    assert_eq!(found.cost.peering_lists, 4);
}

#[tokio::test]
async fn without_a_peer_the_log_decides_as_before() {
    let (client, _api) = FakeApi::start("team", with_peering(false));
    let found = discover(&client, &Verdicts::default(), Scope::default())
        .await
        .expect("discovered");
    let rows: Vec<(&str, Recognition)> = found
        .found
        .iter()
        .map(|d| (d.deployment.as_str(), d.recognised_by))
        .collect();
    assert_eq!(rows, [("hidden-kopf", Recognition::Log)]);
    assert_eq!(found.cost.decided_by_peering, 0);
}

#[tokio::test]
async fn a_console_script_kopf_calls_is_found_by_its_pods_peer_name() {
    let (client, api) = FakeApi::start("team", |_: &Method, path: &str, _: &serde_json::Value| {
        assert!(!path.contains("/pods"), "no pod list, no log: {path}");
        let items = if path.starts_with("/apis/kopf.dev/v1/clusterkopfpeerings") {
            vec![serde_json::json!({
                "apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering",
                "metadata": {"name": "default"},
                "status": {"kopf@my-op-7d9f8c5b4-x2k4z/20261203100000/abc":
                    {"priority": 0, "lifetime": 60, "lastseen": "2026-12-03T10:00:00+00:00"}}
            })]
        } else if path.starts_with("/apis/apps/v1/deployments?") {
            vec![
                deployment("my-op", &["my-operator"]),
                deployment("other", &["my-operator"]),
            ]
        } else {
            Vec::new()
        };
        json(
            StatusCode::OK,
            serde_json::json!({"metadata": {}, "items": items}),
        )
    });
    let found = discover(&client, &Verdicts::default(), Scope::default())
        .await
        .expect("discovered");
    let [row] = &found.found[..] else {
        panic!("{found:?}")
    };
    assert_eq!(
        (
            row.deployment.as_str(),
            row.recognised_by,
            row.container.as_str()
        ),
        ("my-op", Recognition::Peering, "main")
    );
    assert_eq!(
        (found.cost.decided_by_peering, found.cost.decided_by_spec),
        (1, 1)
    );
    assert_eq!(
        api.take().len(),
        5,
        "the Deployment list and 4 peering lists"
    );
}

/// A namespace of fat Deployments (each with a 1.4 MiB environment value, as a tenant
/// may write) and one over the page budget on its own: pages over the budget are read
/// again with fewer items, the one too big alone is named as undetermined and never
/// parsed, and the kopf operators among the rest are found.
#[tokio::test]
async fn fat_deployments_are_read_in_smaller_pages_and_a_huge_one_is_named() {
    const FAT: usize = 1_400_000;
    const COUNT: usize = 20;
    let fat = |i: usize| {
        let mut d = deployment(
            &format!("fat-{i:02}"),
            &["kopf", "run", "-n", "team", "op.py"],
        );
        d["spec"]["template"]["spec"]["containers"][0]["env"] =
            serde_json::json!([{"name": "BLOB", "value": "x".repeat(FAT)}]);
        d
    };
    let huge = || {
        let mut d = deployment("huge", &["kopf", "run", "-A", "op.py"]);
        d["spec"]["template"]["spec"]["containers"][0]["env"] =
            serde_json::json!([{"name": "BLOB", "value": "y".repeat(PAGE_BYTES + 1)}]);
        d
    };
    let (client, api) = FakeApi::start(
        "team",
        move |_: &Method, path: &str, _: &serde_json::Value| {
            if !path.contains("/deployments") {
                return json(
                    StatusCode::OK,
                    serde_json::json!({"metadata": {}, "items": []}),
                );
            }
            // Item COUNT is the huge one; the list ends after it.
            let (range, next) = crate::testing::page_of(path, COUNT + 1);
            let items: Vec<serde_json::Value> = range
                .map(|i| if i == COUNT { huge() } else { fat(i) })
                .collect();
            json(
                StatusCode::OK,
                serde_json::json!({"metadata": {"continue": next}, "items": items}),
            )
        },
    );
    let found = discover(
        &client,
        &Verdicts::default(),
        Scope {
            namespace: Some("team"),
            selector: None,
        },
    )
    .await;
    let found = found.expect("discovered");
    assert_eq!(
        found.found.len(),
        COUNT,
        "every fat kopf Deployment is found"
    );
    let [undetermined] = &found.undetermined[..] else {
        panic!("{:?}", found.undetermined)
    };
    assert_eq!(
        (
            undetermined.namespace.as_str(),
            undetermined.deployment.as_str()
        ),
        ("team", "huge")
    );
    assert!(
        undetermined.reason.contains("8 MiB"),
        "{}",
        undetermined.reason
    );
    let requests = api.take();
    assert!(
        requests
            .iter()
            .any(|r| r.path.contains("limit=1&") || r.path.ends_with("limit=1")),
        "read again one by one"
    );
    let most = requests
        .iter()
        .filter(|r| r.path.contains("limit=500"))
        .count();
    assert_eq!(
        most, 1,
        "the full page size is tried once, then smaller pages"
    );
}

//! `kopf-audit discover` against real kopf operators running at once, each installed
//! its own way (`kopf.run()` from Python, the image's CMD, `python -m kopf run`), next
//! to Deployments that are not kopf: it finds exactly the operators, says how each was
//! recognised, and prints KopfAudits the API server accepts.

use crate::operator::ensure_crd;
use crate::support::{self, Fixture, TestNamespace, kubectl_run, say, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

/// Runs `kopf-audit discover` with `args` as admin; returns stdout, after checking that
/// it exited 0.
fn discover(args: &[&str]) -> String {
    let out = Command::new(support::auditor_binary())
        .arg("discover")
        .args(args)
        .env("KUBECONFIG", support::kubeconfig_path())
        .output()
        .expect("running kopf-audit discover");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "discover {args:?}: {stdout}{stderr}");
    say(stderr.trim_end());
    stdout
}

/// The operators `discover -A -o json` finds in `namespaces`: namespace to (deployment,
/// recognised by).
fn found_in(namespaces: &[&str]) -> BTreeMap<String, (String, String)> {
    let out = discover(&["-A", "-o", "json"]);
    let json: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("JSON ({e}): {out}"));
    json["operators"]
        .as_array()
        .expect("operators")
        .iter()
        .filter(|o| namespaces.contains(&o["namespace"].as_str().unwrap_or_default()))
        .map(|o| {
            let s = |k: &str| o[k].as_str().unwrap_or_default().to_string();
            (s("namespace"), (s("deployment"), s("recognisedBy")))
        })
        .collect()
}

/// A Deployment of one replica that is not kopf: `command` written out, or none (the
/// image's CMD, which only its log shows).
async fn noise(client: &Client, ns: &str, name: &str, command: Option<&[&str]>) {
    let mut container = serde_json::json!({"name": "main", "image": format!("example/{name}:1")});
    if let Some(command) = command {
        container["command"] = serde_json::json!(command);
    }
    let d: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [container]}}
        }
    }))
    .expect("Deployment JSON");
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &d)
        .await
        .unwrap_or_else(|e| panic!("creating Deployment {ns}/{name}: {e}"));
}

/// Gives the pod of the Deployment `app` a log of a web server's lines (a kwok `Logs`
/// object pointing at a file), once the pod exists.
async fn web_server_log(client: &Client, ns: &str, app: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod = wait_for(
        &format!("a pod of {ns}/{app}"),
        Duration::from_secs(60),
        || {
            let pods = pods.clone();
            async move {
                let list = pods
                    .list(&ListParams::default().labels(&format!("app={app}")))
                    .await
                    .ok()?;
                list.items.into_iter().next().map(|p| p.name_any())
            }
        },
    )
    .await;
    let dir = support::workdir().join("discover-noise").join(ns);
    std::fs::create_dir_all(&dir).expect("log dir");
    let file = dir.join("main.log");
    std::fs::write(
        &file,
        "2026-12-02T11:00:00.000000000Z stdout F 10.0.0.1 - - [02/Dec/2026:11:00:00 +0000] \"GET / HTTP/1.1\" 200 612\n",
    )
    .expect("log file");
    let logs = serde_json::json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
        "metadata": {"name": pod, "namespace": ns},
        "spec": {"logs": [{"containers": ["main"], "logsFile": file.to_string_lossy(), "follow": false}]}
    });
    let (ok, out, err) = kubectl_run(&["apply", "-f", "-"], Some(&logs.to_string()));
    assert!(ok, "applying the Logs object: {out}{err}");
}

#[tokio::test]
async fn discover_finds_every_kopf_operator_however_it_is_started_and_nothing_else() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let python_run = TestNamespace::create(&client, "disc-pyrun").await;
    let image_cmd = TestNamespace::create(&client, "disc-imgcmd").await;
    let python_m = TestNamespace::create(&client, "disc-pym").await;
    let quiet = TestNamespace::create(&client, "disc-noise").await;
    let _fixtures = [
        Fixture::start("python-run", &python_run.name, None),
        Fixture::start("image-cmd", &image_cmd.name, None),
        Fixture::start("python-m-kopf", &python_m.name, None),
    ];
    noise(
        &client,
        &quiet.name,
        "site",
        Some(&["nginx", "-g", "daemon off;"]),
    )
    .await;
    noise(&client, &quiet.name, "app", None).await;
    web_server_log(&client, &quiet.name, "app").await;

    let ours = [
        python_run.name.as_str(),
        image_cmd.name.as_str(),
        python_m.name.as_str(),
        quiet.name.as_str(),
    ];
    let mut expected = BTreeMap::new();
    for (ns, by) in [
        (&python_run.name, "log"),
        (&image_cmd.name, "log"),
        (&python_m.name, "commandLine"),
    ] {
        let name = Api::<Deployment>::namespaced(client.clone(), ns)
            .list(&ListParams::default())
            .await
            .expect("deployments")
            .items
            .first()
            .map(ResourceExt::name_any)
            .expect("the fixture's Deployment");
        expected.insert(ns.clone(), (name, by.to_string()));
    }
    // kopf writes its first lines a moment after it starts: discover until they are
    // there (every run is a fresh process that reads the logs anew).
    let found = wait_for(
        "discover to find the three operators",
        Duration::from_secs(120),
        || async {
            let found = found_in(&ours);
            (found.len() >= expected.len()).then_some(found)
        },
    )
    .await;
    assert_eq!(
        found, expected,
        "exactly the kopf operators, each as recognised"
    );

    // One namespace: the table names the operator and how it was recognised.
    let table = discover(&["-n", &image_cmd.name]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&image_cmd.name))
        .unwrap_or_else(|| panic!("a row for {}: {table}", image_cmd.name));
    assert!(row.contains(" log "), "{table}");
    // The noise: nginx is decided by its spec, the image's CMD by its log (read, not
    // undetermined).
    let noise: serde_json::Value =
        serde_json::from_str(&discover(&["-n", &quiet.name, "-o", "json"])).expect("JSON");
    assert_eq!(noise["operators"], serde_json::json!([]), "{noise}");
    assert_eq!(noise["undetermined"], serde_json::json!([]), "{noise}");
    assert_eq!(noise["cost"]["decidedBySpec"], 1, "{noise}");
    assert_eq!(noise["cost"]["decidedByLog"], 1, "{noise}");

    // The KopfAudit YAML is accepted by the API server as it is.
    let yaml = discover(&["-n", &python_m.name, "-o", "yaml"]);
    assert_eq!(yaml.matches("kind: KopfAudit").count(), 1, "{yaml}");
    let (ok, out, err) = kubectl_run(&["apply", "--dry-run=server", "-f", "-"], Some(&yaml));
    assert!(ok, "{yaml}\n{out}{err}");
    assert!(
        out.contains(&format!(
            "kopfaudit.kopfaudit.dev/{}",
            expected[&python_m.name].0
        )),
        "{out}"
    );
    say(format!("discovered: {found:?}\n{}", discover(&["-A"])));
}

/// A real kopf operator started by its image's CMD, in the default `KopfPeering` of its
/// namespace with `POD_ID` set to its pod's name: once kopf has written its identity
/// into the peering object, discovery recognises it by that, with no log read.
#[tokio::test]
async fn discover_recognises_kopf_by_its_peering_identity_without_reading_a_log() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, "disc-peer").await;
    let _fixture = Fixture::start("peering-pod-id", &ns.name, None);
    let json = wait_for(
        "discover to recognise the operator by its peering identity",
        Duration::from_secs(120),
        || async {
            let out = discover(&["-n", &ns.name, "-o", "json"]);
            let json: serde_json::Value =
                serde_json::from_str(&out).unwrap_or_else(|e| panic!("JSON ({e}): {out}"));
            (json["operators"][0]["recognisedBy"] == "peering").then_some(json)
        },
    )
    .await;
    let operators = json["operators"].as_array().expect("operators");
    assert_eq!(operators.len(), 1, "{json}");
    let operator = &operators[0];
    assert_eq!(operator["deployment"], "peering-pod-id-operator", "{json}");
    assert_eq!(operator["container"], "operator", "{json}");
    assert_eq!(operator["scope"], "namespaced", "{json}");
    let evidence = operator["evidence"].as_str().unwrap_or_default();
    assert!(
        evidence.contains(&format!("KopfPeering {}/default", ns.name)),
        "{json}"
    );
    let cost = &json["cost"];
    assert_eq!(cost["decidedByPeering"], 1, "{json}");
    assert_eq!(cost["decidedByLog"], 0, "{json}");
    let requests = cost["requests"].as_u64().expect("requests");
    let listed = ["pages", "podLists", "peeringLists"]
        .iter()
        .map(|k| cost[*k].as_u64().unwrap_or_default())
        .sum::<u64>();
    assert_eq!(requests, listed, "no log read: {json}");
}

//! Who may read `/metrics`, which names every KopfAudit of the cluster with its
//! conditions and failing checks.
//!
//! - The chart's NetworkPolicy, proven by rendering it (`helm template`) and evaluating
//!   its selectors against the pods that might call: the local cluster (kwok) enforces
//!   no NetworkPolicy, so a live connection would prove nothing. A tenant's pod is not
//!   admitted, however it labels itself; Prometheus in `monitoring` and the chart's
//!   `helm test` pod are, on the http port only.
//! - `--metrics-auth` for real: the auditor, run with the chart's ServiceAccount token
//!   and only the chart's RBAC, answers 401 without a token or with a made-up one, 403
//!   to a tenant's ServiceAccount token, and 200 to a token bound to the chart's
//!   metrics-reader ClusterRole; a second scrape asks the API server nothing.

use crate::chart::{
    apply, cleanup_of, deployment_args, grant, grants, helm, kind, name, of_kind, render,
    values_file,
};
use crate::operator::ensure_crd;
use crate::support::{self, Auditor, TestNamespace, say, wait_for};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};
use serde_yaml_ng::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Labels as a selector sees them.
type Labels = BTreeMap<String, String>;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A pod that might connect: its namespace (with the labels the API server gives every
/// namespace, `kubernetes.io/metadata.name`, plus `namespace_labels`) and its labels.
struct Caller {
    what: &'static str,
    namespace: String,
    namespace_labels: Labels,
    pod_labels: Labels,
}

impl Caller {
    fn new(
        what: &'static str,
        namespace: &str,
        namespace_labels: &[(&str, &str)],
        pod_labels: Labels,
    ) -> Caller {
        let mut ns = labels(namespace_labels);
        ns.insert("kubernetes.io/metadata.name".into(), namespace.into());
        Caller {
            what,
            namespace: namespace.into(),
            namespace_labels: ns,
            pod_labels,
        }
    }
}

/// Whether a label selector selects `labels` (matchLabels; this chart renders no
/// matchExpressions, and the test refuses to guess at them).
fn selects(selector: &Value, labels: &Labels) -> bool {
    assert!(
        selector.get("matchExpressions").is_none(),
        "matchExpressions are not evaluated here: {selector:?}"
    );
    selector
        .get("matchLabels")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter().all(|(k, v)| {
                k.as_str()
                    .is_some_and(|k| labels.get(k).map(String::as_str) == v.as_str())
            })
        })
        .unwrap_or(true)
}

/// Whether one NetworkPolicyPeer admits `caller`, as the API defines peers: a
/// podSelector alone means pods of the policy's own namespace, a namespaceSelector
/// alone every pod of the namespaces it selects, both together the selected pods of
/// the selected namespaces. An ipBlock names addresses, not pods: it admits no pod here.
fn peer_admits(peer: &Value, policy_namespace: &str, caller: &Caller) -> bool {
    if peer.get("ipBlock").is_some() {
        return false;
    }
    let namespace = match peer.get("namespaceSelector") {
        Some(selector) => selects(selector, &caller.namespace_labels),
        None => caller.namespace == policy_namespace,
    };
    let pod = peer
        .get("podSelector")
        .is_none_or(|selector| selects(selector, &caller.pod_labels));
    namespace && pod
}

/// Whether the policy admits `caller` to the pod's port `port` (a name or a number).
fn admits(policy: &Value, caller: &Caller, port: &str) -> bool {
    let namespace = policy["metadata"]["namespace"].as_str().unwrap_or_default();
    let rules = policy["spec"]["ingress"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    rules.iter().any(|rule| {
        let from = rule["from"].as_sequence().cloned().unwrap_or_default();
        let ports = rule["ports"].as_sequence().cloned().unwrap_or_default();
        let source = from.is_empty() || from.iter().any(|p| peer_admits(p, namespace, caller));
        let to = ports.is_empty()
            || ports.iter().any(|p| match &p["port"] {
                Value::String(s) => s == port,
                Value::Number(n) => n.to_string() == port,
                _ => false,
            });
        source && to
    })
}

/// The one NetworkPolicy among rendered objects.
fn the_policy(objects: &[Value]) -> &Value {
    let policies = of_kind(objects, "NetworkPolicy");
    assert_eq!(policies.len(), 1, "one NetworkPolicy");
    policies[0]
}

/// The labels of the `helm test` Job's pod, as rendered.
fn test_pod_labels(objects: &[Value]) -> Labels {
    let job = of_kind(objects, "Job")
        .into_iter()
        .find(|j| name(j).ends_with("-test-readiness"))
        .expect("the helm test Job");
    job["spec"]["template"]["metadata"]["labels"]
        .as_mapping()
        .expect("the test pod's labels")
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
        .collect()
}

/// `helm template` of release `rel` in `ops` with these values (top-level keys as
/// `--set-json`: no file, so that no cluster work dir is needed).
fn render_with(values: serde_json::Value) -> Vec<Value> {
    let sets: Vec<String> = values
        .as_object()
        .expect("values are an object")
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let args: Vec<&str> = sets
        .iter()
        .flat_map(|s| ["--set-json", s.as_str()])
        .collect();
    render("rel", "ops", &args)
}

/// `helm template` that must fail; its error output.
fn render_fails(values: &[&str]) -> String {
    let chart = support::repo().join("charts/kopf-audit");
    let out = std::process::Command::new(helm())
        .args(["template", "rel", chart.to_str().expect("utf-8 path")])
        .args(["--namespace", "ops"])
        .args(values)
        .output()
        .expect("helm runs");
    assert!(!out.status.success(), "helm template {values:?} must fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_network_policy_admits_the_metrics_port_only_from_the_named_peers() {
    // The default: on, Prometheus's `monitoring` namespace and the helm test pod.
    let objects = render("rel", "ops", &[]);
    let policy = the_policy(&objects);
    let spec = &policy["spec"];
    let deployment = of_kind(&objects, "Deployment")[0];
    assert_eq!(
        spec["podSelector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"],
        "the policy selects the auditor's pods"
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"].as_str(),
        Some("http"),
        "the port the rules name"
    );
    assert_eq!(
        spec["policyTypes"],
        serde_yaml_ng::to_value(["Ingress"]).expect("yaml")
    );
    assert!(spec.get("egress").is_none(), "egress is not restricted");
    for rule in spec["ingress"].as_sequence().expect("ingress rules") {
        let from = rule["from"].as_sequence().map(Vec::len).unwrap_or(0);
        assert!(
            from > 0,
            "a rule without `from` admits every source: {rule:?}"
        );
    }

    let release_labels = test_pod_labels(&objects);
    let prometheus = labels(&[("app.kubernetes.io/name", "prometheus")]);
    let tenant = labels(&[("app", "tenant-app")]);
    let admitted = [
        Caller::new(
            "Prometheus in monitoring",
            "monitoring",
            &[],
            prometheus.clone(),
        ),
        Caller::new("any pod of monitoring", "monitoring", &[], tenant.clone()),
        Caller::new("the helm test pod", "ops", &[], release_labels.clone()),
    ];
    let refused = [
        Caller::new("a tenant's pod", "tenant-a", &[], tenant.clone()),
        Caller::new(
            "a tenant's pod labelled like Prometheus",
            "tenant-a",
            &[],
            prometheus.clone(),
        ),
        Caller::new(
            "a tenant's pod labelled like the helm test pod",
            "tenant-a",
            &[],
            release_labels.clone(),
        ),
        Caller::new(
            "a tenant's namespace labelled for monitoring",
            "tenant-a",
            &[("monitoring", "true"), ("name", "monitoring")],
            prometheus.clone(),
        ),
        Caller::new(
            "another pod of the release namespace",
            "ops",
            &[],
            tenant.clone(),
        ),
    ];
    for caller in &admitted {
        assert!(
            admits(policy, caller, "http"),
            "{} is admitted",
            caller.what
        );
        assert!(
            !admits(policy, caller, "9999"),
            "{}: only the http port",
            caller.what
        );
    }
    for caller in &refused {
        assert!(
            !admits(policy, caller, "http"),
            "{} is refused",
            caller.what
        );
    }
    say("NetworkPolicy: a tenant's pods are refused, monitoring and helm test admitted");

    // Named peers, as given: Prometheus's pods of an observability namespace only.
    let objects = render_with(serde_json::json!({"networkPolicy": {"metricsFrom": [{
        "namespaceSelector": {"matchLabels": {"team": "observability"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}
    }]}}));
    let policy = the_policy(&objects);
    let observability = [("team", "observability")];
    assert!(admits(
        policy,
        &Caller::new("Prometheus", "obs", &observability, prometheus.clone()),
        "http"
    ));
    assert!(!admits(
        policy,
        &Caller::new("Grafana beside it", "obs", &observability, tenant.clone()),
        "http"
    ));
    assert!(!admits(
        policy,
        &Caller::new(
            "Prometheus in monitoring",
            "monitoring",
            &[],
            prometheus.clone()
        ),
        "http"
    ));

    // No peer and no test: nothing is admitted (never an empty `from`).
    let objects = render_with(
        serde_json::json!({"networkPolicy": {"metricsFrom": []}, "tests": {"enabled": false}}),
    );
    let policy = the_policy(&objects);
    assert_eq!(
        policy["spec"]["ingress"].as_sequence().map(Vec::len),
        Some(0),
        "ingress: []"
    );
    assert!(!admits(
        policy,
        &Caller::new("Prometheus in monitoring", "monitoring", &[], prometheus),
        "http"
    ));

    // Off: no policy. An empty peer (which would select everything) is refused.
    let objects = render("rel", "ops", &["--set", "networkPolicy.enabled=false"]);
    assert!(of_kind(&objects, "NetworkPolicy").is_empty());
    let error = render_fails(&["--set-json", "networkPolicy.metricsFrom=[{}]"]);
    assert!(error.contains("metricsFrom"), "{error}");
    say("NetworkPolicy: named peers as given, none admits none, off renders none");
}

#[test]
fn authenticated_metrics_render_the_flag_the_review_grants_and_the_reader_role() {
    // Off by default: no flag, no role, no token in the ServiceMonitor.
    let objects = render("rel", "ops", &["--set", "serviceMonitor.enabled=true"]);
    assert!(
        !deployment_args(&objects)
            .iter()
            .any(|a| a == "--metrics-auth")
    );
    assert!(
        of_kind(&objects, "ClusterRole")
            .iter()
            .all(|r| !name(r).contains("-metrics-")),
        "no metrics roles"
    );
    let endpoint = &of_kind(&objects, "ServiceMonitor")[0]["spec"]["endpoints"][0];
    assert!(endpoint.get("bearerTokenFile").is_none() && endpoint.get("authorization").is_none());

    let values = serde_json::json!({
        "metrics": {"authenticated": true, "readers": [
            {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
        ]},
        "serviceMonitor": {"enabled": true}
    });
    let objects = render_with(values.clone());
    assert!(
        deployment_args(&objects)
            .iter()
            .any(|a| a == "--metrics-auth"),
        "{:?}",
        deployment_args(&objects)
    );
    let role = |n: &str| {
        of_kind(&objects, "ClusterRole")
            .into_iter()
            .find(|r| name(r) == n)
            .unwrap_or_else(|| panic!("ClusterRole {n}"))
    };
    let binding = |n: &str| {
        of_kind(&objects, "ClusterRoleBinding")
            .into_iter()
            .find(|r| name(r) == n)
            .unwrap_or_else(|| panic!("ClusterRoleBinding {n}"))
    };
    let reviews = grants(&role("rel-kopf-audit-metrics-auth")["rules"]);
    assert_eq!(
        reviews,
        [
            grant("authentication.k8s.io", "tokenreviews", "create"),
            grant("authorization.k8s.io", "subjectaccessreviews", "create"),
        ]
        .into_iter()
        .collect(),
        "exactly the two reviews"
    );
    let auditor = &binding("rel-kopf-audit-metrics-auth")["subjects"][0];
    assert_eq!(
        (auditor["name"].as_str(), auditor["namespace"].as_str()),
        (Some("rel-kopf-audit"), Some("ops"))
    );
    let reader = role("rel-kopf-audit-metrics-reader");
    assert_eq!(
        reader["rules"],
        serde_yaml_ng::to_value(
            serde_json::json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
        )
        .expect("yaml"),
        "get /metrics and nothing else"
    );
    let readers = binding("rel-kopf-audit-metrics-reader");
    assert_eq!(
        readers["roleRef"]["name"].as_str(),
        Some("rel-kopf-audit-metrics-reader")
    );
    assert_eq!(readers["subjects"][0]["name"].as_str(), Some("prometheus"));
    let endpoint = &of_kind(&objects, "ServiceMonitor")[0]["spec"]["endpoints"][0];
    assert_eq!(
        endpoint["bearerTokenFile"].as_str(),
        Some("/var/run/secrets/kubernetes.io/serviceaccount/token")
    );

    // A Secret's token instead of Prometheus's own.
    let mut with_secret = values;
    with_secret["serviceMonitor"]["authorization"] =
        serde_json::json!({"type": "Bearer", "credentials": {"name": "scrape", "key": "token"}});
    let objects = render_with(with_secret);
    let endpoint = &of_kind(&objects, "ServiceMonitor")[0]["spec"]["endpoints"][0];
    assert_eq!(
        endpoint["authorization"]["credentials"]["name"].as_str(),
        Some("scrape")
    );
    assert!(endpoint.get("bearerTokenFile").is_none());

    // No reader binding without readers; a ServiceAccount reader needs its namespace.
    let objects = render("rel", "ops", &["--set", "metrics.authenticated=true"]);
    assert!(
        of_kind(&objects, "ClusterRoleBinding")
            .iter()
            .all(|b| name(b) != "rel-kopf-audit-metrics-reader")
    );
    let error = render_fails(&[
        "--set",
        "metrics.authenticated=true",
        "--set-json",
        r#"metrics.readers=[{"kind":"ServiceAccount","name":"prometheus"}]"#,
    ]);
    assert!(error.contains("namespace"), "{error}");
    say("--metrics-auth: the flag, the review grants, the reader role and binding render");
}

/// Creates ServiceAccount `account` in `ns`.
async fn service_account(admin: &Client, ns: &str, account: &str) {
    let sa: ServiceAccount = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}
    }))
    .expect("ServiceAccount");
    Api::<ServiceAccount>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &sa)
        .await
        .unwrap_or_else(|e| panic!("creating ServiceAccount {ns}/{account}: {e}"));
}

/// The auditor's POST requests so far (TokenReviews and SubjectAccessReviews here), as
/// a scrape reports them.
fn posts(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("kopf_audit_api_requests_total{") && l.contains("method=\"POST\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn authenticated_metrics_answer_401_without_a_token_403_to_a_tenant_and_200_to_a_reader() {
    let admin = support::admin_client().await;
    ensure_crd(&admin).await;
    let release_ns = TestNamespace::create(&admin, "mauth").await;
    let release = format!("r{}", release_ns.name.trim_start_matches("e2e-mauth-"));
    let fullname = format!("{release}-kopf-audit");
    let tenant = TestNamespace::create(&admin, "tenant").await;
    let monitoring = TestNamespace::create(&admin, "mon").await;
    service_account(&admin, &tenant.name, "app").await;
    service_account(&admin, &monitoring.name, "prometheus").await;

    // A namespaced install whose cluster reads leave out SubjectAccessReviews: the
    // metrics-auth ClusterRole alone must carry what --metrics-auth needs.
    let values = values_file(
        &release,
        serde_json::json!({
            "rbac": {"namespaced": true, "namespacedClusterRules": [
                {"apiGroups": ["rbac.authorization.k8s.io"],
                 "resources": ["clusterroles", "clusterrolebindings"], "verbs": ["get", "list"]},
                {"apiGroups": ["apiextensions.k8s.io"],
                 "resources": ["customresourcedefinitions"], "verbs": ["get"]}
            ]},
            "metrics": {"authenticated": true, "readers": [
                {"kind": "ServiceAccount", "name": "prometheus", "namespace": monitoring.name}
            ]}
        }),
    );
    let objects = render(
        &release,
        &release_ns.name,
        &["--values", values.to_str().expect("utf-8 path")],
    );
    assert!(
        deployment_args(&objects)
            .iter()
            .any(|a| a == "--metrics-auth")
    );
    let all: Vec<&Value> = objects.iter().filter(|o| kind(o) != "Job").collect();
    let _cleanup = cleanup_of(&all);
    apply(&all);

    let kubeconfig = support::token_kubeconfig(&admin, &release_ns.name, &fullname).await;
    let auditor = Auditor::start(&kubeconfig, &release_ns.name, &["--metrics-auth"]);
    let http = auditor.http.clone();
    wait_for("/readyz 200 without a token", Duration::from_secs(60), || {
        let http = http.clone();
        async move { matches!(support::http_get(&http, "/readyz"), Some((200, _))).then_some(()) }
    })
    .await;
    assert_eq!(
        support::http_get(&http, "/healthz").map(|r| r.0),
        Some(200),
        "/healthz stays open"
    );

    let tenant_token = support::service_account_token(&admin, &tenant.name, "app").await;
    let reader_token = support::service_account_token(&admin, &monitoring.name, "prometheus").await;
    let get = |token: Option<&str>| {
        support::http_get_as(&http, "/metrics", token)
            .unwrap_or_else(|| panic!("no answer from the auditor at {http}"))
    };
    let (code, body) = get(None);
    assert_eq!(code, 401, "no token: {body}");
    let (code, body) = get(Some("made-up-token"));
    assert_eq!(code, 401, "a token the API server does not know: {body}");
    let (code, body) = get(Some(&tenant_token));
    assert_eq!(code, 403, "a tenant's token: {body}");
    assert!(
        body.contains(&format!("system:serviceaccount:{}:app", tenant.name)),
        "{body}"
    );
    assert!(
        !body.contains("kopf_audit_"),
        "no metric reaches the tenant"
    );
    say("/metrics: 401 without a token, 401 with a made-up one, 403 for a tenant");

    let (code, first) = get(Some(&reader_token));
    assert_eq!(code, 200, "the metrics-reader's token: {first}");
    assert!(first.contains("# TYPE kopf_audit_api_requests"), "{first}");
    let (code, second) = get(Some(&reader_token));
    assert_eq!(code, 200);
    assert_eq!(
        posts(&second),
        posts(&first),
        "the second scrape is answered from memory: no TokenReview, no SubjectAccessReview"
    );
    say(format!(
        "/metrics: 200 for {}/prometheus (bound to {fullname}-metrics-reader), remembered",
        monitoring.name
    ));

    let log = auditor.logs();
    let refused = support::refused_lines(&log);
    assert!(
        refused
            .iter()
            .all(|l| !l.contains("tokenreviews") && !l.contains("subjectaccessreviews")),
        "the chart's RBAC lets the auditor ask both reviews:\n{}",
        refused.join("\n")
    );
    let _ = std::fs::remove_file(&values);
    let _ = std::fs::remove_file(&kubeconfig);
}

//! The committed CRD must equal what the code generates: `kopf-audit crd` is the truth.

use kube::CustomResourceExt;

fn generated() -> String {
    serde_yaml_ng::to_string(&kopf_audit::api::KopfAudit::crd()).expect("CRD renders as YAML")
}

#[test]
fn committed_crd_matches_the_code() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crd/kopfaudit.dev_kopfaudits.yaml"
    );
    let committed = std::fs::read_to_string(path).expect("crd/ file exists");
    assert!(
        committed == generated(),
        "crd/kopfaudit.dev_kopfaudits.yaml is stale: run `cargo run -- crd > crd/kopfaudit.dev_kopfaudits.yaml`"
    );
}

fn generated_cluster() -> String {
    serde_yaml_ng::to_string(&kopf_audit::api::ClusterKopfAudit::crd())
        .expect("CRD renders as YAML")
}

#[test]
fn committed_cluster_crd_matches_the_code_in_crd_and_in_the_chart() {
    for path in [
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crd/kopfaudit.dev_clusterkopfaudits.yaml"
        ),
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/charts/kopf-audit/crds/kopfaudit.dev_clusterkopfaudits.yaml"
        ),
    ] {
        let committed =
            std::fs::read_to_string(path).expect("the ClusterKopfAudit CRD is committed");
        assert!(
            committed == generated_cluster(),
            "{path} is stale: run `cargo run -- crd --kind cluster-kopf-audit > crd/kopfaudit.dev_clusterkopfaudits.yaml` and copy it into charts/kopf-audit/crds/"
        );
    }
}

/// `kubectl explain` shows each field's description: every property of the
/// ClusterKopfAudit's spec and status has one.
#[test]
fn every_cluster_crd_field_is_described() {
    let crd = serde_json::to_value(kopf_audit::api::ClusterKopfAudit::crd()).expect("JSON");
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut missing = Vec::new();
    fn walk(path: &str, node: &serde_json::Value, missing: &mut Vec<String>) {
        if let Some(props) = node.get("properties").and_then(|p| p.as_object()) {
            for (name, child) in props {
                let here = format!("{path}.{name}");
                let described = child
                    .get("description")
                    .and_then(|d| d.as_str())
                    .is_some_and(|d| !d.is_empty());
                let is_meta = matches!(name.as_str(), "apiVersion" | "kind" | "metadata");
                if !described && !is_meta {
                    missing.push(here.clone());
                }
                walk(&here, child, missing);
            }
        }
        if let Some(items) = node.get("items") {
            walk(&format!("{path}[]"), items, missing);
        }
    }
    walk("", &schema["properties"]["spec"], &mut missing);
    walk(".status", &schema["properties"]["status"], &mut missing);
    assert!(
        missing.is_empty(),
        "fields without a description: {missing:#?}"
    );
    assert_eq!(crd["spec"]["scope"], "Cluster");
    assert_eq!(crd["spec"]["names"]["shortNames"][0], "cka");
}

#[test]
fn chart_crd_matches_the_code_when_the_chart_exists() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/kopf-audit/crds/kopfaudit.dev_kopfaudits.yaml"
    );
    if let Ok(committed) = std::fs::read_to_string(path) {
        assert!(
            committed == generated(),
            "the chart's CRD is stale: copy crd/kopfaudit.dev_kopfaudits.yaml into charts/kopf-audit/crds/"
        );
    }
}

/// The oldest Kubernetes minor the chart's `kubeVersion` admits (`>=1.N.0-0`).
fn chart_minimum_minor() -> u32 {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/kopf-audit/Chart.yaml");
    let chart = std::fs::read_to_string(path).expect("Chart.yaml");
    let constraint = chart
        .lines()
        .find_map(|l| l.strip_prefix("kubeVersion:"))
        .expect("Chart.yaml sets kubeVersion")
        .trim()
        .trim_matches('"');
    let minor = constraint
        .strip_prefix(">=1.")
        .and_then(|rest| rest.split('.').next())
        .unwrap_or_else(|| panic!("kubeVersion {constraint:?} is not >=1.N..."));
    minor.parse().expect("a minor version")
}

/// CRD validation accepts CEL's Kubernetes quantity library (isQuantity, quantity())
/// from Kubernetes 1.29 (kubernetes.io/docs/reference/using-api/cel, "CEL options,
/// language features, and libraries"): an older API server refuses the CRD, so the
/// chart must not claim one.
#[test]
fn the_charts_kube_version_admits_no_server_that_refuses_the_crd() {
    let crd = generated();
    if crd.contains("quantity(") {
        assert!(
            chart_minimum_minor() >= 29,
            "the CRD uses CEL's quantity library (Kubernetes 1.29+), Chart.yaml's kubeVersion admits 1.{}",
            chart_minimum_minor()
        );
    }
}

/// kubectl expands a category before it resolves a singular name: were the KopfAudit's
/// category `kopfaudit` also ClusterKopfAudit's, `kubectl get kopfaudit NAME` would ask
/// for two kinds and fail ("you must specify only one resource"). A category that is one
/// kind's name belongs to that kind alone.
#[test]
fn no_category_shadows_a_kinds_name() {
    let crds = [
        kopf_audit::api::KopfAudit::crd(),
        kopf_audit::api::ClusterKopfAudit::crd(),
    ];
    for crd in &crds {
        let names = &crd.spec.names;
        let kind = names.kind.to_lowercase();
        let own = [
            Some(names.plural.as_str()),
            names.singular.as_deref(),
            Some(kind.as_str()),
        ];
        for other in crds.iter().filter(|c| c.metadata.name != crd.metadata.name) {
            for category in other.spec.names.categories.iter().flatten() {
                assert!(
                    !own.iter().flatten().any(|n| n == category),
                    "{} is in category {category:?}, a name of {}",
                    other.spec.names.kind,
                    names.kind
                );
            }
        }
    }
}

/// Every `format` in the CRDs is one the API server knows: an unknown one (schemars
/// writes `uint32` for a u32) makes the API server answer the CRD's creation (by
/// `kubectl apply` or `helm install`) with `Warning: unrecognized format "uint32"`.
/// The formats are those of apiextensions-apiserver
/// `pkg/apiserver/validation/formats.go` (`GetUnrecognizedFormats`: int32 and int64
/// for integers, float and double for numbers, the listed string formats).
#[test]
fn every_format_in_the_crds_is_one_kubernetes_knows() {
    const KNOWN: &str = "int32 int64 float double byte date date-time datetime duration \
                         uri email hostname ipv4 ipv6 cidr mac uuid password";
    fn walk(path: &str, node: &serde_json::Value, unknown: &mut Vec<String>) {
        match node {
            serde_json::Value::Object(map) => {
                if let Some(format) = map.get("format").and_then(|f| f.as_str())
                    && !KNOWN.split_whitespace().any(|known| known == format)
                {
                    unknown.push(format!("{path}: {format}"));
                }
                for (key, child) in map {
                    walk(&format!("{path}.{key}"), child, unknown);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(&format!("{path}[{i}]"), child, unknown);
                }
            }
            _ => {}
        }
    }
    let mut unknown = Vec::new();
    for crd in [
        serde_json::to_value(kopf_audit::api::KopfAudit::crd()).expect("JSON"),
        serde_json::to_value(kopf_audit::api::ClusterKopfAudit::crd()).expect("JSON"),
    ] {
        walk(
            crd["metadata"]["name"].as_str().unwrap_or("?"),
            &crd,
            &mut unknown,
        );
    }
    assert!(
        unknown.is_empty(),
        "formats Kubernetes does not know: {unknown:#?}"
    );
}

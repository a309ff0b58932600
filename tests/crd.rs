//! The committed CRD must equal what the code generates: `kopf-audit crd` is the truth.

use kube::CustomResourceExt;

fn generated() -> String {
    serde_yaml::to_string(&kopf_audit::api::KopfAudit::crd()).expect("CRD renders as YAML")
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

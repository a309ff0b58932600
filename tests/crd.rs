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

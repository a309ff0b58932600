//! The chart's metadata: what `ct lint` requires of Chart.yaml (home, sources,
//! maintainers) and Artifact Hub's annotations, kept true to the code and the values.

use kopf_audit::api::KopfAudit;
use kube::CustomResourceExt;
use serde_yaml_ng::Value;

fn read_yaml(relative: &str) -> Value {
    let path = format!(
        "{}/charts/kopf-audit/{relative}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn chart() -> Value {
    read_yaml("Chart.yaml")
}

/// An Artifact Hub annotation whose value is a YAML list in a string.
fn annotation_list(chart: &Value, key: &str) -> Vec<Value> {
    let text = chart["annotations"][key]
        .as_str()
        .unwrap_or_else(|| panic!("annotation {key}"));
    serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("{key} is no YAML list: {e}"))
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

#[test]
fn chart_yaml_has_what_chart_testing_requires() {
    let chart = chart();
    assert!(text(&chart, "home").starts_with("https://"), "home");
    let sources = chart["sources"].as_sequence().expect("sources");
    assert!(!sources.is_empty(), "sources");
    let maintainers = chart["maintainers"].as_sequence().expect("maintainers");
    assert!(
        maintainers.iter().all(|m| !text(m, "name").is_empty()),
        "every maintainer has a name: {maintainers:?}"
    );
}

#[test]
fn artifact_hub_crds_name_the_generated_crds() {
    let chart = chart();
    let crds = [KopfAudit::crd(), kopf_audit::api::ClusterKopfAudit::crd()];
    let listed = annotation_list(&chart, "artifacthub.io/crds");
    assert_eq!(listed.len(), crds.len());
    for (listed, crd) in listed.iter().zip(&crds) {
        assert_eq!(text(listed, "kind"), crd.spec.names.kind);
        assert_eq!(
            text(listed, "name"),
            crd.metadata.name.as_deref().unwrap_or_default()
        );
        assert_eq!(text(listed, "version"), crd.spec.versions[0].name);
        assert!(!text(listed, "description").is_empty());
    }
}

#[test]
fn artifact_hub_crd_examples_are_kopfaudits() {
    let examples = annotation_list(&chart(), "artifacthub.io/crdsExamples");
    assert!(!examples.is_empty());
    for example in examples {
        let audit: KopfAudit = serde_yaml_ng::from_value(example.clone())
            .unwrap_or_else(|e| panic!("{example:?} is no KopfAudit: {e}"));
        assert_eq!(text(&example, "apiVersion"), "kopfaudit.dev/v1alpha1");
        assert!(audit.spec.target.deployment.is_some() != audit.spec.target.selector.is_some());
    }
}

#[test]
fn artifact_hub_images_are_the_default_values() {
    let chart = chart();
    let values = read_yaml("values.yaml");
    let images: Vec<String> = annotation_list(&chart, "artifacthub.io/images")
        .iter()
        .map(|i| text(i, "image").to_string())
        .collect();
    let auditor = format!(
        "{}:{}",
        text(&values["image"], "repository"),
        text(&chart, "appVersion")
    );
    let test_job = format!(
        "{}:{}",
        text(&values["tests"]["image"], "repository"),
        text(&values["tests"]["image"], "tag")
    );
    assert_eq!(images, [auditor, test_job]);
}

#[test]
fn artifact_hub_license_is_the_crates() {
    assert_eq!(
        text(&chart()["annotations"], "artifacthub.io/license"),
        env!("CARGO_PKG_LICENSE")
    );
    assert_eq!(
        text(&chart()["annotations"], "artifacthub.io/operator"),
        "true"
    );
    let links = annotation_list(&chart(), "artifacthub.io/links");
    assert!(
        links
            .iter()
            .all(|l| !text(l, "name").is_empty() && text(l, "url").starts_with("https://")),
        "{links:?}"
    );
}

/// The default image is where a release of the project is pushed: GitHub's container
/// registry of the organisation and repository that `home` names, so that a default
/// install pulls a published image rather than a placeholder.
#[test]
fn the_default_image_is_the_projects_release_registry() {
    let chart = chart();
    let values = read_yaml("values.yaml");
    let home = text(&chart, "home");
    let project = home
        .strip_prefix("https://github.com/")
        .unwrap_or_else(|| panic!("home {home} is a GitHub repository"));
    assert_eq!(
        text(&values["image"], "repository"),
        format!("ghcr.io/{project}")
    );
    assert_eq!(
        text(&values["image"], "tag"),
        "",
        "the tag follows appVersion"
    );
}

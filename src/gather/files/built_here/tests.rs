use super::*;

fn deployment(containers: serde_json::Value) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {}, "template": {"spec": {"containers": containers}}}
    }))
    .expect("deployment")
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_third_party_image_beside_the_operator_is_not_built_here() {
    let operator = deployment(serde_json::json!([
        {"name": "op", "image": "ghcr.io/acme/azimuth-caas-operator:1.2"}
    ]));
    let records = deployment(serde_json::json!([
        {"name": "ara", "image": "ghcr.io/acme/ara-api@sha256:abc"}
    ]));
    let project = names(&["azimuth-caas-operator"]);
    let elsewhere = built_elsewhere(&[operator.clone(), records.clone()], &project);
    assert_eq!(elsewhere, names(&["ara-api"]));
    assert!(runs_only_others(&records, &elsewhere));
    assert!(!runs_only_others(&operator, &elsewhere));
}

#[test]
fn what_cannot_be_told_keeps_every_deployment() {
    let a = deployment(serde_json::json!([{"name": "a", "image": "one:1"}]));
    let b = deployment(serde_json::json!([{"name": "b", "image": "two:1"}]));
    // No image is named after the repository: which one it builds is not known.
    assert!(built_elsewhere(&[a.clone(), b.clone()], &names(&["widgets"])).is_empty());
    // One image between them.
    assert!(built_elsewhere(std::slice::from_ref(&a), &names(&["one"])).is_empty());
    // A container with its own command does not run its image's.
    let own = deployment(serde_json::json!([
        {"name": "b", "image": "two:1", "command": ["redis-server"]}
    ]));
    assert!(built_elsewhere(&[a, own], &names(&["one"])).is_empty());
}

#[test]
fn the_project_goes_by_its_packages_and_what_its_image_runs() {
    let image = super::super::dockerfile::read(
        "Dockerfile",
        "FROM python:3.12\nCMD [\"python\", \"-m\", \"azimuth_caas_operator\"]\n",
    );
    let project = project_names(
        None,
        &["azimuth_caas_operator/__init__.py", "setup.py"],
        &[image],
    );
    assert!(project.contains("azimuth-caas-operator"), "{project:?}");
    assert!(!project.contains("python"), "{project:?}");
}

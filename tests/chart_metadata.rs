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

/// The chart's values schema, as JSON.
fn values_schema() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/kopf-audit/values.schema.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The chart's default values, as JSON.
fn default_values() -> serde_json::Value {
    serde_json::to_value(read_yaml("values.yaml")).expect("values.yaml as JSON")
}

/// Every property schema under `node`, anywhere (array items and definitions too), by
/// its dotted path (`[]` for an array's items).
fn all_properties<'a>(
    node: &'a serde_json::Value,
    path: &str,
    out: &mut Vec<(String, &'a serde_json::Value)>,
) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    if let Some(properties) = node["properties"].as_object() {
        for (key, property) in properties {
            out.push((join(key), property));
            all_properties(property, &join(key), out);
        }
    }
    if node["items"].is_object() {
        all_properties(&node["items"], &format!("{path}[]"), out);
    }
}

#[test]
fn every_schema_property_has_a_description() {
    let schema = values_schema();
    let mut properties = Vec::new();
    all_properties(&schema, "", &mut properties);
    for (name, definition) in schema["definitions"].as_object().expect("definitions") {
        all_properties(definition, &format!("definitions.{name}"), &mut properties);
    }
    assert!(properties.len() > 100, "{} properties", properties.len());
    let undescribed: Vec<&String> = properties
        .iter()
        .filter(|(_, p)| {
            p["description"]
                .as_str()
                .is_none_or(|d| d.trim().is_empty())
        })
        .map(|(name, _)| name)
        .collect();
    assert!(
        undescribed.is_empty(),
        "values.schema.json: give these a description: {undescribed:?}"
    );
}

#[test]
fn the_values_schema_is_a_valid_json_schema_that_the_defaults_meet() {
    let schema = values_schema();
    if let Err(e) = jsonschema::meta::validate(&schema) {
        panic!("values.schema.json is not a valid JSON Schema: {e}");
    }
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&default_values())
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "values.yaml against its schema: {errors:?}"
    );
}

/// A schema's type for people: its `type`, its `enum`'s values, or the type of the
/// definition it refers to.
fn type_of(schema: &serde_json::Value, root: &serde_json::Value) -> String {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/definitions/");
        return type_of(&root["definitions"][name], root);
    }
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return format!("one of {}", values.join(", ")).replace('"', "");
    }
    match &schema["type"] {
        serde_json::Value::String(t) => t.clone(),
        serde_json::Value::Array(types) => types
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_string(),
    }
}

/// A value's default from values.yaml, as compact JSON; long ones are left to the file.
fn default_of(values: &serde_json::Value, path: &str) -> String {
    if path.contains("[]") {
        return "—".to_string();
    }
    let value = path.split('.').try_fold(values, |v, key| v.get(key));
    match value {
        None => "unset".to_string(),
        Some(v) => {
            let json = v.to_string();
            if json.len() > 60 {
                "see values.yaml".to_string()
            } else {
                format!("`{json}`")
            }
        }
    }
}

/// A table cell: no pipe or line break may end the cell early, and `<release>` outside
/// code spans is text, not an HTML tag.
fn cell(text: &str) -> String {
    let text = text.replace('|', "\\|").replace('\n', " ");
    text.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 0 {
                part.replace('<', "&lt;").replace('>', "&gt;")
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// charts/kopf-audit/README.md, from values.schema.json (types, descriptions) and
/// values.yaml (defaults).
fn chart_readme() -> String {
    let schema = values_schema();
    let values = default_values();
    let mut properties = Vec::new();
    all_properties(&schema, "", &mut properties);
    let mut out = String::from(CHART_README_HEAD);
    out.push_str("| key | type | default | description |\n|---|---|---|---|\n");
    for (path, property) in properties {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            path,
            cell(&type_of(property, &schema)),
            cell(&default_of(&values, &path)),
            cell(property["description"].as_str().unwrap_or_default()),
        ));
    }
    out
}

const CHART_README_HEAD: &str = "# kopf-audit Helm chart

<!-- Generated from values.schema.json and values.yaml by tests/chart_metadata.rs:
     do not edit. Regenerate: KOPF_AUDIT_BLESS=1 cargo test --test chart_metadata -->

kopf-audit audits Python operators written with [kopf](https://kopf.readthedocs.io):
this chart runs the auditor (a Deployment, its ServiceAccount and RBAC, a metrics
Service, a NetworkPolicy) and installs the KopfAudit and ClusterKopfAudit CRDs.
Kubernetes 1.29 or later.

```sh
helm install kopf-audit charts/kopf-audit -n kopf-audit --create-namespace --wait
helm test kopf-audit -n kopf-audit
```

How to install, upgrade and uninstall, and what is tested:
[docs/installation/helm.md](../../docs/installation/helm.md); the chart's RBAC and
what it lets the auditor write: [SECURITY.md](../../SECURITY.md).

`rbac.protectGeneratedAudits` renders a ValidatingAdmissionPolicy only where the API
server serves `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy (Kubernetes
1.30 or later). `helm template` has no API server to ask: to render it offline, pass
`--api-versions admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy`.

## Values

`values.schema.json` covers every value and refuses a bad one or an unknown key before
anything is installed. `[]` stands for an array's items.

";

#[test]
fn the_chart_readme_is_generated_from_the_values_schema() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/kopf-audit/README.md");
    let generated = chart_readme();
    if std::env::var_os("KOPF_AUDIT_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(path, &generated).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "charts/kopf-audit/README.md is stale: regenerate it with \
         `KOPF_AUDIT_BLESS=1 cargo test --test chart_metadata`"
    );
    for key in [
        "`rbac.clusterAudits`",
        "`rbac.protectGeneratedAudits`",
        "`image.repository`",
    ] {
        assert!(generated.contains(&format!("| {key} |")), "a row for {key}");
    }
}

/// Verbs that change the cluster, as SECURITY.md counts them.
const WRITE_VERBS: [&str; 6] = [
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "*",
];

/// The items of a flow sequence on one line, `key: [a, b]` (quotes dropped).
fn flow_list(line: &str, key: &str) -> Option<Vec<String>> {
    let rest = line.trim().trim_start_matches("- ").strip_prefix(key)?;
    let inner = rest.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some(
        inner
            .split(',')
            .map(|item| item.trim().trim_matches('"').to_string())
            .filter(|item| !item.is_empty())
            .collect(),
    )
}

/// The resources a Role template grants write verbs on: each rule's `resources: [...]`
/// and the `verbs: [...]` that follows it (the chart writes its rules in flow style).
fn written_by_template(text: &str) -> Vec<String> {
    let mut written = Vec::new();
    let mut resources: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(list) = flow_list(line, "resources:") {
            resources = list;
        } else if let Some(verbs) = flow_list(line, "verbs:") {
            if verbs.iter().any(|v| WRITE_VERBS.contains(&v.as_str())) {
                written.append(&mut resources);
            }
            resources.clear();
        }
    }
    written
}

/// The resources rules in values.yaml (rendered into the chart's Roles) grant write
/// verbs on.
fn written_by_values(rules: &Value) -> Vec<String> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_sequence()
            .map(|s| {
                s.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    rules
        .as_sequence()
        .into_iter()
        .flatten()
        .filter(|rule| {
            strings(&rule["verbs"])
                .iter()
                .any(|v| WRITE_VERBS.contains(&v.as_str()))
        })
        .flat_map(|rule| strings(&rule["resources"]))
        .collect()
}

/// Every resource the chart's RBAC lets the auditor create, update, patch or delete.
fn chart_written_resources() -> Vec<String> {
    let templates = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/kopf-audit/templates");
    let mut written = Vec::new();
    let mut files = 0;
    for entry in std::fs::read_dir(templates).expect("the chart's templates") {
        let path = entry.expect("a template").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.contains("rbac") {
            files += 1;
            let text = std::fs::read_to_string(&path).expect("a template");
            written.extend(written_by_template(&text));
        }
    }
    assert!(files >= 2, "rbac.yaml and metrics-rbac.yaml: {files} files");
    let values = read_yaml("values.yaml");
    written.extend(written_by_values(&values["rbac"]["rules"]));
    written.extend(written_by_values(&values["rbac"]["namespacedClusterRules"]));
    written.sort();
    written.dedup();
    written
}

#[test]
fn the_rbac_scan_finds_write_verbs_only() {
    let template = "rules:\n  - apiGroups: [a]\n    resources: [things, others]\n    verbs: [get, list]\n  - apiGroups: [b]\n    resources: [\"leases\"]\n    resourceNames: [x]\n    verbs: [get, patch]\n";
    assert_eq!(written_by_template(template), ["leases"]);
    let rules: Value = serde_yaml_ng::from_str(
        "- {resources: [a], verbs: [list]}\n- {resources: [b, c], verbs: [delete]}",
    )
    .expect("yaml");
    assert_eq!(written_by_values(&rules), ["b", "c"]);
}

#[test]
fn security_md_names_every_kind_the_chart_lets_the_auditor_write() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/SECURITY.md");
    let security = std::fs::read_to_string(path).expect("SECURITY.md");
    let written = chart_written_resources();
    for expected in ["kopfaudits", "kopfaudits/status", "leases", "tokenreviews"] {
        assert!(
            written.iter().any(|w| w == expected),
            "the scan finds {expected}: {written:?}"
        );
    }
    let unnamed: Vec<&String> = written
        .iter()
        .filter(|resource| !security.contains(&format!("| `{resource}` (")))
        .collect();
    assert!(
        unnamed.is_empty(),
        "SECURITY.md's table of what the chart lets the auditor write has no row for {unnamed:?}"
    );
}

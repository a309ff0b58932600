//! Reads rendered Kubernetes manifests (multi-document YAML, `List`s included) into the
//! objects `kopf-audit lint` audits, each with where it was written.

use super::kustomize::ORIGIN_ANNOTATION;
use super::positions::{FieldLines, field_lines};
use crate::model::source::Location;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The objects of the linted manifests that matter to the checks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Manifests {
    /// Deployments: the targets.
    pub(crate) deployments: Vec<Deployment>,
    /// ServiceAccounts.
    pub(crate) service_accounts: Vec<ServiceAccount>,
    /// Roles.
    pub(crate) roles: Vec<Role>,
    /// ClusterRoles.
    pub(crate) cluster_roles: Vec<ClusterRole>,
    /// RoleBindings.
    pub(crate) role_bindings: Vec<RoleBinding>,
    /// ClusterRoleBindings.
    pub(crate) cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// CustomResourceDefinitions.
    pub(crate) crds: Vec<CustomResourceDefinition>,
    /// Where each object is: `Kind/namespace/name` (namespace empty when cluster-scoped).
    pub(crate) locations: BTreeMap<String, Location>,
    /// Documents that are not valid YAML or not a valid object of their kind.
    pub(crate) problems: Vec<(Location, String)>,
    /// The line of each field of the objects read from a file as written (not from a
    /// render), by the keys of [`Manifests::locations`].
    fields: BTreeMap<String, Fields>,
    /// Objects built by kustomize, by key: the file each came from, whose lines are
    /// not known until [`Manifests::place_built`] reads it.
    built: BTreeMap<String, String>,
}

/// Where an object's fields are: its document's lines, and the path of the object in
/// the document (`items[3]` in a `List`, empty otherwise).
#[derive(Clone, Debug)]
struct Fields {
    lines: Arc<FieldLines>,
    prefix: String,
}

/// What [`Manifests::add`] needs to know of the document an object is in.
struct Placed<'a> {
    location: &'a Location,
    namespace: &'a str,
    origins: Option<&'a str>,
    lines: Option<&'a Arc<FieldLines>>,
}

/// The key of an object in [`Manifests::locations`].
pub(crate) fn key(kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{kind}/{}/{name}", namespace.unwrap_or(""))
}

/// One YAML document of a stream, with the line it starts on and the file it came
/// from (a Helm template's `# Source:` comment names it).
struct Document<'a> {
    text: &'a str,
    line: u32,
    source: Option<&'a str>,
}

/// Splits a YAML stream into documents on `---` lines.
fn documents(text: &str) -> Vec<Document<'_>> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1u32;
    let mut offset = 0usize;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let number = u32::try_from(n + 1).unwrap_or(u32::MAX);
        if line.trim_end() == "---" || line.starts_with("--- ") {
            out.push(Document {
                text: &text[start..offset],
                line: start_line,
                source: None,
            });
            start = offset + line.len();
            start_line = number.saturating_add(1);
        }
        offset += line.len();
    }
    out.push(Document {
        text: &text[start..],
        line: start_line,
        source: None,
    });
    for doc in &mut out {
        doc.source = doc
            .text
            .lines()
            .find_map(|l| l.strip_prefix("# Source: "))
            .map(str::trim)
            .filter(|path| within_root(path));
    }
    out
}

/// Where a YAML stream comes from.
#[derive(Clone, Copy)]
enum Stream<'a> {
    /// Files as written (or stdin, whose `# Source:` paths are kept as written).
    Files,
    /// `helm template` of the chart in `dir` (relative to the root; `""` for the root).
    Rendered {
        /// The chart's directory.
        dir: &'a str,
    },
    /// `kubectl kustomize` of the kustomization in `dir`.
    Built {
        /// The kustomization's directory.
        dir: &'a str,
    },
}

/// The file a `# Source:` path names: for a chart lint rendered, its first segment
/// (the chart's name) replaced by the chart's directory; otherwise as written.
fn in_chart(source: &str, stream: Stream<'_>) -> String {
    let Stream::Rendered { dir } = stream else {
        return source.to_string();
    };
    let within = source.split_once('/').map_or(source, |(_, rest)| rest);
    if dir.is_empty() {
        within.to_string()
    } else {
        format!("{dir}/{within}")
    }
}

/// Whether a `# Source:` path names a file inside the linted tree, as Helm writes it
/// (`chart/templates/x.yaml`): not empty, not absolute (`/x`, `\x`, `C:`), no `..`
/// that leaves the root, no backslash, control or invisible character. A chart is
/// anyone's text: otherwise its findings could point at `/etc/passwd` or at a file of
/// another repository, or a line break could start an output line of its own. The
/// document then keeps the file it came from.
fn within_root(path: &str) -> bool {
    let drive = path.as_bytes().get(1) == Some(&b':');
    if path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || drive
        || path
            .chars()
            .any(|c| c.is_control() || kopf_log::is_invisible(c))
    {
        return false;
    }
    let mut depth = 0usize;
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return false,
            },
            _ => depth += 1,
        }
    }
    depth > 0
}

impl Manifests {
    /// Adds the objects of a YAML stream; `path` is how findings name the file, and
    /// objects without a namespace are placed in `namespace` (as `kubectl apply -n` or
    /// `helm install -n` would).
    pub(crate) fn read(&mut self, path: &str, text: &str, namespace: &str) {
        self.read_stream(path, text, namespace, Stream::Files);
    }

    /// Adds the objects `helm template` rendered from the chart in `dir` (relative to
    /// the linted root, `""` for the root itself; `path` names the chart in findings).
    /// helm names each template by the chart's name (`# Source: NAME/templates/x.yaml`),
    /// which need not be its directory's: each object is placed in the template's file
    /// as the repository holds it (`DIR/templates/x.yaml`), where a code-scanning
    /// annotation can land.
    pub(crate) fn read_rendered(&mut self, path: &str, dir: &str, text: &str, namespace: &str) {
        self.read_stream(path, text, namespace, Stream::Rendered { dir });
    }

    /// Adds the objects `kubectl kustomize` built from the kustomization `file` in
    /// `dir`: each is placed in the file its origin annotation names (relative to
    /// `dir`), which is then removed (kustomize adds it on lint's request, the
    /// repository did not write it); an object without one, in `file`.
    pub(crate) fn read_built(&mut self, file: &str, dir: &str, text: &str, namespace: &str) {
        self.read_stream(file, text, namespace, Stream::Built { dir });
    }

    /// [`Manifests::read`], objects placed as the stream's origin says.
    fn read_stream(&mut self, path: &str, text: &str, namespace: &str, stream: Stream<'_>) {
        let origins = match stream {
            Stream::Built { dir } => Some(dir),
            Stream::Files | Stream::Rendered { .. } => None,
        };
        if let Err(too_deep) = super::bounds::yaml_depth(text) {
            self.problems
                .push((Location::new(path, 1), format!("not read: {too_deep}")));
            return;
        }
        for doc in documents(text) {
            if doc.text.trim().is_empty() {
                continue;
            }
            let (location, lines) = match doc.source {
                // A rendered chart: the template the object comes from.
                Some(template) => (Location::new(in_chart(template, stream), 1), None),
                // Built: a line of kubectl's output is none of the repository's.
                None if origins.is_some() => (Location::new(path, 1), None),
                None => (
                    Location::new(path, doc.line),
                    Some(Arc::new(field_lines(doc.text, doc.line))),
                ),
            };
            let placed = Placed {
                location: &location,
                namespace,
                origins,
                lines: lines.as_ref(),
            };
            match serde_yaml_ng::from_str::<Value>(doc.text) {
                Ok(Value::Null) => {}
                Ok(value) => self.add(value, &placed, String::new()),
                Err(e) => self
                    .problems
                    .push((location, format!("not valid YAML: {e}"))),
            }
        }
    }

    /// Adds one object (the items of a `List`).
    fn add(&mut self, mut value: Value, placed: &Placed<'_>, prefix: String) {
        let (location, namespace) = (placed.location, placed.namespace);
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if kind.ends_with("List")
            && let Some(Value::Array(items)) = value.get_mut("items").map(Value::take)
        {
            for (n, item) in items.into_iter().enumerate() {
                self.add(item, placed, format!("{prefix}items[{n}]"));
            }
            return;
        }
        let origin = placed.origins.and_then(|dir| take_origin(&mut value, dir));
        let location = &origin
            .as_ref()
            .map_or_else(|| location.clone(), |file| Location::new(file, 1));
        let namespaced = matches!(
            kind.as_str(),
            "Deployment" | "ServiceAccount" | "Role" | "RoleBinding"
        );
        // kubectl places an object whose namespace is absent, null or empty alike.
        if namespaced
            && let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
            && meta
                .get("namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            meta.insert("namespace".into(), Value::String(namespace.to_string()));
        }
        let meta = value.get("metadata");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let ns = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let added = match kind.as_str() {
            "Deployment" => push(&mut self.deployments, value),
            "ServiceAccount" => push(&mut self.service_accounts, value),
            "Role" => push(&mut self.roles, value),
            "ClusterRole" => push(&mut self.cluster_roles, value),
            "RoleBinding" => push(&mut self.role_bindings, value),
            "ClusterRoleBinding" => push(&mut self.cluster_role_bindings, value),
            "CustomResourceDefinition" => push(&mut self.crds, value),
            _ => Ok(()),
        };
        match added {
            Ok(()) => {
                let key = key(&kind, ns.as_deref(), &name);
                if let Some(lines) = placed.lines {
                    let lines = Arc::clone(lines);
                    self.fields.insert(key.clone(), Fields { lines, prefix });
                }
                if let Some(file) = origin {
                    self.built.insert(key.clone(), file);
                }
                self.locations.insert(key, location.clone());
            }
            Err(e) => self
                .problems
                .push((location.clone(), format!("not a valid {kind} {name}: {e}"))),
        }
    }

    /// The files objects built by kustomize came from, still to be read by
    /// [`Manifests::place_built`].
    pub(crate) fn built_from(&self) -> BTreeSet<String> {
        self.built.values().cloned().collect()
    }

    /// Places the objects built from `file` (its text as written) at their document's
    /// line and learns their fields' lines: each is matched to the document of its kind
    /// whose name it contains (kustomize adds prefixes and suffixes).
    pub(crate) fn place_built(&mut self, file: &str, text: &str) {
        if super::bounds::yaml_depth(text).is_err() {
            return;
        }
        for doc in documents(text) {
            let Ok(value) = serde_yaml_ng::from_str::<Value>(doc.text) else {
                continue;
            };
            let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
            let Some(name) = value.pointer("/metadata/name").and_then(Value::as_str) else {
                continue;
            };
            let lines = Arc::new(field_lines(doc.text, doc.line));
            let matching: Vec<String> = self
                .built
                .iter()
                .filter(|(key, from)| {
                    *from == file
                        && key.starts_with(&format!("{kind}/"))
                        && key.rsplit('/').next().is_some_and(|n| n.contains(name))
                })
                .map(|(key, _)| key.clone())
                .collect();
            for key in matching {
                self.built.remove(&key);
                self.locations
                    .insert(key.clone(), Location::new(file, doc.line));
                let lines = Arc::clone(&lines);
                self.fields.insert(
                    key,
                    Fields {
                        lines,
                        prefix: String::new(),
                    },
                );
            }
        }
    }

    /// Where a field of an object is (`spec.strategy`,
    /// `spec.template.spec.containers[0].resources.limits.memory`): its line, or the
    /// line of its nearest ancestor written, when the object was read from a file as
    /// written; otherwise where the object is.
    pub(crate) fn field_location(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        field: &str,
    ) -> Option<Location> {
        let key = key(kind, namespace, name);
        let object = self.locations.get(&key)?;
        let line = self.fields.get(&key).and_then(|f| {
            let path = if f.prefix.is_empty() {
                field.to_string()
            } else {
                format!("{}.{field}", f.prefix)
            };
            f.lines.line_of(&path)
        });
        Some(Location::new(&object.file, line.unwrap_or(object.line)))
    }

    /// Where an object is, if the files define it.
    pub(crate) fn location(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<&Location> {
        self.locations.get(&key(kind, namespace, name))
    }
}

/// The file an object built by kustomize came from, its origin annotation removed:
/// `path:` of [`ORIGIN_ANNOTATION`] joined to the kustomization's directory `dir`, when
/// that stays inside the linted tree and is a name fit to show ([`within_root`]).
fn take_origin(value: &mut Value, dir: &str) -> Option<String> {
    let annotations = value
        .get_mut("metadata")?
        .get_mut("annotations")?
        .as_object_mut()?;
    let origin = annotations.remove(ORIGIN_ANNOTATION);
    if annotations.is_empty()
        && let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("annotations");
    }
    let origin = origin?;
    let path = origin
        .as_str()?
        .lines()
        .find_map(|l| l.strip_prefix("path:"))?
        .trim()
        .trim_matches(|c| c == '"' || c == '\'');
    let joined = normalize(&format!("{dir}/{path}"))?;
    within_root(&joined).then_some(joined)
}

/// `path` with its `.` and `..` segments resolved; `None` when it leaves its top.
fn normalize(path: &str) -> Option<String> {
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop()?;
            }
            other => kept.push(other),
        }
    }
    Some(kept.join("/"))
}

/// Deserializes an object into its list.
fn push<K: DeserializeOwned>(list: &mut Vec<K>, value: Value) -> Result<(), serde_json::Error> {
    list.push(serde_json::from_value(value)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_keep_their_line_and_objects_their_namespace() {
        let mut m = Manifests::default();
        m.read(
            "deploy.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: op\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\n  namespace: ops\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op}]\n",
            "default",
        );
        assert_eq!(m.deployments.len(), 1);
        assert_eq!(
            m.service_accounts[0].metadata.namespace.as_deref(),
            Some("default")
        );
        assert_eq!(
            m.location("Deployment", Some("ops"), "op"),
            Some(&Location::new("deploy.yaml", 6))
        );
    }

    #[test]
    fn an_empty_or_null_namespace_is_placed_as_an_absent_one() {
        let mut m = Manifests::default();
        m.read(
            "rbac.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: a, namespace: \"\"}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: op}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b, namespace: null}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: op}\n",
            "ops",
        );
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        let namespaces: Vec<_> = m
            .role_bindings
            .iter()
            .map(|b| b.metadata.namespace.as_deref())
            .collect();
        assert_eq!(namespaces, vec![Some("ops"), Some("ops")]);
    }

    #[test]
    fn a_rendered_chart_points_at_its_template_and_bad_documents_are_reported() {
        let mut m = Manifests::default();
        m.read(
            "-",
            "---\n# Source: op/templates/rbac.yaml\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: op\nrules: []\n---\nkind: Deployment\nmetadata: {name: x}\nspec: 3\n---\n: [\n",
            "default",
        );
        assert_eq!(
            m.location("ClusterRole", None, "op"),
            Some(&Location::new("op/templates/rbac.yaml", 1))
        );
        assert_eq!(m.problems.len(), 2, "{:?}", m.problems);
    }

    /// helm names templates by the chart's name; the repository holds them under the
    /// chart's directory, which a code-scanning annotation must name.
    #[test]
    fn a_chart_lint_rendered_points_at_the_template_in_its_directory() {
        let rendered = "---\n# Source: op/templates/rbac.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: op\n---\n# Source: op/charts/sub/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sub\n";
        let mut m = Manifests::default();
        m.read_rendered(
            "deploy/helm/operator",
            "deploy/helm/operator",
            rendered,
            "ns",
        );
        assert_eq!(
            m.location("ServiceAccount", Some("ns"), "op"),
            Some(&Location::new(
                "deploy/helm/operator/templates/rbac.yaml",
                1
            ))
        );
        assert_eq!(
            m.location("ServiceAccount", Some("ns"), "sub"),
            Some(&Location::new(
                "deploy/helm/operator/charts/sub/templates/sa.yaml",
                1
            ))
        );
        // The chart is the linted root: its files are named from there.
        let mut m = Manifests::default();
        m.read_rendered("operator", "", rendered, "ns");
        assert_eq!(
            m.location("ServiceAccount", Some("ns"), "op"),
            Some(&Location::new("templates/rbac.yaml", 1))
        );
    }

    #[test]
    fn a_built_object_is_placed_in_the_file_it_came_from() {
        let built = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: op\n  annotations:\n    config.kubernetes.io/origin: |\n      path: ../../base/sa.yaml\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: far\n  annotations:\n    keep: x\n    config.kubernetes.io/origin: |\n      path: ../../../../../etc/passwd\n";
        let mut m = Manifests::default();
        m.read_built(
            "deploy/overlays/prod/kustomization.yaml",
            "deploy/overlays/prod",
            built,
            "ns",
        );
        assert_eq!(
            m.location("ServiceAccount", Some("ns"), "op"),
            Some(&Location::new("deploy/base/sa.yaml", 1))
        );
        assert_eq!(
            m.location("ServiceAccount", Some("ns"), "far"),
            Some(&Location::new("deploy/overlays/prod/kustomization.yaml", 1)),
            "an origin leaving the tree keeps the kustomization"
        );
        assert!(
            m.service_accounts[0].metadata.annotations.is_none(),
            "lint's annotation removed"
        );
        assert_eq!(
            m.service_accounts[1]
                .metadata
                .annotations
                .as_ref()
                .map(|a| a.len()),
            Some(1)
        );
    }

    #[test]
    fn a_source_comment_outside_the_tree_or_with_controls_is_ignored() {
        let object = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: op\n";
        for source in [
            "/etc/passwd",
            "../../../../etc/passwd",
            "a/../../b",
            "op/templates/x\u{1b}]0;PWNED\u{7}.yaml",
            "op/\u{202E}lmay.yaml",
            "C:/charts/x.yaml",
            "op\\templates\\x.yaml",
            "..",
        ] {
            let mut m = Manifests::default();
            m.read(
                "rendered.yaml",
                &format!("# Source: {source}\n{object}"),
                "ns",
            );
            // A control character makes the document invalid YAML too: then its problem
            // is placed in the file it came from.
            let placed = m
                .location("ServiceAccount", Some("ns"), "op")
                .or(m.problems.first().map(|(at, _)| at));
            assert_eq!(
                placed,
                Some(&Location::new("rendered.yaml", 1)),
                "{source:?}"
            );
        }
        let mut m = Manifests::default();
        m.read(
            "-",
            &format!("# Source: op/../op/templates/sa.yaml\n{object}"),
            "ns",
        );
        assert_eq!(
            m.location("ServiceAccount", Some("ns"), "op"),
            Some(&Location::new("op/../op/templates/sa.yaml", 1)),
            "a `..` that stays inside is a path Helm may write"
        );
    }
}

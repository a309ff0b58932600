//! Discovery of the kopf operators of a cluster, the pure part: what is kept of a
//! Deployment (its name and pod template's command lines, not the whole object), and
//! the decision its spec allows before any log is read. A container with `kopf run`
//! (or `python -m kopf run`) in its command line is kopf; a container whose written-out
//! command runs a program that is neither Python, a Python launcher, nor a shell or
//! wrapper script is not (kopf is a Python library: kopf 1.45 `kopf/__main__.py`,
//! `kopf/_core/reactor/running.py`). Every other container (no command: the image's
//! `CMD`; `python main.py`, which may call `kopf.run()`; a wrapper script) is decided
//! by the first lines of its log.

use super::kopf_run::{KopfRun, RunOrigin, Scope, find_kopf};
use crate::api::Recognition;
use k8s_openapi::api::core::v1::{Container, EnvVar};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kopf_log::VersionRange;
use serde::Deserialize;
use std::collections::BTreeMap;

/// What discovery keeps of a Deployment: its name, its pod selector and its containers'
/// command lines.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DeploymentProjection {
    /// Its name and namespace.
    #[serde(default)]
    pub(crate) metadata: NameProjection,
    /// Its selector and pod template.
    #[serde(default)]
    pub(crate) spec: SpecProjection,
}

/// A Deployment's name and namespace, and what identifies its rollout.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct NameProjection {
    /// The name.
    #[serde(default)]
    pub(crate) name: String,
    /// The namespace.
    #[serde(default)]
    pub(crate) namespace: String,
    /// The uid: a Deployment deleted and created again under its name is another one.
    #[serde(default)]
    pub(crate) uid: String,
    /// The generation: it changes with every change of the spec, so with every rollout.
    #[serde(default)]
    pub(crate) generation: Option<i64>,
    /// Its labels: a KopfAudit's `target.selector` matches them.
    #[serde(default)]
    pub(crate) labels: BTreeMap<String, String>,
}

/// One rollout of one Deployment: its uid and generation. A log verdict holds for as
/// long as these stay (the pods, and what their first lines show, change only when the
/// pod template does, which moves the generation).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Rollout {
    /// The Deployment's uid.
    pub(crate) uid: String,
    /// Its generation.
    pub(crate) generation: i64,
}

impl NameProjection {
    /// The rollout the Deployment is at; `None` when the list gave no uid or generation
    /// (nothing is then remembered).
    pub(crate) fn rollout(&self) -> Option<Rollout> {
        Some(Rollout {
            uid: Some(self.uid.clone()).filter(|u| !u.is_empty())?,
            generation: self.generation?,
        })
    }
}

/// A Deployment's pod selector and its pod template's containers.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SpecProjection {
    /// The selector of its pods (whose logs are read when the spec cannot decide).
    #[serde(default)]
    pub(crate) selector: LabelSelector,
    /// The replicas asked for (absent: Kubernetes' default, 1). At 0 no pod runs until
    /// the spec changes, so there is no log to read.
    #[serde(default)]
    pub(crate) replicas: Option<i32>,
    /// The pod template.
    #[serde(default)]
    pub(crate) template: TemplateProjection,
}

/// A pod template, its containers only.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TemplateProjection {
    /// The pod spec.
    #[serde(default)]
    pub(crate) spec: PodSpecProjection,
}

/// A pod spec, its containers only.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PodSpecProjection {
    /// The containers.
    #[serde(default)]
    pub(crate) containers: Vec<ContainerProjection>,
}

/// What the recognition reads of a container: its name, image, command line and
/// environment (`KOPF_RUN_*`, `$(VAR)` references).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ContainerProjection {
    /// The container's name.
    #[serde(default)]
    pub(crate) name: String,
    /// Its image.
    #[serde(default)]
    pub(crate) image: Option<String>,
    /// Its command (the image's `ENTRYPOINT` when absent).
    #[serde(default)]
    pub(crate) command: Option<Vec<String>>,
    /// Its args (the image's `CMD` when absent).
    #[serde(default)]
    pub(crate) args: Option<Vec<String>>,
    /// Its environment.
    #[serde(default)]
    pub(crate) env: Option<Vec<EnvVar>>,
}

impl ContainerProjection {
    /// The container as the command-line parser reads it.
    pub(crate) fn into_container(self) -> Container {
        Container {
            name: self.name,
            image: self.image,
            command: self.command,
            args: self.args,
            env: self.env,
            ..Default::default()
        }
    }
}

/// Why a container's spec cannot tell whether it runs kopf: its log must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hidden {
    /// No command: the image's `ENTRYPOINT` and `CMD` run, which only the log shows.
    ImageCommand,
    /// A Python interpreter or launcher, which may start kopf (`kopf.run()`).
    Python,
    /// A shell, an init or a wrapper script, which may start anything.
    Wrapper,
}

/// What a Deployment's spec decides, before any log is read.
#[derive(Debug)]
pub(crate) enum SpecDecision {
    /// A container runs `kopf run` on its command line.
    Kopf(Box<KopfRun>),
    /// Every container runs a written-out program that is not kopf (or there is none).
    NotKopf,
    /// These containers (by index) hide what they run: their logs decide.
    Undecided(Vec<(usize, Hidden)>),
}

/// Decides from the containers of a pod template in `namespace` whether it runs kopf.
pub(crate) fn decide_from_spec(containers: &[Container], namespace: &str) -> SpecDecision {
    if let Some((_, run)) = find_kopf(containers, None, Some(namespace)) {
        return SpecDecision::Kopf(Box::new(run));
    }
    let hidden: Vec<(usize, Hidden)> = containers
        .iter()
        .enumerate()
        .filter_map(|(index, c)| match program_of(c) {
            Program::Hidden(why) => Some((index, why)),
            Program::Other => None,
        })
        .collect();
    if hidden.is_empty() {
        SpecDecision::NotKopf
    } else {
        SpecDecision::Undecided(hidden)
    }
}

/// What a container's command line shows it runs.
enum Program {
    /// Something that may start kopf without showing it.
    Hidden(Hidden),
    /// A program that is not kopf.
    Other,
}

/// Python launchers: tools that run a Python program named in their arguments or
/// configuration (an ASGI server may start kopf in its lifespan, `kopf.operator()`).
const PYTHON_LAUNCHERS: [&str; 12] = [
    "uv",
    "uvx",
    "poetry",
    "pipenv",
    "pdm",
    "hatch",
    "uvicorn",
    "gunicorn",
    "hypercorn",
    "opentelemetry-instrument",
    "ddtrace-run",
    "newrelic-admin",
];

/// Shells, inits and wrappers: they run whatever their arguments or script say.
const WRAPPERS: [&str; 12] = [
    "sh",
    "bash",
    "dash",
    "ash",
    "zsh",
    "env",
    "exec",
    "tini",
    "dumb-init",
    "s6-svscan",
    "supervisord",
    "catatonit",
];

/// What a container runs, from its command (the image's when it writes none). A shell
/// (`sh -c "..."`) is a wrapper whatever its script: `kopf run` in it was looked for
/// already, and anything else in it may start kopf.
fn program_of(container: &Container) -> Program {
    let Some(first) = container.command.iter().flatten().next() else {
        return Program::Hidden(Hidden::ImageCommand);
    };
    let base = first.rsplit('/').next().unwrap_or(first);
    if base.starts_with("python") || base.starts_with("pypy") || base.ends_with(".py") {
        return Program::Hidden(Hidden::Python);
    }
    if PYTHON_LAUNCHERS.contains(&base) {
        return Program::Hidden(Hidden::Python);
    }
    let wrapper_name = ["entrypoint", "start", "run", "docker-entrypoint"]
        .iter()
        .any(|w| base.trim_end_matches(".sh") == *w);
    if WRAPPERS.contains(&base) || base.ends_with(".sh") || wrapper_name || base.contains("kopf") {
        return Program::Hidden(Hidden::Wrapper);
    }
    Program::Other
}

/// A kopf operator found, as the CLI prints it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Discovered {
    /// The Deployment's namespace.
    pub(crate) namespace: String,
    /// The Deployment's name.
    pub(crate) deployment: String,
    /// The container that runs kopf.
    pub(crate) container: String,
    /// Whether the command line or the log showed kopf.
    pub(crate) recognised_by: Recognition,
    /// What showed it: the command line, or a line of the log and its pod.
    pub(crate) evidence: String,
    /// kopf's version as far as the log's wording tells (`1.38 to 1.43`), if at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kopf_version: Option<String>,
    /// `namespaced`, `cluster-wide` or `unknown`.
    pub(crate) scope: String,
    /// The namespaces served (or, with the scope unknown, those its log names objects
    /// in: at least these).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) namespaces: Vec<String>,
    /// The Deployment's labels (not printed): a ClusterKopfAudit matches KopfAudits whose
    /// target is a selector against them.
    #[serde(skip)]
    pub(crate) labels: BTreeMap<String, String>,
}

impl Discovered {
    /// The same row, with its Deployment's labels.
    pub(crate) fn with_labels(mut self, labels: BTreeMap<String, String>) -> Discovered {
        self.labels = labels;
        self
    }

    /// The row of a Deployment found running kopf.
    pub(crate) fn new(namespace: &str, deployment: &str, run: &KopfRun) -> Discovered {
        let (recognised_by, evidence, version) = match &run.origin {
            RunOrigin::CommandLine => (
                Recognition::CommandLine,
                "`kopf run` on the command line".to_string(),
                None,
            ),
            RunOrigin::Log(seen) => (
                Recognition::Log,
                format!("log of pod {}: \"{}\"", seen.pod, seen.example),
                version_text(&seen.version),
            ),
            RunOrigin::Files(start) => (Recognition::Files, start.how.clone(), None),
        };
        Discovered {
            namespace: namespace.to_string(),
            deployment: deployment.to_string(),
            container: run.container.clone(),
            recognised_by,
            evidence,
            kopf_version: version,
            scope: run.scope.mode_name().to_string(),
            namespaces: match &run.scope {
                Scope::Namespaced(names) => names.clone(),
                _ => run.served_names(),
            },
            labels: BTreeMap::new(),
        }
    }
}

/// kopf's version as a range of the log's wording tells it: `1.45.2`, `1.44.0 or newer`,
/// `1.38.0 to 1.43.0`; `None` when the wording tells nothing.
pub(crate) fn version_text(version: &VersionRange) -> Option<String> {
    match (version.at_least, version.at_most) {
        _ if version.is_empty() => None,
        (Some(lo), Some(hi)) if lo == hi => Some(lo.to_string()),
        (Some(lo), Some(hi)) => Some(format!("{lo} to {hi}")),
        (Some(lo), None) => Some(format!("{lo} or newer")),
        (None, Some(hi)) => Some(format!("{hi} or older")),
        (None, None) => None,
    }
}

/// What discovery cost, for the CLI's summary and the benchmark.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DiscoveryCost {
    /// Deployments listed.
    pub(crate) deployments: u64,
    /// Pages of the Deployment list read.
    pub(crate) pages: u64,
    /// Bytes of the Deployment list pages.
    pub(crate) list_bytes: u64,
    /// Deployments the spec decided (kopf or not).
    pub(crate) decided_by_spec: u64,
    /// Deployments their pods' logs decided (kopf or not).
    pub(crate) decided_by_log: u64,
    /// Deployments found by kopf's peering objects naming one of their pods (no log
    /// read).
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) decided_by_peering: u64,
    /// Pod lists read (one per Deployment whose spec could not decide).
    pub(crate) pod_lists: u64,
    /// Lists of kopf's peering objects read (only when some Deployment's spec does not
    /// show kopf: a single-container one that runs another program, or one left to its
    /// pods).
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) peering_lists: u64,
    /// Deployments whose spec could not decide, decided by the verdict of an earlier
    /// discovery of the same rollout (no pod list, no log read).
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) remembered: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub(crate) mod peers;

#[cfg(test)]
mod tests;

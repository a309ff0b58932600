//! Which Deployments run an image the repository builds. A repository's one Dockerfile
//! says what its own image runs, not what every image runs: a chart that deploys a
//! third-party service beside the operator (a records server, a database) runs that
//! service's image, and its container, setting no command, must not be taken to run
//! the Dockerfile's `CMD` (and so kopf).

use super::dockerfile::Image;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;
use std::collections::BTreeSet;

/// The images, by name (the last segment of the repository, lowercase), that the
/// Deployments run from their image's own command and that the repository does not
/// build. Empty when that cannot be told: the containers that set no command run one
/// image between them, or none of their images is named after the repository.
pub(crate) fn built_elsewhere(
    deployments: &[Deployment],
    project: &BTreeSet<String>,
) -> BTreeSet<String> {
    let run_as_built: BTreeSet<String> = deployments
        .iter()
        .flat_map(containers)
        .filter(|c| c.command.is_none())
        .filter_map(image_name)
        .collect();
    if run_as_built.len() < 2 {
        return BTreeSet::new();
    }
    let (ours, others): (BTreeSet<String>, BTreeSet<String>) = run_as_built
        .into_iter()
        .partition(|name| project.iter().any(|p| named_after(name, p)));
    if ours.is_empty() {
        return BTreeSet::new();
    }
    others
}

/// Whether every container of `deployment` runs, from its image's own command, an
/// image the repository does not build.
pub(crate) fn runs_only_others(deployment: &Deployment, elsewhere: &BTreeSet<String>) -> bool {
    let all = containers(deployment);
    !all.is_empty()
        && all.iter().all(|c| {
            c.command.is_none() && image_name(c).is_some_and(|name| elsewhere.contains(&name))
        })
}

/// The names a repository goes by: its directory, its Python packages (a directory
/// with an `__init__.py`), and the modules and files its Dockerfiles run.
pub(crate) fn project_names(
    root: Option<&std::path::Path>,
    python: &[&str],
    images: &[Image],
) -> BTreeSet<String> {
    let root = root
        .and_then(|r| std::fs::canonicalize(r).ok())
        .and_then(|r| r.file_name().map(|n| n.to_string_lossy().into_owned()));
    let packages = python.iter().filter_map(|f| {
        let dir = f.strip_suffix("/__init__.py")?;
        Some(dir.rsplit('/').next().unwrap_or(dir).to_string())
    });
    let run = images.iter().flat_map(|image| {
        let words = image
            .entrypoint
            .iter()
            .chain(image.cmd.iter())
            .flat_map(|(w, _)| w.iter());
        words
            .filter_map(|w| {
                let base = w.rsplit('/').next().unwrap_or(w);
                let stem = base.strip_suffix(".py").unwrap_or(base);
                let module = stem.split('.').next().unwrap_or(stem);
                (w.ends_with(".py") || w.contains('_') || w.contains('.'))
                    .then(|| module.to_string())
            })
            .collect::<Vec<_>>()
    });
    root.into_iter()
        .chain(packages)
        .chain(run)
        .map(|n| normal(&n))
        .filter(|n| n.len() >= 3)
        .collect()
}

/// A Deployment's containers.
fn containers(deployment: &Deployment) -> &[Container] {
    crate::model::kopf_run::template_containers(deployment)
}

/// An image's name: the last segment of its repository, without tag or digest,
/// lowercase, `_` as `-`.
fn image_name(container: &Container) -> Option<String> {
    let image = container.image.as_deref()?;
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let name = last.split(':').next().unwrap_or(last);
    (!name.is_empty()).then(|| normal(name))
}

/// A name lowercase, with `_` as `-`.
fn normal(name: &str) -> String {
    name.to_ascii_lowercase().replace('_', "-")
}

/// Whether an image's name is the project's name, or it with a `-suffix` or a
/// `prefix-` (`azimuth-caas-operator-ee` for `azimuth-caas-operator`).
fn named_after(image: &str, project: &str) -> bool {
    image == project
        || image
            .strip_prefix(project)
            .is_some_and(|rest| rest.starts_with('-'))
        || image
            .strip_suffix(project)
            .is_some_and(|rest| rest.ends_with('-'))
}

#[cfg(test)]
mod tests;

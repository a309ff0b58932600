//! `kubectl kustomize` on a kustomization from a repository nobody vouched for, in the
//! sandbox `helm template` runs in ([`super::render`]): the tree it reads is copied into
//! a private temporary directory without the symlinks that leave it, kubectl runs there
//! with no environment of the CI job (not even PATH, so no `git` for remote bases), no
//! stdin, a time limit and an output limit, and of its stderr one cleaned line is kept.
//!
//! Before anything runs, every kustomization the build would read is looked at: one
//! naming a remote resource (kustomize would fetch it over the network) or a path
//! outside the repository is not built.

use super::render::{self, Copied, CopyError, Outcome, RenderLimits, Scratch};
use crate::model::bounded;
use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

/// The file names kustomize looks for in a directory, in its order.
const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Largest kustomization file read.
const MAX_KUSTOMIZATION_BYTES: u64 = 256 * 1024;

/// Most kustomizations one build may reach (its own, its bases, theirs...).
const MAX_REACHED: usize = 32;

/// Most strings of one kustomization looked at as possible paths.
const MAX_STRINGS: usize = 4096;

/// The keys whose entries name what a kustomization builds from: a directory (another
/// kustomization), a file, or a URL.
const RESOURCE_KEYS: [&str; 3] = ["resources", "bases", "components"];

/// The annotation kustomize writes with `buildMetadata: [originAnnotations]`: the file
/// each object came from, relative to the kustomization built.
pub(crate) const ORIGIN_ANNOTATION: &str = "config.kubernetes.io/origin";

/// Most kustomizations built in one run.
pub(crate) const MAX_BUILDS: usize = 4;

/// Of the kustomization directories `dirs` under `root`, those no other one reaches
/// (the overlays, not their bases), in their order. A kustomization that cannot be
/// looked at counts as reaching nothing: building it says why.
pub(crate) fn tops(root: &Path, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(root) = fs::canonicalize(root) else {
        return dirs.to_vec();
    };
    let canonical: Vec<Option<PathBuf>> = dirs.iter().map(|d| fs::canonicalize(d).ok()).collect();
    let mut reached = BTreeSet::new();
    for (n, dir) in canonical.iter().enumerate() {
        let Some(dir) = dir else { continue };
        let Ok(touched) = reach(&root, dir) else {
            continue;
        };
        reached.extend(touched.into_iter().filter(|t| {
            canonical
                .iter()
                .enumerate()
                .any(|(m, d)| m != n && d.as_ref() == Some(t))
        }));
    }
    dirs.iter()
        .zip(&canonical)
        .filter(|(_, c)| c.as_ref().is_none_or(|c| !reached.contains(c)))
        .map(|(d, _)| d.clone())
        .collect()
}

/// The kustomization file of `dir`, if it has one (a regular file, not a link).
pub(crate) fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    KUSTOMIZATION_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| fs::symlink_metadata(path).is_ok_and(|m| m.is_file()))
}

/// What a build gave.
#[derive(Debug, Default)]
pub(crate) struct Built {
    /// The manifests kubectl printed, each object annotated with [`ORIGIN_ANNOTATION`].
    pub(crate) text: String,
    /// What the copy left out (raw names from the repository: clean before showing).
    pub(crate) copied: Copied,
}

/// Why a kustomization was not built. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KustomizeError {
    /// No `kubectl` on PATH.
    #[error(
        "kubectl is not on PATH: install kubectl, or build it yourself and lint the output with `kubectl kustomize DIR | kopf-audit lint -f -`, or pass --no-render"
    )]
    NotFound,
    /// A kustomization names a remote resource: building it would fetch it.
    #[error(
        "it names a remote resource ({0}) that lint does not fetch: build it yourself and lint the output with `kubectl kustomize DIR | kopf-audit lint -f -`"
    )]
    Remote(String),
    /// A kustomization names a path outside the repository, or an absolute one.
    #[error(
        "it names a path outside the repository ({0}): build it yourself and lint the output with `kubectl kustomize DIR | kopf-audit lint -f -`"
    )]
    Outside(String),
    /// More kustomizations than [`MAX_REACHED`] are reached.
    #[error(
        "it reaches more than {MAX_REACHED} kustomizations: build it yourself and lint the output with `kubectl kustomize DIR | kopf-audit lint -f -`"
    )]
    TooManyKustomizations,
    /// A kustomization file is over [`MAX_KUSTOMIZATION_BYTES`], unreadable or not YAML.
    #[error(
        "{0}: build it yourself and lint the output with `kubectl kustomize DIR | kopf-audit lint -f -`"
    )]
    Unreadable(String),
    /// kubectl ran out of time or printed too much.
    #[error(
        "kubectl kustomize did not finish within {} s or printed more than {} MiB: build it yourself and lint the output with `-f -`",
        .limits.timeout.as_secs(), .limits.max_output_bytes >> 20
    )]
    Bounds {
        /// The bounds.
        limits: RenderLimits,
    },
    /// kubectl failed; its error line, cleaned and bounded.
    #[error("kubectl kustomize failed: {0}")]
    Failed(String),
    /// kubectl could not be started.
    #[error("kubectl could not be started ({0}): check the kubectl binary, or pass --no-render")]
    Start(#[source] io::Error),
    /// The tree could not be copied.
    #[error("the kustomization was not built because it could not be copied: {0}")]
    Copy(#[from] CopyError),
}

/// `kubectl kustomize` of `dir` (a directory under `root`, the linted tree), with the
/// `kubectl` found on PATH, in the sandbox: see the module's documentation.
pub(crate) fn kubectl_kustomize(
    root: &Path,
    dir: &Path,
    limits: &RenderLimits,
) -> Result<Built, KustomizeError> {
    let path_var = std::env::var_os("PATH");
    let kubectl =
        render::find_program(path_var.as_deref(), "kubectl").ok_or(KustomizeError::NotFound)?;
    build(&kubectl, root, dir, limits)
}

/// [`kubectl_kustomize`] with the kubectl program named (for tests).
fn build(
    kubectl: &Path,
    root: &Path,
    dir: &Path,
    limits: &RenderLimits,
) -> Result<Built, KustomizeError> {
    let root = fs::canonicalize(root).map_err(|e| KustomizeError::Unreadable(e.to_string()))?;
    let dir = fs::canonicalize(dir).map_err(|e| KustomizeError::Unreadable(e.to_string()))?;
    let reached = reach(&root, &dir)?;
    let tree = common_ancestor(&reached).unwrap_or_else(|| dir.clone());
    let scratch = Scratch::new().map_err(|source| CopyError::Scratch { source })?;
    let copied = render::copy_chart(&tree, &scratch.chart(), limits)?;
    fs::DirBuilder::new()
        .create(scratch.home())
        .map_err(|source| CopyError::Scratch { source })?;
    let copy_dir = scratch
        .chart()
        .join(dir.strip_prefix(&tree).unwrap_or(Path::new("")));
    ask_for_origins(&copy_dir)?;
    let text = run(kubectl, &copy_dir, &scratch, limits)?;
    Ok(Built { text, copied })
}

/// The directories a build of `dir` reads (canonical, all under `root`): `dir`, the
/// kustomizations it names and theirs, and the directories of the files they name.
/// Refuses remote resources and paths leaving `root`.
fn reach(root: &Path, dir: &Path) -> Result<Vec<PathBuf>, KustomizeError> {
    let mut seen = BTreeSet::new();
    let mut queue = vec![dir.to_path_buf()];
    let mut touched = vec![dir.to_path_buf()];
    while let Some(next) = queue.pop() {
        if !seen.insert(next.clone()) {
            continue;
        }
        if seen.len() > MAX_REACHED {
            return Err(KustomizeError::TooManyKustomizations);
        }
        let Some(file) = kustomization_file(&next) else {
            continue;
        };
        let doc = read_kustomization(&file)?;
        refuse_remote(&doc)?;
        for named in path_strings(&doc) {
            let Some(target) = resolve(root, &next, &named)? else {
                continue;
            };
            if target.is_dir() {
                queue.push(target.clone());
                touched.push(target);
            } else if let Some(parent) = target.parent() {
                touched.push(parent.to_path_buf());
            }
        }
    }
    Ok(touched)
}

/// A kustomization file, parsed.
fn read_kustomization(file: &Path) -> Result<Value, KustomizeError> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unreadable = |why: &str| KustomizeError::Unreadable(format!("{name} {why}"));
    let handle = fs::File::open(file).map_err(|_| unreadable("could not be read"))?;
    let bytes = super::bounds::read_at_most(handle, MAX_KUSTOMIZATION_BYTES)
        .map_err(|_| unreadable("could not be read"))?
        .ok_or_else(|| unreadable("is over 256 KiB"))?;
    let text = String::from_utf8(bytes).map_err(|_| unreadable("is not UTF-8"))?;
    super::bounds::yaml_depth(&text).map_err(|e| unreadable(&e.to_string()))?;
    serde_yaml_ng::from_str(&text).map_err(|_| unreadable("is not valid YAML"))
}

/// Whether a resource entry names something kustomize would fetch: a URL, a Git
/// repository (`github.com/org/repo`, `git@host:...`, `...?ref=x`).
fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("git@")
        || entry.starts_with("github.com/")
        || entry.starts_with("gitlab.com/")
        || entry.starts_with("bitbucket.org/")
        || entry.contains("?ref=")
        || entry.contains(".git//")
}

/// [`KustomizeError::Remote`] for the first remote entry of a resource key.
fn refuse_remote(doc: &Value) -> Result<(), KustomizeError> {
    for key in RESOURCE_KEYS {
        let entries = doc.get(key).and_then(Value::as_sequence);
        for entry in entries.into_iter().flatten().filter_map(Value::as_str) {
            if is_remote(entry) {
                return Err(KustomizeError::Remote(bounded::clean(
                    entry,
                    bounded::MAX_NAME_BYTES,
                )));
            }
        }
    }
    Ok(())
}

/// The keys whose strings kustomize reads as paths (the rest of a kustomization's
/// strings are labels, names, patches: they may still name a file by chance).
const PATH_KEYS: [&str; 14] = [
    "resources",
    "bases",
    "components",
    "crds",
    "patchesStrategicMerge",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "path",
    "files",
    "envs",
    "env",
    "chartHome",
];

/// A string of a kustomization that may name a file.
struct Named {
    /// The string (the path of a generator's `key=path`).
    text: String,
    /// Whether it is under a key kustomize reads as a path ([`PATH_KEYS`]).
    is_path: bool,
}

/// The strings of a kustomization that may name a file: every string value, at most
/// [`MAX_STRINGS`]. Over-inclusive on purpose: one that names nothing is skipped by
/// [`resolve`].
fn path_strings(doc: &Value) -> Vec<Named> {
    let mut out = Vec::new();
    let mut stack = vec![(doc, false)];
    while let Some((value, is_path)) = stack.pop() {
        if out.len() >= MAX_STRINGS {
            break;
        }
        match value {
            Value::String(s) => {
                let path = s.split_once('=').map_or(s.as_str(), |(_, p)| p);
                out.push(Named {
                    text: path.trim().to_string(),
                    is_path,
                });
            }
            Value::Sequence(items) => stack.extend(items.iter().map(|v| (v, is_path))),
            Value::Mapping(map) => stack.extend(map.iter().map(|(k, v)| {
                let key = k.as_str().unwrap_or("");
                (v, PATH_KEYS.contains(&key))
            })),
            Value::Tagged(tagged) => stack.push((&tagged.value, is_path)),
            _ => {}
        }
    }
    out
}

/// What `named` (a string of the kustomization in `dir`) resolves to, canonical, when
/// it names something that exists under `root`; `None` when it names nothing there. A
/// path kustomize reads ([`Named::is_path`]) that is absolute or leaves `root` (links
/// followed) is refused.
fn resolve(root: &Path, dir: &Path, named: &Named) -> Result<Option<PathBuf>, KustomizeError> {
    let text = named.text.as_str();
    if text.is_empty() || text.len() > 4096 || text.contains('\n') || is_remote(text) {
        return Ok(None);
    }
    let refuse = || {
        if named.is_path {
            Err(KustomizeError::Outside(bounded::clean(
                text,
                bounded::MAX_NAME_BYTES,
            )))
        } else {
            Ok(None)
        }
    };
    let path = Path::new(text);
    if path.is_absolute() || text.starts_with('~') {
        return refuse();
    }
    let joined = dir.join(path);
    match fs::canonicalize(&joined) {
        Ok(target) if target.starts_with(root) => Ok(Some(target)),
        Ok(_) => refuse(),
        // Named but absent, or a dangling link: leaving the tree lexically is refused.
        Err(_) if leaves(root, &joined) => refuse(),
        Err(_) => Ok(None),
    }
}

/// Whether `path` (absolute, not resolved) leaves `root` by its `..` components.
fn leaves(root: &Path, path: &Path) -> bool {
    let mut kept: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                kept.pop();
            }
            Component::CurDir => {}
            other => kept.push(other),
        }
    }
    !kept.iter().collect::<PathBuf>().starts_with(root)
}

/// The deepest directory holding all of `dirs` (all absolute and canonical).
fn common_ancestor(dirs: &[PathBuf]) -> Option<PathBuf> {
    let mut common = dirs.first()?.clone();
    for dir in &dirs[1..] {
        while !dir.starts_with(&common) {
            common = common.parent()?.to_path_buf();
        }
    }
    Some(common)
}

/// Adds `originAnnotations` to the copied kustomization's `buildMetadata`, so that each
/// object names the file it came from.
fn ask_for_origins(copy_dir: &Path) -> Result<(), KustomizeError> {
    let Some(file) = kustomization_file(copy_dir) else {
        return Err(KustomizeError::Unreadable(
            "the kustomization file was not copied".into(),
        ));
    };
    let mut doc = read_kustomization(&file)?;
    let Some(map) = doc.as_mapping_mut() else {
        return Err(KustomizeError::Unreadable(
            "the kustomization file is not a mapping".into(),
        ));
    };
    let origins = Value::String("originAnnotations".into());
    let metadata = map
        .entry(Value::String("buildMetadata".into()))
        .or_insert_with(|| Value::Sequence(Vec::new()));
    match metadata {
        Value::Sequence(items) if !items.contains(&origins) => items.push(origins),
        Value::Sequence(_) => {}
        other => *other = Value::Sequence(vec![origins]),
    }
    let text = serde_yaml_ng::to_string(&doc)
        .map_err(|_| KustomizeError::Unreadable("the kustomization could not be written".into()))?;
    fs::write(&file, text).map_err(|source| CopyError::Scratch { source })?;
    Ok(())
}

/// kubectl run on the copy: `kubectl kustomize DIR`, no environment but a HOME of its
/// own (no PATH: nothing it could start), no stdin, its own process group, supervised.
fn run(
    kubectl: &Path,
    copy_dir: &Path,
    scratch: &Scratch,
    limits: &RenderLimits,
) -> Result<String, KustomizeError> {
    let mut command = Command::new(kubectl);
    command
        .arg("kustomize")
        .arg(copy_dir)
        .env_clear()
        .env("HOME", scratch.home())
        .env("KUBECONFIG", scratch.home().join("kubeconfig"))
        .current_dir(&scratch.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            KustomizeError::NotFound
        } else {
            KustomizeError::Start(e)
        }
    })?;
    match render::supervise(&mut child, limits) {
        Outcome::Exited { status, stdout, .. } if status.success() => {
            Ok(String::from_utf8_lossy(&stdout).into_owned())
        }
        Outcome::Exited { status, stderr, .. } => {
            let text = String::from_utf8_lossy(&stderr);
            let line = render::error_line(&text)
                .map(|l| l.replace(&*scratch.chart().to_string_lossy(), "."))
                .map(|l| l.replace(&*scratch.root.to_string_lossy(), "<temp>"))
                .unwrap_or_else(|| format!("kubectl gave no reason ({status})"));
            Err(KustomizeError::Failed(bounded::clean(
                &line,
                render::MAX_FAILED_MESSAGE_BYTES,
            )))
        }
        Outcome::TimedOut | Outcome::TooLarge => Err(KustomizeError::Bounds {
            limits: limits.clone(),
        }),
    }
}

#[cfg(test)]
mod tests;

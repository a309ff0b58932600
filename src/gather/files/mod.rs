//! The files gatherer of `kopf-audit lint`: the same evidence the live gatherer builds
//! from a cluster, built from an operator's repository instead. Rendered manifests give
//! the Deployments, ServiceAccounts, RBAC and CRDs; the Dockerfile gives the command the
//! image runs when the Deployment sets none; the Python source gives `kopf.run()`, the
//! handled resources and the settings. RBAC is answered by evaluating the rendered rules
//! ([`oracle`]). Logs, Events, handled objects and peering exist only in a cluster: those
//! areas are `NotInFiles`.

pub(crate) mod bounds;
mod built_here;
pub(crate) mod dockerfile;
mod kustomize;
pub(crate) mod manifests;
pub(crate) mod oracle;
mod positions;
pub(crate) mod python;
pub(crate) mod render;
mod script;
pub(crate) mod versions;

use crate::gather::handled::{candidates, from_crd};
use crate::gather::rbac::CrdDigest;
use crate::model::bounded::{MAX_REASON_BYTES, clean};
use crate::model::evidence::{
    Evidence, KopfEvidence, Obstacle, RbacEvidence, TargetEvidence, Unavailable,
};
use crate::model::handled::{HandledResource, HandledSource};
use crate::model::kopf_run::{
    FilesStart, KopfLogFormat, KopfRun, Peering, RunOrigin, Scope, Verbosity, from_python,
    parse_in_namespace, template_containers,
};
use crate::model::needs;
use crate::model::rbac::PeeringCrds;
use crate::model::source::{
    Entry, ImportGraph, Literal, Loaded, ResourceSpec, SourceFacts, Unread,
};
use dockerfile::Image;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use manifests::Manifests;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The release name charts are rendered under.
const RELEASE: &str = "kopf-audit-lint";

/// What `kopf-audit lint` reads.
#[derive(Clone, Debug, Default)]
pub(crate) struct FilesInput {
    /// A repository, a chart directory, or one file.
    pub(crate) path: Option<PathBuf>,
    /// Rendered YAML read from stdin (`-f -`).
    pub(crate) stdin: Option<String>,
    /// Values files passed to `helm template`.
    pub(crate) values: Vec<PathBuf>,
    /// `KEY=VALUE` values passed to `helm template` (`--set`), after the files.
    pub(crate) set: Vec<String>,
    /// The namespace of objects that name none (as `helm install -n`).
    pub(crate) namespace: String,
    /// Whether charts are rendered with `helm template` (`--no-render` says no).
    pub(crate) render: bool,
}

/// Why the files could not be linted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FilesError {
    /// A file or directory could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// What the files gave.
#[derive(Clone, Debug)]
pub(crate) struct Linted {
    /// The evidence, as the live gatherer would build it.
    pub(crate) evidence: Evidence,
    /// The Python source's facts.
    pub(crate) source: SourceFacts,
    /// The manifests read (for locations).
    pub(crate) manifests: Manifests,
    /// The Python files read, with their text (for `# kopf-audit: ignore[...]`).
    pub(crate) python: Vec<(String, String)>,
    /// What the reader should know that does not fail the run.
    pub(crate) notes: Vec<String>,
    /// The inputs that could not be read: the run is no pass while one is left.
    pub(crate) unread: Vec<Unread>,
}

/// Directories never linted: version control, virtualenvs, build output, tests.
const SKIPPED_DIRS: [&str; 12] = [
    ".git",
    ".venv",
    "venv",
    "env",
    "node_modules",
    "target",
    "__pycache__",
    ".tox",
    "build",
    "dist",
    "tests",
    "test",
];

/// Reads the input and builds the evidence.
pub(crate) fn read(input: &FilesInput) -> Result<Linted, FilesError> {
    let mut found = Found::default();
    if let Some(text) = &input.stdin {
        found.manifests.read("-", text, &input.namespace);
    }
    if let Some(path) = &input.path {
        found.walk(path, path, input, 0)?;
        found.kustomizations(path, input);
    }
    let Found {
        manifests,
        images,
        scripts,
        s2i,
        source,
        python,
        mut notes,
        mut unread,
        ..
    } = found;
    unread.extend(manifests.problems.iter().map(|(at, why)| Unread {
        path: at.file.clone(),
        why: clean(&format!("line {}: {why}", at.line), MAX_REASON_BYTES),
    }));
    unread.sort();
    unread.dedup();
    let python_files: Vec<&str> = python.iter().map(|(path, _)| path.as_str()).collect();
    let imports = source.import_graph(&python_files);
    let project = built_here::project_names(input.path.as_deref(), &python_files, &images);
    let elsewhere = built_here::built_elsewhere(&manifests.deployments, &project);
    let starts = Starts {
        images: &images,
        scripts: &scripts,
        s2i: &s2i,
        source: &source,
        imports: &imports,
        elsewhere: &elsewhere,
    };
    let (targets, loads): (Vec<TargetEvidence>, Vec<Option<Loaded>>) = manifests
        .deployments
        .iter()
        .map(|d| target(d, &manifests, &starts, &mut notes))
        .unzip();
    let source = match loaded_by_all(loads.into_iter().flatten()) {
        Some(files) => {
            notes.extend(not_loaded_note(&python_files, &files));
            source.only(&files)
        }
        None => source,
    };
    let targets = kopf_targets(targets, &mut notes);
    if manifests.deployments.is_empty() {
        notes.push("No Deployment in the linted manifests: the workload and RBAC checks had nothing to read. Pass the chart directory or rendered manifests (`helm template ... | kopf-audit lint -f -`).".into());
    }
    dedup_in_order(&mut notes);
    Ok(Linted {
        evidence: Evidence {
            now: Timestamp::now(),
            targets,
        },
        source,
        manifests,
        python,
        notes,
        unread,
    })
}

/// Drops the repeats of a note, keeping the first of each in place: a note about the
/// source (a handled resource that is not known) is found once per Deployment.
fn dedup_in_order(notes: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    notes.retain(|n| seen.insert(n.clone()));
}

/// The Deployments that run kopf, when any does: a repository often carries other
/// workloads' manifests (a vendored Argo CD install, a database) that are not the
/// operator's. When none runs kopf, all are kept, so that `workload.not-kopf` says so.
fn kopf_targets(targets: Vec<TargetEvidence>, notes: &mut Vec<String>) -> Vec<TargetEvidence> {
    if !targets.iter().any(|t| t.kopf.is_some()) {
        return targets;
    }
    let (kopf, others): (Vec<_>, Vec<_>) = targets.into_iter().partition(|t| t.kopf.is_some());
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(TargetEvidence::name).collect();
        notes.push(format!(
            "{} Deployment(s) run no kopf and were not linted: {}.",
            others.len(),
            names.join(", ")
        ));
    }
    kopf
}

/// What the walk collected.
#[derive(Default)]
struct Found {
    manifests: Manifests,
    images: Vec<Image>,
    /// The lines of the repository's shell scripts that start kopf, by script path.
    scripts: Vec<(String, Vec<script::ScriptRun>)>,
    /// The `kopf-opt.sh` files of `python-kopf-s2i` builds.
    s2i: Vec<script::S2iOptions>,
    source: SourceFacts,
    python: Vec<(String, String)>,
    notes: Vec<String>,
    unread: Vec<Unread>,
    /// Files read so far, against [`bounds::MAX_FILES`].
    files_read: usize,
    /// Bytes read so far, against [`bounds::MAX_TOTAL_BYTES`].
    bytes_read: u64,
    /// Set when a bound of the whole run was reached: nothing more is read.
    full: bool,
    /// The directories holding a kustomization, built after the walk.
    kustomizations: Vec<PathBuf>,
}

impl Found {
    /// Reads a file or a directory tree; `root` makes paths relative.
    fn walk(
        &mut self,
        path: &Path,
        root: &Path,
        input: &FilesInput,
        depth: usize,
    ) -> Result<(), FilesError> {
        let meta = std::fs::metadata(path).map_err(|source| read_error(path, source))?;
        if meta.is_file() {
            return self.file(path, root, input);
        }
        if path.join("Chart.yaml").is_file() {
            self.chart(path, root, input);
            return Ok(());
        }
        if kustomize::kustomization_file(path).is_some() {
            // Built once the walk has found them all: a base is built by its overlays.
            self.kustomizations.push(path.to_path_buf());
            return Ok(());
        }
        if depth >= bounds::MAX_DIR_DEPTH {
            self.unread(
                &relative(path, root),
                format!(
                    "the directory is nested deeper than lint's bound of {} levels: it was not read",
                    bounds::MAX_DIR_DEPTH
                ),
            );
            return Ok(());
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| read_error(path, source))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // A symbolic link is not followed: a link to a parent would walk for ever.
            let Ok(meta) = std::fs::symlink_metadata(&entry) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                continue;
            }
            let is_dir = meta.is_dir();
            if is_dir && (SKIPPED_DIRS.contains(&name) || name.starts_with('.')) {
                continue;
            }
            if self.full {
                break;
            }
            if is_dir {
                self.walk(&entry, root, input, depth + 1)?;
            } else if meta.is_file() {
                // Not a fifo, a socket or a device: reading one would block or never end.
                self.file(&entry, root, input)?;
            }
        }
        Ok(())
    }

    /// Reads one file by its kind.
    fn file(&mut self, path: &Path, root: &Path, input: &FilesInput) -> Result<(), FilesError> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let shown = relative(path, root);
        let kind = FileKind::of(name);
        if kind == FileKind::Other {
            if dockerfile::sniffable(name)
                && let Some(text) = self.sniffed_dockerfile(path)
            {
                self.dockerfile(&shown, &text);
            }
            return Ok(());
        }
        let Some(text) = self.bounded_text(path, &shown, kind)? else {
            return Ok(());
        };
        match kind {
            FileKind::Python => match python::read(&shown, &text) {
                Ok(facts)
                    if self.source.handlers.len() + facts.handlers.len() > bounds::MAX_HANDLERS =>
                {
                    self.unread(
                        &shown,
                        format!(
                            "the repository registers more kopf handlers than lint's bound of {} a run: this file was not linted",
                            bounds::MAX_HANDLERS
                        ),
                    );
                }
                Ok(facts) => {
                    self.source.extend(facts);
                    self.python.push((shown, text));
                }
                Err(too_deep) => self.unread(&shown, format!("{too_deep}: it was not parsed")),
            },
            FileKind::Dockerfile => self.dockerfile(&shown, &text),
            FileKind::Script => {
                if name == "kopf-opt.sh" {
                    self.s2i.push(script::s2i_options(&shown, &text));
                }
                let runs = script::starts(&shown, &text);
                if !runs.is_empty() {
                    self.scripts.push((shown, runs));
                }
            }
            FileKind::Requirements => self.pin(versions::pin(&shown, &text)),
            FileKind::Yaml if text.contains("kind:") && text.contains("apiVersion:") => {
                self.manifests.read(&shown, &text, &input.namespace);
            }
            FileKind::Yaml | FileKind::Other => {}
        }
        Ok(())
    }

    /// Reads a Dockerfile: the image it builds and the kopf it installs.
    fn dockerfile(&mut self, shown: &str, text: &str) {
        self.pin(versions::pin(shown, text));
        self.images.push(dockerfile::read(shown, text));
    }

    /// The text of a file whose name does not tell its kind, when its content shows a
    /// Dockerfile ([`dockerfile::starts_with_from`]). Quiet: a file over
    /// [`bounds::MAX_SNIFFED_BYTES`], unreadable or not UTF-8 is simply not one (a
    /// binary without an extension is no input of lint's). Counted against the run's
    /// bounds.
    fn sniffed_dockerfile(&mut self, path: &Path) -> Option<String> {
        if self.run_is_full() {
            return None;
        }
        let file = std::fs::File::open(path).ok()?;
        let read = bounds::read_at_most(file, bounds::MAX_SNIFFED_BYTES).ok()?;
        self.count_read(read.as_ref(), bounds::MAX_SNIFFED_BYTES);
        String::from_utf8(read?)
            .ok()
            .filter(|text| dockerfile::starts_with_from(text))
    }

    /// Whether a bound of the whole run (files, bytes) is reached.
    fn run_is_full(&self) -> bool {
        self.files_read >= bounds::MAX_FILES || self.bytes_read >= bounds::MAX_TOTAL_BYTES
    }

    /// Counts one file read against the run's bounds: its bytes, or `limit + 1` when it
    /// was over `limit` (what was read of it).
    fn count_read(&mut self, read: Option<&Vec<u8>>, limit: u64) {
        self.files_read += 1;
        self.bytes_read += read.map_or(limit + 1, |bytes| bytes.len() as u64);
    }

    /// A file's text, when it is within the bounds of one file and of the run and is
    /// UTF-8; otherwise `None`, and the file is unread (or the run is full).
    fn bounded_text(
        &mut self,
        path: &Path,
        shown: &str,
        kind: FileKind,
    ) -> Result<Option<String>, FilesError> {
        if self.run_is_full() {
            self.full = true;
            self.unread(
                shown,
                format!(
                    "lint reads at most {} files and {} MiB in one run: this file and the rest of the tree were not read; lint the operator's own directory",
                    bounds::MAX_FILES,
                    bounds::MAX_TOTAL_BYTES >> 20
                ),
            );
            return Ok(None);
        }
        let limit = kind.max_bytes();
        let file = std::fs::File::open(path).map_err(|source| read_error(path, source))?;
        let read = bounds::read_at_most(file, limit).map_err(|source| read_error(path, source))?;
        self.count_read(read.as_ref(), limit);
        let Some(bytes) = read else {
            self.unread(
                shown,
                format!(
                    "the file is over lint's bound of {} KiB for {} files: it was not parsed",
                    limit >> 10,
                    kind.noun()
                ),
            );
            return Ok(None);
        };
        match String::from_utf8(bytes) {
            Ok(text) => Ok(Some(text)),
            Err(_) => {
                self.unread(
                    shown,
                    "the file is not UTF-8 text: it was not parsed".into(),
                );
                Ok(None)
            }
        }
    }

    /// Records an input that could not be read, its reason cleaned and bounded.
    fn unread(&mut self, shown: &str, why: String) {
        self.unread.push(Unread {
            path: shown.to_string(),
            why: clean(&why, MAX_REASON_BYTES),
        });
    }

    /// Keeps a kopf pin: a lock file over an exact version over a range.
    fn pin(&mut self, pin: Option<crate::model::source::KopfPin>) {
        if let Some(pin) = pin {
            self.source.keep_pin(pin);
        }
    }

    /// Renders a chart with `helm template` in a sandbox ([`render`]): a copy without
    /// the links that leave it, no environment, bounded in time and output. A chart that
    /// does not render is unread; with `--no-render` it is left alone, and said so.
    fn chart(&mut self, dir: &Path, root: &Path, input: &FilesInput) {
        let shown = relative(dir, root);
        if !input.render {
            self.notes.push(clean(
                &format!(
                    "The chart {shown} was not rendered (--no-render): lint its rendered output with `helm template NAME {shown} | kopf-audit lint -f -`."
                ),
                MAX_REASON_BYTES,
            ));
            return;
        }
        let limits = render::RenderLimits::default();
        match render::helm_template(
            dir,
            RELEASE,
            &input.namespace,
            &input.values,
            &input.set,
            &limits,
        ) {
            Ok(rendered) => {
                if !rendered.dropped_links.is_empty() {
                    let links = crate::model::bounded::listed(&rendered.dropped_links, ", ", 5);
                    self.notes.push(clean(
                        &format!(
                            "The chart {shown} was rendered without its links that leave it: {links}."
                        ),
                        MAX_REASON_BYTES,
                    ));
                }
                if let Some(note) = render_note(&shown, &rendered) {
                    self.notes.push(clean(&note, MAX_REASON_BYTES));
                }
                for name in &rendered.unvendored {
                    self.unread(
                        &format!("{shown}/charts/{}", crate::model::bounded::clean_name(name)),
                        "a dependency of the chart that is not vendored under charts/: the chart was rendered without it; run `helm dependency build` before lint, as its CI would".to_string(),
                    );
                }
                let dir_in_root = if dir == root {
                    String::new()
                } else {
                    shown.clone()
                };
                self.manifests.read_rendered(
                    &shown,
                    &dir_in_root,
                    &rendered.text,
                    &rendered.namespace,
                );
            }
            Err(e) => self.unread(&shown, e.to_string()),
        }
    }
}

impl Found {
    /// Builds the kustomizations the walk found that no other one includes (an overlay
    /// builds its bases), at most [`kustomize::MAX_BUILDS`], each in the sandbox
    /// ([`kustomize`]). One that does not build is unread; with `--no-render` each is
    /// left alone, and said so.
    fn kustomizations(&mut self, root: &Path, input: &FilesInput) {
        let found = std::mem::take(&mut self.kustomizations);
        let tops = kustomize::tops(root, &found);
        for (n, dir) in tops.iter().enumerate() {
            let shown = relative(dir, root);
            if !input.render {
                self.notes.push(clean(
                    &format!(
                        "The kustomization {shown} was not built (--no-render): lint its output with `kubectl kustomize {shown} | kopf-audit lint -f -`."
                    ),
                    MAX_REASON_BYTES,
                ));
                continue;
            }
            if n >= kustomize::MAX_BUILDS {
                self.unread(
                    &shown,
                    format!(
                        "lint builds at most {} kustomizations a run: this one was not built; lint it on its own, or its output with `-f -`",
                        kustomize::MAX_BUILDS
                    ),
                );
                continue;
            }
            self.kustomization(root, dir, &shown, &input.namespace);
        }
    }

    /// One kustomization built and its output read, objects placed in the files they
    /// came from.
    fn kustomization(&mut self, root: &Path, dir: &Path, shown: &str, namespace: &str) {
        let limits = render::RenderLimits::default();
        match kustomize::kubectl_kustomize(root, dir, &limits) {
            Ok(built) => {
                if !built.copied.dropped_links.is_empty() {
                    let links = crate::model::bounded::listed(&built.copied.dropped_links, ", ", 5);
                    self.notes.push(clean(
                        &format!(
                            "The kustomization {shown} was built without the links that leave it: {links}."
                        ),
                        MAX_REASON_BYTES,
                    ));
                }
                let file = kustomize::kustomization_file(dir)
                    .map_or_else(|| shown.to_string(), |f| relative(&f, root));
                self.manifests
                    .read_built(&file, shown, &built.text, namespace);
                self.place_built(root);
            }
            Err(e) => self.unread(shown, e.to_string()),
        }
    }
}

impl Found {
    /// Reads the files the built objects came from (within the run's bounds), so that
    /// their findings point at the field's line in the file as written.
    fn place_built(&mut self, root: &Path) {
        for file in self.manifests.built_from() {
            let path = root.join(&file);
            if let Ok(Some(text)) = self.bounded_text(&path, &file, FileKind::Yaml) {
                self.manifests.place_built(&file, &text);
            }
        }
    }
}

/// How a chart was rendered when it did not render as asked (its CI's way).
fn render_note(shown: &str, rendered: &render::Rendered) -> Option<String> {
    let how = match rendered.fallback.as_ref()? {
        render::Fallback::AsInstalled => format!(
            "in namespace {} with an empty `global` section, as an install would give it",
            rendered.namespace
        ),
        render::Fallback::CiValues(file) => format!(
            "with its {file} (chart-testing's values), in namespace {}",
            rendered.namespace
        ),
    };
    Some(format!(
        "The chart {shown} did not render with its defaults; it was rendered {how}."
    ))
}

/// The kinds of file lint reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileKind {
    Python,
    Dockerfile,
    Yaml,
    /// Requirements, `pyproject.toml`, lock files: where the kopf version is pinned.
    Requirements,
    /// Shell scripts (`*.sh`): an image's CMD may run one that starts kopf.
    Script,
    Other,
}

impl FileKind {
    /// The largest file of this kind lint parses.
    fn max_bytes(self) -> u64 {
        match self {
            FileKind::Python => bounds::MAX_PYTHON_BYTES,
            FileKind::Yaml => bounds::MAX_YAML_BYTES,
            FileKind::Dockerfile | FileKind::Requirements | FileKind::Script | FileKind::Other => {
                bounds::MAX_OTHER_BYTES
            }
        }
    }

    /// The kind as the reader names it.
    fn noun(self) -> &'static str {
        match self {
            FileKind::Python => "Python",
            FileKind::Yaml => "YAML",
            FileKind::Dockerfile => "Dockerfile",
            FileKind::Requirements => "requirements",
            FileKind::Script => "shell script",
            FileKind::Other => "other",
        }
    }

    /// A file's kind by its name; Python test files are not linted.
    fn of(name: &str) -> FileKind {
        let is_test =
            name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py";
        if name.ends_with(".py") && !is_test {
            FileKind::Python
        } else if name.ends_with(".sh") {
            FileKind::Script
        } else if name == "Dockerfile"
            || name == "Containerfile"
            || name.starts_with("Dockerfile.")
            || name.ends_with(".Dockerfile")
        {
            FileKind::Dockerfile
        } else if (name.starts_with("requirements") && name.ends_with(".txt"))
            || matches!(
                name,
                "pyproject.toml"
                    | "poetry.lock"
                    | "uv.lock"
                    | "Pipfile"
                    | "Pipfile.lock"
                    | "setup.cfg"
            )
        {
            FileKind::Requirements
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            FileKind::Yaml
        } else {
            FileKind::Other
        }
    }
}

fn read_error(path: &Path, source: std::io::Error) -> FilesError {
    FilesError::Read {
        path: path.display().to_string(),
        source,
    }
}

/// A path relative to the linted root, with `/` separators.
fn relative(path: &Path, root: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let shown = rel
        .iter()
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    if shown.is_empty() {
        path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    } else {
        shown
    }
}

/// What in the repository may start kopf in a container besides its command line.
struct Starts<'a> {
    /// The Dockerfiles' images.
    images: &'a [Image],
    /// The shell scripts' lines that start kopf.
    scripts: &'a [(String, Vec<script::ScriptRun>)],
    /// The `kopf-opt.sh` files.
    s2i: &'a [script::S2iOptions],
    /// The Python source.
    source: &'a SourceFacts,
    /// What the Python files import, to tell which ones kopf loads.
    imports: &'a ImportGraph<'a>,
    /// The images the Deployments run that the repository does not build.
    elsewhere: &'a BTreeSet<String>,
}

/// One Deployment's evidence, and which Python files its kopf loads (`None` when it
/// runs no kopf). Its handled resources and permissions needed are those of the
/// handlers in the files it loads, when those are known.
fn target(
    deployment: &Deployment,
    manifests: &Manifests,
    starts: &Starts<'_>,
    notes: &mut Vec<String>,
) -> (TargetEvidence, Option<Loaded>) {
    let mut target = TargetEvidence::new(deployment.clone(), Vec::new(), None);
    let run = match target.kopf.take() {
        Some(kopf) => Some(kopf.run),
        // Another project's image: the repository's files do not say what it runs.
        None if built_here::runs_only_others(deployment, starts.elsewhere) => None,
        None => from_image(deployment, starts.images)
            .or_else(|| from_script(deployment, starts))
            .or_else(|| from_s2i(deployment, starts))
            .or_else(|| from_source(deployment, starts.images, starts.source))
            .or_else(|| from_handlers(deployment, manifests.deployments.len(), starts)),
    };
    let Some(run) = run else {
        return (target, None);
    };
    let loaded = starts.imports.loaded_from(&run.entries);
    let own;
    let source = match &loaded {
        Loaded::Files(files) => {
            own = starts.source.only(files);
            &own
        }
        Loaded::Unknown => starts.source,
    };
    target.kopf = Some(kopf_evidence(
        &target,
        with_settings(run, source),
        manifests,
        source,
        notes,
    ));
    (target, Some(loaded))
}

/// The Python files some kopf container loads, when that is known for every one; `None`
/// when it is not known for one of them, or none runs kopf: then every file is kept.
fn loaded_by_all(loads: impl Iterator<Item = Loaded>) -> Option<BTreeSet<String>> {
    let mut all = BTreeSet::new();
    let mut any = false;
    for loaded in loads {
        match loaded {
            Loaded::Files(files) => all.extend(files),
            Loaded::Unknown => return None,
        }
        any = true;
    }
    any.then_some(all)
}

/// How many files a note names before it counts the rest.
const NAMED_IN_NOTE: usize = 5;

/// The note that names the Python files no kopf container loads, which lint left out.
fn not_loaded_note(python: &[&str], loaded: &BTreeSet<String>) -> Option<String> {
    let left: Vec<&str> = python
        .iter()
        .copied()
        .filter(|f| !loaded.contains(*f))
        .collect();
    if left.is_empty() {
        return None;
    }
    let mut named = left
        .iter()
        .take(NAMED_IN_NOTE)
        .map(|f| clean(f, MAX_REASON_BYTES))
        .collect::<Vec<_>>()
        .join(", ");
    if left.len() > NAMED_IN_NOTE {
        named.push_str(&format!(" and {} more", left.len() - NAMED_IN_NOTE));
    }
    Some(format!(
        "{} Python file(s) that no kopf container loads (by `kopf run`'s files and modules and what they import) were not checked: {named}.",
        left.len()
    ))
}

/// The run of a Deployment whose container (its command, or its image's CMD and
/// ENTRYPOINT when the repository has one Dockerfile) runs a shell script of the
/// repository that starts kopf (`exec kopf run operator.py`): the script is found by
/// its file name, and must be the only one of that name that starts kopf.
fn from_script(deployment: &Deployment, starts: &Starts<'_>) -> Option<KopfRun> {
    let namespace = deployment.metadata.namespace.as_deref();
    for container in template_containers(deployment) {
        let words = runs(container, starts.images);
        let Some(run) = script_run(&words, starts.scripts) else {
            continue;
        };
        let mut shown = container.clone();
        shown.command = Some(run.words.clone());
        shown.args = None;
        if let Some(mut parsed) = parse_in_namespace(&shown, namespace) {
            parsed.origin = RunOrigin::Files(FilesStart {
                how: format!("the script the container runs, at {}", run.at),
                flags_known: true,
            });
            return Some(parsed);
        }
    }
    None
}

/// The run of a Deployment whose image is built on a `python-kopf-s2i` builder image
/// (its final `FROM` names one) and runs that image's run script (no command, or the
/// s2i `run`): the script starts kopf with the options of the `kopf-opt.sh` beside the
/// Dockerfile (else the repository's only one, else its defaults).
fn from_s2i(deployment: &Deployment, starts: &Starts<'_>) -> Option<KopfRun> {
    let namespace = deployment.metadata.namespace.as_deref();
    for image in starts.images {
        let Some((base, from_at)) = &image.base else {
            continue;
        };
        if !base.contains("kopf-s2i") {
            continue;
        }
        for container in template_containers(deployment) {
            let (words, _) =
                image.effective(container.command.as_deref(), container.args.as_deref());
            let runs_s2i = words.is_empty()
                || words
                    .first()
                    .is_some_and(|w| w.ends_with("/s2i/run") || w.ends_with("/s2i/bin/run"));
            if !runs_s2i {
                continue;
            }
            let options = s2i_options_for(&image.path, starts.s2i);
            let own = namespace.unwrap_or("default");
            let mut shown = container.clone();
            shown.command = Some(options.map_or_else(
                || script::S2iOptions::default().command_line(own),
                |o| o.command_line(own),
            ));
            shown.args = None;
            if let Some(mut run) = parse_in_namespace(&shown, namespace) {
                let from = options.map_or_else(
                    || "its defaults (no kopf-opt.sh)".to_string(),
                    |o| o.path.clone(),
                );
                run.origin = RunOrigin::Files(FilesStart {
                    how: format!(
                        "the run script of the s2i builder image {} (FROM at {from_at}), with {from}",
                        crate::model::bounded::clean_name(base)
                    ),
                    flags_known: true,
                });
                return Some(run);
            }
        }
    }
    None
}

/// The `kopf-opt.sh` of the build whose Dockerfile is `dockerfile`: in its directory,
/// else the only one of the repository.
fn s2i_options_for<'a>(
    dockerfile: &str,
    all: &'a [script::S2iOptions],
) -> Option<&'a script::S2iOptions> {
    let dir = |p: &str| {
        p.rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_string())
    };
    let here = dir(dockerfile);
    let only = match all {
        [only] => Some(only),
        _ => None,
    };
    all.iter().find(|o| dir(&o.path) == here).or(only)
}

/// How many scripts deep a container's command is followed: the script it runs, and
/// two more that one hands over to (`exec ./run.sh`).
const MAX_SCRIPT_DEPTH: usize = 3;

/// The kopf line of the script that `words` run, named by a word ending in `.sh`
/// (`./start-operator.sh`, `sh /app/start.sh`), when exactly one script of that file
/// name starts kopf or hands over to another script; followed up to
/// [`MAX_SCRIPT_DEPTH`] scripts deep, a script met twice not again.
fn script_run<'a>(
    words: &[String],
    scripts: &'a [(String, Vec<script::ScriptRun>)],
) -> Option<&'a script::ScriptRun> {
    follow_scripts(words, scripts, 0, &mut Vec::new())
}

/// [`script_run`] at `depth`, with the scripts already on the way.
fn follow_scripts<'a>(
    words: &[String],
    scripts: &'a [(String, Vec<script::ScriptRun>)],
    depth: usize,
    visited: &mut Vec<&'a str>,
) -> Option<&'a script::ScriptRun> {
    let basename = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let named = script::names_script(words)?;
    let mut matching = scripts.iter().filter(|(path, _)| basename(path) == named);
    let (path, runs) = matching.next()?;
    if matching.next().is_some() || visited.contains(&path.as_str()) {
        return None;
    }
    if let Some(run) = runs.iter().find(|r| script::starts_kopf(&r.words)) {
        return Some(run);
    }
    if depth + 1 >= MAX_SCRIPT_DEPTH {
        return None;
    }
    visited.push(path);
    runs.iter()
        .find_map(|handoff| follow_scripts(&handoff.words, scripts, depth + 1, visited))
}

/// The run of a Deployment whose container sets no `kopf run` but whose image does
/// (`CMD`/`ENTRYPOINT`). With several Dockerfiles, only one that runs kopf is taken.
fn from_image(deployment: &Deployment, images: &[Image]) -> Option<KopfRun> {
    let namespace = deployment.metadata.namespace.as_deref();
    let mut runs = Vec::new();
    for image in images {
        for container in template_containers(deployment) {
            let (words, at) =
                image.effective(container.command.as_deref(), container.args.as_deref());
            let Some(at) = at else { continue };
            let mut shown = container.clone();
            shown.command = Some(words);
            shown.args = None;
            if let Some(mut run) = parse_in_namespace(&shown, namespace) {
                run.origin = RunOrigin::Files(FilesStart {
                    how: format!("the image's CMD/ENTRYPOINT at {at}"),
                    flags_known: true,
                });
                runs.push(run);
                break;
            }
        }
    }
    (runs.len() == 1).then(|| runs.remove(0))
}

/// The words a container runs: with the repository's one Dockerfile, as the kubelet
/// builds them from the image's ENTRYPOINT and CMD; else its own command and args.
fn runs(container: &k8s_openapi::api::core::v1::Container, images: &[Image]) -> Vec<String> {
    match images {
        [image] => {
            image
                .effective(container.command.as_deref(), container.args.as_deref())
                .0
        }
        _ => container
            .command
            .iter()
            .flatten()
            .chain(container.args.iter().flatten())
            .cloned()
            .collect(),
    }
}

/// The run of a Deployment whose container runs Python (or a wrapper) and whose source
/// starts kopf itself with `kopf.run()`.
fn from_source(deployment: &Deployment, images: &[Image], source: &SourceFacts) -> Option<KopfRun> {
    let start = source.starts.first()?;
    let container = template_containers(deployment).iter().find(|c| {
        let words = runs(c, images);
        words.is_empty()
            || words.iter().any(|w| {
                let base = w.rsplit('/').next().unwrap_or(w);
                base.starts_with("python") || base.ends_with(".py") || base.ends_with(".sh")
            })
    })?;
    let mut run = from_python(container, start);
    run.entries = python_entries(&runs(container, images));
    Some(run)
}

/// What `python FILE` or `python -m MODULE` loads first; none when the words run
/// something else (a wrapper script, an image's default).
fn python_entries(words: &[String]) -> Vec<Entry> {
    let is_python = |w: &String| {
        w.rsplit('/')
            .next()
            .is_some_and(|b| b.starts_with("python"))
    };
    let Some(at) = words.iter().position(is_python) else {
        return Vec::new();
    };
    let mut rest = words[at + 1..].iter().filter(|w| *w != "-u" && *w != "-O");
    match rest.next().map(String::as_str) {
        Some("-m") => rest.next().map(|m| vec![Entry::Main(m.clone())]),
        Some(file) if file.ends_with(".py") => Some(vec![Entry::Path(file.to_string())]),
        _ => None,
    }
    .unwrap_or_default()
}

/// The run of the repository's only Deployment, of one container, when the repository
/// builds one image (one Dockerfile) and its Python registers kopf handlers, however
/// the image starts kopf (a base image's run script, an entrypoint from elsewhere): what
/// a reviewer concludes at once. kopf's command line is not in the repository, so
/// scope, peering and liveness are unknown, and the checks that need them do not decide.
fn from_handlers(
    deployment: &Deployment,
    deployments: usize,
    starts: &Starts<'_>,
) -> Option<KopfRun> {
    let handler = starts.source.handlers.first()?;
    let ([image], [container], 1) = (starts.images, template_containers(deployment), deployments)
    else {
        return None;
    };
    Some(KopfRun {
        container: container.name.clone(),
        origin: RunOrigin::Files(FilesStart {
            how: format!(
                "the image built from {}, whose kopf handlers are in the repository ({} at {}); kopf's command line is not in the repository",
                image.path, handler.function, handler.location
            ),
            flags_known: false,
        }),
        scope: Scope::Unknown,
        peering: Peering::Unknown,
        priority: None,
        dev: false,
        log_format: KopfLogFormat::Full,
        verbosity: (Verbosity::Normal, None),
        liveness: None,
        entries: Vec::new(),
    })
}

/// The run after the peering settings the startup handlers write, which kopf applies
/// over the command line's (kopf 1.45 `_core/reactor/running.py` maps `--peering` to
/// `peering.name` and `peering.mandatory = True` before the startup handlers run):
/// `peering.standalone = True` turns peering off; `peering.mandatory = True` makes it
/// mandatory under `peering.name` (`default` unless set). A `kopf.configure(verbose=True)`
/// (or `debug=True`) in the Python sets the root logger to DEBUG after the command
/// line's flags did (kopf 1.45 `_core/actions/loggers.py`).
fn with_settings(mut run: KopfRun, source: &SourceFacts) -> KopfRun {
    if let Some((call, at)) = source.debug_configures.first()
        && matches!(run.verbosity.0, Verbosity::Normal | Verbosity::Quiet)
    {
        run.verbosity = (Verbosity::Verbose, Some(format!("{call} (at {at})")));
    }
    let is_true = |path| source.setting(path) == Some(&Literal::Bool(true));
    let name = match source.setting("peering.name") {
        Some(Literal::Str(name)) => Some(name.clone()),
        _ => None,
    };
    if is_true("peering.standalone") && run.peering == Peering::Auto {
        run.peering = Peering::Standalone;
    } else if is_true("peering.mandatory") && run.peering == Peering::Auto {
        run.peering = Peering::Named(name.unwrap_or_else(|| DEFAULT_PEERING.to_string()));
    } else if let (Peering::Named(current), Some(name)) = (&mut run.peering, name) {
        *current = name;
    }
    run
}

/// The peering name kopf uses when none is given (kopf 1.45
/// `_cogs/configs/configuration.py` `PeeringSettings.name`).
const DEFAULT_PEERING: &str = "default";

/// Why an area has no evidence from files.
fn not_in_files(what: &str) -> Unavailable {
    Unavailable::new(
        Obstacle::NotInFiles,
        format!(
            "{what} exist only in a running cluster: `kopf-audit check` or a KopfAudit audits them."
        ),
    )
}

/// The kopf areas of a target, from the files.
fn kopf_evidence(
    target: &TargetEvidence,
    run: KopfRun,
    manifests: &Manifests,
    source: &SourceFacts,
    notes: &mut Vec<String>,
) -> KopfEvidence {
    let sa = target.service_account();
    let bindings = oracle::bindings(manifests, &sa);
    let handled = handled(source, manifests, bindings.as_ref().ok(), notes);
    let rbac = bindings.map(|bindings| {
        let peering_crds = PeeringCrds {
            present: manifests
                .crds
                .iter()
                .filter_map(|c| c.metadata.name.clone())
                .filter(|n| PeeringCrds::candidates().contains(n))
                .collect(),
        };
        let mut wanted_needs = needs::needs(&run, Some(&handled), &sa.namespace, &peering_crds);
        if source.setting("scanning.disabled") == Some(&Literal::Bool(true)) {
            wanted_needs.retain(|n| n.check != crate::catalog::CheckId::RbacCrdScan);
        }
        let answers = oracle::answers(&bindings, &needs::permissions(&wanted_needs));
        RbacEvidence {
            service_account: sa,
            answers,
            bindings,
            peering_crds,
            needs: wanted_needs,
            unread_namespaces: Default::default(),
        }
    });
    KopfEvidence {
        run,
        handled: Ok(handled),
        rbac,
        logs: Err(not_in_files("Logs")),
        events: Err(not_in_files("Events")),
        objects: Err(not_in_files("Handled objects")),
        peering: Err(not_in_files("Peering objects")),
        webhooks: Err(not_in_files("kopf-managed webhook configurations")),
        operators: Err(not_in_files("Other kopf operators")),
        declared_storage: (source.files > 0).then(|| source.storage()),
        declared_daemon_stop: source.longest_daemon_stop(),
    }
}

/// The handled resources: what the handlers name, resolved against the CRDs in the
/// manifests and the built-in kinds; when no handler names one the linter can read,
/// the custom resources the RBAC rules name (as the live gatherer infers them).
fn handled(
    source: &SourceFacts,
    manifests: &Manifests,
    bindings: Option<&Vec<crate::model::rbac::Binding>>,
    notes: &mut Vec<String>,
) -> Vec<HandledResource> {
    let digests: Vec<CrdDigest> = manifests.crds.iter().map(CrdDigest::of).collect();
    let mut out: Vec<HandledResource> = Vec::new();
    let push = |out: &mut Vec<HandledResource>, h: HandledResource| {
        if !out
            .iter()
            .any(|o| o.group == h.group && o.plural == h.plural)
        {
            out.push(h);
        }
    };
    let specs = source.handlers.iter().filter_map(|h| h.resource.as_ref());
    for spec in specs {
        match resolve(spec, &digests) {
            Some(h) => push(&mut out, h),
            None => notes.push(format!(
                "Handled resource `{}` is neither a built-in kind nor a CRD in the linted manifests: its RBAC was not checked. Lint the manifests that define its CRD too.",
                spec.name
            )),
        }
    }
    if out.is_empty()
        && let Some(bindings) = bindings
    {
        for (group, plural) in candidates(bindings).keys() {
            if let Some(d) = digests
                .iter()
                .find(|d| &d.group == group && &d.plural == plural)
            {
                push(&mut out, from_crd(d, None, HandledSource::RbacWatch));
            }
        }
    }
    out
}

/// A handler's resource as a handled resource.
fn resolve(spec: &ResourceSpec, crds: &[CrdDigest]) -> Option<HandledResource> {
    let name = spec.name.to_ascii_lowercase();
    let crd = crds.iter().find(|d| {
        spec.group.as_deref().is_none_or(|g| g == d.group)
            && (d.plural == name || d.kind.to_ascii_lowercase() == name)
    });
    if let Some(d) = crd {
        return Some(from_crd(d, spec.version.as_deref(), HandledSource::Source));
    }
    let b = spec.builtin()?;
    Some(HandledResource {
        group: b.group.to_string(),
        version: b.version.to_string(),
        plural: b.plural.to_string(),
        kind: Some(b.kind.to_string()),
        namespaced: b.namespaced,
        crd: None,
        source: HandledSource::Source,
    })
}

#[cfg(test)]
mod tests;

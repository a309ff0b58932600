//! `helm template` on a chart from a repository nobody vouched for: `kopf-audit lint`
//! runs in CI on pull requests from strangers, so every byte of the chart is hostile.
//!
//! helm's chart loader follows symlinks, and a template can print any file it loads
//! (`{{ fail (.Files.Get "env") }}` with `env -> /proc/self/environ` prints helm's
//! environment in its error). So the chart is first copied into a private temporary
//! directory, keeping only the symlinks that stay inside the chart; helm then runs there
//! with an environment of its own (no variable of the CI job), no stdin, a time limit
//! and an output limit; and of what helm says on stderr only one cleaned, redacted,
//! bounded line is kept.

use crate::model::bounded;
use std::ffi::{OsStr, OsString};
use std::fs::{self, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Most of helm's stderr kept to find its error in; the rest is read and discarded, so
/// that helm never blocks on a full pipe.
const MAX_STDERR_BYTES: usize = 64 * 1024;

/// Longest [`RenderError::Failed`] message: a line of helm's, cut.
pub(crate) const MAX_FAILED_MESSAGE_BYTES: usize = 300;

/// Longest part of a failure message that the chart chose itself (the text of `fail`).
const MAX_CHART_MESSAGE_BYTES: usize = 160;

/// Longest location (`chart/templates/x.yaml:3:4`) kept from a failure message.
const MAX_LOCATION_BYTES: usize = 120;

/// How often the child is looked at while it runs.
const POLL: Duration = Duration::from_millis(10);

/// How long the readers of a killed child's pipes are waited for; they end when the
/// pipes close, which killing the process group makes immediate.
const READERS_GRACE: Duration = Duration::from_secs(1);

/// One mebibyte, for showing the bounds.
const MIB: u64 = 1024 * 1024;

/// Bounds of one render: a hostile chart can be huge, deep, or make helm run and print
/// forever.
#[derive(Clone, Debug)]
pub(crate) struct RenderLimits {
    /// Longest helm may run.
    pub(crate) timeout: Duration,
    /// Most helm may print on stdout (the rendered manifests).
    pub(crate) max_output_bytes: usize,
    /// Most bytes of the chart's files copied.
    pub(crate) max_copy_bytes: u64,
    /// Most entries (files, directories, links) of the chart looked at while copying.
    pub(crate) max_copy_files: usize,
    /// Deepest directory nesting copied.
    pub(crate) max_copy_depth: usize,
}

impl Default for RenderLimits {
    /// Bounds far above any real chart's: 30 s, 16 MiB printed, 64 MiB copied in at most
    /// 10 000 entries, 32 directories deep.
    fn default() -> Self {
        RenderLimits {
            timeout: Duration::from_secs(30),
            max_output_bytes: 16 * 1024 * 1024,
            max_copy_bytes: 64 * MIB,
            max_copy_files: 10_000,
            max_copy_depth: 32,
        }
    }
}

/// What a render gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rendered {
    /// The rendered manifests (helm's stdout, invalid UTF-8 replaced).
    pub(crate) text: String,
    /// Chart-relative paths (`/`-separated) of the symlinks left out of the copy
    /// because they leave the chart, dangle or loop. Raw file names from the chart:
    /// clean them before showing them.
    pub(crate) dropped_links: Vec<String>,
    /// Chart-relative paths of the special files (fifos, sockets, devices) left out of
    /// the copy. Raw file names, like [`Rendered::dropped_links`].
    pub(crate) skipped_special: Vec<String>,
    /// The namespace the chart was rendered in (`--namespace`).
    pub(crate) namespace: String,
    /// How the chart was rendered when as asked it did not render.
    pub(crate) fallback: Option<Fallback>,
    /// The dependencies of `Chart.yaml` not vendored under `charts/`, left out of the
    /// render (what they would render was not read). Raw names from the chart.
    pub(crate) unvendored: Vec<String>,
}

/// How a chart that failed to render as asked was rendered, as its CI would: an
/// install names a namespace of its own, an umbrella chart always has a `global`
/// section, and chart-testing installs a chart with each of its `ci/*-values.yaml`.
/// Only tried when no `--values` were given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// In a namespace of its own ([`LINT_NAMESPACE`] unless one was given) with an
    /// empty `global` section.
    AsInstalled,
    /// Besides, with the values of this file of its `ci/` directory (chart-relative,
    /// raw: clean it before showing it).
    CiValues(String),
}

/// The namespace a chart is rendered in when it fails in `default`: templates that
/// refuse the default namespace (`fail` unless `-n` names one) render in it.
pub(crate) const LINT_NAMESPACE: &str = "kopf-audit-lint";

/// Most `ci/*-values.yaml` files tried, in name order.
const MAX_CI_VALUES: usize = 2;

/// Largest `Chart.yaml` read to find its dependencies.
const MAX_CHART_YAML_BYTES: u64 = 64 * 1024;

/// Why a chart could not be copied for rendering.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CopyError {
    /// More bytes than [`RenderLimits::max_copy_bytes`].
    #[error("its files hold more than {}", size(*.limit))]
    TooManyBytes {
        /// The bound.
        limit: u64,
    },
    /// More entries than [`RenderLimits::max_copy_files`].
    #[error("it holds more than {limit} files and directories")]
    TooManyFiles {
        /// The bound.
        limit: usize,
    },
    /// Directories nested deeper than [`RenderLimits::max_copy_depth`].
    #[error("its directories nest more than {limit} deep")]
    TooDeep {
        /// The bound.
        limit: usize,
    },
    /// A file or directory of the chart could not be read, or its copy written.
    #[error("copying {path}: {source}")]
    Io {
        /// The chart-relative path, cleaned (`.` for the chart directory itself).
        path: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The private temporary directory could not be made.
    #[error("a temporary directory could not be made: {source}")]
    Scratch {
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// Why a chart was not rendered. Each message is one sentence saying what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenderError {
    /// No `helm` on PATH.
    #[error(
        "helm is not on PATH: install helm, or render the chart yourself and lint the output with `-f -`, or pass --no-render"
    )]
    NotFound,
    /// helm ran longer than [`RenderLimits::timeout`] and was killed.
    #[error(
        "helm template did not finish within {} s: render the chart yourself and lint the output with `-f -`, or pass --no-render",
        .limit.as_secs_f64()
    )]
    TimedOut {
        /// The bound.
        limit: Duration,
    },
    /// helm printed more than [`RenderLimits::max_output_bytes`] and was killed.
    #[error(
        "helm template printed more than {}: render the chart yourself and lint the output with `-f -`, or pass --no-render",
        size(*.limit as u64)
    )]
    OutputTooLarge {
        /// The bound.
        limit: usize,
    },
    /// helm failed; `message` is its error line, cleaned and bounded.
    #[error(
        "helm template failed: {message}; pass the values the chart needs with --values, or render it yourself and lint the output with `-f -`"
    )]
    Failed {
        /// helm's first useful stderr line: the chart's own words in it cut short,
        /// secrets masked, controls removed, at most [`MAX_FAILED_MESSAGE_BYTES`].
        message: String,
    },
    /// helm failed on a chart whose dependencies are not vendored; they were left out.
    #[error(
        "helm template failed: {message}; its dependencies {} are not vendored under charts/: run `helm dependency build` before lint, as its CI would, or render it yourself and lint the output with `-f -`",
        bounded::listed(.missing, ", ", 5)
    )]
    FailedUnvendored {
        /// As [`RenderError::Failed`].
        message: String,
        /// The dependencies missing from `charts/`, cleaned.
        missing: Vec<String>,
    },
    /// helm is on PATH but could not be started.
    #[error("helm could not be started ({source}): check the helm binary, or pass --no-render")]
    Start {
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The chart could not be copied: over a bound, or I/O.
    #[error(
        "the chart was not rendered because it could not be copied: {0}; render it yourself and lint the output with `-f -`, or pass --no-render"
    )]
    Copy(#[from] CopyError),
}

/// `bytes` for a person: in MiB when whole, else in bytes.
fn size(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// `helm template <release> <chart> --include-crds --namespace=<namespace>
/// [--values=V]... [--set=K=V]...` on a sandboxed copy of `chart_dir`, with the `helm` found on PATH.
/// Symlinks leaving the chart are dropped from the copy (and listed), helm sees none of
/// this process's environment but PATH, and runs within `limits`.
pub(crate) fn helm_template(
    chart_dir: &Path,
    release: &str,
    namespace: &str,
    values: &[PathBuf],
    set: &[String],
    limits: &RenderLimits,
) -> Result<Rendered, RenderError> {
    let path_var = std::env::var_os("PATH");
    let helm = find_helm(path_var.as_deref()).ok_or(RenderError::NotFound)?;
    let job = Job {
        helm: &helm,
        path_var: path_var.as_deref(),
        release,
        namespace,
        values,
        set,
        global: false,
        limits,
    };
    render(&job, chart_dir)
}

/// The executable `helm` in the first absolute directory of `path_var` that has one.
/// Relative entries (`.`, empty) are skipped: they would name a program in whatever
/// directory lint runs in, which may be the repository under review.
fn find_helm(path_var: Option<&OsStr>) -> Option<PathBuf> {
    find_program(path_var, "helm")
}

/// The executable `name` in the first absolute directory of `path_var` that has one
/// (see [`find_helm`] for why relative entries are skipped).
pub(super) fn find_program(path_var: Option<&OsStr>, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file some execute bit is set on.
fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// One render's inputs but the chart: separate from [`helm_template`] so that tests
/// can name the helm program and PATH without changing this process's environment.
#[derive(Clone, Copy)]
struct Job<'a> {
    /// The helm program.
    helm: &'a Path,
    /// PATH given to helm.
    path_var: Option<&'a OsStr>,
    /// The release name.
    release: &'a str,
    /// The namespace.
    namespace: &'a str,
    /// Values files, as given (made absolute before helm sees them).
    values: &'a [PathBuf],
    /// `KEY=VALUE` values, as given (`--set`).
    set: &'a [String],
    /// Whether `global` is set to an empty map (`--set-json=global={}`).
    global: bool,
    /// The bounds.
    limits: &'a RenderLimits,
}

/// The chart copied into a fresh [`Scratch`], its unvendored dependencies left out of
/// the copy's `Chart.yaml`, then rendered there by `job.helm`: as asked, and when that
/// fails (helm's error, not a bound) and no values were given, as its CI would
/// ([`Fallback`]). The first failure is the one reported.
fn render(job: &Job<'_>, chart_dir: &Path) -> Result<Rendered, RenderError> {
    let scratch = Scratch::new().map_err(|source| CopyError::Scratch { source })?;
    let copied = copy_chart(chart_dir, &scratch.chart(), job.limits)?;
    fs::DirBuilder::new()
        .mode(0o700)
        .create(scratch.home())
        .map_err(|source| CopyError::Scratch { source })?;
    let unvendored = strip_unvendored(&scratch.chart());
    let mut first_failure = None;
    for attempt in attempts(job, &scratch.chart()) {
        let this = Job {
            namespace: &attempt.namespace,
            values: &attempt.values,
            global: attempt.fallback.is_some(),
            ..*job
        };
        match run_helm(&this, &scratch, chart_dir) {
            Ok(text) => {
                return Ok(Rendered {
                    text,
                    dropped_links: copied.dropped_links,
                    skipped_special: copied.skipped_special,
                    namespace: attempt.namespace,
                    fallback: attempt.fallback,
                    unvendored,
                });
            }
            Err(RenderError::Failed { message }) => {
                first_failure.get_or_insert(message);
            }
            Err(other) => return Err(other),
        }
    }
    let message = first_failure.unwrap_or_default();
    Err(if unvendored.is_empty() {
        RenderError::Failed { message }
    } else {
        RenderError::FailedUnvendored {
            message,
            missing: unvendored
                .iter()
                .map(|name| bounded::clean_name(name))
                .collect(),
        }
    })
}

/// One way of rendering a chart.
struct Attempt {
    namespace: String,
    values: Vec<PathBuf>,
    fallback: Option<Fallback>,
}

/// The renders to try in order: as asked; then, when no values were given (neither
/// files nor `--set`), as installed, and with each of the first [`MAX_CI_VALUES`] `ci/*-values.yaml` of the
/// chart's copy `chart`.
fn attempts(job: &Job<'_>, chart: &Path) -> Vec<Attempt> {
    let mut out = vec![Attempt {
        namespace: job.namespace.to_string(),
        values: job.values.to_vec(),
        fallback: None,
    }];
    if !job.values.is_empty() || !job.set.is_empty() {
        return out;
    }
    let namespace = if job.namespace == "default" {
        LINT_NAMESPACE.to_string()
    } else {
        job.namespace.to_string()
    };
    out.push(Attempt {
        namespace: namespace.clone(),
        values: Vec::new(),
        fallback: Some(Fallback::AsInstalled),
    });
    for file in ci_values(chart) {
        out.push(Attempt {
            namespace: namespace.clone(),
            values: vec![chart.join("ci").join(&file)],
            fallback: Some(Fallback::CiValues(format!("ci/{file}"))),
        });
    }
    out
}

/// The names of the chart's `ci/*-values.yaml` files (chart-testing's convention), the
/// first [`MAX_CI_VALUES`] in name order; regular files only.
fn ci_values(chart: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(chart.join("ci")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with("-values.yaml"))
        .collect();
    names.sort();
    names.truncate(MAX_CI_VALUES);
    names
}

/// Leaves out of the copied chart's `Chart.yaml` the dependencies that `charts/` does
/// not hold (a directory of that name, or a `NAME-*.tgz`), and drops its `Chart.lock`:
/// helm refuses to render a chart with a dependency missing, and the repository's CI
/// would have run `helm dependency build` first. Returns their names (raw).
fn strip_unvendored(chart: &Path) -> Vec<String> {
    let path = chart.join("Chart.yaml");
    let Ok(file) = fs::File::open(&path) else {
        return Vec::new();
    };
    let Ok(Some(bytes)) = super::bounds::read_at_most(file, MAX_CHART_YAML_BYTES) else {
        return Vec::new();
    };
    let Ok(mut doc) = serde_yaml_ng::from_slice::<serde_yaml_ng::Value>(&bytes) else {
        return Vec::new();
    };
    let vendored = vendored_names(&chart.join("charts"));
    let Some(dependencies) = doc
        .get_mut("dependencies")
        .and_then(serde_yaml_ng::Value::as_sequence_mut)
    else {
        return Vec::new();
    };
    let mut missing = Vec::new();
    dependencies.retain(|d| {
        let name = d
            .get("name")
            .and_then(serde_yaml_ng::Value::as_str)
            .unwrap_or("");
        let present = vendored
            .iter()
            .any(|v| v == name || (v.ends_with(".tgz") && v.starts_with(&format!("{name}-"))));
        if !present {
            missing.push(name.to_string());
        }
        present
    });
    if missing.is_empty() {
        return missing;
    }
    let written = serde_yaml_ng::to_string(&doc)
        .ok()
        .is_some_and(|text| fs::write(&path, text).is_ok());
    if !written {
        return Vec::new();
    }
    let _ = fs::remove_file(chart.join("Chart.lock"));
    missing
}

/// The names of the entries of a chart's `charts/` directory.
fn vendored_names(charts: &Path) -> Vec<String> {
    fs::read_dir(charts)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A private temporary directory (mode 0700) removed with all it holds when dropped:
/// the chart's copy in `chart/`, helm's HOME in `home/`.
pub(super) struct Scratch {
    /// The directory.
    pub(super) root: PathBuf,
}

/// Tells apart the scratch directories of one process.
static SCRATCH_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Scratch {
    /// A new directory under the system's temporary directory; its creation fails
    /// rather than reuse a path that exists, so nobody else's directory or link is used.
    pub(super) fn new() -> io::Result<Scratch> {
        let base = std::env::temp_dir();
        let mut tries = 0;
        loop {
            let root = base.join(Self::name());
            match fs::DirBuilder::new().mode(0o700).create(&root) {
                Ok(()) => return Ok(Scratch { root }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 16 => tries += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// A name no other scratch directory of this process has, nor likely any other's.
    fn name() -> String {
        let n = SCRATCH_COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!("kopf-audit-render-{}-{n}-{nanos}", std::process::id())
    }

    /// Where the chart is copied.
    pub(super) fn chart(&self) -> PathBuf {
        self.root.join("chart")
    }

    /// helm's HOME: empty, so no config, cache, plugin or repository of the job's.
    pub(super) fn home(&self) -> PathBuf {
        self.root.join("home")
    }
}

impl Drop for Scratch {
    /// Removes the directory; a failure leaves it behind for the system's cleaning.
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// What the copy left out.
#[derive(Debug, Default)]
pub(super) struct Copied {
    /// See [`Rendered::dropped_links`].
    pub(super) dropped_links: Vec<String>,
    /// See [`Rendered::skipped_special`].
    pub(super) skipped_special: Vec<String>,
}

/// `chart_dir` copied to `to` (which must not exist) within `limits`: regular files and
/// directories as they are, symlinks resolving inside the chart as what they point to,
/// others dropped, special files and `.git` skipped.
pub(super) fn copy_chart(
    chart_dir: &Path,
    to: &Path,
    limits: &RenderLimits,
) -> Result<Copied, CopyError> {
    let root = fs::canonicalize(chart_dir).map_err(|e| io_error("", e))?;
    let mut copier = Copier {
        root: &root,
        limits,
        bytes: 0,
        entries: 0,
        open: Vec::new(),
        copied: Copied::default(),
    };
    copier.dir(&root, to, "", 0)?;
    Ok(copier.copied)
}

/// [`CopyError::Io`] for the chart-relative `rel` (empty for the chart itself).
fn io_error(rel: &str, source: io::Error) -> CopyError {
    let path = if rel.is_empty() { "." } else { rel };
    CopyError::Io {
        path: bounded::clean(path, bounded::MAX_NAME_BYTES),
        source,
    }
}

/// The state of one copy: the budgets spent, the directories being copied (to stop
/// symlink loops) and what was left out.
struct Copier<'a> {
    /// The chart directory, canonical: every symlink must resolve under it.
    root: &'a Path,
    /// The bounds.
    limits: &'a RenderLimits,
    /// Bytes copied so far.
    bytes: u64,
    /// Entries looked at so far.
    entries: usize,
    /// Canonical paths of the directories being copied, outermost first.
    open: Vec<PathBuf>,
    /// What was left out.
    copied: Copied,
}

impl Copier<'_> {
    /// The directory `from` (canonical) copied to `to`, `depth` levels below the chart.
    fn dir(&mut self, from: &Path, to: &Path, rel: &str, depth: usize) -> Result<(), CopyError> {
        if depth > self.limits.max_copy_depth {
            return Err(CopyError::TooDeep {
                limit: self.limits.max_copy_depth,
            });
        }
        fs::DirBuilder::new()
            .mode(0o700)
            .create(to)
            .map_err(|e| io_error(rel, e))?;
        self.open.push(from.to_path_buf());
        for entry in fs::read_dir(from).map_err(|e| io_error(rel, e))? {
            let entry = entry.map_err(|e| io_error(rel, e))?;
            self.count()?;
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let child_rel = join_rel(rel, &name);
            let kind = entry.file_type().map_err(|e| io_error(&child_rel, e))?;
            self.entry(&entry.path(), kind, &to.join(&name), &child_rel, depth)?;
        }
        self.open.pop();
        Ok(())
    }

    /// One entry of a directory at `depth`, of type `kind` (symlinks not followed).
    fn entry(
        &mut self,
        from: &Path,
        kind: FileType,
        to: &Path,
        rel: &str,
        depth: usize,
    ) -> Result<(), CopyError> {
        if kind.is_symlink() {
            self.link(from, to, rel, depth)
        } else if kind.is_dir() {
            self.dir(from, to, rel, depth + 1)
        } else if kind.is_file() {
            self.file(from, to, rel)
        } else {
            self.copied.skipped_special.push(rel.to_string());
            Ok(())
        }
    }

    /// A symlink: copied as what it resolves to when that is inside the chart and not a
    /// directory being copied (a loop); otherwise dropped and listed.
    fn link(&mut self, from: &Path, to: &Path, rel: &str, depth: usize) -> Result<(), CopyError> {
        let target = fs::canonicalize(from)
            .ok()
            .filter(|target| target.starts_with(self.root))
            .filter(|target| !self.open.contains(target));
        let Some(target) = target else {
            self.copied.dropped_links.push(rel.to_string());
            return Ok(());
        };
        let kind = fs::symlink_metadata(&target)
            .map_err(|e| io_error(rel, e))?
            .file_type();
        self.entry(&target, kind, to, rel, depth)
    }

    /// A regular file copied, within the byte budget. Opened without following a
    /// symlink and without blocking (should it have become a fifo), then checked to be
    /// a regular file.
    fn file(&mut self, from: &Path, to: &Path, rel: &str) -> Result<(), CopyError> {
        let source = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(from)
            .map_err(|e| io_error(rel, e))?;
        if !source.metadata().map_err(|e| io_error(rel, e))?.is_file() {
            self.copied.skipped_special.push(rel.to_string());
            return Ok(());
        }
        let mut copy = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(to)
            .map_err(|e| io_error(rel, e))?;
        let left = self.limits.max_copy_bytes.saturating_sub(self.bytes);
        let written = io::copy(&mut source.take(left.saturating_add(1)), &mut copy)
            .map_err(|e| io_error(rel, e))?;
        if written > left {
            return Err(CopyError::TooManyBytes {
                limit: self.limits.max_copy_bytes,
            });
        }
        self.bytes += written;
        Ok(())
    }

    /// One more entry looked at, within the budget.
    fn count(&mut self) -> Result<(), CopyError> {
        self.entries += 1;
        if self.entries > self.limits.max_copy_files {
            return Err(CopyError::TooManyFiles {
                limit: self.limits.max_copy_files,
            });
        }
        Ok(())
    }
}

/// `rel/name`, or `name` at the chart's top.
fn join_rel(rel: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if rel.is_empty() {
        name.into_owned()
    } else {
        format!("{rel}/{name}")
    }
}

/// How a supervised helm ended.
pub(super) enum Outcome {
    /// It exited by itself, with what it printed.
    Exited {
        /// Its status.
        status: ExitStatus,
        /// Its stdout, at most [`RenderLimits::max_output_bytes`].
        stdout: Vec<u8>,
        /// Its stderr, at most [`MAX_STDERR_BYTES`].
        stderr: Vec<u8>,
    },
    /// It ran out of time and was killed.
    TimedOut,
    /// It printed too much and was killed.
    TooLarge,
}

/// helm run on the copy in `scratch`; its stdout on success. `chart_dir` is how the
/// chart is named in a failure message instead of the copy's path.
fn run_helm(job: &Job<'_>, scratch: &Scratch, chart_dir: &Path) -> Result<String, RenderError> {
    let mut child = command(job, scratch).spawn().map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            RenderError::NotFound
        } else {
            RenderError::Start { source }
        }
    })?;
    match supervise(&mut child, job.limits) {
        Outcome::Exited { status, stdout, .. } if status.success() => {
            Ok(String::from_utf8_lossy(&stdout).into_owned())
        }
        Outcome::Exited { status, stderr, .. } => Err(RenderError::Failed {
            message: failure_message(&stderr, status, scratch, chart_dir),
        }),
        Outcome::TimedOut => Err(RenderError::TimedOut {
            limit: job.limits.timeout,
        }),
        Outcome::TooLarge => Err(RenderError::OutputTooLarge {
            limit: job.limits.max_output_bytes,
        }),
    }
}

/// The helm command: its arguments, an environment of PATH and a HOME of its own only,
/// no stdin, piped output, the scratch directory as working directory, and a process
/// group of its own so that a kill reaches anything it started.
fn command(job: &Job<'_>, scratch: &Scratch) -> Command {
    let home = scratch.home();
    let mut command = Command::new(job.helm);
    command
        .arg("template")
        .arg(job.release)
        .arg(scratch.chart())
        .arg("--include-crds")
        .arg(format!("--namespace={}", job.namespace));
    if job.global {
        command.arg("--set-json=global={}");
    }
    for values in job.values {
        let mut arg = OsString::from("--values=");
        arg.push(std::path::absolute(values).unwrap_or_else(|_| values.clone()));
        command.arg(arg);
    }
    for value in job.set {
        command.arg(format!("--set={value}"));
    }
    command.env_clear();
    if let Some(path_var) = job.path_var {
        command.env("PATH", path_var);
    }
    command
        .env("HOME", &home)
        .env("HELM_CACHE_HOME", home.join(".cache/helm"))
        .env("HELM_CONFIG_HOME", home.join(".config/helm"))
        .env("HELM_DATA_HOME", home.join(".local/share/helm"))
        .current_dir(&scratch.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    command
}

/// The child watched until it exits, runs out of time or prints too much; killed (its
/// whole process group) and reaped in the last two cases.
pub(super) fn supervise(child: &mut Child, limits: &RenderLimits) -> Outcome {
    let deadline = Instant::now() + limits.timeout;
    let stdout = child
        .stdout
        .take()
        .map(|pipe| read_stdout(pipe, limits.max_output_bytes));
    let stderr = child.stderr.take().map(read_stderr);
    let mut out = None;
    let status = loop {
        if out.is_none() {
            out = poll(stdout.as_ref());
            if matches!(out, Some(Printed::TooMuch)) {
                return kill(child, Outcome::TooLarge);
            }
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
            Ok(None) | Err(_) => return kill(child, Outcome::TimedOut),
        }
    };
    finish(child, status, out, stdout, stderr, deadline)
}

/// After helm exited: its output, once the readers have it (before the deadline).
/// Something helm started and left running may still hold the pipes: then its process
/// group is killed.
fn finish(
    child: &Child,
    status: ExitStatus,
    out: Option<Printed>,
    stdout: Option<Receiver<Printed>>,
    stderr: Option<Receiver<Vec<u8>>>,
    deadline: Instant,
) -> Outcome {
    let out = match (out, stdout) {
        (Some(out), _) => out,
        (None, Some(rx)) => {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(out) => out,
                Err(RecvTimeoutError::Disconnected) => Printed::Text(Vec::new()),
                Err(RecvTimeoutError::Timeout) => {
                    kill_group(child);
                    return Outcome::TimedOut;
                }
            }
        }
        (None, None) => Printed::Text(Vec::new()),
    };
    let Printed::Text(stdout) = out else {
        return Outcome::TooLarge;
    };
    let wait = deadline
        .saturating_duration_since(Instant::now())
        .max(READERS_GRACE);
    let stderr = match stderr.map(|rx| rx.recv_timeout(wait)) {
        Some(Ok(stderr)) => stderr,
        Some(Err(RecvTimeoutError::Timeout)) => {
            kill_group(child);
            Vec::new()
        }
        Some(Err(RecvTimeoutError::Disconnected)) | None => Vec::new(),
    };
    Outcome::Exited {
        status,
        stdout,
        stderr,
    }
}

/// What the stdout reader gave, if it is done.
fn poll(stdout: Option<&Receiver<Printed>>) -> Option<Printed> {
    match stdout?.try_recv() {
        Ok(out) => Some(out),
        Err(TryRecvError::Empty) => None,
        Err(TryRecvError::Disconnected) => Some(Printed::Text(Vec::new())),
    }
}

/// The child's process group killed, the child reaped, and `outcome`.
fn kill(child: &mut Child, outcome: Outcome) -> Outcome {
    kill_group(child);
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

/// SIGKILL to the child's process group (the child leads it: `process_group(0)`).
fn kill_group(child: &Child) {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    // SAFETY: kill(2) takes two integers and touches no memory of this process. The
    // group is the child's own; while the child is unreaped, or any process of its
    // group lives, no other group can have its id.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// What helm printed on stdout, as its reader thread tells it.
enum Printed {
    /// All of it, at most [`RenderLimits::max_output_bytes`].
    Text(Vec<u8>),
    /// More than the bound, or the pipe failed: helm is to be stopped.
    TooMuch,
}

/// A thread reading helm's stdout: it sends all of it, or [`Printed::TooMuch`] as soon
/// as that is more than `max` bytes (and then stops reading, closing the pipe).
fn read_stdout(pipe: ChildStdout, max: usize) -> Receiver<Printed> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        let mut out = Vec::new();
        let read = pipe.take(limit).read_to_end(&mut out);
        let printed = if read.is_ok() && out.len() <= max {
            Printed::Text(out)
        } else {
            Printed::TooMuch
        };
        let _ = tx.send(printed);
    });
    rx
}

/// A thread reading helm's stderr: it keeps the first [`MAX_STDERR_BYTES`], reads and
/// discards the rest until the pipe closes, then sends what it kept.
fn read_stderr(mut pipe: ChildStderr) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut pipe)
            .take(MAX_STDERR_BYTES as u64)
            .read_to_end(&mut kept);
        let _ = io::copy(&mut pipe, &mut io::sink());
        let _ = tx.send(kept);
    });
    rx
}

/// The one line of helm's `stderr` worth showing, safe to show: the scratch paths
/// replaced by `chart_dir` and `<temp>`, the chart's own words in it cut short, secrets
/// masked, controls removed, bounded. When helm said nothing, its exit status.
fn failure_message(
    stderr: &[u8],
    status: ExitStatus,
    scratch: &Scratch,
    chart_dir: &Path,
) -> String {
    let text = String::from_utf8_lossy(stderr);
    let Some(line) = error_line(&text) else {
        return format!("helm gave no reason ({status})");
    };
    let line = line
        .replace(
            &*scratch.chart().to_string_lossy(),
            &chart_dir.to_string_lossy(),
        )
        .replace(&*scratch.root.to_string_lossy(), "<temp>");
    bounded::clean(&shorten_chart_words(&line), MAX_FAILED_MESSAGE_BYTES)
}

/// The first line saying what failed: one starting `Error:` (helm's own prefix, which
/// is dropped), else klog's error line (kubectl's: `E1207 12:00:00.000000 1 run.go:72]
/// "command failed" err="..."`, its `err` kept), else one naming an error, else the
/// first that is not blank and not a warning (kustomize warns of deprecated fields
/// before it fails for another reason).
pub(super) fn error_line(text: &str) -> Option<&str> {
    let lines = || text.lines().map(str::trim).filter(|l| !l.is_empty());
    let warning = |l: &&str| {
        let l = l.trim_start_matches('#').trim_start();
        l.starts_with("Warning:") || l.starts_with("WARNING:")
    };
    lines()
        .find_map(|l| l.strip_prefix("Error:"))
        .map(str::trim)
        .or_else(|| lines().find_map(klog_error))
        .or_else(|| {
            lines()
                .filter(|l| !warning(l))
                .find(|l| l.to_ascii_lowercase().contains("error"))
        })
        .or_else(|| lines().find(|l| !warning(l)))
        .or_else(|| lines().next())
}

/// What a klog error line (`E1207 22:46:35.011860   10333 run.go:72] "command failed"
/// err="..."`) says: its `err` value, else all after the header.
fn klog_error(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix('E')
        .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))?;
    let (_, message) = rest.split_once("] ")?;
    Some(match message.split_once("err=\"") {
        Some((_, err)) => err.strip_suffix('"').unwrap_or(err),
        None => message,
    })
}

/// `line` with the words the chart chose itself cut short: in `execution error at
/// (LOCATION): MESSAGE` (what `fail` and `required` give), MESSAGE is the template's
/// own text, so only the location and a short, cleaned, quoted MESSAGE are kept.
fn shorten_chart_words(line: &str) -> String {
    const MARK: &str = "execution error at (";
    let Some(at) = line.find(MARK) else {
        return line.to_string();
    };
    let (before, rest) = line.split_at(at + MARK.len());
    let (location, message) = rest.split_once("):").unwrap_or((rest, ""));
    format!(
        "{before}{}): the chart's message: \"{}\"",
        bounded::clean(location, MAX_LOCATION_BYTES),
        bounded::clean(message, MAX_CHART_MESSAGE_BYTES),
    )
}

#[cfg(test)]
pub(super) mod tests;

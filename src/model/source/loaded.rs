//! Which of a repository's Python files a kopf process loads: the files and modules
//! `kopf run` names (kopf 1.45 `_cogs/helpers/loaders.py` `preload` executes each path
//! and imports each `-m` module), or the file that calls `kopf.run()`, and the
//! repository's modules those import, transitively. A repository also keeps Python no
//! container runs (an `Archive/`, a test client, a second prototype); its handlers
//! are not the operator's, and what they would need or do wrong is not a finding.

use super::{Location, SourceFacts};
use std::collections::BTreeSet;

/// What a kopf process is told to load.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Entry {
    /// A file, as the container names it (`/app/operator.py`, `handlers.py`).
    Path(String),
    /// A module (`-m pkg.handlers`).
    Module(String),
}

/// A module a file imports, as the file writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Import {
    /// The importing file (relative to the linted root) and line.
    pub(crate) location: Location,
    /// The dotted module (`pkg.sub`; empty for `from . import x`).
    pub(crate) module: String,
    /// How many leading dots (`from ..pkg import x`: 2); 0 for an absolute import.
    pub(crate) level: u32,
    /// The names a `from` import takes: each may be a submodule.
    pub(crate) names: Vec<String>,
}

/// What the load from some entries reaches, or why it cannot be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Loaded {
    /// The files loaded (relative to the linted root).
    Files(BTreeSet<String>),
    /// What is loaded cannot be told from the files: nothing is left out.
    Unknown,
}

impl SourceFacts {
    /// The files of `python` (every Python file read, relative to the linted root) that
    /// a process loading `entries` runs. [`Loaded::Unknown`] when there is no entry, an
    /// entry matches no file, or a loaded file's imports are not all known (it did not
    /// parse, or imports a computed name).
    pub(crate) fn loaded_from(&self, entries: &[Entry], python: &[&str]) -> Loaded {
        if entries.is_empty() {
            return Loaded::Unknown;
        }
        let mut loaded = BTreeSet::new();
        let mut queue: Vec<String> = Vec::new();
        for entry in entries {
            let found = match entry {
                Entry::Path(path) => by_path(path, python),
                Entry::Module(module) => by_module(module, python),
            };
            if found.is_empty() {
                return Loaded::Unknown;
            }
            queue.extend(found);
        }
        while let Some(file) = queue.pop() {
            if !loaded.insert(file.clone()) {
                continue;
            }
            if self.imports_unknown(&file) {
                return Loaded::Unknown;
            }
            for import in self.imports.iter().filter(|i| i.location.file == file) {
                queue.extend(imported(import, python));
            }
        }
        Loaded::Files(loaded)
    }

    /// Whether what `file` imports is not all known: it did not parse, or it imports a
    /// name computed at run time.
    fn imports_unknown(&self, file: &str) -> bool {
        self.problems.iter().any(|p| p.location.file == file)
            || self.dynamic_imports.iter().any(|l| l.file == file)
    }

    /// The facts of `files` only.
    pub(crate) fn only(&self, files: &BTreeSet<String>) -> SourceFacts {
        let keep = |l: &Location| files.contains(&l.file);
        SourceFacts {
            starts: filtered(&self.starts, |s| keep(&s.location)),
            handlers: filtered(&self.handlers, |h| keep(&h.location)),
            helpers: filtered(&self.helpers, |h| keep(&h.location)),
            settings: filtered(&self.settings, |s| keep(&s.location)),
            problems: filtered(&self.problems, |p| keep(&p.location)),
            imports: filtered(&self.imports, |i| keep(&i.location)),
            dynamic_imports: filtered(&self.dynamic_imports, keep),
            files: files.len(),
            kopf: self.kopf.clone(),
        }
    }
}

/// The items `keep` keeps.
fn filtered<T: Clone>(items: &[T], keep: impl Fn(&T) -> bool) -> Vec<T> {
    items.iter().filter(|i| keep(i)).cloned().collect()
}

/// Whether `file` is `tail` or ends with `/tail`.
fn ends_with_path(file: &str, tail: &str) -> bool {
    file == tail
        || file
            .strip_suffix(tail)
            .is_some_and(|head| head.ends_with('/'))
}

/// The files a container's path names: those that end with the longest tail of its
/// components that any file ends with (`/app/src/op.py`: `app/src/op.py`, then
/// `src/op.py`, then `op.py`), since the image copies the repository's files to a
/// directory of its own.
fn by_path(path: &str, python: &[&str]) -> Vec<String> {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    (0..parts.len())
        .map(|skip| parts[skip..].join("/"))
        .map(|tail| matching(python, |f| ends_with_path(f, &tail)))
        .find(|found| !found.is_empty())
        .unwrap_or_default()
}

/// The files a dotted module is (`a.b`: `…/a/b.py` or `…/a/b/__init__.py`), with the
/// packages' `__init__.py` on the way, which Python runs first.
fn by_module(module: &str, python: &[&str]) -> Vec<String> {
    if module.is_empty() {
        return Vec::new();
    }
    let tail = module.replace('.', "/");
    let mut found = matching(python, |f| {
        ends_with_path(f, &format!("{tail}.py"))
            || ends_with_path(f, &format!("{tail}/__init__.py"))
    });
    let packages: Vec<String> = found.iter().flat_map(|f| packages_of(f, module)).collect();
    found.extend(
        packages
            .into_iter()
            .filter(|p| python.contains(&p.as_str())),
    );
    found
}

/// The `__init__.py` of each package above the module `module` in `file`.
fn packages_of(file: &str, module: &str) -> Vec<String> {
    let depth = module.split('.').count();
    let dirs: Vec<&str> = file.split('/').collect();
    let own = if file.ends_with("/__init__.py") { 2 } else { 1 };
    // The module's own directory components, without the file's name.
    let Some(root_len) = dirs.len().checked_sub(own + depth - 1) else {
        return Vec::new();
    };
    (root_len + 1..dirs.len() + 1 - own)
        .map(|end| format!("{}/__init__.py", dirs[..end].join("/")))
        .collect()
}

/// The files of `python` that `wanted` picks.
fn matching(python: &[&str], wanted: impl Fn(&str) -> bool) -> Vec<String> {
    python
        .iter()
        .filter(|f| wanted(f))
        .map(|f| (*f).to_string())
        .collect()
}

/// The repository's files one import loads: the module, and each name of a `from`
/// import that is a submodule. A relative import is resolved from the importing
/// file's package; an absolute one by the module's path anywhere in the repository
/// (over-including a same-named module only keeps findings, never loses them).
fn imported(import: &Import, python: &[&str]) -> Vec<String> {
    let modules: Vec<String> = if import.level == 0 {
        std::iter::once(import.module.clone())
            .chain(
                import
                    .names
                    .iter()
                    .map(|n| format!("{}.{n}", import.module)),
            )
            .collect()
    } else {
        return relative(import, python);
    };
    modules.iter().flat_map(|m| by_module(m, python)).collect()
}

/// The files a relative import loads: from the importing file's directory, up
/// `level - 1` directories, then the module's path.
fn relative(import: &Import, python: &[&str]) -> Vec<String> {
    let mut dir: Vec<&str> = import.location.file.split('/').collect();
    dir.pop();
    for _ in 1..import.level {
        if dir.pop().is_none() {
            return Vec::new();
        }
    }
    let exact = |tail: String| python.iter().find(|f| **f == tail).map(|f| f.to_string());
    let mut base = dir.join("/");
    // The packages on the way, which Python runs first.
    let mut packages = Vec::new();
    for part in import.module.split('.').filter(|p| !p.is_empty()) {
        packages.extend(exact(join(&base, "__init__.py")));
        base = join(&base, part);
    }
    let mut found: Vec<String> = if import.module.is_empty() {
        // `from . import x`: the package itself, then each name.
        exact(join(&base, "__init__.py")).into_iter().collect()
    } else {
        [
            exact(format!("{base}.py")),
            exact(join(&base, "__init__.py")),
        ]
        .into_iter()
        .flatten()
        .collect()
    };
    found.extend(packages);
    for name in &import.names {
        let sub = join(&base, name);
        found.extend(exact(format!("{sub}.py")));
        found.extend(exact(join(&sub, "__init__.py")));
    }
    found
}

/// `dir/name`, or `name` at the root.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests;

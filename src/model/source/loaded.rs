//! Which of a repository's Python files a kopf process loads: the files and modules
//! `kopf run` names (kopf 1.45 `_cogs/helpers/loaders.py` `preload` executes each path
//! and imports each `-m` module), or the file that calls `kopf.run()`, and the
//! repository's modules those import, transitively. A repository also keeps Python no
//! container runs (an `Archive/`, a test client, a second prototype); its handlers
//! are not the operator's, and what they would need or do wrong is not a finding.

use super::{Location, SourceFacts};
use std::cell::Cell;
use std::collections::{BTreeSet, HashMap, HashSet};

/// What a kopf process is told to load.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Entry {
    /// A file, as the container names it (`/app/operator.py`, `handlers.py`).
    Path(String),
    /// A module kopf imports (`kopf run -m pkg.handlers`).
    Module(String),
    /// A module Python runs as the main one (`python -m pkg`): a package's
    /// `__main__.py`, after its `__init__.py`, or a module's own file.
    Main(String),
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

/// Most candidate files [`ImportGraph`] compares, over all its loads: past that, what
/// is loaded is not known and every file is checked. A hostile repository of 20,000
/// files of the same name, each importing a thousand modules, would otherwise cost
/// billions of comparisons.
pub(crate) const MAX_COMPARISONS: usize = 4_000_000;

/// The repository's Python files and what each imports, indexed once for every
/// Deployment's [`ImportGraph::loaded_from`].
pub(crate) struct ImportGraph<'a> {
    /// Every Python file read, by its file name.
    by_name: HashMap<&'a str, Vec<&'a str>>,
    /// Every Python file read.
    files: HashSet<&'a str>,
    /// The imports of each file.
    imports_of: HashMap<&'a str, Vec<&'a Import>>,
    /// The files whose imports are not all known: they did not parse, or import a name
    /// computed at run time.
    unknown: HashSet<&'a str>,
    /// The comparisons left of [`MAX_COMPARISONS`].
    budget: Cell<usize>,
}

/// The comparisons ran out: what is loaded is not known.
struct Exhausted;

impl SourceFacts {
    /// The import graph of `python` (every Python file read, relative to the linted
    /// root), to tell which files a kopf process loads.
    pub(crate) fn import_graph<'a>(&'a self, python: &[&'a str]) -> ImportGraph<'a> {
        let mut by_name: HashMap<&str, Vec<&str>> = HashMap::new();
        for file in python {
            by_name.entry(file_name(file)).or_default().push(file);
        }
        let mut imports_of: HashMap<&str, Vec<&Import>> = HashMap::new();
        for import in &self.imports {
            imports_of
                .entry(import.location.file.as_str())
                .or_default()
                .push(import);
        }
        let unknown = self
            .problems
            .iter()
            .map(|p| p.location.file.as_str())
            .chain(self.dynamic_imports.iter().map(|l| l.file.as_str()))
            .collect();
        ImportGraph {
            by_name,
            files: python.iter().copied().collect(),
            imports_of,
            unknown,
            budget: Cell::new(MAX_COMPARISONS),
        }
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
            debug_configures: filtered(&self.debug_configures, |(_, l)| keep(l)),
            files: files.len(),
            kopf: self.kopf.clone(),
        }
    }
}

impl ImportGraph<'_> {
    /// The files a process loading `entries` runs: [`Loaded::Unknown`] when there is no
    /// entry, an entry matches no file, a loaded file's imports are not all known, or
    /// the comparisons ran out.
    pub(crate) fn loaded_from(&self, entries: &[Entry]) -> Loaded {
        self.walk(entries).unwrap_or(Loaded::Unknown)
    }

    /// [`ImportGraph::loaded_from`], stopped when the comparisons run out.
    fn walk(&self, entries: &[Entry]) -> Result<Loaded, Exhausted> {
        if entries.is_empty() {
            return Ok(Loaded::Unknown);
        }
        let mut queue: Vec<String> = Vec::new();
        for entry in entries {
            let found = match entry {
                Entry::Path(path) => self.by_path(path)?,
                Entry::Module(module) => self.by_module(module)?,
                Entry::Main(module) => {
                    let mut found = self.by_module(module)?;
                    found.extend(self.by_module(&format!("{module}.__main__"))?);
                    found
                }
            };
            if found.is_empty() {
                return Ok(Loaded::Unknown);
            }
            queue.extend(found);
        }
        let mut loaded = BTreeSet::new();
        let mut modules_seen = HashSet::new();
        while let Some(file) = queue.pop() {
            if loaded.contains(&file) {
                continue;
            }
            if self.unknown.contains(file.as_str()) {
                return Ok(Loaded::Unknown);
            }
            for import in self.imports_of.get(file.as_str()).into_iter().flatten() {
                queue.extend(self.imported(import, &mut modules_seen)?);
            }
            loaded.insert(file);
        }
        Ok(Loaded::Files(loaded))
    }

    /// The files whose path is `tail` or ends with `/tail`, each compared charged to
    /// the budget.
    fn ending_with(&self, tail: &str) -> Result<Vec<String>, Exhausted> {
        let candidates = self
            .by_name
            .get(file_name(tail))
            .map_or(&[][..], Vec::as_slice);
        let left = self.budget.get();
        if candidates.len() > left {
            self.budget.set(0);
            return Err(Exhausted);
        }
        self.budget.set(left - candidates.len());
        Ok(candidates
            .iter()
            .filter(|f| ends_with_path(f, tail))
            .map(|f| (*f).to_string())
            .collect())
    }

    /// The files a container's path names: those that end with the longest tail of its
    /// components that any file ends with (`/app/src/op.py`: `app/src/op.py`, then
    /// `src/op.py`, then `op.py`), since the image copies the repository's files to a
    /// directory of its own.
    fn by_path(&self, path: &str) -> Result<Vec<String>, Exhausted> {
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        for skip in 0..parts.len() {
            let found = self.ending_with(&parts[skip..].join("/"))?;
            if !found.is_empty() {
                return Ok(found);
            }
        }
        Ok(Vec::new())
    }

    /// The files a dotted module is (`a.b`: `…/a/b.py` or `…/a/b/__init__.py`), with the
    /// packages' `__init__.py` on the way, which Python runs first.
    fn by_module(&self, module: &str) -> Result<Vec<String>, Exhausted> {
        if module.is_empty() {
            return Ok(Vec::new());
        }
        let tail = module.replace('.', "/");
        let mut found = self.ending_with(&format!("{tail}.py"))?;
        found.extend(self.ending_with(&format!("{tail}/__init__.py"))?);
        let packages: Vec<String> = found
            .iter()
            .flat_map(|f| packages_of(f, module))
            .filter(|p| self.files.contains(p.as_str()))
            .collect();
        found.extend(packages);
        Ok(found)
    }

    /// The repository's files one import loads: the module, and each name of a `from`
    /// import that is a submodule. A relative import is resolved from the importing
    /// file's package; an absolute one by the module's path anywhere in the repository
    /// (over-including a same-named module only keeps findings, never loses them),
    /// once per load (`seen`).
    fn imported(
        &self,
        import: &Import,
        seen: &mut HashSet<String>,
    ) -> Result<Vec<String>, Exhausted> {
        if import.level > 0 {
            return Ok(self.relative(import));
        }
        let named = import
            .names
            .iter()
            .map(|n| format!("{}.{n}", import.module));
        let mut found = Vec::new();
        for module in std::iter::once(import.module.clone()).chain(named) {
            if seen.insert(module.clone()) {
                found.extend(self.by_module(&module)?);
            }
        }
        Ok(found)
    }

    /// The files a relative import loads: from the importing file's directory, up
    /// `level - 1` directories, then the module's path.
    fn relative(&self, import: &Import) -> Vec<String> {
        let mut dir: Vec<&str> = import.location.file.split('/').collect();
        dir.pop();
        for _ in 1..import.level {
            if dir.pop().is_none() {
                return Vec::new();
            }
        }
        let exact = |path: String| self.files.contains(path.as_str()).then_some(path);
        let mut base = dir.join("/");
        // The packages on the way, which Python runs first.
        let mut found = Vec::new();
        for part in import.module.split('.').filter(|p| !p.is_empty()) {
            found.extend(exact(join(&base, "__init__.py")));
            base = join(&base, part);
        }
        if !import.module.is_empty() {
            found.extend(exact(format!("{base}.py")));
        }
        // `from . import x` runs the package itself, then each name.
        found.extend(exact(join(&base, "__init__.py")));
        for name in &import.names {
            let sub = join(&base, name);
            found.extend(exact(format!("{sub}.py")));
            found.extend(exact(join(&sub, "__init__.py")));
        }
        found
    }
}

/// The items `keep` keeps.
fn filtered<T: Clone>(items: &[T], keep: impl Fn(&T) -> bool) -> Vec<T> {
    items.iter().filter(|i| keep(i)).cloned().collect()
}

/// The last component of a path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `file` is `tail` or ends with `/tail`.
fn ends_with_path(file: &str, tail: &str) -> bool {
    file == tail
        || file
            .strip_suffix(tail)
            .is_some_and(|head| head.ends_with('/'))
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

//! What an operator's files show before it is deployed, for `kopf-audit lint`: where
//! kopf is started from Python, the handlers and the resources they name, and the
//! settings written. The files gatherer fills it; the `source.*` checks and the files
//! gatherer's handled resources read it.

use std::fmt;

/// A place in a linted file: its path relative to the linted root, and a 1-based line.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Location {
    /// The path, with `/` separators, relative to the linted root (or `-` for stdin).
    pub(crate) file: String,
    /// The line, from 1.
    pub(crate) line: u32,
}

impl Location {
    /// A place in a file.
    pub(crate) fn new(file: impl Into<String>, line: u32) -> Location {
        Location {
            file: file.into(),
            line,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// An input `kopf-audit lint` was asked to read and could not (a chart that did not
/// render, a file over a bound, a file that is not text): a run with one is not a
/// pass, whatever else it found, so every output format says so and the command exits 2
/// unless `--allow-unrendered` is given.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Unread {
    /// The file or directory, relative to the linted root, with `/` separators.
    pub(crate) path: String,
    /// Why, as a sentence a person can act on; already cleaned and bounded.
    pub(crate) why: String,
}

/// A value written in the source: a literal the linter could read, or an expression it
/// does not evaluate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Literal {
    /// `True` / `False`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
    /// A list or tuple of strings.
    Strings(Vec<String>),
    /// `None`.
    None,
    /// A dotted name (`logging.WARNING`), as written.
    Name(String),
    /// A call, by the dotted name of what is called (`kopf.StatusProgressStorage`);
    /// its arguments are not read.
    Call(String),
    /// Anything else: not evaluated.
    Other,
}

/// A call that starts kopf from Python: `kopf.run()`, `kopf.operator()` or
/// `kopf.spawn_tasks()`, with the keyword arguments that set what `kopf run`'s flags set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PyStart {
    /// Where the call is.
    pub(crate) location: Location,
    /// `kopf.run`, `kopf.operator` or `kopf.spawn_tasks`.
    pub(crate) function: String,
    /// `clusterwide=`.
    pub(crate) clusterwide: Option<Literal>,
    /// `namespaces=`.
    pub(crate) namespaces: Option<Literal>,
    /// `standalone=`.
    pub(crate) standalone: Option<Literal>,
    /// `peering_name=`.
    pub(crate) peering_name: Option<Literal>,
    /// `priority=`.
    pub(crate) priority: Option<Literal>,
    /// `liveness_endpoint=`.
    pub(crate) liveness_endpoint: Option<Literal>,
}

/// What a handler decorator names as its resource, as kopf's `Selector` reads the
/// positional and keyword arguments (kopf 1.45 `_cogs/structs/references.py`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResourceSpec {
    /// The API group, when given (`""` for core `v1`).
    pub(crate) group: Option<String>,
    /// The version, when given.
    pub(crate) version: Option<String>,
    /// A plural, kind, singular or short name.
    pub(crate) name: String,
}

/// One kopf handler: a function under a `@kopf.…` decorator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Handler {
    /// Where the decorator is.
    pub(crate) location: Location,
    /// The function's name.
    pub(crate) function: String,
    /// The decorator without `kopf.` (`on.create`, `timer`, `daemon`, `index`, `on.startup`).
    pub(crate) decorator: String,
    /// The resource, for resource handlers; `None` for startup, cleanup, login, probes,
    /// or a resource the linter cannot read (a variable).
    pub(crate) resource: Option<ResourceSpec>,
    /// The decorator as written, from `@` to its closing parenthesis.
    pub(crate) text: String,
    /// The other kopf decorators stacked on the same function (`@kopf.on.create(...)`
    /// over `@kopf.on.resume(...)`: one function, two handlers).
    pub(crate) stacked: Vec<Registration>,
    /// Whether it is `async def`.
    pub(crate) is_async: bool,
    /// Whether the signature ends with `**kwargs`.
    pub(crate) has_kwargs: bool,
    /// Whether it narrows the objects it handles (`labels=`, `annotations=`, `when=`,
    /// `field=`, `value=`, a callable resource filter).
    pub(crate) filtered: bool,
    /// Blocking calls in its body, when it is `async def`: what and where.
    pub(crate) blocking_calls: Vec<(String, Location)>,
    /// Calls of plain names in its body (`helper(...)`, `await helper(...)`), when it is
    /// `async def`: the functions of the repository it may run in the event loop.
    pub(crate) calls: Vec<(String, Location)>,
    /// Calls on a module-level logger in its body: which logger and where.
    pub(crate) module_logger_calls: Vec<(String, Location)>,
    /// Calls on kopf's `logger` keyword argument in its body: the level's method
    /// (`info`, `warning`...) and where.
    pub(crate) kopf_logger_calls: Vec<(String, Location)>,
    /// `raise kopf.TemporaryError(...)` / `kopf.PermanentError(...)` in its body.
    pub(crate) raises: Vec<(String, Location)>,
    /// Calls that post an Event (`kopf.event`, `kopf.info`, `kopf.warn`,
    /// `kopf.exception`) in its body, and whether each runs on every call (a statement
    /// of the function's own body, under no condition or loop).
    pub(crate) posts: Vec<(Location, bool)>,
    /// Writes through kopf's `patch` argument to what kopf diffs on the handler's own
    /// object (`patch.spec…`, `patch.metadata.labels…`/`annotations…`) of a value that
    /// differs on every call (the time, a random or unique id): the written path, where,
    /// and whether it runs on every call (a statement of the function's own body).
    pub(crate) self_patches: Vec<(String, Location, bool)>,
    /// What its body and decorator show of how it stops, when it is a daemon
    /// (`@kopf.daemon`); `None` for every other handler.
    pub(crate) daemon: Option<DaemonFacts>,
}

/// A duration written in the source (`cancellation_timeout=2.5`, `time.sleep(10)`), in
/// milliseconds so that it compares exactly; only number literals and their sums and
/// products are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Millis(pub(crate) u64);

impl Millis {
    /// Whole seconds, rounded up: what a grace period in seconds must at least be.
    pub(crate) fn ceil_seconds(self) -> u64 {
        self.0.div_ceil(1000)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1000) {
            write!(f, "{} s", self.0 / 1000)
        } else {
            write!(f, "{}.{:03} s", self.0 / 1000, self.0 % 1000)
        }
    }
}

/// A daemon's stopping, as its decorator and body show it: kopf asks a daemon to stop
/// by setting its `stopped` flag, waits `cancellation_backoff`, then (when
/// `cancellation_timeout` is set) cancels an async daemon and waits that long more
/// (kopf 1.45 `_core/engines/daemons.py`, `stop_daemon`/`stop_daemons`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DaemonFacts {
    /// `cancellation_backoff=`, when a number the linter reads.
    pub(crate) cancellation_backoff: Option<Millis>,
    /// `cancellation_timeout=`, when a number the linter reads.
    pub(crate) cancellation_timeout: Option<Millis>,
    /// Whether `cancellation_timeout=` is given (and not `None`), whether or not the
    /// linter reads its value: kopf then cancels an async daemon that does not stop.
    pub(crate) cancels: bool,
    /// The first `while` loop in its body: a daemon that runs until told to stop.
    pub(crate) first_loop: Option<Location>,
    /// Whether its body names `stopped` anywhere (`while not stopped`, `if stopped`,
    /// `stopped.wait(...)`, passing it on), or `"stopped"` (`kwargs["stopped"]`).
    pub(crate) reads_stopped: bool,
    /// The `time.sleep(...)` and `asyncio.sleep(...)` calls in its body (bounded).
    pub(crate) sleeps: Vec<Sleep>,
}

/// A sleep in a daemon's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sleep {
    /// `time.sleep` or `asyncio.sleep`, as called.
    pub(crate) function: String,
    /// How long, when a number the linter reads.
    pub(crate) duration: Option<Millis>,
    /// Where.
    pub(crate) location: Location,
}

/// The longest a daemon's stop may take when the operator exits: kopf waits
/// `cancellation_backoff`, then `cancellation_timeout` after cancelling it, for every
/// daemon at once (kopf 1.45 `_core/engines/daemons.py`, `daemon_killer`), so the
/// operator's exit lasts as long as its slowest daemon's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DaemonStop {
    /// The daemon's function.
    pub(crate) function: String,
    /// Where its decorator is.
    pub(crate) location: Location,
    /// `cancellation_backoff=` (zero when unset).
    pub(crate) backoff: Millis,
    /// `cancellation_timeout=` (zero when unset).
    pub(crate) timeout: Millis,
}

impl DaemonStop {
    /// The whole wait: backoff plus timeout.
    pub(crate) fn total(&self) -> Millis {
        Millis(self.backoff.0.saturating_add(self.timeout.0))
    }
}

/// A module-level function that is not a kopf handler: a handler may call it, and what
/// it calls runs in the handler's place (in the event loop, for an async handler).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Helper {
    /// Where its `def` is.
    pub(crate) location: Location,
    /// Its name.
    pub(crate) function: String,
    /// The blocking calls in its body: what and where.
    pub(crate) blocking_calls: Vec<(String, Location)>,
    /// The plain names it calls.
    pub(crate) calls: Vec<String>,
    /// The kopf errors it raises (`raise kopf.TemporaryError(...)`): what and where.
    pub(crate) raises: Vec<(String, Location)>,
    /// Its records through a module-level or the root logger (not one a parameter
    /// passes in): which logger and where.
    pub(crate) module_logger_calls: Vec<(String, Location)>,
    /// Whether it posts an Event itself (`kopf.warn`, `kopf.event`, ...).
    pub(crate) posts: bool,
}

/// One more kopf decorator on a handler's function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Registration {
    /// The decorator without `kopf.`.
    pub(crate) decorator: String,
    /// Its resource, as for [`Handler::resource`].
    pub(crate) resource: Option<ResourceSpec>,
    /// The decorator as written.
    pub(crate) text: String,
}

/// An assignment to kopf's settings (`settings.peering.standalone = True`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SettingWrite {
    /// Where it is.
    pub(crate) location: Location,
    /// The dotted path under `settings` (`peering.standalone`).
    pub(crate) path: String,
    /// The value assigned.
    pub(crate) value: Literal,
    /// Whether it is written in an `@kopf.on.startup` handler, where kopf reads it.
    pub(crate) in_startup: bool,
}

/// A Python file that did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParseProblem {
    /// Where.
    pub(crate) location: Location,
    /// The parser's message.
    pub(crate) message: String,
}

/// Everything the Python sources show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SourceFacts {
    /// Calls that start kopf.
    pub(crate) starts: Vec<PyStart>,
    /// kopf handlers.
    pub(crate) handlers: Vec<Handler>,
    /// The module-level functions that are not handlers, with what they call.
    pub(crate) helpers: Vec<Helper>,
    /// Writes to kopf's settings.
    pub(crate) settings: Vec<SettingWrite>,
    /// Files that did not parse.
    pub(crate) problems: Vec<ParseProblem>,
    /// How many Python files were read.
    pub(crate) files: usize,
    /// The kopf versions the requirements, lock files or Dockerfile allow.
    pub(crate) kopf: Option<KopfPin>,
    /// The modules each file imports: which files a kopf process loads.
    pub(crate) imports: Vec<Import>,
    /// Imports of a name computed at run time (`importlib.import_module(name)`), or
    /// past the bound on a file's imports: what that file loads is not known.
    pub(crate) dynamic_imports: Vec<Location>,
    /// `kopf.configure(debug=True)` or `verbose=True` calls: the root logger at DEBUG
    /// (kopf 1.45 `_core/actions/loggers.py` `configure`), whatever the command line says.
    pub(crate) debug_configures: Vec<(String, Location)>,
}

/// Which of the repository's Python files a kopf process loads.
pub(crate) mod loaded;
pub(crate) use loaded::{Entry, Import, ImportGraph, Loaded};

/// The kopf versions an operator's files allow, as a range, and what kopf does with a
/// handler's log records across them.
pub(crate) mod kopf_version;
pub(crate) use kopf_version::KopfPin;

impl SourceFacts {
    /// Adds another file's facts.
    pub(crate) fn extend(&mut self, other: SourceFacts) {
        self.starts.extend(other.starts);
        self.handlers.extend(other.handlers);
        self.helpers.extend(other.helpers);
        self.settings.extend(other.settings);
        self.problems.extend(other.problems);
        self.files += other.files;
        self.imports.extend(other.imports);
        self.dynamic_imports.extend(other.dynamic_imports);
        self.debug_configures.extend(other.debug_configures);
        if let Some(pin) = other.kopf {
            self.keep_pin(pin);
        }
    }

    /// Keeps the pin that decides the version best: a lock file over an exact version
    /// over a range; the first found among equals.
    pub(crate) fn keep_pin(&mut self, pin: KopfPin) {
        if self.kopf.as_ref().is_none_or(|k| pin.weight() > k.weight()) {
            self.kopf = Some(pin);
        }
    }

    /// The last value a startup handler writes to a setting, if one does.
    pub(crate) fn setting(&self, path: &str) -> Option<&Literal> {
        self.setting_write(path).map(|s| &s.value)
    }

    /// The last write of a startup handler to a setting, with where it is.
    pub(crate) fn setting_write(&self, path: &str) -> Option<&SettingWrite> {
        self.settings
            .iter()
            .rev()
            .find(|s| s.in_startup && s.path == path)
    }

    /// The daemon whose stop kopf waits for longest when the operator exits: only
    /// daemons with a `cancellation_backoff` or `cancellation_timeout` the linter reads
    /// are waited for (without either, kopf abandons a daemon that did not exit at
    /// once, kopf 1.45 `_core/engines/daemons.py`, `stop_daemon`).
    pub(crate) fn longest_daemon_stop(&self) -> Option<DaemonStop> {
        self.handlers
            .iter()
            .filter_map(|h| {
                let d = h.daemon.as_ref()?;
                if d.cancellation_backoff.is_none() && d.cancellation_timeout.is_none() {
                    return None;
                }
                Some(DaemonStop {
                    function: h.function.clone(),
                    location: h.location.clone(),
                    backoff: d.cancellation_backoff.unwrap_or(Millis(0)),
                    timeout: d.cancellation_timeout.unwrap_or(Millis(0)),
                })
            })
            .max_by_key(DaemonStop::total)
    }

    /// Where kopf keeps its state, as the startup handlers choose it: kopf's defaults
    /// (annotations) where they set nothing.
    pub(crate) fn storage(&self) -> StateStorage {
        StateStorage {
            progress: StorageKind::of(self.setting("persistence.progress_storage")),
            diffbase: StorageKind::of(self.setting("persistence.diffbase_storage")),
        }
    }
}

/// Where kopf keeps a handled object's progress and diff-base (kopf 1.45
/// `_cogs/configs/configuration.py` `PersistenceSettings`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StateStorage {
    /// `persistence.progress_storage`.
    pub(crate) progress: StorageKind,
    /// `persistence.diffbase_storage`.
    pub(crate) diffbase: StorageKind,
}

impl StateStorage {
    /// Whether kopf writes either into the objects' status (then their CRD's status
    /// schema must keep it).
    pub(crate) fn uses_status(&self) -> bool {
        self.progress == StorageKind::Status || self.diffbase == StorageKind::Status
    }
}

/// One of kopf's storages, by what it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StorageKind {
    /// Annotations under kopf's prefix: `AnnotationsProgressStorage`,
    /// `AnnotationsDiffBaseStorage`, and the defaults (`SmartProgressStorage` writes
    /// annotations only since kopf 1.44, annotations and status before).
    Annotations,
    /// `status.kopf`: `StatusProgressStorage`, `StatusDiffBaseStorage`.
    Status,
    /// A storage the linter does not know (`MultiProgressStorage`, the operator's own
    /// class, a variable).
    Other,
}

impl StorageKind {
    /// The storage a setting's value builds; kopf's default annotations when unset.
    fn of(value: Option<&Literal>) -> StorageKind {
        let class = match value {
            None => return StorageKind::Annotations,
            Some(Literal::Call(class)) => class,
            Some(_) => return StorageKind::Other,
        };
        match class.rsplit('.').next().unwrap_or(class) {
            "StatusProgressStorage" | "StatusDiffBaseStorage" => StorageKind::Status,
            "AnnotationsProgressStorage"
            | "AnnotationsDiffBaseStorage"
            | "SmartProgressStorage" => StorageKind::Annotations,
            _ => StorageKind::Other,
        }
    }
}

/// A built-in kind a handler may name: the API server's, not a CRD's ([`builtins`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Builtin {
    /// API group (empty for core).
    pub(crate) group: &'static str,
    /// Version.
    pub(crate) version: &'static str,
    /// Plural.
    pub(crate) plural: &'static str,
    /// Kind.
    pub(crate) kind: &'static str,
    /// Namespaced.
    pub(crate) namespaced: bool,
}

/// Every built-in resource of the API server, in the order a name without a group
/// resolves to them.
mod builtins;

impl ResourceSpec {
    /// Whether both name the same resource as far as the source shows: the same group
    /// where both give one, and names equal case-insensitively once a plural's `s` is
    /// dropped (`widgets`, `Widget`, `widget`).
    pub(crate) fn same_as(&self, other: &ResourceSpec) -> bool {
        let stem = |n: &str| n.to_ascii_lowercase().trim_end_matches('s').to_string();
        let groups_agree = match (&self.group, &other.group) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        groups_agree && stem(&self.name) == stem(&other.name)
    }

    /// The built-in kind it names, matched as kopf matches names (plural, singular or
    /// kind, case-insensitively), within its group when one is given.
    pub(crate) fn builtin(&self) -> Option<Builtin> {
        let name = self.name.to_ascii_lowercase();
        builtins::BUILTINS.into_iter().find(|b| {
            self.group.as_deref().is_none_or(|g| g == b.group)
                && (name == b.plural
                    || name == b.kind.to_ascii_lowercase()
                    || name == b.plural.trim_end_matches('s'))
        })
    }
}

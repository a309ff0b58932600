//! Reads one Python file into [`SourceFacts`] with ruff's parser (`ruff_python_parser`,
//! current Python syntax): the calls that start kopf, the handlers and what they name,
//! and the settings written. One walk over the syntax tree per file; the decisions are
//! the `source.*` checks'.

use super::bounds;
use crate::model::source::{
    DaemonFacts, Handler, Helper, Import, Literal, Location, Millis, ParseProblem, PyStart,
    Registration, ResourceSpec, SettingWrite, Sleep, SourceFacts,
};
use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
use ruff_python_ast::{Decorator, Expr, Number, Operator, Parameters, Stmt, StmtFunctionDef};
use ruff_source_file::LineIndex;
use ruff_text_size::{Ranged, TextSize};
use std::collections::{BTreeMap, BTreeSet};

/// Most calls kept per handler or helper: the call graph is bounded whatever the source.
const MAX_CALLS: usize = 256;
/// Most helper functions kept per module.
const MAX_HELPERS: usize = 2048;

/// The functions that start kopf from Python (kopf 1.45 `_core/reactor/running.py`).
const STARTERS: [&str; 3] = ["kopf.run", "kopf.operator", "kopf.spawn_tasks"];

/// Calls that import a module named at run time.
const IMPORTERS: [&str; 3] = ["importlib.import_module", "import_module", "__import__"];

/// Most imports kept per file: a file with more loads what is not known.
const MAX_IMPORTS: usize = 1024;

/// Calls that block the event loop when made in an `async def` handler: kopf runs every
/// async handler in its one loop, so one such call stalls all handling.
const BLOCKING: [(&str, &str); 18] = [
    ("time.sleep", "time.sleep() (use `await asyncio.sleep()`)"),
    ("requests.get", "requests (a synchronous HTTP client)"),
    ("requests.post", "requests (a synchronous HTTP client)"),
    ("requests.put", "requests (a synchronous HTTP client)"),
    ("requests.patch", "requests (a synchronous HTTP client)"),
    ("requests.delete", "requests (a synchronous HTTP client)"),
    ("requests.head", "requests (a synchronous HTTP client)"),
    ("requests.request", "requests (a synchronous HTTP client)"),
    ("urllib.request.urlopen", "urllib.request.urlopen()"),
    ("subprocess.run", "subprocess.run()"),
    ("subprocess.check_output", "subprocess.check_output()"),
    ("subprocess.call", "subprocess.call()"),
    ("subprocess.check_call", "subprocess.check_call()"),
    ("subprocess.getoutput", "subprocess.getoutput()"),
    ("subprocess.getstatusoutput", "subprocess.getstatusoutput()"),
    (
        "subprocess.Popen",
        "subprocess.Popen() (its communicate() and wait() block)",
    ),
    ("os.system", "os.system()"),
    ("os.popen", "os.popen() (reading its output blocks)"),
];

/// The groups of `kopf.OperatorSettings` (kopf 1.45 `_cogs/configs/configuration.py`):
/// an assignment to `settings.<group>.…` is kopf's, not another framework's `settings`.
const SETTINGS_GROUPS: [&str; 12] = [
    "process",
    "posting",
    "peering",
    "watching",
    "batching",
    "queueing",
    "scanning",
    "admission",
    "execution",
    "background",
    "networking",
    "persistence",
];

/// The functions that post an Event on an object (kopf 1.45 `_core/actions/
/// loggers.py`, `on.py`): explicit posting, whatever `posting.loggers` says.
const POSTERS: [&str; 4] = ["kopf.event", "kopf.info", "kopf.warn", "kopf.exception"];

/// The module whose functions log through the root logger (`logging.info(...)`): its
/// records carry no object reference either.
const ROOT_LOGGER: &str = "logging";

/// The exceptions a handler raises to tell kopf to retry or give up.
const KOPF_ERRORS: [&str; 2] = ["kopf.TemporaryError", "kopf.PermanentError"];

/// The logging methods that write a record.
const LOG_METHODS: [&str; 7] = [
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
];

/// The decorators that register a daemon (kopf 1.45 `on.py`: `kopf.daemon`, also
/// reachable as `kopf.on.daemon`).
const DAEMONS: [&str; 2] = ["daemon", "on.daemon"];

/// The calls that sleep without waking when a daemon's `stopped` flag is set.
const SLEEPS: [&str; 2] = ["time.sleep", "asyncio.sleep"];

/// The name of the keyword argument kopf passes a daemon to tell it to stop.
const STOPPED: &str = "stopped";

/// Deepest an arithmetic expression of a duration is read (`10 * 60` is 1).
const MAX_ARITHMETIC_DEPTH: usize = 8;

/// The keyword arguments of a handler decorator that narrow the objects it handles.
const FILTERS: [&str; 6] = ["labels", "annotations", "when", "field", "value", "old"];

/// Deepest the walks of a syntax tree go: [`bounds::python_depth`] keeps a parsed file
/// shallower, so this only guards the walk should the estimate ever fall short.
const MAX_WALK_DEPTH: usize = 2 * bounds::MAX_PYTHON_DEPTH;

/// Stack of the thread that parses, walks and drops one file's tree: the walks and the
/// tree's drop recurse once or twice per level, and a debug build's frames are large.
const PARSE_STACK_BYTES: usize = 64 << 20;

/// The facts of one file; `path` is how findings name it. A file nested deeper than
/// lint's bounds is refused before it is parsed.
pub(crate) fn read(path: &str, text: &str) -> Result<SourceFacts, bounds::TooDeep> {
    bounds::python_depth(text)?;
    let on_big_stack = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("lint-python".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(scope, || read_bounded(path, text))
            .map(|handle| handle.join())
    });
    match on_big_stack {
        Ok(Ok(facts)) => Ok(facts),
        // No thread could be started, or the walk panicked: nothing read.
        _ => Err(bounds::TooDeep {
            what: "the syntax tree",
            limit: MAX_WALK_DEPTH,
        }),
    }
}

/// [`read`] of a file within the bounds.
fn read_bounded(path: &str, text: &str) -> SourceFacts {
    let index = LineIndex::from_source_text(text);
    let mut facts = SourceFacts {
        files: 1,
        ..SourceFacts::default()
    };
    let module = match ruff_python_parser::parse_module(text) {
        Ok(parsed) => parsed.into_syntax(),
        Err(error) => {
            let line = line_of(&index, error.location.start());
            facts.problems.push(ParseProblem {
                location: Location::new(path, line),
                message: error.error.to_string(),
            });
            return facts;
        }
    };
    let loggers = module_loggers(&module.body);
    let constants = module_constants(&module.body);
    let clients = module_clients(&module.body);
    let kopf = KopfNames::of(&module.body);
    let mut walker = Walker {
        path,
        text,
        index: &index,
        loggers,
        constants,
        clients,
        kopf,
        facts,
        handler: None,
        helper: None,
        startup: false,
        shadowed: BTreeSet::new(),
        top_level_call: None,
        top_level_stmt: None,
        depth: 0,
    };
    for stmt in &module.body {
        walker.visit_stmt(stmt);
    }
    walker.facts
}

/// The 1-based line of an offset.
fn line_of(index: &LineIndex, offset: TextSize) -> u32 {
    u32::try_from(index.line_index(offset).get()).unwrap_or(u32::MAX)
}

/// The module-level assignments to plain names: each name with the value bound to it
/// (`x = y = v` binds both; `x: T = v` too).
fn module_bindings(body: &[Stmt]) -> impl Iterator<Item = (String, &Expr)> {
    body.iter().flat_map(|stmt| {
        let (targets, value): (Vec<&Expr>, Option<&Expr>) = match stmt {
            Stmt::Assign(a) => (a.targets.iter().collect(), Some(&*a.value)),
            Stmt::AnnAssign(a) => (vec![&*a.target], a.value.as_deref()),
            _ => (Vec::new(), None),
        };
        targets.into_iter().filter_map(move |t| match (t, value) {
            (Expr::Name(n), Some(v)) => Some((n.id.to_string(), v)),
            _ => None,
        })
    })
}

/// The calls that make a logger whose records carry no object reference: the
/// standard library's and structlog's, and the wrappers around them.
const LOGGER_FACTORIES: [&str; 9] = [
    "logging.getLogger",
    "getLogger",
    "logging.LoggerAdapter",
    "LoggerAdapter",
    "structlog.get_logger",
    "structlog.getLogger",
    "structlog.stdlib.get_logger",
    "structlog.wrap_logger",
    "get_logger",
];

/// The modules whose `logger` object a module imports ready-made
/// (`from loguru import logger`).
const LOGGER_MODULES: [&str; 1] = ["loguru"];

/// Whether a call makes a logger: one of [`LOGGER_FACTORIES`], or a child of one
/// (`logging.getLogger(__name__).getChild("sync")`).
fn makes_logger(call: &ruff_python_ast::ExprCall) -> bool {
    if dotted(&call.func).is_some_and(|f| LOGGER_FACTORIES.contains(&f.as_str())) {
        return true;
    }
    chained_call(&call.func).is_some_and(|f| {
        f.strip_suffix("().getChild")
            .is_some_and(|base| LOGGER_FACTORIES.contains(&base))
    })
}

/// kopf's registering decorators under `on`: `X.on.create(...)` with one of these is
/// kopf's, whatever name X binds kopf to.
const KOPF_ON: [&str; 12] = [
    "create", "update", "delete", "resume", "field", "event", "startup", "cleanup", "login",
    "probe", "validate", "mutate",
];

/// How a module names kopf: `import kopf as k` (aliases), `from kopf import on, timer`
/// (names taken from it, by the name bound), and whether it imports kopf at all.
#[derive(Default)]
struct KopfNames {
    /// Names bound to the kopf module itself.
    aliases: BTreeSet<String>,
    /// Names bound to a name of kopf's: local name to kopf's name.
    taken: BTreeMap<String, String>,
    /// Whether the module imports kopf (then `X.on.create` is kopf's whatever X is: a
    /// class that registers its handlers takes kopf as a parameter).
    imported: bool,
}

impl KopfNames {
    /// Reads a module's imports of kopf, at module level.
    fn of(body: &[Stmt]) -> KopfNames {
        let mut names = KopfNames::default();
        for stmt in body {
            match stmt {
                Stmt::Import(i) => {
                    for alias in i.names.iter().filter(|a| a.name.as_str() == "kopf") {
                        names.imported = true;
                        if let Some(bound) = &alias.asname {
                            names.aliases.insert(bound.as_str().to_string());
                        }
                    }
                }
                Stmt::ImportFrom(from)
                    if from.level == 0
                        && from.module.as_ref().is_some_and(|m| m.as_str() == "kopf") =>
                {
                    names.imported = true;
                    for alias in &from.names {
                        let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                        names
                            .taken
                            .insert(bound.as_str().to_string(), alias.name.as_str().to_string());
                    }
                }
                _ => {}
            }
        }
        names
    }

    /// A dotted name as kopf's own (`kopf.on.create`) when it names kopf another way;
    /// else as it is.
    fn canonical(&self, func: String) -> String {
        let Some((head, rest)) = func.split_once('.') else {
            return match self.taken.get(&func) {
                Some(name) => format!("kopf.{name}"),
                None => func,
            };
        };
        if head == "kopf" {
            return func;
        }
        if self.aliases.contains(head) {
            return format!("kopf.{rest}");
        }
        if let Some(name) = self.taken.get(head) {
            return format!("kopf.{name}.{rest}");
        }
        let registers = rest
            .strip_prefix("on.")
            .is_some_and(|event| KOPF_ON.contains(&event));
        if self.imported && registers {
            return format!("kopf.{rest}");
        }
        func
    }
}

/// The names bound at module level to a logger of [`LOGGER_FACTORIES`] or imported
/// from one of [`LOGGER_MODULES`].
fn module_loggers(body: &[Stmt]) -> BTreeSet<String> {
    let imported = body.iter().flat_map(|stmt| match stmt {
        Stmt::ImportFrom(from)
            if from
                .module
                .as_ref()
                .is_some_and(|m| LOGGER_MODULES.contains(&m.as_str())) =>
        {
            from.names
                .iter()
                .filter(|alias| alias.name.as_str() == "logger")
                .map(|alias| alias.asname.as_ref().unwrap_or(&alias.name).to_string())
                .collect()
        }
        _ => Vec::new(),
    });
    module_bindings(body)
        .filter(|(_, value)| matches!(value, Expr::Call(call) if makes_logger(call)))
        .map(|(name, _)| name)
        .chain(imported)
        .collect()
}

/// The names bound at module level to an object of a synchronous Kubernetes client
/// ([`client_constructor`]), each with the call that made it.
fn module_clients(body: &[Stmt]) -> BTreeMap<String, String> {
    module_bindings(body)
        .filter_map(|(name, value)| match value {
            Expr::Call(call) => dotted(&call.func)
                .filter(|f| client_constructor(f))
                .map(|f| (name, f)),
            _ => None,
        })
        .collect()
}

/// The names bound at module level to a string literal (`GROUP = "kopf.dev"`), which
/// handler decorators often name their resource with.
fn module_constants(body: &[Stmt]) -> BTreeMap<String, String> {
    module_bindings(body)
        .filter_map(|(name, value)| match value {
            Expr::StringLiteral(s) => Some((name, s.value.to_str().to_string())),
            _ => None,
        })
        .collect()
}

/// `a.b.c` for a name or an attribute chain; `None` for anything else.
fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr.as_str())),
        _ => None,
    }
}

/// A literal the linter can read.
fn literal(expr: &Expr) -> Literal {
    match expr {
        Expr::BooleanLiteral(b) => Literal::Bool(b.value),
        Expr::NoneLiteral(_) => Literal::None,
        Expr::StringLiteral(s) => Literal::Str(s.value.to_str().to_string()),
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => i.as_i64().map_or(Literal::Other, Literal::Int),
            _ => Literal::Other,
        },
        Expr::List(l) => strings(&l.elts),
        Expr::Tuple(t) => strings(&t.elts),
        Expr::Set(s) => strings(&s.elts),
        Expr::Name(_) | Expr::Attribute(_) => dotted(expr).map_or(Literal::Other, Literal::Name),
        Expr::Call(c) => dotted(&c.func).map_or(Literal::Other, Literal::Call),
        _ => Literal::Other,
    }
}

/// A list of string literals, or `Other`.
fn strings(elts: &[Expr]) -> Literal {
    let mut out = Vec::with_capacity(elts.len());
    for e in elts {
        match e {
            Expr::StringLiteral(s) => out.push(s.value.to_str().to_string()),
            _ => return Literal::Other,
        }
    }
    Literal::Strings(out)
}

/// A string literal's text, or a module constant's.
fn string(expr: &Expr, constants: &BTreeMap<String, String>) -> Option<String> {
    match expr {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        Expr::Name(n) => constants.get(n.id.as_str()).cloned(),
        _ => None,
    }
}

/// Whether a resource name is `plural.version.group` (kopf's `K8S_GROUP_VERSION_PATTERN`).
fn is_versioned(name: &str) -> bool {
    name.split('.').nth(1).is_some_and(|v| {
        let rest = v.strip_prefix('v').unwrap_or("");
        !rest.is_empty()
            && rest.starts_with(|c: char| c.is_ascii_digit())
            && rest.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// The resource of a handler decorator, read as kopf's `Selector` reads its arguments.
fn resource_spec(
    args: &[Expr],
    keywords: &[(String, &Expr)],
    constants: &BTreeMap<String, String>,
) -> Option<ResourceSpec> {
    let kw = |name: &str| {
        keywords
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| string(v, constants))
    };
    let positional: Vec<Option<String>> = args.iter().map(|a| string(a, constants)).collect();
    if positional.iter().any(Option::is_none) {
        return None;
    }
    let positional: Vec<String> = positional.into_iter().flatten().collect();
    let mut spec = match positional.as_slice() {
        [] => ResourceSpec::default(),
        [one] if is_versioned(one) => {
            let mut parts = one.splitn(3, '.');
            let name = parts.next().unwrap_or_default().to_string();
            let version = parts.next().map(str::to_string);
            let group = parts.next().map(str::to_string);
            ResourceSpec {
                group,
                version,
                name,
            }
        }
        [one] => match one.split_once('.') {
            Some((name, group)) => ResourceSpec {
                group: Some(group.to_string()),
                version: None,
                name: name.to_string(),
            },
            None => ResourceSpec {
                name: one.clone(),
                ..ResourceSpec::default()
            },
        },
        [first, name] => match first.rsplit_once('/') {
            Some((group, version)) => ResourceSpec {
                group: Some(group.to_string()),
                version: Some(version.to_string()),
                name: name.clone(),
            },
            None if first == "v1" => ResourceSpec {
                group: Some(String::new()),
                version: Some(first.clone()),
                name: name.clone(),
            },
            None => ResourceSpec {
                group: Some(first.clone()),
                version: None,
                name: name.clone(),
            },
        },
        [group, version, name] => ResourceSpec {
            group: Some(group.clone()),
            version: Some(version.clone()),
            name: name.clone(),
        },
        _ => return None,
    };
    if let Some(g) = kw("group") {
        spec.group = Some(g);
    }
    if let Some(v) = kw("version") {
        spec.version = Some(v);
    }
    for key in ["plural", "kind", "singular", "shortcut"] {
        if let Some(name) = kw(key) {
            spec.name = name;
        }
    }
    (!spec.name.is_empty()).then_some(spec)
}

/// Walks a module: tracks the handler being walked and whether it is a startup one.
struct Walker<'a> {
    path: &'a str,
    /// The module's text, to quote decorators.
    text: &'a str,
    index: &'a LineIndex,
    loggers: BTreeSet<String>,
    /// Module-level string constants.
    constants: BTreeMap<String, String>,
    /// Module-level objects of a synchronous Kubernetes client ([`module_clients`]).
    clients: BTreeMap<String, String>,
    /// How the module names kopf.
    kopf: KopfNames,
    facts: SourceFacts,
    /// The handler whose body is being walked (index into `facts.handlers`).
    handler: Option<usize>,
    /// The module-level helper whose body is being walked (index into `facts.helpers`).
    helper: Option<usize>,
    /// Whether the walk is inside an `@kopf.on.startup` handler.
    startup: bool,
    /// Names the current handler's parameters bind (they shadow module loggers).
    shadowed: BTreeSet<String>,
    /// The start of the call that is a statement of the current handler's own body (so
    /// it runs on every call of the handler), while that statement is walked.
    top_level_call: Option<TextSize>,
    /// The start of the statement of the current handler's own body being walked.
    top_level_stmt: Option<TextSize>,
    /// How deep the walk is, against [`MAX_WALK_DEPTH`].
    depth: usize,
}

impl Walker<'_> {
    fn location(&self, offset: TextSize) -> Location {
        Location::new(self.path, line_of(self.index, offset))
    }

    /// What a call blocks on, if it blocks: a call [`blocking`] knows, or a method of a
    /// module-level client object whose name the function being walked does not rebind
    /// as a parameter.
    fn blocks(&self, func: &str) -> Option<String> {
        if let Some(what) = blocking(func) {
            return Some(what);
        }
        let (object, method) = func.split_once('.')?;
        if method.contains('.') || self.shadowed.contains(object) {
            return None;
        }
        let made = self.clients.get(object)?;
        Some(format!(
            "{func}() (a synchronous client: {object} = {made}() at module level)"
        ))
    }

    /// The logger a call records through when it is a module-level or the root
    /// logger's (`log.info`, `logging.warning`) and no parameter rebinds its name.
    fn module_logger_of(&self, func: &str) -> Option<String> {
        let (object, method) = func.rsplit_once('.')?;
        let module_level = self.loggers.contains(object) || object == ROOT_LOGGER;
        (LOG_METHODS.contains(&method) && module_level && !self.shadowed.contains(object))
            .then(|| object.to_string())
    }

    /// The facts of the daemon whose body is being walked, if it is one.
    fn daemon(&mut self) -> Option<&mut DaemonFacts> {
        self.facts.handlers.get_mut(self.handler?)?.daemon.as_mut()
    }

    /// The daemon being walked names its `stopped` flag.
    fn reads_stopped(&mut self) {
        if let Some(daemon) = self.daemon() {
            daemon.reads_stopped = true;
        }
    }

    /// The kopf handler a function's decorators make of it, if any: the first kopf
    /// decorator, with the others stacked on the same function.
    fn handler_of(&self, def: &StmtFunctionDef) -> Option<Handler> {
        let mut registrations = def
            .decorator_list
            .iter()
            .filter_map(|d| self.registration(d, def));
        let mut handler = registrations.next()?;
        let stacked: Vec<Handler> = registrations.collect();
        if handler.daemon.is_none() {
            handler.daemon = stacked.iter().find_map(|h| h.daemon.clone());
        }
        handler.stacked = stacked
            .into_iter()
            .map(|h| Registration {
                decorator: h.decorator,
                resource: h.resource,
                text: h.text,
            })
            .collect();
        Some(handler)
    }

    /// The handler one decorator registers, if it is kopf's (not `kopf.subhandler`).
    fn registration(&self, decorator: &Decorator, def: &StmtFunctionDef) -> Option<Handler> {
        let (func, call) = match &decorator.expression {
            Expr::Call(call) => (dotted(&call.func)?, Some(call)),
            other => (dotted(other)?, None),
        };
        let func = self.kopf.canonical(func);
        let name = func.strip_prefix("kopf.")?;
        if name == "subhandler" {
            return None;
        }
        let keywords: Vec<(String, &Expr)> = call
            .map(|c| {
                c.arguments
                    .keywords
                    .iter()
                    .filter_map(|k| Some((k.arg.as_ref()?.as_str().to_string(), &k.value)))
                    .collect()
            })
            .unwrap_or_default();
        let args: &[Expr] = call.map_or(&[], |c| &c.arguments.args);
        let callable_filter = args.first().is_some_and(|a| match a {
            Expr::Lambda(_) => true,
            Expr::Name(n) => !self.constants.contains_key(n.id.as_str()),
            _ => false,
        });
        let filtered = callable_filter
            || keywords
                .iter()
                .any(|(k, v)| FILTERS.contains(&k.as_str()) && !matches!(v, Expr::NoneLiteral(_)));
        let daemon = DAEMONS.contains(&name).then(|| daemon_options(&keywords));
        Some(Handler {
            location: self.location(decorator.range.start()),
            function: def.name.as_str().to_string(),
            decorator: name.to_string(),
            resource: resource_spec(args, &keywords, &self.constants),
            text: self
                .text
                .get(decorator.range.start().to_usize()..decorator.range.end().to_usize())
                .unwrap_or_default()
                .to_string(),
            stacked: Vec::new(),
            is_async: def.is_async,
            has_kwargs: def.parameters.kwarg.is_some(),
            filtered,
            blocking_calls: Vec::new(),
            calls: Vec::new(),
            module_logger_calls: Vec::new(),
            kopf_logger_calls: Vec::new(),
            raises: Vec::new(),
            posts: Vec::new(),
            self_patches: Vec::new(),
            daemon,
        })
    }

    /// The call's facts: kopf started, a blocking call, a module logger's record.
    fn call(&mut self, call: &ruff_python_ast::ExprCall) {
        let Some(func) = dotted(&call.func).or_else(|| chained_call(&call.func)) else {
            return;
        };
        let func = self.kopf.canonical(func);
        if IMPORTERS.contains(&func.as_str()) {
            self.import_call(call);
        }
        if func == "kopf.configure" {
            self.configure_call(call);
        }
        if STARTERS.contains(&func.as_str()) {
            let start = self.start(&func, call);
            self.facts.starts.push(start);
        }
        if let Some(at) = self.helper {
            self.helper_call(at, &func, call);
            return;
        }
        let Some(at) = self.handler else { return };
        let location = self.location(call.range().start());
        if SLEEPS.contains(&func.as_str())
            && let Some(daemon) = self.facts.handlers[at].daemon.as_mut()
            && daemon.sleeps.len() < MAX_CALLS
        {
            daemon.sleeps.push(Sleep {
                function: func.clone(),
                duration: call.arguments.args.first().and_then(millis),
                location: location.clone(),
            });
        }
        let blocks = self.facts.handlers[at]
            .is_async
            .then(|| self.blocks(&func))
            .flatten();
        if let Some(what) = blocks {
            self.facts.handlers[at]
                .blocking_calls
                .push((what, location.clone()));
        } else if may_be_own_function(&func) && self.facts.handlers[at].calls.len() < MAX_CALLS {
            // Every handler's: what it raises through them counts whether it is async
            // or not; what blocks in them only for an async one (blocking_helper).
            self.facts.handlers[at]
                .calls
                .push((func.clone(), location.clone()));
        }
        if POSTERS.contains(&func.as_str()) {
            let every_call = self.top_level_call == Some(call.range().start());
            self.facts.handlers[at]
                .posts
                .push((location.clone(), every_call));
        }
        if let Some((object, method)) = func.rsplit_once('.')
            && LOG_METHODS.contains(&method)
        {
            if object == "logger" && self.shadowed.contains(object) {
                self.facts.handlers[at]
                    .kopf_logger_calls
                    .push((method.to_string(), location));
            } else if let Some(logger) = self.module_logger_of(&func) {
                self.facts.handlers[at]
                    .module_logger_calls
                    .push((logger, location));
            }
        }
    }

    /// An import statement: the module and the names it takes, up to
    /// [`MAX_IMPORTS`] a file; past that, what the file loads is not known.
    fn import(&mut self, module: &str, level: u32, names: Vec<String>, offset: TextSize) {
        let location = self.location(offset);
        if self.facts.imports.len() >= MAX_IMPORTS {
            if self.facts.dynamic_imports.is_empty() {
                self.facts.dynamic_imports.push(location);
            }
            return;
        }
        self.facts.imports.push(Import {
            location,
            module: module.to_string(),
            level,
            names,
        });
    }

    /// `kopf.configure(debug=True)` or `verbose=True`: kopf's loggers at DEBUG (once a
    /// file is enough to tell).
    fn configure_call(&mut self, call: &ruff_python_ast::ExprCall) {
        let on = call.arguments.keywords.iter().find_map(|k| {
            let name = k.arg.as_ref()?.as_str();
            let is_true = matches!(&k.value, Expr::BooleanLiteral(b) if b.value);
            (is_true && matches!(name, "debug" | "verbose")).then_some(name)
        });
        if let Some(name) = on
            && self.facts.debug_configures.is_empty()
        {
            let location = self.location(call.range().start());
            self.facts
                .debug_configures
                .push((format!("kopf.configure({name}=True)"), location));
        }
    }

    /// `importlib.import_module("pkg.mod")` or `__import__("mod")`: an import of that
    /// module when it is a literal, else of a module not known.
    fn import_call(&mut self, call: &ruff_python_ast::ExprCall) {
        let literal = call.arguments.args.first().and_then(|a| match a {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => None,
        });
        let relative = call
            .arguments
            .keywords
            .iter()
            .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "level"));
        match literal {
            Some(module) if !module.starts_with('.') && !relative => {
                self.import(&module, 0, Vec::new(), call.range().start());
            }
            // One is enough to know that the file's imports are not all known.
            _ if self.facts.dynamic_imports.is_empty() => {
                let location = self.location(call.range().start());
                self.facts.dynamic_imports.push(location);
            }
            _ => {}
        }
    }

    /// A call in a helper's body: a blocking one, or a function of the repository it may
    /// call ([`may_be_own_function`]).
    fn helper_call(&mut self, at: usize, func: &str, call: &ruff_python_ast::ExprCall) {
        let location = self.location(call.range().start());
        let blocks = self.blocks(func);
        let logger = self.module_logger_of(func);
        let helper = &mut self.facts.helpers[at];
        helper.posts |= POSTERS.contains(&func);
        if let Some(logger) = logger
            && helper.module_logger_calls.len() < MAX_CALLS
        {
            helper.module_logger_calls.push((logger, location.clone()));
        }
        if let Some(what) = blocks {
            if helper.blocking_calls.len() < MAX_CALLS {
                helper.blocking_calls.push((what, location));
            }
        } else if may_be_own_function(func) && helper.calls.len() < MAX_CALLS {
            helper.calls.push(func.to_string());
        }
    }

    /// A call that starts kopf, with the keyword arguments that matter.
    fn start(&self, func: &str, call: &ruff_python_ast::ExprCall) -> PyStart {
        let kw = |name: &str| {
            call.arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
                .map(|k| literal(&k.value))
        };
        PyStart {
            location: self.location(call.range().start()),
            function: func.to_string(),
            clusterwide: kw("clusterwide"),
            namespaces: kw("namespaces"),
            standalone: kw("standalone"),
            peering_name: kw("peering_name"),
            priority: kw("priority"),
            liveness_endpoint: kw("liveness_endpoint"),
        }
    }

    /// An assignment through kopf's `patch` to what kopf diffs, of a value that differs
    /// on every call.
    fn self_patch(&mut self, targets: &[&Expr], value: &Expr, offset: TextSize) {
        let Some(at) = self.handler else { return };
        if !self.shadowed.contains("patch") || !varies(value) {
            return;
        }
        for target in targets {
            if let Some(path) = diffed_patch_path(target) {
                let every_call = self.top_level_stmt == Some(offset);
                let location = self.location(offset);
                self.facts.handlers[at]
                    .self_patches
                    .push((path, location, every_call));
            }
        }
    }

    /// An assignment to `settings.…`.
    fn assignment(&mut self, targets: &[&Expr], value: &Expr, offset: TextSize) {
        for target in targets {
            let Some(path) = dotted(target) else { continue };
            if path.ends_with(EVENTS_LOGLEVEL) {
                self.facts.settings.push(SettingWrite {
                    location: self.location(offset),
                    path: "posting.level".into(),
                    value: literal(value),
                    in_startup: true,
                });
                continue;
            }
            let Some(path) = path.strip_prefix("settings.") else {
                continue;
            };
            let group = path.split('.').next().unwrap_or(path);
            if !SETTINGS_GROUPS.contains(&group) {
                continue;
            }
            self.facts.settings.push(SettingWrite {
                location: self.location(offset),
                path: path.to_string(),
                value: literal(value),
                in_startup: self.startup,
            });
        }
    }
}

/// kopf 0.x's posting level before `settings.posting.level` (kopf 0.x
/// `kopf/config.py`, `EventsConfig.events_loglevel`): a class attribute kopf reads each
/// time it posts, so a write anywhere sets it, as `settings.posting.level` in a startup
/// handler does; it is kept as that setting.
const EVENTS_LOGLEVEL: &str = "EventsConfig.events_loglevel";

/// The functions whose result differs on every call (by their last dotted name):
/// the time, random values, unique ids.
const VARYING: [&str; 12] = [
    "now",
    "utcnow",
    "today",
    "time",
    "time_ns",
    "monotonic",
    "perf_counter",
    "uuid1",
    "uuid4",
    "random",
    "randint",
    "token_hex",
];

/// Whether an expression calls one of [`VARYING`].
fn varies(expr: &Expr) -> bool {
    struct Finder(bool, usize);
    impl<'a> Visitor<'a> for Finder {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if self.1 >= MAX_WALK_DEPTH {
                return;
            }
            self.1 += 1;
            if let Expr::Call(call) = expr
                && let Expr::Attribute(_) | Expr::Name(_) = &*call.func
                && dotted(&call.func)
                    .is_some_and(|f| VARYING.contains(&f.rsplit('.').next().unwrap_or(&f)))
            {
                self.0 = true;
            }
            walk_expr(self, expr);
            self.1 -= 1;
        }
    }
    let mut finder = Finder(false, 0);
    finder.visit_expr(expr);
    finder.0
}

/// `spec…`, `metadata.labels…` or `metadata.annotations…` (also `meta.…`, and
/// `["key"]` for `.key`) of an assignment target rooted at the name `patch`: what kopf
/// diffs of the object (not `status`, which it does not).
fn diffed_patch_path(target: &Expr) -> Option<String> {
    // (the name, whether it is a subscript), from the root outwards.
    let mut parts: Vec<(String, bool)> = Vec::new();
    let mut at = target;
    loop {
        match at {
            Expr::Attribute(a) => {
                parts.push((a.attr.as_str().to_string(), false));
                at = &a.value;
            }
            Expr::Subscript(s) => {
                let key = match &*s.slice {
                    Expr::StringLiteral(k) => format!("{:?}", k.value.to_str()),
                    _ => "…".to_string(),
                };
                parts.push((key, true));
                at = &s.value;
            }
            Expr::Name(n) if n.id.as_str() == "patch" => break,
            _ => return None,
        }
    }
    parts.reverse();
    let name = |i: usize| {
        parts
            .get(i)
            .map(|(n, _)| n.trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let (first, second) = (name(0), name(1));
    let diffed = first == "spec"
        || ((first == "metadata" || first == "meta")
            && (second == "labels" || second == "annotations"));
    diffed.then(|| {
        parts
            .iter()
            .map(|(n, subscript)| {
                if *subscript {
                    format!("[{n}]")
                } else {
                    format!(".{n}")
                }
            })
            .collect::<String>()
            .trim_start_matches('.')
            .to_string()
    })
}

/// A daemon decorator's stopping options.
fn daemon_options(keywords: &[(String, &Expr)]) -> DaemonFacts {
    let kw = |name: &str| {
        keywords
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .filter(|v| !matches!(v, Expr::NoneLiteral(_)))
    };
    DaemonFacts {
        cancellation_backoff: kw("cancellation_backoff").and_then(millis),
        cancellation_timeout: kw("cancellation_timeout").and_then(millis),
        cancels: kw("cancellation_timeout").is_some(),
        ..DaemonFacts::default()
    }
}

/// A duration in seconds written as a number, or sums and products of numbers
/// (`10 * 60`); `None` for anything else, or a negative or absurd value.
fn millis(expr: &Expr) -> Option<Millis> {
    let s = seconds(expr, 0)?;
    (s.is_finite() && (0.0..1e9).contains(&s)).then(|| {
        // In range: at most 1e12 milliseconds.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Millis((s * 1000.0).round() as u64)
    })
}

/// The seconds an arithmetic expression of number literals gives.
fn seconds(expr: &Expr, depth: usize) -> Option<f64> {
    if depth > MAX_ARITHMETIC_DEPTH {
        return None;
    }
    match expr {
        Expr::NumberLiteral(n) => match &n.value {
            // Exact up to 2^53, far beyond any duration.
            #[allow(clippy::cast_precision_loss)]
            Number::Int(i) => i.as_u64().map(|v| v as f64),
            Number::Float(f) => Some(*f),
            Number::Complex { .. } => None,
        },
        Expr::BinOp(b) => {
            let left = seconds(&b.left, depth + 1)?;
            let right = seconds(&b.right, depth + 1)?;
            match b.op {
                Operator::Add => Some(left + right),
                Operator::Sub => Some(left - right),
                Operator::Mult => Some(left * right),
                Operator::Div if right != 0.0 => Some(left / right),
                _ => None,
            }
        }
        _ => None,
    }
}

/// What a blocking call is, if the dotted function is one.
fn blocking(func: &str) -> Option<String> {
    if let Some((_, what)) = BLOCKING.iter().find(|(f, _)| *f == func) {
        return Some((*what).to_string());
    }
    if kubernetes_api_class(func) {
        return Some(format!("{func}() (the synchronous kubernetes client)"));
    }
    pykube_request(func).then(|| format!("{func}() (pykube, a synchronous client)"))
}

/// `kubernetes.client.CoreV1Api` or `client.CustomObjectsApi`: a class of the
/// synchronous kubernetes client, each of whose methods is a request.
fn kubernetes_api_class(func: &str) -> bool {
    let last = func.rsplit('.').next().unwrap_or(func);
    (func.starts_with("kubernetes.client.") || func.starts_with("client."))
        && last.ends_with("Api")
        && last.len() > 3
}

/// What pykube does over HTTP, synchronously: a query (`pykube.Pod.objects(api)`,
/// whose iteration or `get()` requests) or a method of an object it makes
/// (`pykube.Pod(api, body).create()`, as [`chained_call`] names it). A method of a
/// query (`pykube.Pod.objects(api).filter()`) is the query's own request, counted once.
fn pykube_request(func: &str) -> bool {
    func.starts_with("pykube.")
        && (func.ends_with(".objects") || (func.contains("().") && !func.contains(".objects().")))
}

/// `pykube.Pod().create` for a method called on what a call returns
/// (`pykube.Pod(api, body).create()`), which [`dotted`] does not name.
fn chained_call(func: &Expr) -> Option<String> {
    let Expr::Attribute(a) = func else {
        return None;
    };
    let Expr::Call(inner) = &*a.value else {
        return None;
    };
    Some(format!("{}().{}", dotted(&inner.func)?, a.attr.as_str()))
}

/// A module-level object of a synchronous Kubernetes client and what made it
/// (`v1 = client.CoreV1Api()`, `api = pykube.HTTPClient(config)`): every method call
/// on it is a request.
fn client_constructor(func: &str) -> bool {
    kubernetes_api_class(func) || func == "pykube.HTTPClient"
}

/// Whether the function just entered is a handler of its own (not a function nested in
/// one): only its own body's statements run on every call.
fn found_here(now: Option<usize>, before: Option<usize>) -> bool {
    now.is_some() && now != before
}

/// The names a function's parameters bind.
fn parameter_names(parameters: &Parameters) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in parameters
        .posonlyargs
        .iter()
        .chain(&parameters.args)
        .chain(&parameters.kwonlyargs)
    {
        out.insert(p.parameter.name.as_str().to_string());
    }
    for p in parameters.vararg.iter().chain(&parameters.kwarg) {
        out.insert(p.name.as_str().to_string());
    }
    out
}

impl<'a> Visitor<'a> for Walker<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.depth >= MAX_WALK_DEPTH {
            return;
        }
        self.depth += 1;
        self.stmt(stmt);
        self.depth -= 1;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth >= MAX_WALK_DEPTH {
            return;
        }
        self.depth += 1;
        match expr {
            Expr::Call(call) => self.call(call),
            Expr::Name(n) if n.id.as_str() == STOPPED => self.reads_stopped(),
            Expr::StringLiteral(s) if s.value.to_str() == STOPPED => self.reads_stopped(),
            _ => {}
        }
        walk_expr(self, expr);
        self.depth -= 1;
    }
}

impl<'a> Walker<'_> {
    /// One statement: a function (a handler, when a kopf decorator makes one of it), an
    /// assignment, a `raise`, or any other, walked into.
    fn stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                for d in &def.decorator_list {
                    self.visit_decorator(d);
                }
                let found = self.handler_of(def);
                let outer = (self.handler, self.startup, self.shadowed.clone());
                let outer_helper = self.helper;
                let module_level = self.handler.is_none() && self.helper.is_none();
                if found.is_none() && module_level && self.facts.helpers.len() < MAX_HELPERS {
                    self.facts.helpers.push(Helper {
                        location: self.location(def.range.start()),
                        function: def.name.as_str().to_string(),
                        blocking_calls: Vec::new(),
                        calls: Vec::new(),
                        raises: Vec::new(),
                        module_logger_calls: Vec::new(),
                        posts: false,
                    });
                    self.helper = Some(self.facts.helpers.len() - 1);
                    self.shadowed = parameter_names(&def.parameters);
                }
                if let Some(handler) = found {
                    self.startup = handler.decorator == "on.startup";
                    self.facts.handlers.push(handler);
                    self.handler = Some(self.facts.handlers.len() - 1);
                    self.shadowed = parameter_names(&def.parameters);
                } else if self.handler.is_some() {
                    self.shadowed.extend(parameter_names(&def.parameters));
                }
                let own_body = found_here(self.handler, outer.0);
                for s in &def.body {
                    self.top_level_stmt = own_body.then(|| s.range().start());
                    self.top_level_call = match s {
                        Stmt::Expr(e) if own_body => match &*e.value {
                            Expr::Call(c) => Some(c.range().start()),
                            Expr::Await(a) => match &*a.value {
                                Expr::Call(c) => Some(c.range().start()),
                                _ => None,
                            },
                            _ => None,
                        },
                        _ => None,
                    };
                    self.visit_stmt(s);
                }
                self.top_level_call = None;
                self.top_level_stmt = None;
                (self.handler, self.startup, self.shadowed) = outer;
                self.helper = outer_helper;
            }
            Stmt::Assign(a) => {
                let targets: Vec<&Expr> = a.targets.iter().collect();
                self.assignment(&targets, &a.value, a.range.start());
                self.self_patch(&targets, &a.value, a.range.start());
                walk_stmt(self, stmt);
            }
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    self.assignment(&[&*a.target], value, a.range.start());
                }
                walk_stmt(self, stmt);
            }
            Stmt::Import(i) => {
                for alias in &i.names {
                    self.import(alias.name.as_str(), 0, Vec::new(), i.range.start());
                }
            }
            Stmt::ImportFrom(from) => {
                let module = from.module.as_ref().map_or("", |m| m.as_str());
                let names = from
                    .names
                    .iter()
                    .map(|a| a.name.as_str().to_string())
                    .filter(|n| n != "*")
                    .collect();
                self.import(module, from.level, names, from.range.start());
            }
            Stmt::While(w) => {
                let location = self.location(w.range.start());
                if let Some(daemon) = self.daemon() {
                    daemon.first_loop.get_or_insert(location);
                }
                walk_stmt(self, stmt);
            }
            Stmt::Raise(r) => {
                if let Some(Expr::Call(call)) = r.exc.as_deref()
                    && let Some(func) = dotted(&call.func).map(|f| self.kopf.canonical(f))
                    && KOPF_ERRORS.contains(&func.as_str())
                {
                    let location = self.location(r.range.start());
                    if let Some(at) = self.handler {
                        self.facts.handlers[at].raises.push((func, location));
                    } else if let Some(at) = self.helper
                        && self.facts.helpers[at].raises.len() < MAX_CALLS
                    {
                        self.facts.helpers[at].raises.push((func, location));
                    }
                }
                walk_stmt(self, stmt);
            }
            _ => walk_stmt(self, stmt),
        }
    }
}

/// Whether a call may run a function of the repository, for the call graph: a plain
/// name (`sync_secret()`), or a name in a module (`k8s.read_config()`, which the call
/// graph follows only when the repository has a module `k8s`). Not a method of the
/// handler's logger or of kopf, nor anything deeper (`kubernetes.client.X()`), nor a
/// method of what a call returns (`session().query`, as [`chained_call`] names it).
fn may_be_own_function(func: &str) -> bool {
    if func.contains("()") {
        return false;
    }
    match func.split_once('.') {
        None => true,
        Some((module, name)) => {
            !name.contains('.')
                && !matches!(module, "self" | "cls" | "kopf" | "logger" | ROOT_LOGGER)
                && !LOG_METHODS.contains(&name)
        }
    }
}

#[cfg(test)]
mod tests;

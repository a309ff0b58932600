//! The `source.*` checks, pure: what only an operator's Python source shows, for
//! `kopf-audit lint`. Each finding points at a file and line.

use super::{finding, startup_settings};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::source::kopf_version::{
    BOOKMARKS, ByVersion, KOPF_ERAS, KopfVersion, LogPosting,
};
use crate::model::source::{
    DaemonFacts, Handler, Helper, KopfPin, Literal, Location, Millis, ResourceSpec, Sleep,
    SourceFacts,
};

/// A finding of the source, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SourceFinding {
    /// The finding; its target names the handler or file.
    pub(crate) finding: Finding,
    /// Where it is.
    pub(crate) location: Location,
    /// Lines that, inserted before the location's line, fix it (also in the finding's
    /// `fix`): what SARIF can carry as a fix.
    pub(crate) insert_before: Option<String>,
}

/// Whether handlers' log records are posted as Events, across the kopf versions the
/// files allow.
enum Posted<'a> {
    /// They are, for this reason.
    Yes(String),
    /// They are not, or posting is off.
    No,
    /// The versions allowed straddle `boundary`: posted before it, not from it.
    Depends {
        /// The requirement that allows both.
        pin: &'a KopfPin,
        /// The first version that posts no log record without `posting.loggers`.
        boundary: KopfVersion,
    },
}

/// Whether handlers' log records are posted as Events, and why: kopf before 1.41 posts
/// every record of the object logger at `posting.level` (kopf 0.x as well, at
/// `settings.posting.level` or `kopf.config.EventsConfig.events_loglevel`); from 1.41
/// only with `settings.posting.loggers = True` (kopf 1.45
/// `_cogs/configs/configuration.py`). With no version named and no setting deciding it,
/// the current kopf (loggers not posted) is assumed.
fn loggers_posted(facts: &SourceFacts) -> Posted<'_> {
    if facts.setting("posting.enabled") == Some(&Literal::Bool(false)) {
        return Posted::No;
    }
    let loggers_on = facts.setting("posting.loggers") == Some(&Literal::Bool(true));
    let by_setting = || {
        Posted::Yes("settings.posting.loggers = True posts every record of a handler's logger at posting.level as an Event".into())
    };
    let Some(pin) = &facts.kopf else {
        return if loggers_on { by_setting() } else { Posted::No };
    };
    let posted = pin.range.across(&KOPF_ERAS, |v| {
        loggers_on || LogPosting::of(v) == LogPosting::EveryRecord
    });
    match posted {
        ByVersion::Decided(false) => Posted::No,
        ByVersion::Decided(true)
            if pin.log_posting() == ByVersion::Decided(LogPosting::EveryRecord) =>
        {
            Posted::Yes(by_version(pin))
        }
        ByVersion::Decided(true) => by_setting(),
        ByVersion::Split { boundary, .. } => Posted::Depends { pin, boundary },
    }
}

/// Why a kopf that posts every record does: its version.
fn by_version(pin: &KopfPin) -> String {
    let level = if pin.before_one() {
        "posting.level (kopf 0.x: settings.posting.level, or kopf.config.EventsConfig.events_loglevel before it)"
    } else {
        "posting.level"
    };
    format!(
        "kopf {} (pinned at {}) posts every record of a handler's logger at {level} as an Event (posting.loggers arrived in 1.41)",
        pin.shown(),
        pin.location
    )
}

/// The versions a requirement allows, as an undecided finding names them.
fn allowed(pin: &KopfPin, boundary: KopfVersion) -> String {
    format!(
        "kopf {} (required at {}: {}) allows versions before and from {}.{}",
        pin.shown(),
        pin.location,
        pin.range,
        boundary.major,
        boundary.minor
    )
}

/// A finding the kopf versions allowed do not decide: info.
fn undecided(mut found: SourceFinding) -> SourceFinding {
    found.finding.severity = Severity::Info;
    found
}

/// Whether `posting.level` is left at INFO (or lower): kopf's default is `logging.INFO`.
fn posting_level_info(facts: &SourceFacts) -> bool {
    match facts.setting("posting.level") {
        None => true,
        Some(Literal::Name(n)) => matches!(
            n.as_str(),
            "logging.INFO" | "logging.DEBUG" | "INFO" | "DEBUG"
        ),
        Some(Literal::Int(level)) => *level <= 20,
        Some(Literal::Str(s)) => matches!(s.to_ascii_uppercase().as_str(), "INFO" | "DEBUG"),
        Some(_) => false,
    }
}

/// `source.posting-flood`: at the first INFO record of a handler's logger. Info when
/// the kopf versions allowed straddle 1.41.
pub(crate) fn posting_flood(facts: &SourceFacts) -> Option<SourceFinding> {
    let posted = loggers_posted(facts);
    if matches!(posted, Posted::No) || !posting_level_info(facts) {
        return None;
    }
    let (h, at) = facts.handlers.iter().find_map(|h| {
        h.kopf_logger_calls
            .iter()
            .find(|(method, _)| matches!(method.as_str(), "info" | "debug"))
            .map(|(_, at)| (h, at))
    })?;
    let target = handler_target(h);
    let mut found = match posted {
        Posted::Yes(why) => raise(
            CheckId::SourcePostingFlood,
            &target,
            at,
            format!(
                "{why}, and posting.level is left at INFO: every logger.info() of a handler, like this one in {}(), becomes an Event on its object (events.logging-flood once deployed). Set `settings.posting.level = logging.WARNING` in an @kopf.on.startup handler.",
                h.function
            ),
        ),
        Posted::Depends { pin, boundary } => undecided(raise(
            CheckId::SourcePostingFlood,
            &target,
            at,
            format!(
                "{}: before it, kopf posts every record of a handler's logger at posting.level (left at INFO) as an Event, so every logger.info() of a handler, like this one in {}(), would become an Event on its object (events.logging-flood once deployed); from it, only with settings.posting.loggers = True, which is off. Pin kopf or commit a lock file to decide; `settings.posting.level = logging.WARNING` in an @kopf.on.startup handler is right on both sides.",
                allowed(pin, boundary),
                h.function
            ),
        )),
        Posted::No => return None,
    };
    found.finding.fix = Some(startup_settings(&[
        "settings.posting.level = logging.WARNING",
    ]));
    Some(found)
}

/// `source.silent-failure`. Info when the kopf versions allowed straddle 1.41.
pub(crate) fn silent_failure(
    facts: &SourceFacts,
    graph: &CallGraph<'_>,
    h: &Handler,
) -> Option<SourceFinding> {
    let (error, at) = match h.raises.first() {
        Some((error, at)) => (error.clone(), at.clone()),
        None => raised_by_helper(graph, h)?,
    };
    let (error, at) = (&error, &at);
    if !h.posts.is_empty() || facts.setting("posting.enabled") == Some(&Literal::Bool(false)) {
        return None;
    }
    let version = match (loggers_posted(facts), &facts.kopf) {
        (Posted::Yes(_), _) => return None,
        (Posted::Depends { pin, boundary }, _) => {
            return Some(undecided(raise(
                CheckId::SourceSilentFailure,
                &handler_target(h),
                at,
                format!(
                    "Handler {}() raises {error}. {}: before it, kopf posts the failure's log record as an Event; from it, only with settings.posting.loggers, which is off, and the handler posts none itself, so its failures would reach only the operator's log, never the object's Events (events.silent-failures once deployed). Pin kopf or commit a lock file to decide; calling `kopf.warn(body, reason=..., message=...)` before raising is right on both sides.",
                    h.function,
                    allowed(pin, boundary)
                ),
            )));
        }
        (Posted::No, Some(k)) => format!("kopf {} (pinned at {})", k.shown(), k.location),
        (Posted::No, None) => {
            "kopf 1.41 and later (no version is pinned: the current kopf is assumed)".into()
        }
    };
    Some(raise(
        CheckId::SourceSilentFailure,
        &handler_target(h),
        at,
        format!(
            "Handler {}() raises {error}, but {version} posts log records as Events only with settings.posting.loggers, which is off, and the handler posts none itself: its failures reach only the operator's log, never the object's Events (events.silent-failures once deployed). Call `kopf.warn(body, reason=..., message=...)` before raising, or set `settings.posting.loggers = True` with posting.level WARNING.",
            h.function
        ),
    ))
}

/// A kopf error a handler raises through the helpers it calls (followed as
/// [`blocking_helper`] follows them), none of which posts an Event: what it raises, as
/// a phrase naming the chain (`kopf.TemporaryError (through check() (defined at
/// x.py:3), at x.py:5)`), and the handler's call site.
fn raised_by_helper(graph: &CallGraph<'_>, h: &Handler) -> Option<(String, Location)> {
    let mut search = Search::default();
    h.calls.iter().find_map(|(name, at)| {
        let helper = graph.resolve(name, &at.file)?;
        let (chain, error, raised_at) = graph.through(helper, 0, &mut search, &|f| {
            if f.posts {
                return Err(());
            }
            Ok(f.raises.first().cloned())
        })?;
        Some((
            format!("{error} (through {chain}, at {raised_at})"),
            at.clone(),
        ))
    })
}

/// `source.timer-posting`.
pub(crate) fn timer_posting(h: &Handler) -> Option<SourceFinding> {
    if !matches!(h.decorator.as_str(), "timer" | "on.timer") {
        return None;
    }
    let (at, _) = h.posts.iter().find(|(_, every_call)| *every_call)?;
    Some(raise(
        CheckId::SourceTimerPosting,
        &handler_target(h),
        at,
        format!(
            "Timer {}() posts an Event on every tick: the object's Events fill with the same message (events.steady-state-spam once deployed). Post only when something changed, or log instead.",
            h.function
        ),
    ))
}

/// `source.index-worker-limit`.
pub(crate) fn index_worker_limit(facts: &SourceFacts) -> Option<SourceFinding> {
    let index = facts
        .handlers
        .iter()
        .find(|h| matches!(h.decorator.as_str(), "index" | "on.index"))?;
    let (path, limit) = ["queueing.worker_limit", "batching.worker_limit"]
        .into_iter()
        .find_map(|p| match facts.setting(p) {
            Some(Literal::Int(n)) => Some((p, *n)),
            _ => None,
        })?;
    let at = facts
        .settings
        .iter()
        .rev()
        .find(|s| s.in_startup && s.path == path)
        .map_or_else(|| index.location.clone(), |s| s.location.clone());
    Some(raise(
        CheckId::SourceIndexWorkerLimit,
        &handler_target(index),
        &at,
        format!(
            "settings.{path} = {limit} with @kopf.index handler {}(): before any handler runs, kopf waits until every object is indexed, and with more than {limit} objects the worker limit keeps the rest from being indexed: the operator never starts handling, while its liveness probe passes (kopf issue 1243; runtime.startup-stalled once deployed). Remove the limit, or keep it well above the number of indexed objects.",
            index.function
        ),
    ))
}

fn raise(check: CheckId, target: &str, location: &Location, message: String) -> SourceFinding {
    SourceFinding {
        finding: finding(check, target, message, None),
        location: location.clone(),
        insert_before: None,
    }
}

/// A finding whose fix is `lines` inserted before its line.
fn with_insertion(mut found: SourceFinding, lines: String) -> SourceFinding {
    found.finding.fix = Some(lines.clone());
    found.insert_before = Some(lines);
    found
}

/// kopf's positional resource arguments for a decorator: group, version and name where
/// the source gave them.
fn resource_arguments(resource: &ResourceSpec) -> String {
    resource
        .group
        .iter()
        .filter(|g| !g.is_empty())
        .chain(resource.version.iter())
        .chain(std::iter::once(&resource.name))
        .map(|part| format!("{part:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The name findings give a handler: `file:function`.
pub(crate) fn handler_target(h: &Handler) -> String {
    format!("{}:{}", h.location.file, h.function)
}

/// `source.syntax-error`.
pub(crate) fn syntax_error(facts: &SourceFacts) -> Vec<SourceFinding> {
    facts
        .problems
        .iter()
        .map(|p| {
            raise(
                CheckId::SourceSyntaxError,
                &p.location.file,
                &p.location,
                format!(
                    "{} does not parse: {}. Nothing in it was linted; fix the syntax (kopf would fail to import it).",
                    p.location.file, p.message
                ),
            )
        })
        .collect()
}

/// `source.handler-kwargs`.
pub(crate) fn handler_kwargs(h: &Handler) -> Option<SourceFinding> {
    (!h.has_kwargs).then(|| {
        raise(
            CheckId::SourceHandlerKwargs,
            &handler_target(h),
            &h.location,
            format!(
                "Handler {}() (@kopf.{}) has no **kwargs: kopf calls every handler with all its keyword arguments (kopf 1.45 `_core/actions/invocation.py`: `fn(**kwargs)`), so each call raises TypeError. End its signature with `**kwargs`.",
                h.function, h.decorator
            ),
        )
    })
}

/// `source.blocking-call`.
pub(crate) fn blocking_call(h: &Handler) -> Vec<SourceFinding> {
    h.blocking_calls
        .iter()
        .map(|(what, at)| {
            raise(
                CheckId::SourceBlockingCall,
                &handler_target(h),
                at,
                format!(
                    "async handler {}() calls {what}: kopf runs every async handler in one event loop, so this call stalls all handling until it returns. Await an async equivalent, or make the handler a plain `def` (kopf runs those in a thread pool).",
                    h.function
                ),
            )
        })
        .collect()
}

/// How deep [`blocking_helper`] follows calls from helper to helper.
const MAX_CALL_DEPTH: usize = 4;

/// `source.blocking-call` through the repository's own functions: an async handler
/// that calls a helper (by a plain name, in its module or, when the name is unique in
/// the repository, in another) which makes a blocking call itself or through the
/// helpers it calls, up to [`MAX_CALL_DEPTH`] deep. One finding per call site, at it.
pub(crate) fn blocking_helper(graph: &CallGraph<'_>, h: &Handler) -> Vec<SourceFinding> {
    if !h.is_async {
        return Vec::new();
    }
    let mut seen_sites = std::collections::BTreeSet::new();
    let mut search = Search::default();
    h.calls
        .iter()
        .filter(|(_, at)| seen_sites.insert(at.clone()))
        .filter_map(|(name, at)| {
            let helper = graph.resolve(name, &at.file)?;
            let (chain, what, blocked_at) =
                graph.through(helper, 0, &mut search, &|f| {
                    Ok(f.blocking_calls.first().cloned())
                })?;
            Some(raise(
                CheckId::SourceBlockingCall,
                &handler_target(h),
                at,
                format!(
                    "async handler {}() calls {chain}, which calls {what} at {blocked_at}: kopf runs every async handler in one event loop, so this call stalls all handling until it returns. Make the helper async (awaiting an async equivalent), run it with `await asyncio.to_thread(...)`, or make the handler a plain `def` (kopf runs those in a thread pool).",
                    h.function
                ),
            ))
        })
        .collect()
}

/// The repository's functions by name, built once per run: each call a handler or
/// helper makes is looked up, not searched for among every function (a search per
/// call is quadratic in a large repository's functions).
pub(crate) struct CallGraph<'a> {
    by_name: std::collections::HashMap<&'a str, Vec<&'a Helper>>,
}

/// What [`CallGraph::through`] looks for in one helper: what and where, `None` to look
/// in its callees, `Err` to stop there.
type Pick = dyn Fn(&Helper) -> Result<Option<(String, Location)>, ()>;

/// The state of one handler's searches with one [`Pick`]: the helpers on the current
/// path (to cut cycles), and those already searched in full without a find, by the
/// depth they were searched at. Without the second, a file of helpers that each call
/// the next a few hundred times, and a handler calling the first on as many lines,
/// costs the product of those counts at every depth: billions of lookups from a few
/// KiB of hostile Python.
#[derive(Default)]
pub(crate) struct Search<'a> {
    visiting: Vec<&'a str>,
    exhausted: std::collections::HashSet<(*const Helper, usize)>,
    /// Whether the search below the current helper was cut at a helper on the path:
    /// what it found then depends on the path, so it is not remembered.
    cut: bool,
}

impl<'a> CallGraph<'a> {
    /// Indexes the helpers of `facts`.
    pub(crate) fn new(facts: &'a SourceFacts) -> CallGraph<'a> {
        let mut by_name: std::collections::HashMap<&str, Vec<&Helper>> =
            std::collections::HashMap::new();
        for helper in &facts.helpers {
            by_name.entry(&helper.function).or_default().push(helper);
        }
        CallGraph { by_name }
    }

    /// The helper a name calls from `file`: for a plain name, the one defined in that
    /// file, else the only one of that name in the repository; for `module.name`, the
    /// only one of that name in a module so named (`k8s.py`, `k8s/__init__.py`).
    fn resolve(&self, name: &str, file: &str) -> Option<&'a Helper> {
        if let Some((module, function)) = name.split_once('.') {
            let mut in_module = self
                .by_name
                .get(function)?
                .iter()
                .filter(|f| module_name(&f.location.file) == Some(module));
            return match (in_module.next(), in_module.next()) {
                (Some(only), None) => Some(*only),
                _ => None,
            };
        }
        let named = self.by_name.get(name)?;
        named
            .iter()
            .find(|f| f.location.file == file)
            .or(match named.as_slice() {
                [only] => Some(only),
                _ => None,
            })
            .copied()
    }

    /// What `pick` finds in `helper` or in the helpers it calls, up to
    /// [`MAX_CALL_DEPTH`] deep, cycles cut: the chain of helpers, what, and where.
    /// `pick` gives `Err` to stop the search along a helper (one that posts an Event
    /// answers for its callees).
    ///
    /// Each helper is searched once per depth (a search at a depth finds nothing that a
    /// shallower one would not), and each name it calls once however often it calls it.
    fn through(
        &self,
        helper: &'a Helper,
        depth: usize,
        search: &mut Search<'a>,
        pick: &Pick,
    ) -> Option<(String, String, Location)> {
        let here = || format!("{}() (defined at {})", helper.function, helper.location);
        if let Some((what, at)) = pick(helper).ok()? {
            return Some((here(), what, at));
        }
        let key = (std::ptr::from_ref(helper), depth);
        if search.visiting.contains(&helper.function.as_str()) {
            search.cut = true;
            return None;
        }
        if depth + 1 >= MAX_CALL_DEPTH || search.exhausted.contains(&key) {
            return None;
        }
        let cut_above = std::mem::replace(&mut search.cut, false);
        search.visiting.push(&helper.function);
        let mut called = std::collections::HashSet::new();
        let found = helper
            .calls
            .iter()
            .filter(|name| called.insert(name.as_str()))
            .find_map(|name| {
                let inner = self.resolve(name, &helper.location.file)?;
                let (chain, what, at) = self.through(inner, depth + 1, search, pick)?;
                Some((format!("{}, which calls {chain}", here()), what, at))
            });
        search.visiting.pop();
        if found.is_none() && !search.cut {
            search.exhausted.insert(key);
        }
        search.cut |= cut_above;
        found
    }
}

/// The name a Python file is imported by: its stem, or its package's name for an
/// `__init__.py`.
fn module_name(path: &str) -> Option<&str> {
    let mut parts = path.rsplit('/');
    let file = parts.next()?.strip_suffix(".py")?;
    if file == "__init__" {
        parts.next()
    } else {
        Some(file)
    }
}

/// The handlers that serve no object: their records have nothing to be posted on.
const OPERATOR_HANDLERS: [&str; 4] = ["on.startup", "on.cleanup", "on.login", "on.probe"];

/// `source.module-logger`: one finding per handler, at its first such call; for a
/// handler that logs with neither such a logger nor kopf's own, at its first call of a
/// repository function that does, itself or through the functions it calls.
pub(crate) fn module_logger(graph: &CallGraph<'_>, h: &Handler) -> Option<SourceFinding> {
    if OPERATOR_HANDLERS.contains(&h.decorator.as_str()) {
        return None;
    }
    if let Some((logger, at)) = h.module_logger_calls.first() {
        let count = h.module_logger_calls.len();
        return Some(raise(
            CheckId::SourceModuleLogger,
            &handler_target(h),
            at,
            format!(
                "Handler {}() logs {count} time(s) with {}: its records carry no object reference, so kopf never posts them as Events on the object. Take kopf's `logger` keyword argument (`def {}(..., logger, **kwargs)`) and log with it.",
                h.function,
                logger_words(logger),
                h.function
            ),
        ));
    }
    if !h.kopf_logger_calls.is_empty() {
        return None;
    }
    module_logger_helper(graph, h)
}

/// `the root logger …` or `the module-level logger `log``.
fn logger_words(logger: &str) -> String {
    if logger == "logging" {
        "the root logger (`logging.info(...)` and the like)".to_string()
    } else {
        format!("the module-level logger `{logger}`")
    }
}

/// [`module_logger`] through the repository's functions: the first call site whose
/// helper logs through a module-level or the root logger.
fn module_logger_helper(graph: &CallGraph<'_>, h: &Handler) -> Option<SourceFinding> {
    let mut search = Search::default();
    h.calls.iter().find_map(|(name, at)| {
        let helper = graph.resolve(name, &at.file)?;
        let (chain, logger, logged_at) = graph.through(helper, 0, &mut search, &|f| {
            Ok(f.module_logger_calls.first().cloned())
        })?;
        Some(raise(
            CheckId::SourceModuleLogger,
            &handler_target(h),
            at,
            format!(
                "Handler {}() logs only through {chain}, which logs with {} at {logged_at}: those records carry no object reference, so kopf never posts them as Events on the object. Take kopf's `logger` keyword argument (`def {}(..., logger, **kwargs)`) and pass it to the function that logs.",
                h.function,
                logger_words(&logger),
                h.function
            ),
        ))
    })
}

/// The change handlers that make kopf keep a diff-base on each object.
const DIFFBASE_HANDLERS: [&str; 5] = [
    "on.create",
    "on.update",
    "on.delete",
    "on.resume",
    "on.field",
];

/// `source.unfiltered-builtin`.
pub(crate) fn unfiltered_builtin(h: &Handler) -> Option<SourceFinding> {
    if h.filtered || !DIFFBASE_HANDLERS.contains(&h.decorator.as_str()) {
        return None;
    }
    let kind = h.resource.as_ref()?.builtin()?;
    let data = if kind.kind == "Secret" {
        " On Secrets that annotation copies their data in clear text."
    } else {
        ""
    };
    Some(raise(
        CheckId::SourceUnfilteredBuiltin,
        &handler_target(h),
        &h.location,
        format!(
            "@kopf.{} handler {}() takes every {} it serves, unfiltered: kopf writes its diff-base annotation (kopf.zalando.org/last-handled-configuration) onto each one, and handles them all.{data} Narrow it with labels=, annotations= or when=.",
            h.decorator, h.function, kind.kind
        ),
    ))
}

/// `source.settings-outside-startup`.
pub(crate) fn settings_outside_startup(facts: &SourceFacts) -> Vec<SourceFinding> {
    facts
        .settings
        .iter()
        .filter(|s| !s.in_startup)
        .map(|s| {
            raise(
                CheckId::SourceSettingsOutsideStartup,
                &s.location.file,
                &s.location,
                format!(
                    "settings.{} is written outside an @kopf.on.startup handler: kopf applies the settings its startup handlers set, before it starts watching (kopf 1.45 `_core/reactor/running.py`). Move it into `@kopf.on.startup() def configure(settings: kopf.OperatorSettings, **_)`.",
                    s.path
                ),
            )
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests;

/// One kopf decorator with a resource, and the handler whose function it decorates.
struct Registered<'a> {
    handler: &'a Handler,
    decorator: &'a str,
    resource: &'a ResourceSpec,
    text: &'a str,
}

/// Every kopf decorator of every handler with its resource: stacked decorators count
/// as handlers of their own.
fn registrations(facts: &SourceFacts) -> impl Iterator<Item = Registered<'_>> {
    facts.handlers.iter().flat_map(|h| {
        std::iter::once((h.decorator.as_str(), h.resource.as_ref(), h.text.as_str()))
            .chain(
                h.stacked
                    .iter()
                    .map(|r| (r.decorator.as_str(), r.resource.as_ref(), r.text.as_str())),
            )
            .filter_map(move |(decorator, resource, text)| {
                Some(Registered {
                    handler: h,
                    decorator,
                    resource: resource?,
                    text,
                })
            })
    })
}

/// The resume decorator that mirrors a create or update one as written (same resource,
/// filters and options); built from the resource when the text is not a plain
/// `@kopf.on.create(`/`@kopf.on.update(` call.
fn resume_like(r: &Registered) -> String {
    for from in ["@kopf.on.create(", "@kopf.on.update("] {
        if let Some(rest) = r.text.strip_prefix(from) {
            return format!("@kopf.on.resume({rest}\n");
        }
    }
    format!("@kopf.on.resume({})\n", resource_arguments(r.resource))
}

/// `source.no-resume`: at the first function whose create or update handlers serve a
/// resource that no resume handler serves, one finding for all such resources it
/// serves (a resource is named once, not again at its update handler). An event handler, a timer or a
/// daemon also runs for every existing object after a restart (kopf 1.45
/// `_core/intents/causes.py`, `detect_changing_cause`: an object with a stored essence
/// and no diff at the first listing gets the resume cause; creation is only for objects
/// without an essence, update only for a diff). Info: a handler that only reacts to a
/// change (logs it, notifies) needs no resume; one that reconciles does.
pub(crate) fn no_resume(facts: &SourceFacts) -> Vec<SourceFinding> {
    const RECONCILES_EXISTING: [&str; 5] = ["on.resume", "on.event", "timer", "daemon", "on.timer"];
    let all: Vec<_> = registrations(facts).collect();
    let unresumed = |resource: &ResourceSpec| {
        !all.iter()
            .any(|r| RECONCILES_EXISTING.contains(&r.decorator) && r.resource.same_as(resource))
    };
    let mut reported: Vec<&ResourceSpec> = Vec::new();
    let mut out = Vec::new();
    for h in &facts.handlers {
        let mut names: Vec<&str> = Vec::new();
        let mut fixes: Vec<String> = Vec::new();
        let mut decorators: Vec<&str> = Vec::new();
        for r in &all {
            if std::ptr::eq(r.handler, h)
                && matches!(r.decorator, "on.create" | "on.update")
                && unresumed(r.resource)
                && !reported.iter().any(|seen| seen.same_as(r.resource))
            {
                reported.push(r.resource);
                names.push(&r.resource.name);
                fixes.push(resume_like(r));
                if !decorators.contains(&r.decorator) {
                    decorators.push(r.decorator);
                }
            }
        }
        if names.is_empty() {
            continue;
        }
        let found = raise(
            CheckId::SourceNoResume,
            &handler_target(h),
            &h.location,
            format!(
                "{}() handles {} of {} but no @kopf.on.resume handler serves {}: after a restart or an upgrade of the operator, objects unchanged since they were last handled are not reconciled again, so a new version's desired state never reaches them. If {}() reconciles, stack @kopf.on.resume on it (create + resume + update, idempotent).",
                h.function,
                decorators
                    .iter()
                    .map(|d| format!("@kopf.{d}"))
                    .collect::<Vec<_>>()
                    .join(" and "),
                names.join(", "),
                if names.len() == 1 { "it" } else { "them" },
                h.function
            ),
        );
        out.push(with_insertion(found, fixes.concat()));
    }
    out
}

/// How many other daemons a finding names before it counts the rest.
const MAX_NAMED: usize = 5;

/// The longest sleep a daemon may take between checks of `stopped`: a stop waits out at
/// most that long, as in kopf's own termination example (`time.sleep(1.0)`, kopf docs
/// `daemons.rst`).
const TOLERATED_SLEEP: Millis = Millis(1000);

/// What Python sizes kopf's default executor at (`concurrent.futures.ThreadPoolExecutor()`
/// with no `max_workers`), as messages say it.
const DEFAULT_POOL: &str = "min(32, CPUs + 4) threads, with the CPUs of the node (os.cpu_count()), not the pod's CPU limit";

/// `source.sync-daemon-pool`: at the first synchronous daemon that serves every object
/// of its resource, naming the others, while the executor keeps Python's default size.
/// kopf runs a synchronous daemon in `settings.execution.executor` (kopf 1.45
/// `_core/actions/invocation.py`, `run_in_executor`), a `ThreadPoolExecutor()` whose
/// `max_workers` is left unset (`_cogs/configs/configuration.py`,
/// `ExecutionSettings`), and the daemon holds its thread for its object's whole life.
pub(crate) fn sync_daemon_pool(facts: &SourceFacts) -> Option<SourceFinding> {
    if ["execution.max_workers", "execution.executor"]
        .iter()
        .any(|path| facts.setting_write(path).is_some())
    {
        return None;
    }
    let mut unbounded = facts
        .handlers
        .iter()
        .filter(|h| h.daemon.is_some() && !h.is_async && !h.filtered && h.resource.is_some());
    let first = unbounded.next()?;
    let others: Vec<String> = unbounded
        .map(|h| format!("{}() at {}", h.function, h.location))
        .collect();
    let also = match others.len() {
        0 => String::new(),
        n if n <= MAX_NAMED => format!(" (so do {})", others.join(", ")),
        n => format!(
            " (so do {} and {} more)",
            others[..MAX_NAMED].join(", "),
            n - MAX_NAMED
        ),
    };
    let resource = first
        .resource
        .as_ref()
        .map_or_else(String::new, |r| format!(" {}", r.name));
    let mut found = raise(
        CheckId::SourceSyncDaemonPool,
        &handler_target(first),
        &first.location,
        format!(
            "Synchronous daemon {}() serves every{resource} object, with no labels=, annotations=, when= or field= filter{also}: kopf runs each in a thread of settings.execution.executor for its object's whole life, and settings.execution.max_workers is left at Python's default, {DEFAULT_POOL}, shared with every synchronous handler (kopf 1.45 `_core/actions/invocation.py`). With more objects than threads, the daemons of the rest never start, and every synchronous handler waits behind them. Make the daemon `async def` (awaiting `stopped.wait(...)`), narrow it with labels= or when=, or set settings.execution.max_workers above the number of objects in an @kopf.on.startup handler.",
            first.function
        ),
    );
    found.finding.fix = Some(startup_settings(&[
        "settings.execution.max_workers = 64  # above the objects with a synchronous daemon",
    ]));
    Some(found)
}

/// `source.daemon-ignores-stop`: a daemon that loops and never reads its `stopped`
/// flag (at the loop), else one that sleeps past it (at the first such sleep). kopf
/// stops a daemon by setting `stopped`; it cancels only an async daemon, and only with
/// `cancellation_timeout` (kopf 1.45 `_core/engines/daemons.py`); a thread cannot be
/// cancelled at all (`_core/actions/invocation.py` waits for it).
pub(crate) fn daemon_ignores_stop(h: &Handler) -> Option<SourceFinding> {
    let daemon = h.daemon.as_ref()?;
    let loop_at = daemon.first_loop.as_ref()?;
    if !daemon.reads_stopped {
        if h.is_async && daemon.cancels {
            // kopf cancels it: any await raises CancelledError (kopf docs `daemons.rst`).
            return None;
        }
        let mut found = raise(
            CheckId::SourceDaemonIgnoresStop,
            &handler_target(h),
            loop_at,
            never_stops(h, daemon),
        );
        found.finding.fix = Some(fix(h, None));
        return Some(found);
    }
    let sleep = daemon
        .sleeps
        .iter()
        .find(|s| sleeps_past_stop(h, daemon, s))?;
    let waited = sleep.duration.map_or_else(
        || "as long as it lasts".to_string(),
        |d| format!("up to {d}"),
    );
    let mut found = raise(
        CheckId::SourceDaemonIgnoresStop,
        &handler_target(h),
        &sleep.location,
        format!(
            "Daemon {}() sleeps with {}(){}: the sleep does not end when kopf sets `stopped`, so every stop (its object's deletion, the operator's exit) waits {waited}, and a deletion that finds the daemon still running is looked at again only after settings.background.cancellation_polling (60 s; kopf 1.45 `_core/engines/daemons.py`, `stop_daemons`). Sleep with `{}`, which returns as soon as the flag is set.",
            h.function,
            sleep.function,
            if h.is_async {
                " and has no cancellation_timeout (kopf never cancels it)"
            } else {
                ""
            },
            wait_call(h, sleep.duration)
        ),
    );
    found.finding.fix = Some(fix(h, sleep.duration));
    Some(found)
}

/// The message of a looping daemon that never reads `stopped`.
fn never_stops(h: &Handler, daemon: &DaemonFacts) -> String {
    let deleted = match (h.is_async, daemon.cancels) {
        (false, true) => {
            "when its object is deleted, kopf gives up after cancellation_backoff + cancellation_timeout (`did not exit in time. Leaving it orphaned.`) and the thread runs on for good, holding one of settings.execution.executor's threads"
        }
        _ => {
            "when its object is deleted, the finalizer stays for as long as the daemon runs (kopf polls it every 60 s, settings.background.cancellation_polling): the deletion hangs"
        }
    };
    let exiting = if h.is_async {
        "when the operator exits, kopf abandons it and cancels it with the hung tasks 5 s later"
    } else {
        "when the operator exits, the thread keeps the process alive until the kubelet kills it at the end of terminationGracePeriodSeconds"
    };
    let how = if h.is_async {
        "Loop `while not stopped:` and sleep with `await stopped.wait(seconds)`, or set cancellation_timeout= on the decorator (kopf then cancels it)"
    } else {
        "Loop `while not stopped:` and sleep with `stopped.wait(seconds)`"
    };
    format!(
        "{} daemon {}() loops but never checks its `stopped` flag{}: kopf stops a daemon by setting that flag ({}; kopf 1.45 `_core/engines/daemons.py`). So {deleted}; {exiting}. {how}.",
        if h.is_async { "Async" } else { "Synchronous" },
        h.function,
        if h.is_async {
            ", and has no cancellation_timeout"
        } else {
            ""
        },
        if h.is_async {
            "it cancels an async daemon only when cancellation_timeout is set"
        } else {
            "a thread cannot be cancelled"
        },
    )
}

/// Whether a sleep keeps a daemon from stopping: `time.sleep` in a thread, or
/// `asyncio.sleep` in an async daemon kopf never cancels, for longer than
/// [`TOLERATED_SLEEP`] or an unread time. (`time.sleep` in an async daemon is
/// `source.blocking-call`'s.)
fn sleeps_past_stop(h: &Handler, daemon: &DaemonFacts, sleep: &Sleep) -> bool {
    let blocks_stop = match (h.is_async, sleep.function.as_str()) {
        (false, "time.sleep") => true,
        (true, "asyncio.sleep") => !daemon.cancels,
        _ => false,
    };
    blocks_stop && sleep.duration.is_none_or(|d| d > TOLERATED_SLEEP)
}

/// The call that waits as a sleep does but returns when `stopped` is set.
fn wait_call(h: &Handler, duration: Option<Millis>) -> String {
    let seconds = duration.map_or_else(|| "seconds".to_string(), seconds_literal);
    if h.is_async {
        format!("await stopped.wait({seconds})")
    } else {
        format!("stopped.wait({seconds})")
    }
}

/// A duration as a Python number literal.
fn seconds_literal(d: Millis) -> String {
    if d.0.is_multiple_of(1000) {
        (d.0 / 1000).to_string()
    } else {
        format!("{}.{:03}", d.0 / 1000, d.0 % 1000)
            .trim_end_matches('0')
            .to_string()
    }
}

/// A daemon's loop that stops when kopf says so.
fn fix(h: &Handler, duration: Option<Millis>) -> String {
    let def = if h.is_async { "async def" } else { "def" };
    format!(
        "{def} {}(stopped, **kwargs):\n    while not stopped:\n        ...  # the work\n        {}\n",
        h.function,
        wait_call(h, duration.or(Some(Millis(10_000))))
    )
}

/// The watch timeouts: either bounds every watch stream (kopf 1.45
/// `_cogs/configs/configuration.py`, `WatchingSettings`; both default to `None`).
const WATCH_TIMEOUTS: [&str; 2] = ["watching.server_timeout", "watching.client_timeout"];

/// What the fix sets: kopf's docs' server timeout, and a client timeout a little
/// longer, so that the server ends a healthy stream first.
const WATCH_TIMEOUTS_FIX: [&str; 2] = [
    "settings.watching.server_timeout = 10 * 60",
    "settings.watching.client_timeout = 11 * 60",
];

/// `source.watch-timeouts`: a kopf operator (one with handlers) whose startup handlers
/// set neither watch timeout. A warning when every kopf version allowed is before
/// 1.44 (a stream a load balancer or NAT drops silently is never restarted: kopf issue
/// 585), info otherwise (1.44 notices a silent stream by its bookmarks, but only on
/// Python 3.11 and later, kopf docs `configuration.rst`). At the first startup handler,
/// else the first handler.
pub(crate) fn watch_timeouts(facts: &SourceFacts) -> Option<SourceFinding> {
    if facts.handlers.is_empty()
        || WATCH_TIMEOUTS
            .iter()
            .any(|p| facts.setting(p).is_some_and(|v| *v != Literal::None))
    {
        return None;
    }
    let at = facts
        .handlers
        .iter()
        .find(|h| h.decorator == "on.startup")
        .or_else(|| facts.handlers.first())?;
    let unset = "no @kopf.on.startup handler sets settings.watching.server_timeout or client_timeout (both default to None: a watch stream lasts as long as the connection does)";
    let frozen = "a watch stream that a load balancer or NAT drops silently stays open with nothing on it, and the operator stops seeing changes while it runs and passes its liveness probe (kopf issue 585; runtime.not-handling once deployed)";
    let by_version = facts
        .kopf
        .as_ref()
        .map(|pin| (pin, pin.range.across(&[BOOKMARKS], |v| v >= BOOKMARKS)));
    let found = match by_version {
        Some((pin, ByVersion::Decided(false))) => raise(
            CheckId::SourceWatchTimeouts,
            &at.location.file,
            &at.location,
            format!(
                "kopf {} (pinned at {}) has no bookmarks and no inactivity timeout (both arrived in 1.44), and {unset}: {frozen}. kopf's configuration docs: before 1.44, setting either timeout is what recovers from such freezes. Set both in an @kopf.on.startup handler, or upgrade kopf to 1.44 or later.",
                pin.shown(),
                pin.location
            ),
        )
        .with_severity(Severity::Warning),
        Some((pin, ByVersion::Split { boundary, .. })) => undecided(raise(
            CheckId::SourceWatchTimeouts,
            &at.location.file,
            &at.location,
            format!(
                "{unset}. {}: before it, {frozen}; from it, kopf restarts a stream silent for settings.watching.inactivity_timeout (70 s), on Python 3.11 and later only. Pin kopf 1.44 or later, or set both timeouts in an @kopf.on.startup handler: right on both sides.",
                allowed(pin, boundary)
            ),
        )),
        _ => raise(
            CheckId::SourceWatchTimeouts,
            &at.location.file,
            &at.location,
            format!(
                "{unset}. {}kopf 1.44 and later restart a stream silent for settings.watching.inactivity_timeout (70 s, by its bookmarks; kopf 1.45 `_cogs/clients/watching.py`), but only on Python 3.11 and later: on Python 3.10, or with that timeout raised, {frozen}. kopf's configuration docs set server_timeout in their startup example; set it (and a slightly longer client_timeout) to bound every stream whatever the Python.",
                facts.kopf.as_ref().map_or_else(
                    || "No kopf version is pinned (the current kopf is assumed): ".to_string(),
                    |pin| format!("kopf {} (pinned at {}): ", pin.shown(), pin.location)
                )
            ),
        ),
    };
    let mut found = found;
    found.finding.fix = Some(startup_settings(&WATCH_TIMEOUTS_FIX));
    Some(found)
}

impl SourceFinding {
    /// A finding of the source at `location`, with no lines to insert.
    pub(crate) fn at(finding: Finding, location: &Location) -> SourceFinding {
        SourceFinding {
            finding,
            location: location.clone(),
            insert_before: None,
        }
    }

    /// The finding at another severity than its check's default.
    fn with_severity(mut self, severity: Severity) -> SourceFinding {
        self.finding.severity = severity;
        self
    }
}

#[cfg(test)]
mod daemon_tests;

#[cfg(test)]
mod watch_tests;

//! The `source.*` checks, pure: what only an operator's Python source shows, for
//! `kopf-audit lint`. Each finding points at a file and line.

use super::finding;
use crate::api::Finding;
use crate::catalog::CheckId;
use crate::model::source::{Handler, Location, SourceFacts};

/// A finding of the source, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SourceFinding {
    /// The finding; its target names the handler or file.
    pub(crate) finding: Finding,
    /// Where it is.
    pub(crate) location: Location,
}

/// Runs every source check.
pub(crate) fn check(facts: &SourceFacts) -> Vec<SourceFinding> {
    let mut out = syntax_error(facts);
    for handler in &facts.handlers {
        out.extend(handler_kwargs(handler));
        out.extend(blocking_call(handler));
        out.extend(module_logger(handler));
        out.extend(unfiltered_builtin(handler));
    }
    out.extend(settings_outside_startup(facts));
    out
}

fn raise(check: CheckId, target: &str, location: &Location, message: String) -> SourceFinding {
    SourceFinding {
        finding: finding(check, target, message, None),
        location: location.clone(),
    }
}

/// The name findings give a handler: `file:function`.
fn handler_target(h: &Handler) -> String {
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

/// The handlers that serve no object: their records have nothing to be posted on.
const OPERATOR_HANDLERS: [&str; 4] = ["on.startup", "on.cleanup", "on.login", "on.probe"];

/// `source.module-logger`: one finding per handler, at its first such call.
pub(crate) fn module_logger(h: &Handler) -> Option<SourceFinding> {
    if OPERATOR_HANDLERS.contains(&h.decorator.as_str()) {
        return None;
    }
    let (logger, at) = h.module_logger_calls.first()?;
    let count = h.module_logger_calls.len();
    Some(raise(
        CheckId::SourceModuleLogger,
        &handler_target(h),
        at,
        format!(
            "Handler {}() logs {count} time(s) with the module-level logger `{logger}`: its records carry no object reference, so kopf never posts them as Events on the object. Take kopf's `logger` keyword argument (`def {}(..., logger, **kwargs)`) and log with it.",
            h.function, h.function
        ),
    ))
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
mod tests;

//! `source.no-resume`: create or update handlers of a resource that no resume handler
//! (nor an event handler, a timer or a daemon) serves, so that objects unchanged across
//! a restart are not reconciled again (kopf 1.45 `_core/intents/causes.py`). Reads
//! every kopf decorator with its resource, stacked ones too.

use super::{SourceFinding, handler_target, raise};
use crate::catalog::CheckId;
use crate::model::source::{Handler, ResourceSpec, SourceFacts};

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

/// The decider: at the first function whose create or update handlers serve a
/// resource that no resume handler serves, one finding for all such resources it
/// serves (a resource is named once, not again at its update handler). An event
/// handler, a timer or a daemon also runs for every existing object after a restart (kopf 1.45
/// `_core/intents/causes.py`, `detect_changing_cause`: an object with a stored essence
/// and no diff at the first listing gets the resume cause; creation is only for objects
/// without an essence, update only for a diff). Info: a handler that only reacts to a
/// change (logs it, notifies) needs no resume; one that reconciles does.
pub(crate) fn source(facts: &SourceFacts) -> Vec<SourceFinding> {
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

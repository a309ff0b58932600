//! What the persistence checks read in an operator's source: where its startup settings
//! make kopf keep its state tells, before deploy, which marks its handled objects will
//! carry. The deciders are the checks' own modules' `source` functions; these are the
//! facts they share.

use crate::model::source::{Handler, Location, SourceFacts};

/// The decorators of kopf's change handlers (kopf 1.45 `on.py`: resume, create, update,
/// delete, field): the handlers whose progress kopf stores per object, and after which
/// it stores the diff-base (`_core/reactor/processing.py`).
const CHANGE_HANDLERS: [&str; 5] = [
    "on.resume",
    "on.create",
    "on.update",
    "on.delete",
    "on.field",
];

/// Every decorator of a handler's function, with the decorator text: its own and the
/// stacked ones.
pub(super) fn registrations(h: &Handler) -> impl Iterator<Item = (&str, &str)> {
    std::iter::once((h.decorator.as_str(), h.text.as_str())).chain(
        h.stacked
            .iter()
            .map(|r| (r.decorator.as_str(), r.text.as_str())),
    )
}

/// The first change handler of a custom resource, if any: on a built-in kind (a
/// Secret, a ConfigMap) annotations are the right place, since its status keeps only
/// its own typed fields and drops what kopf writes there.
pub(super) fn first_change_handler(facts: &SourceFacts) -> Option<&Handler> {
    facts.handlers.iter().find(|h| {
        h.resource.as_ref().is_some_and(|r| r.builtin().is_none())
            && registrations(h).any(|(d, _)| CHANGE_HANDLERS.contains(&d))
    })
}

/// How the annotations come to be chosen, for the message.
pub(super) fn annotations_chosen(facts: &SourceFacts, path: &str, default: &str) -> String {
    match facts.setting(path) {
        None => format!("kopf's default {default} keeps it there"),
        Some(_) => format!("the startup handler's `settings.{path}` keeps it there"),
    }
}

/// Whether a decorator makes kopf put its finalizer on the objects: a daemon, a timer or
/// a delete handler that is not `optional=True` (kopf 1.45 `on.py`, `requires_finalizer`).
pub(super) fn requires_finalizer(decorator: &str, text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    match decorator {
        "daemon" | "timer" => true,
        "on.delete" => !compact.contains("optional=True"),
        _ => false,
    }
}

/// Where a finding about a setting points: at the setting when a startup handler writes
/// it, else at the handler that makes it matter.
pub(super) fn at_setting_or(facts: &SourceFacts, path: &str, handler: &Handler) -> Location {
    facts
        .setting_write(path)
        .map_or_else(|| handler.location.clone(), |s| s.location.clone())
}

#[cfg(test)]
mod tests {
    use super::super::default_finalizer::source as default_finalizer;
    use super::super::diffbase_annotation::source as diffbase_annotation;
    use super::super::progress_annotations::source as progress_annotations;
    use super::*;
    use crate::catalog::CheckId;
    use crate::model::kopf_marks::DEFAULT_FINALIZER;
    use crate::model::source::{Literal, ResourceSpec, SettingWrite};

    fn location(line: u32) -> Location {
        Location::new("op.py", line)
    }

    fn handler(decorator: &str, text: &str) -> Handler {
        Handler {
            location: location(10),
            function: "reconcile".into(),
            text: text.into(),
            ..crate::checks::source::tests::handler(decorator, Some("widgets"))
        }
    }

    fn startup(path: &str, value: Literal) -> SettingWrite {
        SettingWrite {
            location: location(3),
            path: path.into(),
            value,
            in_startup: true,
        }
    }

    fn facts(handlers: Vec<Handler>, settings: Vec<SettingWrite>) -> SourceFacts {
        SourceFacts {
            handlers,
            settings,
            ..SourceFacts::default()
        }
    }

    #[test]
    fn defaults_put_progress_and_diffbase_into_annotations() {
        let f = facts(
            vec![handler("on.update", "@kopf.on.update('widgets')")],
            vec![],
        );
        let progress = progress_annotations(&f).expect("progress finding");
        assert_eq!(progress.location.line, 10);
        assert!(progress.finding.message.contains("SmartProgressStorage"));
        assert!(
            progress
                .finding
                .fix
                .as_deref()
                .is_some_and(|fix| fix.contains("kopf.StatusProgressStorage()"))
        );
        let diffbase = diffbase_annotation(&f).expect("diff-base finding");
        assert_eq!(
            diffbase.finding.check,
            CheckId::PersistenceDiffbaseAnnotation
        );
    }

    #[test]
    fn status_storages_chosen_at_startup_clear_both() {
        let f = facts(
            vec![handler("on.create", "@kopf.on.create('widgets')")],
            vec![
                startup(
                    "persistence.progress_storage",
                    Literal::Call("kopf.StatusProgressStorage".into()),
                ),
                startup(
                    "persistence.diffbase_storage",
                    Literal::Call("kopf.StatusDiffBaseStorage".into()),
                ),
            ],
        );
        assert_eq!(progress_annotations(&f), None);
        assert_eq!(diffbase_annotation(&f), None);
        assert!(f.storage().uses_status());
    }

    #[test]
    fn explicit_annotation_storage_points_at_the_setting() {
        let f = facts(
            vec![handler("on.create", "@kopf.on.create('widgets')")],
            vec![startup(
                "persistence.progress_storage",
                Literal::Call("kopf.AnnotationsProgressStorage".into()),
            )],
        );
        let found = progress_annotations(&f).expect("finding");
        assert_eq!(found.location.line, 3);
    }

    #[test]
    fn a_storage_the_linter_cannot_read_is_not_judged() {
        let f = facts(
            vec![handler("on.create", "@kopf.on.create('widgets')")],
            vec![startup(
                "persistence.progress_storage",
                Literal::Name("MY_STORAGE".into()),
            )],
        );
        assert_eq!(progress_annotations(&f), None);
    }

    #[test]
    fn built_in_kinds_keep_their_state_in_annotations() {
        let mut secrets = handler("on.update", "@kopf.on.update('v1', 'secrets')");
        secrets.resource = Some(ResourceSpec {
            name: "secrets".into(),
            ..ResourceSpec::default()
        });
        let f = facts(vec![secrets], vec![]);
        assert_eq!(progress_annotations(&f), None);
        assert_eq!(diffbase_annotation(&f), None);
    }

    #[test]
    fn event_handlers_and_timers_store_no_progress() {
        let f = facts(
            vec![
                handler("on.event", "@kopf.on.event('widgets')"),
                handler("timer", "@kopf.timer('widgets', interval=60)"),
            ],
            vec![],
        );
        assert_eq!(progress_annotations(&f), None);
        assert_eq!(diffbase_annotation(&f), None);
    }

    #[test]
    fn the_default_finalizer_comes_with_daemons_timers_and_mandatory_deletes() {
        for (decorator, text) in [
            ("timer", "@kopf.timer('widgets', interval=60)"),
            ("daemon", "@kopf.daemon('widgets')"),
            ("on.delete", "@kopf.on.delete('widgets')"),
        ] {
            let f = facts(vec![handler(decorator, text)], vec![]);
            let found = default_finalizer(&f).expect(decorator);
            assert!(found.finding.message.contains(DEFAULT_FINALIZER));
        }
        let optional = facts(
            vec![handler(
                "on.delete",
                "@kopf.on.delete('widgets', optional = True)",
            )],
            vec![],
        );
        assert_eq!(default_finalizer(&optional), None);
        let named = facts(
            vec![handler("timer", "@kopf.timer('widgets', interval=60)")],
            vec![startup("persistence.finalizer", Literal::Other)],
        );
        assert_eq!(default_finalizer(&named), None);
    }
}

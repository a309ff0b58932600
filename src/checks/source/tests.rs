use super::call_graph::CallGraph;
use super::index_worker_limit::source as index_worker_limit;
use super::no_resume::source as no_resume;
use super::posting_flood::source as posting_flood;
use super::silent_failure::of_handler as silent_failure;
use super::timer_posting::source as timer_posting;
use super::unfiltered_builtin::source as unfiltered_builtin;
use super::*;
use crate::model::source::SourceFacts;
use crate::model::source::kopf_version::{KopfRange, parse_version};
use crate::model::source::{Literal, ParseProblem, Registration, ResourceSpec, SettingWrite};

/// A handler at op.py:10 with no facts but its decorator and resource: the other
/// source tests start from it.
pub(in crate::checks) fn handler(decorator: &str, resource: Option<&str>) -> Handler {
    Handler {
        location: Location::new("op.py", 10),
        function: "fn".into(),
        decorator: decorator.into(),
        resource: resource.map(|name| ResourceSpec {
            name: name.into(),
            ..ResourceSpec::default()
        }),
        text: format!("@kopf.{decorator}()"),
        stacked: Vec::new(),
        is_async: false,
        has_kwargs: true,
        filtered: false,
        blocking_calls: Vec::new(),
        calls: Vec::new(),
        module_logger_calls: Vec::new(),
        kopf_logger_calls: Vec::new(),
        raises: Vec::new(),
        posts: Vec::new(),
        self_patches: Vec::new(),
        daemon: None,
    }
}

fn resume(resource: Option<ResourceSpec>) -> Registration {
    Registration {
        decorator: "on.resume".into(),
        resource,
        text: "@kopf.on.resume()".into(),
    }
}

fn ids(found: &[SourceFinding]) -> Vec<&str> {
    found.iter().map(|f| f.finding.check.as_str()).collect()
}

#[test]
fn a_clean_handler_raises_nothing() {
    let mut h = handler("on.create", Some("kopfexamples"));
    h.stacked = vec![resume(h.resource.clone())];
    let status = |path: &str, class: &str| SettingWrite {
        location: Location::new("op.py", 3),
        path: path.into(),
        value: Literal::Call(class.into()),
        in_startup: true,
    };
    let facts = SourceFacts {
        handlers: vec![h],
        settings: vec![
            status("persistence.progress_storage", "kopf.StatusProgressStorage"),
            status("persistence.diffbase_storage", "kopf.StatusDiffBaseStorage"),
            SettingWrite {
                value: Literal::Int(600),
                ..status("watching.server_timeout", "")
            },
        ],
        ..SourceFacts::default()
    };
    assert!(crate::checks::registry::source_findings(&facts).is_empty());
}

#[test]
fn each_source_check_fires_on_its_own_fault_with_the_location() {
    let mut h = handler("on.update", Some("secrets"));
    h.has_kwargs = false;
    h.is_async = true;
    h.blocking_calls = vec![("time.sleep()".into(), Location::new("op.py", 12))];
    h.module_logger_calls = vec![("logger".into(), Location::new("op.py", 13))];
    let facts = SourceFacts {
        handlers: vec![h],
        settings: vec![SettingWrite {
            location: Location::new("op.py", 3),
            path: "posting.level".into(),
            value: Literal::Name("logging.WARNING".into()),
            in_startup: false,
        }],
        problems: vec![ParseProblem {
            location: Location::new("broken.py", 7),
            message: "Expected ')'".into(),
        }],
        ..SourceFacts::default()
    };
    let found = crate::checks::registry::source_findings(&facts);
    assert_eq!(
        ids(&found),
        [
            "source.syntax-error",
            "source.handler-kwargs",
            "source.blocking-call",
            "source.module-logger",
            "source.unfiltered-builtin",
            "source.settings-outside-startup",
            "source.no-resume",
            "source.watch-timeouts",
        ]
    );
    assert_eq!(found[2].location, Location::new("op.py", 12));
    assert!(
        found[4].finding.message.contains("Secret"),
        "{}",
        found[4].finding.message
    );
    assert!(found[4].finding.message.contains("data"));
}

#[test]
fn unfiltered_builtin_spares_filtered_handlers_custom_kinds_and_event_handlers() {
    let mut filtered = handler("on.create", Some("pods"));
    filtered.filtered = true;
    assert!(unfiltered_builtin(&filtered).is_none());
    assert!(unfiltered_builtin(&handler("on.create", Some("kopfexamples"))).is_none());
    // on.event keeps no diff-base.
    assert!(unfiltered_builtin(&handler("on.event", Some("pods"))).is_none());
    let pods = unfiltered_builtin(&handler("on.resume", Some("Pod"))).expect("fires");
    assert!(!pods.finding.message.contains("clear text"));
}

/// A timer or daemon needs kopf's finalizer on each object: unfiltered on a built-in
/// kind, every one of them carries it, and their deletion hangs while the operator is
/// down.
#[test]
fn unfiltered_builtin_timers_and_daemons_put_the_finalizer_on_every_object() {
    for decorator in ["timer", "daemon"] {
        let found = unfiltered_builtin(&handler(decorator, Some("namespaces"))).expect("fires");
        let message = &found.finding.message;
        assert!(
            message.contains("kopf puts its finalizer on each one"),
            "{message}"
        );
        assert!(
            message.contains("deleting any Namespace it serves hangs"),
            "{message}"
        );
        assert!(
            message.contains(&format!("one {decorator} per object")),
            "{message}"
        );
        let mut filtered = handler(decorator, Some("namespaces"));
        filtered.filtered = true;
        assert!(unfiltered_builtin(&filtered).is_none());
        assert!(unfiltered_builtin(&handler(decorator, Some("kopfexamples"))).is_none());
    }
    // An index keeps nothing on the objects.
    assert!(unfiltered_builtin(&handler("index", Some("pods"))).is_none());
}

/// A requirement on exactly `version`.
fn pin(version: &str) -> Option<KopfPin> {
    let range = KopfRange::exactly(parse_version(version).expect("a version"));
    Some(KopfPin {
        range,
        written: format!("=={version}"),
        locked: false,
        location: Location::new("requirements.txt", 1),
    })
}

fn startup_setting(path: &str, value: Literal) -> SettingWrite {
    SettingWrite {
        location: Location::new("op.py", 2),
        path: path.into(),
        value,
        in_startup: true,
    }
}

#[test]
fn posting_flood_depends_on_the_version_and_the_settings() {
    let mut h = handler("on.create", Some("kopfexamples"));
    h.kopf_logger_calls = vec![("info".into(), Location::new("op.py", 11))];
    let facts = |kopf: Option<KopfPin>, settings: Vec<SettingWrite>| SourceFacts {
        handlers: vec![h.clone()],
        settings,
        kopf,
        ..SourceFacts::default()
    };
    // kopf 1.37 posts every INFO record of a handler's logger.
    let old = posting_flood(&facts(pin("1.37.2"), vec![])).expect("fires on 1.37");
    assert_eq!(old.location, Location::new("op.py", 11));
    assert!(
        old.finding.message.contains("kopf 1.37.2"),
        "{}",
        old.finding.message
    );
    // 1.45 does not, unless posting.loggers is on.
    assert!(posting_flood(&facts(pin("1.45.2"), vec![])).is_none());
    assert!(posting_flood(&facts(None, vec![])).is_none());
    let loggers = startup_setting("posting.loggers", Literal::Bool(true));
    assert!(posting_flood(&facts(pin("1.45.2"), vec![loggers.clone()])).is_some());
    // A raised posting level, or posting off, ends it.
    let warning = startup_setting("posting.level", Literal::Name("logging.WARNING".into()));
    assert!(posting_flood(&facts(pin("1.37.2"), vec![warning])).is_none());
    let off = startup_setting("posting.enabled", Literal::Bool(false));
    assert!(posting_flood(&facts(pin("1.37.2"), vec![off])).is_none());
}

#[test]
fn silent_failure_is_a_raise_that_nothing_posts_on_current_kopf() {
    let mut h = handler("on.update", Some("kopfexamples"));
    h.raises = vec![("kopf.TemporaryError".into(), Location::new("op.py", 14))];
    let facts = |h: &Handler, kopf: Option<KopfPin>| SourceFacts {
        handlers: vec![h.clone()],
        kopf,
        ..SourceFacts::default()
    };
    let unpinned = facts(&h, None);
    let found = silent_with_graph(&unpinned, &h).expect("fires: current kopf assumed");
    assert!(found.finding.message.contains("assumed"));
    // Before 1.41 the failure's log record is posted.
    assert!(silent_with_graph(&facts(&h, pin("1.38.0")), &h).is_none());
    // A handler that posts itself is not silent.
    let mut posting = h.clone();
    posting.posts = vec![(Location::new("op.py", 13), false)];
    assert!(silent_with_graph(&facts(&posting, None), &posting).is_none());
}

#[test]
fn a_timer_posting_on_every_tick_and_an_index_under_a_worker_limit() {
    let mut timer = handler("timer", Some("kopfexamples"));
    timer.posts = vec![(Location::new("op.py", 21), true)];
    assert_eq!(timer_posting(&timer).expect("fires").location.line, 21);
    timer.posts = vec![(Location::new("op.py", 21), false)];
    assert!(
        timer_posting(&timer).is_none(),
        "a post under a condition is fine"
    );

    let index = handler("index", Some("pods"));
    let limited = SourceFacts {
        handlers: vec![index.clone()],
        settings: vec![startup_setting("queueing.worker_limit", Literal::Int(5))],
        ..SourceFacts::default()
    };
    let found = index_worker_limit(&limited).expect("fires");
    assert_eq!(found.location, Location::new("op.py", 2));
    let unlimited = SourceFacts {
        handlers: vec![index],
        ..SourceFacts::default()
    };
    assert!(index_worker_limit(&unlimited).is_none());
}

#[test]
fn no_resume_fires_per_resource_unless_resume_or_a_handler_of_existing_objects_is_there() {
    let of = |handlers: Vec<Handler>| SourceFacts {
        handlers,
        ..SourceFacts::default()
    };
    let create = handler("on.create", Some("widgets"));
    let update = handler("on.update", Some("Widget"));
    let found = no_resume(&of(vec![create.clone(), update.clone()]));
    assert_eq!(ids(&found), vec!["source.no-resume"], "once per resource");
    assert!(found[0].finding.message.contains("@kopf.on.resume"));
    let mut filtered = create.clone();
    filtered.text = "@kopf.on.create('v1', 'secrets', labels={'sync': 'yes'})".into();
    filtered.resource = Some(ResourceSpec {
        group: Some(String::new()),
        version: Some("v1".into()),
        name: "secrets".into(),
    });
    let fix = no_resume(&of(vec![filtered]))[0].insert_before.clone();
    assert_eq!(
        fix.as_deref(),
        Some("@kopf.on.resume('v1', 'secrets', labels={'sync': 'yes'})\n"),
        "the fix keeps the decorator's filters"
    );

    let mut stacked = create.clone();
    stacked.stacked = vec![resume(Some(ResourceSpec {
        name: "widget".into(),
        ..ResourceSpec::default()
    }))];
    let mut update_resumed = update.clone();
    update_resumed.stacked = stacked.stacked.clone();
    assert!(no_resume(&of(vec![stacked, update_resumed])).is_empty());
    for other in ["on.resume", "timer", "daemon", "on.event"] {
        let facts = of(vec![create.clone(), handler(other, Some("widgets"))]);
        assert!(
            no_resume(&facts).is_empty(),
            "{other} reconciles existing objects"
        );
    }
    let elsewhere = of(vec![create, handler("on.resume", Some("gadgets"))]);
    assert_eq!(ids(&no_resume(&elsewhere)), vec!["source.no-resume"]);
}

#[test]
fn an_update_handler_patching_a_changing_value_on_every_call_loops() {
    let at = Location::new("op.py", 14);
    let mut h = handler("on.update", Some("stamps"));
    h.self_patches = vec![("metadata.annotations.x/at".into(), at.clone(), true)];
    let f = crate::checks::runtime::handler_loop::source(&h).expect("a loop");
    assert_eq!(f.finding.check, CheckId::RuntimeHandlerLoop);
    assert_eq!(f.location, at);
    assert!(
        f.finding
            .message
            .contains("patch.metadata.annotations.x/at"),
        "{}",
        f.finding.message
    );
    assert!(
        f.finding.message.contains("only when the value differs"),
        "{}",
        f.finding.message
    );
    // Under a condition: the handler patches only when different.
    h.self_patches[0].2 = false;
    assert!(crate::checks::runtime::handler_loop::source(&h).is_none());
    // The same function stacked under on.create and on.update is an update handler.
    let mut stacked = handler("on.create", Some("stamps"));
    stacked.stacked = vec![Registration {
        decorator: "on.update".into(),
        resource: stacked.resource.clone(),
        text: "@kopf.on.update('stamps')".into(),
    }];
    stacked.self_patches = vec![("spec.at".into(), Location::new("op.py", 3), true)];
    assert!(crate::checks::runtime::handler_loop::source(&stacked).is_some());
    // A creation handler runs once per object; a timer on purpose.
    for decorator in ["on.create", "timer"] {
        let mut other = handler(decorator, Some("stamps"));
        other.self_patches = vec![("spec.at".into(), Location::new("op.py", 3), true)];
        assert!(
            crate::checks::runtime::handler_loop::source(&other).is_none(),
            "{decorator}"
        );
    }
}

/// A requirement that allows a range, as written in `pyproject.toml`.
fn required(written: &str, lower: &str, upper: &str) -> Option<KopfPin> {
    let v = |t: &str| parse_version(t).expect("a version");
    Some(KopfPin {
        range: KopfRange::from_until(v(lower), v(upper)),
        written: written.into(),
        locked: false,
        location: Location::new("pyproject.toml", 9),
    })
}

#[test]
fn a_caret_range_across_1_41_is_undecided_and_says_both_sides() {
    let mut h = handler("on.create", Some("kopfexamples"));
    h.kopf_logger_calls = vec![("info".into(), Location::new("op.py", 11))];
    h.raises = vec![("kopf.TemporaryError".into(), Location::new("op.py", 14))];
    let facts = |kopf: Option<KopfPin>| SourceFacts {
        handlers: vec![h.clone()],
        kopf,
        ..SourceFacts::default()
    };
    let caret = facts(required("^1.38.0", "1.38.0", "2.0.0"));
    let flood = posting_flood(&caret).expect("reported, undecided");
    assert_eq!(flood.finding.check, CheckId::SourcePostingFlood);
    assert_eq!(flood.finding.severity, Severity::Info);
    let message = &flood.finding.message;
    assert!(message.contains("kopf ^1.38.0"), "{message}");
    assert!(message.contains(">=1.38.0,<2.0.0"), "{message}");
    assert!(message.contains("before and from 1.41"), "{message}");
    let silent = silent_with_graph(&caret, &h).expect("reported, undecided");
    assert_eq!(silent.finding.severity, Severity::Info);
    assert!(silent.finding.message.contains("pyproject.toml:9"));
    // A range wholly before 1.41 decides: the warning, as for a pinned version.
    let before = facts(required(">=1.30,<1.41", "1.30", "1.41"));
    let decided = posting_flood(&before).expect("fires");
    assert_eq!(decided.finding.severity, Severity::Warning);
    assert!(silent_with_graph(&before, &h).is_none());
    // A range wholly from 1.41 decides the other way.
    let after = facts(required("~=1.41", "1.41", "2"));
    assert!(posting_flood(&after).is_none());
    let silent = silent_with_graph(&after, &h).expect("fires");
    assert_eq!(silent.finding.severity, Severity::Warning);
}

#[test]
fn kopf_before_1_0_posts_handler_records_like_before_1_41() {
    let mut h = handler("on.create", Some("kopfexamples"));
    h.kopf_logger_calls = vec![("info".into(), Location::new("op.py", 11))];
    h.raises = vec![("kopf.TemporaryError".into(), Location::new("op.py", 14))];
    let facts = |settings: Vec<SettingWrite>| SourceFacts {
        handlers: vec![h.clone()],
        settings,
        kopf: pin("0.27"),
        ..SourceFacts::default()
    };
    let flood = posting_flood(&facts(vec![])).expect("0.27 posts INFO records");
    assert_eq!(flood.finding.severity, Severity::Warning);
    assert!(
        flood.finding.message.contains("EventsConfig"),
        "{}",
        flood.finding.message
    );
    assert!(silent_with_graph(&facts(vec![]), &h).is_none());
    let raised = startup_setting("posting.level", Literal::Name("logging.WARNING".into()));
    assert!(posting_flood(&facts(vec![raised])).is_none());
}

/// `source.silent-failure` on `facts`, with its call graph.
fn silent_with_graph(facts: &SourceFacts, h: &Handler) -> Option<SourceFinding> {
    silent_failure(facts, &CallGraph::new(facts), h)
}

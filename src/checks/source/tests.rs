use super::*;
use crate::model::source::{Literal, ParseProblem, ResourceSpec, SettingWrite};

fn handler(decorator: &str, resource: Option<&str>) -> Handler {
    Handler {
        location: Location::new("op.py", 10),
        function: "fn".into(),
        decorator: decorator.into(),
        resource: resource.map(|name| ResourceSpec {
            name: name.into(),
            ..ResourceSpec::default()
        }),
        is_async: false,
        has_kwargs: true,
        filtered: false,
        blocking_calls: Vec::new(),
        module_logger_calls: Vec::new(),
    }
}

fn ids(found: &[SourceFinding]) -> Vec<&str> {
    found.iter().map(|f| f.finding.check.as_str()).collect()
}

#[test]
fn a_clean_handler_raises_nothing() {
    let facts = SourceFacts {
        handlers: vec![handler("on.create", Some("kopfexamples"))],
        ..SourceFacts::default()
    };
    assert!(check(&facts).is_empty());
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
    let found = check(&facts);
    assert_eq!(
        ids(&found),
        [
            "source.syntax-error",
            "source.handler-kwargs",
            "source.blocking-call",
            "source.module-logger",
            "source.unfiltered-builtin",
            "source.settings-outside-startup",
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

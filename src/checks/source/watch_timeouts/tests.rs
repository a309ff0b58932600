use super::source as watch_timeouts;
use super::*;
use crate::model::source::kopf_version::{KopfPin, KopfRange, KopfVersion};
use crate::model::source::{Handler, Location, SettingWrite};

fn handler(decorator: &str, line: u32) -> Handler {
    Handler {
        location: Location::new("op.py", line),
        ..crate::checks::source::tests::handler(decorator, None)
    }
}

fn operator() -> SourceFacts {
    SourceFacts {
        handlers: vec![handler("on.create", 5), handler("on.startup", 20)],
        ..SourceFacts::default()
    }
}

fn pinned(range: KopfRange) -> Option<KopfPin> {
    Some(KopfPin {
        range,
        written: range.to_string(),
        locked: false,
        location: Location::new("requirements.txt", 1),
    })
}

fn timeout(path: &str, value: Literal) -> SettingWrite {
    SettingWrite {
        location: Location::new("op.py", 22),
        path: path.into(),
        value,
        in_startup: true,
    }
}

#[test]
fn no_timeout_is_info_at_the_startup_handler_with_the_current_kopf() {
    let found = watch_timeouts(&operator()).expect("reported");
    assert_eq!(found.finding.check, CheckId::SourceWatchTimeouts);
    assert_eq!(found.finding.severity, Severity::Info);
    assert_eq!(found.location, Location::new("op.py", 20));
    assert!(found.finding.message.contains("No kopf version is pinned"));
    assert!(
        found
            .finding
            .fix
            .as_deref()
            .is_some_and(|f| f.contains("settings.watching.server_timeout = 10 * 60"))
    );
}

#[test]
fn before_bookmarks_it_is_a_warning_and_a_range_across_them_is_info() {
    let mut facts = operator();
    facts.kopf = pinned(KopfRange::exactly(KopfVersion::new(1, 43, 2)));
    let found = watch_timeouts(&facts).expect("reported");
    assert_eq!(found.finding.severity, Severity::Warning);
    assert!(found.finding.message.contains("kopf 1.43.2"));
    facts.kopf = pinned(KopfRange::from_until(
        KopfVersion::new(1, 40, 0),
        KopfVersion::new(2, 0, 0),
    ));
    let found = watch_timeouts(&facts).expect("reported");
    assert_eq!(found.finding.severity, Severity::Info);
    assert!(found.finding.message.contains("before and from 1.44"));
    facts.kopf = pinned(KopfRange::exactly(KopfVersion::new(1, 45, 2)));
    assert_eq!(
        watch_timeouts(&facts).map(|f| f.finding.severity),
        Some(Severity::Info)
    );
}

#[test]
fn either_timeout_set_in_startup_or_no_handler_at_all_is_no_finding() {
    for path in WATCH_TIMEOUTS {
        let mut facts = operator();
        facts.settings.push(timeout(path, Literal::Other));
        assert_eq!(watch_timeouts(&facts), None, "{path}");
    }
    assert_eq!(watch_timeouts(&SourceFacts::default()), None);
}

#[test]
fn a_timeout_set_to_none_or_outside_startup_does_not_count() {
    let mut facts = operator();
    facts
        .settings
        .push(timeout("watching.server_timeout", Literal::None));
    let mut outside = timeout("watching.client_timeout", Literal::Int(60));
    outside.in_startup = false;
    facts.settings.push(outside);
    assert!(watch_timeouts(&facts).is_some());
}

#[test]
fn without_a_startup_handler_it_points_at_the_first_handler() {
    let facts = SourceFacts {
        handlers: vec![handler("on.create", 5)],
        ..SourceFacts::default()
    };
    let found = watch_timeouts(&facts).expect("reported");
    assert_eq!(found.location, Location::new("op.py", 5));
}

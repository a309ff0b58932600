use super::daemon_ignores_stop::source as daemon_ignores_stop;
use super::sync_daemon_pool::source as sync_daemon_pool;
use super::*;
use crate::model::source::{DaemonFacts, Millis, Sleep, SourceFacts};
use crate::model::source::{Literal, Location, SettingWrite};

fn daemon(is_async: bool, facts: DaemonFacts) -> Handler {
    Handler {
        function: "watch".into(),
        text: "@kopf.daemon('widgets')".into(),
        is_async,
        daemon: Some(facts),
        ..super::tests::handler("daemon", Some("widgets"))
    }
}

fn looping() -> DaemonFacts {
    DaemonFacts {
        first_loop: Some(Location::new("op.py", 12)),
        ..DaemonFacts::default()
    }
}

fn sleep(function: &str, millis: Option<u64>) -> Sleep {
    Sleep {
        function: function.into(),
        duration: millis.map(Millis),
        location: Location::new("op.py", 14),
    }
}

fn startup(path: &str) -> SettingWrite {
    SettingWrite {
        location: Location::new("op.py", 3),
        path: path.into(),
        value: Literal::Int(64),
        in_startup: true,
    }
}

#[test]
fn an_unfiltered_sync_daemon_with_the_default_pool_is_reported_once_naming_the_others() {
    let mut second = daemon(false, looping());
    second.function = "probe".into();
    let facts = SourceFacts {
        handlers: vec![daemon(false, looping()), second],
        ..SourceFacts::default()
    };
    let found = sync_daemon_pool(&facts).expect("reported");
    assert_eq!(found.finding.check, CheckId::SourceSyncDaemonPool);
    assert_eq!(found.location, Location::new("op.py", 10));
    assert!(
        found.finding.message.contains("watch()"),
        "{}",
        found.finding.message
    );
    assert!(found.finding.message.contains("probe() at op.py:10"));
    assert!(found.finding.message.contains("min(32, CPUs + 4)"));
    assert!(
        found
            .finding
            .fix
            .as_deref()
            .is_some_and(|f| f.contains("settings.execution.max_workers"))
    );
}

#[test]
fn a_sized_pool_an_async_or_a_filtered_daemon_is_not_reported() {
    for path in ["execution.max_workers", "execution.executor"] {
        let facts = SourceFacts {
            handlers: vec![daemon(false, looping())],
            settings: vec![startup(path)],
            ..SourceFacts::default()
        };
        assert_eq!(sync_daemon_pool(&facts), None, "{path}");
    }
    let mut filtered = daemon(false, looping());
    filtered.filtered = true;
    for h in [daemon(true, looping()), filtered] {
        let facts = SourceFacts {
            handlers: vec![h],
            ..SourceFacts::default()
        };
        assert_eq!(sync_daemon_pool(&facts), None);
    }
}

#[test]
fn the_pool_set_outside_a_startup_handler_is_still_the_default() {
    let mut write = startup("execution.max_workers");
    write.in_startup = false;
    let facts = SourceFacts {
        handlers: vec![daemon(false, looping())],
        settings: vec![write],
        ..SourceFacts::default()
    };
    assert!(sync_daemon_pool(&facts).is_some());
}

#[test]
fn a_looping_daemon_that_never_reads_stopped_is_reported_at_its_loop() {
    for is_async in [false, true] {
        let found = daemon_ignores_stop(&daemon(is_async, looping())).expect("reported");
        assert_eq!(found.finding.check, CheckId::SourceDaemonIgnoresStop);
        assert_eq!(found.location, Location::new("op.py", 12));
        assert!(found.finding.message.contains("finalizer stays"));
        let wait = if is_async {
            "await stopped.wait(10)"
        } else {
            "stopped.wait(10)"
        };
        assert!(
            found
                .finding
                .fix
                .as_deref()
                .is_some_and(|f| f.contains(wait))
        );
    }
}

#[test]
fn a_cancellation_timeout_stops_an_async_daemon_but_not_a_thread() {
    let cancelled = DaemonFacts {
        cancels: true,
        cancellation_timeout: Some(Millis(5000)),
        ..looping()
    };
    assert_eq!(daemon_ignores_stop(&daemon(true, cancelled.clone())), None);
    let found = daemon_ignores_stop(&daemon(false, cancelled)).expect("a thread runs on");
    assert!(found.finding.message.contains("Leaving it orphaned"));
}

#[test]
fn a_long_or_unread_sleep_is_reported_at_the_sleep_a_short_one_is_not() {
    let with = |sleeps: Vec<Sleep>, cancels: bool| DaemonFacts {
        reads_stopped: true,
        cancels,
        sleeps,
        ..looping()
    };
    let sync_long = daemon(false, with(vec![sleep("time.sleep", Some(30_000))], false));
    let found = daemon_ignores_stop(&sync_long).expect("reported");
    assert_eq!(found.location, Location::new("op.py", 14));
    assert!(found.finding.message.contains("up to 30 s"));
    assert!(found.finding.message.contains("`stopped.wait(30)`"));
    let unread = daemon(true, with(vec![sleep("asyncio.sleep", None)], false));
    assert!(daemon_ignores_stop(&unread).is_some());
    for quiet in [
        daemon(false, with(vec![sleep("time.sleep", Some(1000))], false)),
        daemon(true, with(vec![sleep("asyncio.sleep", Some(60_000))], true)),
        // source.blocking-call's, not this check's.
        daemon(true, with(vec![sleep("time.sleep", Some(60_000))], false)),
    ] {
        assert_eq!(daemon_ignores_stop(&quiet), None, "{quiet:?}");
    }
}

#[test]
fn a_daemon_without_a_loop_or_a_non_daemon_is_not_reported() {
    assert_eq!(
        daemon_ignores_stop(&daemon(false, DaemonFacts::default())),
        None
    );
    let mut timer = daemon(false, looping());
    timer.daemon = None;
    assert_eq!(daemon_ignores_stop(&timer), None);
}

//! The events, persistence and runtime areas against real kopf operators: what they
//! log, the Events they post (or fail to), what they leave on their objects; in kopf's
//! three log formats.

use crate::operator::audit_fixture;

const AREAS: [&str; 3] = ["events.", "persistence.", "runtime."];

macro_rules! fixture_log_test {
    ($($test:ident => $fixture:literal, $format:expr),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                audit_fixture($fixture, &AREAS, $format).await;
            }
        )*
    };
}

fixture_log_test! {
    logs_of_good => "good", None,
    logs_of_silent_failures => "silent-failures", None,
    logs_of_silent_failures_json => "silent-failures", Some("json"),
    logs_of_silent_failures_plain => "silent-failures", Some("plain"),
    logs_of_logging_flood => "logging-flood", None,
    logs_of_no_events_create => "no-events-create", None,
    logs_of_no_events_create_json => "no-events-create", Some("json"),
    logs_of_annotations_storage => "annotations-storage", None,
    logs_of_pruning_status => "pruning-status", None,
    logs_of_pruning_status_plain => "pruning-status", Some("plain"),
    logs_of_crashloop => "crashloop", None,
    logs_of_cluster_scoped_posted => "cluster-scoped-posted", None,
}

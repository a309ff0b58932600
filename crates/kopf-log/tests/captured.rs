//! The parser on REAL kopf 1.45.2 output, captured from the test fixtures running against
//! a real API server (`hack/capture-kopf-logs.sh`), in kopf's three log formats, as the
//! pods/log API serves it with `timestamps=true`.

use kopf_log::{EventKind, Parser, ParserOptions, PermissionScope, Record, Stats};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn parse(name: &str) -> (Vec<Record>, Stats) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/captured")
        .join(name);
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut parser = Parser::new(ParserOptions::default());
    let mut records: Vec<Record> = text
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| parser.push_line(line))
        .collect();
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    (records, parser.stats())
}

/// (kind name, handler, object name) of every handler failure, to compare formats.
fn failures(records: &[Record]) -> BTreeSet<(String, String, String)> {
    records
        .iter()
        .filter(|r| r.kind.is_handler_failure())
        .map(|r| {
            (
                r.kind.name().to_string(),
                r.kind.handler().map(|h| h.to_string()).unwrap_or_default(),
                r.object
                    .as_ref()
                    .map(|o| o.name.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn every_capture_parses_as_mostly_kopf() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/captured");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("captured data") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let (records, stats) = parse(&name);
        assert!(!records.is_empty(), "{name}");
        assert!(
            stats.kopf_ratio() > 0.5,
            "{name}: kopf ratio {}",
            stats.kopf_ratio()
        );
        assert!(
            records.iter().all(|r| r.timestamp.is_some()),
            "{name}: every record has a time"
        );
        seen += 1;
    }
    assert!(seen >= 10, "captures present: {seen}");
}

#[test]
fn temporary_errors_read_the_same_in_all_three_formats() {
    let full = failures(&parse("silent-failures.full.log").0);
    assert!(!full.is_empty());
    assert!(
        full.iter().all(|(kind, handler, object)| {
            kind == "HandlerFailedTemporarily"
                && handler == "Handler 'reconcile'"
                && !object.is_empty()
        }),
        "{full:?}"
    );
    assert_eq!(failures(&parse("silent-failures.json.log").0), full);
    assert_eq!(failures(&parse("silent-failures.plain.log").0), full);
}

#[test]
fn forbidden_event_posts_are_recognised_with_their_code() {
    for format in ["full", "json", "plain"] {
        let (records, _) = parse(&format!("no-events-create.{format}.log"));
        assert!(
            records
                .iter()
                .any(|r| matches!(r.kind, EventKind::EventPostFailed { code: Some(403) })),
            "{format}: Failed to post an event ... Code: 403"
        );
        let denial = records
            .iter()
            .find_map(|r| r.forbidden.as_ref())
            .unwrap_or_else(|| panic!("{format}: a forbidden record"));
        assert_eq!(
            (denial.verb.as_str(), denial.resource.as_str()),
            ("create", "events"),
            "{format}"
        );
    }
}

#[test]
fn missing_crd_list_degrades_permissions() {
    for format in ["full", "json"] {
        let (records, _) = parse(&format!("no-crd-list.{format}.log"));
        assert!(
            records.iter().any(|r| matches!(
                r.kind,
                EventKind::PermissionDegraded {
                    what: PermissionScope::Watch
                }
            )),
            "{format}"
        );
        let denial = records
            .iter()
            .find_map(|r| r.forbidden.as_ref())
            .expect("forbidden");
        assert_eq!(denial.resource, "customresourcedefinitions", "{format}");
        assert!(denial.cluster_scope, "{format}");
    }
}

#[test]
fn pruning_schemas_show_patch_inconsistencies() {
    for format in ["full", "plain"] {
        let (records, _) = parse(&format!("pruning-status.{format}.log"));
        assert!(
            records
                .iter()
                .any(|r| matches!(r.kind, EventKind::PatchInconsistencies)),
            "{format}"
        );
    }
}

#[test]
fn a_forbidden_served_resource_names_the_verb_and_resource() {
    for format in ["full", "json"] {
        let (records, _) = parse(&format!("crashloop.{format}.log"));
        let denial = records
            .iter()
            .find_map(|r| r.forbidden.as_ref())
            .expect("forbidden");
        assert_eq!(denial.resource, "beacons", "{format}");
        assert!(
            ["list", "watch"].contains(&denial.verb.as_str()),
            "{format}: {}",
            denial.verb
        );
    }
}

#[test]
fn cluster_scoped_objects_have_no_namespace() {
    let (records, _) = parse("cluster-scoped-posted.full.log");
    let failure = records
        .iter()
        .find(|r| r.kind.is_handler_failure())
        .expect("a failure");
    let object = failure.object.as_ref().expect("object");
    assert!(object.namespace.is_none(), "{object:?}");
    assert!(object.name.ends_with("-gadget"));
}

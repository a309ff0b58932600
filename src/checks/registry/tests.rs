//! Tests of the registry: every check once, with its deciders here but for the RBAC and
//! runtime checks, and a check with two deciders says the same thing, with the same fix,
//! whichever decided.

use super::*;
use crate::api::Finding;
use crate::model::evidence::{LogEvidence, ObjectSample};
use crate::model::kopf_marks::{DEFAULT_FINALIZER, DIFFBASE_ANNOTATION};
use crate::model::source::Location;
use std::collections::BTreeSet;

#[test]
fn every_check_of_the_catalogue_is_listed_once() {
    let listed: Vec<CheckId> = ENTRIES.iter().map(|e| e.check).collect();
    let unique: BTreeSet<CheckId> = listed.iter().copied().collect();
    assert_eq!(listed.len(), unique.len(), "a check is listed twice");
    let catalogue: BTreeSet<CheckId> = CheckId::ALL.iter().copied().collect();
    assert_eq!(unique, catalogue);
}

#[test]
fn every_listed_module_exists_and_names_its_deciders() {
    for entry in ENTRIES {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(entry.module);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {} ({e})", entry.check.as_str(), entry.module));
        let id = entry.check.as_str();
        let live = "pub(crate) fn live(";
        let source = "pub(crate) fn source(";
        match entry.deciders {
            Deciders::Live(_) => assert!(text.contains(live), "{id}: `{live}` in {}", entry.module),
            Deciders::Both { .. } => assert!(
                text.contains(live) && text.contains(source),
                "{id} has both deciders in {}",
                entry.module
            ),
            Deciders::Source(_) | Deciders::InArea => {}
        }
    }
}

/// The checks whose live decision is made inside their area's own `check`: the RBAC
/// checks, whose needs `model/needs.rs` builds and judges together.
fn decided_in_area(check: CheckId) -> bool {
    check.area() == crate::catalog::Area::Rbac
}

/// A check is one thing: but for those decided in their area, the registry holds its
/// deciders, so that adding a check touches no area's list.
#[test]
fn every_check_but_rbac_has_its_deciders_in_the_registry() {
    for entry in ENTRIES {
        let id = entry.check.as_str();
        let in_area = matches!(entry.deciders, Deciders::InArea);
        assert_eq!(
            in_area,
            decided_in_area(entry.check),
            "{id}: only the rbac checks are decided in their area"
        );
        if !decided_in_area(entry.check) {
            assert!(
                entry.deciders.live().is_some() || entry.deciders.source().is_some(),
                "{id}: a live or a source decider in the registry"
            );
        }
    }
}

/// A check with its deciders in the registry lives in a module of its own, named after
/// it (`area.some-name` in `src/checks/<area>/<some_name>.rs`): no two share one.
#[test]
fn every_check_but_rbac_has_a_module_of_its_own_named_after_it() {
    let mut modules = BTreeSet::new();
    for entry in ENTRIES.iter().filter(|e| !decided_in_area(e.check)) {
        let id = entry.check.as_str();
        let (area, name) = id.split_once('.').expect("area.name");
        let named = format!("src/checks/{area}/{}.rs", name.replace('-', "_"));
        assert_eq!(entry.module, named, "{id}");
        assert!(modules.insert(entry.module), "{id} shares {}", entry.module);
    }
    for area in ["workload", "events", "persistence", "runtime", "source"] {
        let folder = format!("src/checks/{area}/");
        assert!(
            modules.iter().any(|m| m.starts_with(&folder)),
            "the {area} checks"
        );
    }
}

#[test]
fn only_the_source_area_and_checks_with_both_deciders_read_the_source() {
    for entry in ENTRIES {
        let from_source = entry.deciders.source().is_some();
        let both = matches!(entry.deciders, Deciders::Both { .. });
        let source_area = entry.check.area() == crate::catalog::Area::Source;
        assert_eq!(from_source, source_area || both, "{}", entry.check.as_str());
    }
}

/// A custom resource's change handler that stamps its own object on every call, with
/// no startup settings: every check with both deciders fires on it.
fn stamping_handler() -> SourceFacts {
    let at = Location::new("op.py", 10);
    let handler = Handler {
        location: at.clone(),
        function: "stamp".into(),
        text: "@kopf.on.update('widgets')".into(),
        stacked: vec![crate::model::source::Registration {
            decorator: "timer".into(),
            resource: None,
            text: "@kopf.timer('widgets', interval=60)".into(),
        }],
        self_patches: vec![("metadata.annotations.at".into(), at, true)],
        ..crate::checks::source::tests::handler("on.update", Some("widgets"))
    };
    SourceFacts {
        handlers: vec![handler],
        ..SourceFacts::default()
    }
}

/// A handled object with kopf's default marks: progress, diff-base, finalizer.
fn marked_object() -> ObjectSample {
    ObjectSample {
        resource: 0,
        namespace: "ns".into(),
        name: "w1".into(),
        annotations: [
            ("kopf.zalando.org/stamp".to_string(), 10),
            (DIFFBASE_ANNOTATION.to_string(), 100),
        ]
        .into_iter()
        .collect(),
        finalizers: vec![DEFAULT_FINALIZER.to_string()],
        deletion_timestamp: None,
        status_kopf_keys: Vec::new(),
        handling: Default::default(),
    }
}

/// A log of kopf 1.45.2 in which `Handler 'stamp'` succeeds after each of twelve
/// updates of `ns/w1`.
fn looping_log() -> LogEvidence {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records = Vec::new();
    for i in 0..12 {
        let at = format!("2026-12-02 10:00:{:02},{:03}", i / 5, (i % 5) * 200);
        for line in [
            format!("[{at}] kopf.objects         [INFO    ] [ns/w1] Handler 'stamp' succeeded."),
            format!(
                "[{at}] kopf.objects         [INFO    ] [ns/w1] Updating is processed: 1 succeeded; 0 failed."
            ),
        ] {
            records.extend(parser.push_line(line.as_bytes()));
        }
    }
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    LogEvidence {
        records,
        tally: parser.tally().clone(),
        ..LogEvidence::default()
    }
}

/// The live finding of a check with both deciders, on the examples above.
fn live_example(check: CheckId) -> Option<Finding> {
    let objects = [marked_object()];
    match check {
        CheckId::PersistenceProgressAnnotations => progress_annotations::live_on("op", &objects),
        CheckId::PersistenceDiffbaseAnnotation => diffbase_annotation::live_on("op", &objects),
        CheckId::PersistenceDefaultFinalizer => default_finalizer::live_on("op", &objects),
        CheckId::RuntimeHandlerLoop => handler_loop::decide("op", &looping_log(), &[])
            .into_iter()
            .next(),
        other => panic!(
            "{} has two deciders: give it a live example here",
            other.as_str()
        ),
    }
}

#[test]
fn both_deciders_of_a_check_give_one_message_shape_and_one_fix() {
    let facts = stamping_handler();
    let mut compared = 0;
    for entry in ENTRIES {
        let Deciders::Both {
            source, wording, ..
        } = entry.deciders
        else {
            continue;
        };
        let id = entry.check.as_str();
        assert_eq!(wording.check, entry.check, "{id}");
        let live = live_example(entry.check).unwrap_or_else(|| panic!("{id}: live finding"));
        let from_source = source(&facts);
        let [from_source] = from_source.as_slice() else {
            panic!("{id}: one source finding, got {from_source:?}");
        };
        let from_source = &from_source.finding;
        let tail = format!(": {}", wording.advice);
        for (side, f) in [("live", &live), ("source", from_source)] {
            assert_eq!(f.check, entry.check, "{id} {side}");
            assert!(
                f.message.ends_with(&tail) && f.message.len() > tail.len(),
                "{id} {side}: `<what was seen>: <advice>`, got {}",
                f.message
            );
            assert_eq!(f.fix, Some((wording.fix)()), "{id} {side}");
            assert_eq!(f.severity, entry.check.default_severity(), "{id} {side}");
        }
        // What was seen is the decider's own: the two do not say the same.
        assert_ne!(live.message, from_source.message, "{id}");
        compared += 1;
    }
    assert_eq!(compared, 4, "the checks with two deciders");
}

#[test]
fn lint_runs_every_source_decider_and_only_those() {
    let found = source_findings(&stamping_handler());
    let raised: BTreeSet<CheckId> = found.iter().map(|f| f.finding.check).collect();
    for check in [
        CheckId::PersistenceProgressAnnotations,
        CheckId::PersistenceDiffbaseAnnotation,
        CheckId::PersistenceDefaultFinalizer,
        CheckId::RuntimeHandlerLoop,
    ] {
        assert!(raised.contains(&check), "{}", check.as_str());
    }
    for check in &raised {
        let entry = ENTRIES.iter().find(|e| e.check == *check).expect("listed");
        assert!(entry.deciders.source().is_some(), "{}", check.as_str());
    }
}

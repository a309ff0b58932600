//! Tests of the runtime checks.

use super::*;
use crate::catalog::Severity;
use crate::model::evidence::{Handling, KopfEvidence, TargetEvidence};
use crate::model::kopf_run::{Peering, Scope};
use crate::model::settings::CheckSettings;
use crate::model::testing::run;
use k8s_openapi::api::core::v1::Pod;
use std::collections::BTreeMap;

/// Parses sample lines as the gatherer would.
pub(crate) fn parse(lines: &[&str]) -> LogEvidence {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records = Vec::new();
    for line in lines {
        records.extend(parser.push_line(line.as_bytes()));
    }
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    let stats = parser.stats();
    LogEvidence {
        records,
        version: stats.kopf_version,
        stats,
        tally: parser.tally().clone(),
        ..Default::default()
    }
}

/// A log kopf really wrote (`crates/kopf-log/tests/data/captured/NAME`), as the
/// pods/log API serves it.
pub(super) fn captured(name: &str) -> LogEvidence {
    let path = format!(
        "{}/crates/kopf-log/tests/data/captured/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse(&text.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>())
}

/// Deployment `op`, whose kopf evidence holds `logs` and nothing else read.
fn target_with(logs: LogEvidence) -> (TargetEvidence, KopfEvidence) {
    let mut t = TargetEvidence::default();
    t.deployment.metadata.name = Some("op".into());
    let mut k = KopfEvidence::unread(run(Scope::ClusterWide, Peering::Auto));
    k.logs = Ok(logs);
    (t, k)
}

/// Every runtime check on one target, as the registry runs them (catalogue order).
fn check(target: &TargetEvidence, kopf: &KopfEvidence, settings: &CheckSettings) -> Vec<Raised> {
    crate::checks::run_area(crate::catalog::Area::Runtime, target, kopf, settings)
}

/// The checks [`check`] finds in a log, in its order.
pub(super) fn ids(lines: &[&str]) -> Vec<CheckId> {
    let (t, k) = target_with(parse(lines));
    check(&t, &k, &settings())
        .into_iter()
        .map(|r| r.finding.check)
        .collect()
}

/// The audit's default check settings, at [`now`].
pub(super) fn settings() -> CheckSettings {
    crate::model::settings::AuditSettings::from_spec(&crate::api::KopfAuditSpec::for_deployment(
        "op",
    ))
    .checks(now())
}

/// The audit's time in these tests.
pub(super) fn now() -> jiff::Timestamp {
    "2026-12-01T12:00:00Z".parse().expect("a timestamp")
}

pub(super) const FULL_FAIL: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed temporarily: backend down";
pub(super) const FULL_FORBIDDEN: &str = "[2026-11-30 02:41:55,039] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: GET https://x/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:ns:op\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope', {})";

#[test]
fn handler_failures_and_forbidden() {
    let found = ids(&[FULL_FAIL, FULL_FORBIDDEN]);
    assert!(
        found.contains(&CheckId::RuntimeHandlerFailures),
        "{found:?}"
    );
    assert!(
        found.contains(&CheckId::RuntimeStartupForbidden),
        "{found:?}"
    );
    let f: Vec<Finding> = startup_forbidden::decide("op", &parse(&[FULL_FORBIDDEN]))
        .into_iter()
        .map(|r| r.finding)
        .collect();
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("`list` on customresourcedefinitions"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.contains("apiextensions.k8s.io"),
        "{}",
        f[0].message
    );
}

#[test]
fn the_same_failure_twice_is_one_finding_naming_each_object_once() {
    let b = FULL_FAIL.replace("[ns/a]", "[ns/b]");
    let f = handler_failures::decide("op", &parse(&[FULL_FAIL, FULL_FAIL, &b]));
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("ns/a, ns/b"), "{}", f[0].message);
    assert_eq!(f[0].severity, Severity::Warning);
}

#[test]
fn quiet_log_has_no_findings_and_noise_is_reported_as_unparsed() {
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    assert!(!ids(&[ok]).contains(&CheckId::RuntimeUnparsedLogs));
    let noise: Vec<&str> = std::iter::repeat_n("hello from print()", 30).collect();
    assert_eq!(ids(&noise), vec![CheckId::RuntimeUnparsedLogs]);
}

/// A pod `op-0` whose container `container` runs (since 10:00) or waits in a crash loop.
pub(super) fn running_pod(container: &str, running: bool) -> Pod {
    let state = if running {
        serde_json::json!({"running": {"startedAt": "2026-12-01T10:00:00Z"}})
    } else {
        serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}})
    };
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "op-0"},
        "status": {"containerStatuses": [{
            "name": container, "image": "x", "imageID": "", "ready": running,
            "restartCount": 0, "state": state,
        }]},
    }))
    .expect("a pod")
}

/// A handled object `ns/name` that someone other than kopf changed `minutes_ago`.
pub(super) fn changed(name: &str, minutes_ago: i64, handling: Handling) -> ObjectSample {
    let at = now() - jiff::SignedDuration::from_mins(minutes_ago);
    ObjectSample {
        resource: 0,
        namespace: "ns".into(),
        name: name.into(),
        annotations: BTreeMap::new(),
        finalizers: Vec::new(),
        deletion_timestamp: None,
        status_kopf_keys: Vec::new(),
        handling: Handling {
            changed_by_others: Some(at),
            ..handling
        },
    }
}

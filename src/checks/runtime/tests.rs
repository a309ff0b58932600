//! Tests of the runtime checks.

use super::*;
use crate::model::evidence::KopfEvidence;
use crate::model::kopf_run::{Peering, Scope};
use crate::model::testing::run;

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
    LogEvidence {
        records,
        stats: parser.stats(),
        ..Default::default()
    }
}

fn target_with(logs: LogEvidence) -> (TargetEvidence, KopfEvidence) {
    let mut t = TargetEvidence::default();
    t.deployment.metadata.name = Some("op".into());
    let mut k = KopfEvidence::unread(run(Scope::ClusterWide, Peering::Auto));
    k.logs = Ok(logs);
    (t, k)
}

fn ids(lines: &[&str]) -> Vec<CheckId> {
    let (t, k) = target_with(parse(lines));
    check(&t, &k).into_iter().map(|r| r.finding.check).collect()
}

const FULL_FAIL: &str = "[2026-11-30 02:41:55,039] kopf.objects         [ERROR   ] [ns/a] Handler 'reconcile' failed temporarily: backend down";
const FULL_FORBIDDEN: &str = "[2026-11-30 02:41:55,039] kopf._cogs.clients.a [ERROR   ] Request attempt #1/9 failed; will retry: GET https://x/apis/apiextensions.k8s.io/v1/customresourcedefinitions -> APIForbiddenError('customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"system:serviceaccount:ns:op\" cannot list resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope', {})";

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
    let f: Vec<Finding> = startup_forbidden("op", &parse(&[FULL_FORBIDDEN]))
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
    let f = handler_failures("op", &parse(&[FULL_FAIL, FULL_FAIL, &b]));
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("ns/a, ns/b"), "{}", f[0].message);
    assert_eq!(f[0].severity, Severity::Warning);
}

#[test]
fn quiet_log_has_no_findings_and_noise_is_reported_as_unparsed() {
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    assert!(ids(&[ok]).is_empty());
    let noise: Vec<&str> = std::iter::repeat_n("hello from print()", 30).collect();
    assert_eq!(ids(&noise), vec![CheckId::RuntimeUnparsedLogs]);
}

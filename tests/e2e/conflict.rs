//! `runtime.operator-conflict` on real kopf operators, two at a time in one namespace,
//! each under its own ServiceAccount: two standalone operators on the same Widgets fight
//! (each audit names the other operator); two operators in one peering (different
//! priorities: one runs, one pauses) and two operators on different resources do not.

use crate::operator::{audit_for, condition, create_audit, ensure_crd, found_checks, wait_status};
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use kopf_audit::api::KopfAuditStatus;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use std::collections::BTreeMap;
use std::time::Duration;

/// The conflict fixtures' group.
const GROUP: &str = "conflict.fixtures.kopf-audit.dev";

const CHECK: &str = "runtime.operator-conflict";

/// How long an audit may take to see both operators and the objects.
const WITHIN: Duration = Duration::from_secs(240);

/// What two fixtures' audits and objects showed.
struct Pair {
    namespace: String,
    first: KopfAuditStatus,
    second: KopfAuditStatus,
    /// Each conflict object's diff-base prefixes (`name` -> prefixes), once handled.
    handled_by: BTreeMap<String, Vec<String>>,
}

/// The conflict objects of `ns` and the diff-base prefixes on each, once every one
/// carries one: kopf has handled them all.
async fn wait_handled(client: &kube::Client, ns: &str) -> BTreeMap<String, Vec<String>> {
    wait_for("kopf's diff-base on every conflict object", WITHIN, || {
        let client = client.clone();
        let ns = ns.to_string();
        async move {
            let mut out = BTreeMap::new();
            for (kind, plural) in [("Widget", "widgets"), ("Gizmo", "gizmos")] {
                let resource = ApiResource::from_gvk_with_plural(
                    &GroupVersionKind::gvk(GROUP, "v1", kind),
                    plural,
                );
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
                for object in api.list(&ListParams::default()).await.ok()?.items {
                    let prefixes: Vec<String> = object
                        .metadata
                        .annotations
                        .iter()
                        .flatten()
                        .filter_map(|(k, _)| k.strip_suffix("/last-handled-configuration"))
                        .map(str::to_string)
                        .collect();
                    out.insert(object.metadata.name.clone().unwrap_or_default(), prefixes);
                }
            }
            (!out.is_empty() && out.values().all(|p| !p.is_empty())).then_some(out)
        }
    })
    .await
}

/// Runs the fixtures `first` and `second` side by side in a new namespace, waits until
/// kopf has handled their objects, audits both (a KopfAudit each, one auditor) and
/// returns each audit's status once `settled` holds for it.
async fn audit_pair(
    prefix: &str,
    first: &str,
    second: &str,
    settled: impl Fn(&KopfAuditStatus) -> bool + Copy,
) -> Pair {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let ns = TestNamespace::create(&client, prefix).await;
    let _first = Fixture::start(first, &ns.name, None);
    let _second = Fixture::start(second, &ns.name, None);
    let handled_by = wait_handled(&client, &ns.name).await;
    say(format!("handled: {handled_by:?}"));
    let _auditor = Auditor::start(&support::kubeconfig_path(), &ns.name, &[]);
    for (name, fixture) in [("first", first), ("second", second)] {
        create_audit(
            &client,
            &ns.name,
            audit_for(name, &format!("{fixture}-operator"), "30s"),
        )
        .await
        .expect("creating the KopfAudit");
    }
    let mut statuses = Vec::new();
    for (name, fixture) in [("first", first), ("second", second)] {
        let audit = wait_status(
            &client,
            &ns.name,
            name,
            &format!("the audit of {fixture} beside the other operator"),
            WITHIN,
            |s| condition(s, "Ready") == Some(("True", "AuditSucceeded")) && settled(s),
        )
        .await;
        statuses.push(audit.status.expect("status"));
    }
    let second = statuses.pop().expect("two statuses");
    let first = statuses.pop().expect("two statuses");
    Pair {
        namespace: ns.name.clone(),
        first,
        second,
        handled_by,
    }
}

/// The conflict findings of a status.
fn conflicts(status: &KopfAuditStatus) -> Vec<&kopf_audit::api::Finding> {
    status
        .findings
        .iter()
        .filter(|f| f.check.as_str() == CHECK)
        .collect()
}

/// The audit has looked at the other operators and the objects: the runtime area is
/// decided, and the conflict check is neither skipped nor unread.
fn decided(status: &KopfAuditStatus) -> bool {
    condition(status, "RuntimeHealthy").is_some_and(|(s, _)| s != "Unknown")
        && !status.skipped.iter().any(|s| s.check.as_str() == CHECK)
}

#[tokio::test]
async fn two_standalone_operators_on_the_same_widgets_each_name_the_other() {
    let pair = audit_pair("conflict-fight", "conflict-alpha", "conflict-beta", |s| {
        found_checks(s).contains(CHECK)
    })
    .await;
    let ns = &pair.namespace;
    for (status, other) in [
        (&pair.first, "conflict-beta"),
        (&pair.second, "conflict-alpha"),
    ] {
        let found = conflicts(status);
        let [finding] = found[..] else {
            panic!("one conflict finding: {:#?}", status.findings)
        };
        say(format!(
            "{}: {} [{:?}]",
            finding.target, finding.message, finding.evidence
        ));
        assert_eq!(finding.severity.as_str(), "error");
        let named =
            format!("Deployment {ns}/{other}-operator (ServiceAccount {ns}/{other}-operator)");
        assert!(
            finding.message.contains(&named),
            "names {named}: {}",
            finding.message
        );
        assert!(
            finding
                .message
                .contains("widgets.conflict.fixtures.kopf-audit.dev"),
            "{}",
            finding.message
        );
        assert!(
            finding.message.contains("`--standalone`"),
            "{}",
            finding.message
        );
        let evidence = finding.evidence.as_deref().unwrap_or_default();
        assert!(
            evidence.contains(&format!("{ns}/contested-1")),
            "the objects in dispute: {evidence}"
        );
    }
}

#[tokio::test]
async fn two_operators_in_one_peering_do_not_conflict() {
    let pair = audit_pair(
        "conflict-peered",
        "conflict-peered-high",
        "conflict-peered-low",
        decided,
    )
    .await;
    // The peering works: the higher priority handled the Widget, the other paused.
    assert_eq!(
        pair.handled_by.get("shared-1").map(Vec::as_slice),
        Some(&[format!("high.{GROUP}")][..]),
        "{:?}",
        pair.handled_by
    );
    for status in [&pair.first, &pair.second] {
        assert!(
            conflicts(status).is_empty(),
            "peered operators do not fight: {:#?}",
            status.findings
        );
    }
}

#[tokio::test]
async fn two_operators_on_different_resources_do_not_conflict() {
    let pair = audit_pair(
        "conflict-apart",
        "conflict-alpha",
        "conflict-gizmos",
        decided,
    )
    .await;
    assert_eq!(pair.handled_by.len(), 3, "{:?}", pair.handled_by);
    for status in [&pair.first, &pair.second] {
        assert!(
            conflicts(status).is_empty(),
            "operators on different resources do not fight: {:#?}",
            status.findings
        );
    }
}

//! `runtime.operator-conflict` on real kopf operators, two at a time in one namespace,
//! each under its own ServiceAccount: two standalone operators on the same Widgets fight
//! (each audit names the other operator); two operators in one peering (different
//! priorities: one runs, one pauses) and two operators on different resources do not.
//! A rival whose Deployment lives in another namespace, audited without
//! `--allow-cross-namespace`, is told by the ServiceAccount RBAC lets patch the Widgets,
//! unnamed: "a ServiceAccount in another namespace".

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
    wait_marked(client, ns, 1).await
}

/// The conflict objects of `ns` and the diff-base prefixes on each, once every one
/// carries at least `operators` of them.
async fn wait_marked(
    client: &kube::Client,
    ns: &str,
    operators: usize,
) -> BTreeMap<String, Vec<String>> {
    wait_for("kopf's diff-bases on every conflict object", WITHIN, || {
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
                let objects = match api.list(&ListParams::default()).await {
                    Ok(list) => list.items,
                    // Gizmos are served only once conflict-gizmos has run.
                    Err(kube::Error::Api(e)) if e.code == 404 => Vec::new(),
                    Err(_) => return None,
                };
                for object in objects {
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
            (!out.is_empty() && out.values().all(|p| p.len() >= operators)).then_some(out)
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
    drop((_auditor, _second, _first));
    release_objects(&client, &ns.name).await;
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

/// Lets conflict-remote (ServiceAccount `conflict-remote-operator` of `remote`) serve
/// the Widgets of `contested`: a Role and RoleBinding there, which its own manifests
/// cannot hold (they are applied in its namespace only).
async fn grant_remote(client: &kube::Client, contested: &str, remote: &str) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    use kube::api::PostParams;
    let role: Role = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "conflict-remote-operator", "namespace": contested},
        "rules": [
            {"apiGroups": [GROUP], "resources": ["widgets"],
             "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [GROUP], "resources": ["widgets/status"], "verbs": ["get", "patch"]},
        ]
    }))
    .expect("a Role");
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "conflict-remote-operator", "namespace": contested},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "conflict-remote-operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "conflict-remote-operator",
                      "namespace": remote}]
    }))
    .expect("a RoleBinding");
    Api::<Role>::namespaced(client.clone(), contested)
        .create(&PostParams::default(), &role)
        .await
        .expect("creating the Role");
    Api::<RoleBinding>::namespaced(client.clone(), contested)
        .create(&PostParams::default(), &binding)
        .await
        .expect("creating the RoleBinding");
}

#[tokio::test]
async fn a_rival_in_another_namespace_is_told_by_its_service_account_unnamed() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    let remote = TestNamespace::create(&client, "conflict-far").await;
    let contested = TestNamespace::named(&client, &format!("{}-contested", remote.name)).await;
    let _alpha = Fixture::start("conflict-alpha", &contested.name, None);
    grant_remote(&client, &contested.name, &remote.name).await;
    let _remote = Fixture::start("conflict-remote", &remote.name, None);
    let marked = wait_marked(&client, &contested.name, 2).await;
    say(format!("marked: {marked:?}"));
    // Without --allow-cross-namespace: the audit may not read conflict-remote's Deployment.
    let _auditor = Auditor::start(&support::kubeconfig_path(), &contested.name, &[]);
    create_audit(
        &client,
        &contested.name,
        audit_for("alpha", "conflict-alpha-operator", "30s"),
    )
    .await
    .expect("creating the KopfAudit");
    let audit = wait_status(
        &client,
        &contested.name,
        "alpha",
        "the audit of conflict-alpha beside a rival from another namespace",
        WITHIN,
        |s| {
            condition(s, "Ready") == Some(("True", "AuditSucceeded"))
                && found_checks(s).contains(CHECK)
        },
    )
    .await;
    let status = audit.status.expect("status");
    let found = conflicts(&status);
    let [finding] = found[..] else {
        panic!("one conflict finding: {:#?}", status.findings)
    };
    say(format!(
        "{}: {} [{:?}]",
        finding.target, finding.message, finding.evidence
    ));
    let suspect = "RBAC lets one other ServiceAccount patch them, so the other operator likely runs as it: a ServiceAccount in another namespace.";
    assert!(
        finding.message.contains(suspect),
        "says {suspect}: {}",
        finding.message
    );
    assert!(
        !finding.message.contains(&format!("{}/", remote.name)),
        "names nothing of namespace {}: {}",
        remote.name,
        finding.message
    );
    assert!(
        !finding.message.contains("Deployment "),
        "its Deployment is out of reach: {}",
        finding.message
    );
    let evidence = finding.evidence.as_deref().unwrap_or_default();
    assert!(
        evidence.contains(&format!("{}/contested-1", contested.name)),
        "the objects in dispute: {evidence}"
    );
    drop((_auditor, _remote, _alpha));
    release_objects(&client, &contested.name).await;
}

/// Takes the finalizers off the conflict objects of `ns` once their operators are
/// stopped, so that its namespace goes away on the shared cluster.
async fn release_objects(client: &kube::Client, ns: &str) {
    use kube::api::{Patch, PatchParams};
    for (kind, plural) in [("Widget", "widgets"), ("Gizmo", "gizmos")] {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", kind), plural);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
        let Ok(list) = api.list(&ListParams::default()).await else {
            continue;
        };
        for object in list.items {
            let name = object.metadata.name.unwrap_or_default();
            let _ = api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
                )
                .await;
        }
    }
}

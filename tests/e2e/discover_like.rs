//! `kopf-audit discover --like` against a ClusterKopfAudit on real kopf operators (one
//! recognised by its command line, `python -m kopf run`; one only by its log, the
//! image's CMD): the KopfAudits it prints are the generated ones (same names, targets
//! and specs, defaults included) without what marks them generated; and once the
//! ClusterKopfAudit is deleted (the garbage collector takes its KopfAudits) and the
//! printed ones are applied, they give the same findings.
//!
//! Other tests run at the same time: the ClusterKopfAudit selects this test's
//! namespaces by a label only they carry, and the auditor may write only there (and
//! only this ClusterKopfAudit's status). A kopf Deployment in a namespace without the
//! label, and one excluded by name, show that `--like` keeps to its scope.

use crate::cluster_audit::{
    ClusterAuditGrants, ClusterAuditGuard, deployment_of, ensure_cluster_crd,
};
use crate::operator::ensure_crd;
use crate::support::{
    self, Auditor, Fixture, ScopedAuditor, TestNamespace, Unfinalize, kubectl_run, say, wait_for,
};
use kopf_audit::api::{ClusterKopfAudit, KopfAudit};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

/// The label that puts a namespace in this test's ClusterKopfAudit's scope.
const SCOPE_LABEL: &str = "e2e.kopfaudit.dev/discover-like";

/// A finding as it is stable from one audit to the next: check ID, severity, target
/// (messages and times may change).
type StableFinding = (String, String, String);

/// The findings of a KopfAudit whose latest audit is done for its generation (Ready
/// True), or `None` while it is not.
async fn findings_when_ready(
    client: &Client,
    ns: &str,
    name: &str,
) -> Option<BTreeSet<StableFinding>> {
    let audit = Api::<KopfAudit>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .ok()?;
    let status = audit.status?;
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    if !ready || status.observed_generation != audit.metadata.generation {
        return None;
    }
    let word = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
    Some(
        status
            .findings
            .iter()
            .map(|f| {
                (
                    word(serde_json::json!(f.check)),
                    word(serde_json::json!(f.severity)),
                    f.target.clone(),
                )
            })
            .collect(),
    )
}

/// The KopfAudits of `namespaces`: (namespace, name) to the KopfAudit.
async fn audits_in(client: &Client, namespaces: &[&str]) -> BTreeMap<(String, String), KopfAudit> {
    let mut out = BTreeMap::new();
    for ns in namespaces {
        let list = Api::<KopfAudit>::namespaced(client.clone(), ns)
            .list(&ListParams::default())
            .await
            .expect("listing KopfAudits");
        for audit in list.items {
            out.insert((ns.to_string(), audit.name_any()), audit);
        }
    }
    out
}

/// The findings of a KopfAudit once they are `expected`, or the last ones seen after
/// 150 s (interval 30s: the first audit may come before kopf's log is read in full,
/// and they settle within a few audits).
async fn settled_findings(
    client: &Client,
    ns: &str,
    name: &str,
    expected: &BTreeSet<StableFinding>,
) -> BTreeSet<StableFinding> {
    say(format!(
        "waiting for {ns}/{name} to find {expected:?} (up to 150s)"
    ));
    let deadline = std::time::Instant::now() + Duration::from_secs(150);
    let mut last = BTreeSet::new();
    while std::time::Instant::now() < deadline {
        if let Some(found) = findings_when_ready(client, ns, name).await {
            if found == *expected {
                return found;
            }
            last = found;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    last
}

/// Runs `kopf-audit discover` as admin with `args`; returns stdout after checking that
/// it exited 0.
fn discover(args: &[&str]) -> String {
    let out = Command::new(support::auditor_binary())
        .arg("discover")
        .args(args)
        .env("KUBECONFIG", support::kubeconfig_path())
        .output()
        .expect("running kopf-audit discover");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "discover {args:?}: {stdout}{stderr}");
    say(stderr.trim_end());
    stdout
}

#[tokio::test]
async fn discover_like_a_cluster_audit_prints_kopf_audits_that_find_the_same() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    ensure_cluster_crd(&client).await;
    let by_command = TestNamespace::create(&client, "like-pym").await;
    let by_log = TestNamespace::create(&client, "like-imgcmd").await;
    let outside = TestNamespace::create(&client, "like-out").await;
    let home = TestNamespace::create(&client, "like-home").await;
    let ours = [by_command.name.as_str(), by_log.name.as_str()];
    for ns in ours {
        let label = format!("{SCOPE_LABEL}={}", home.name);
        let (ok, _, err) = kubectl_run(&["label", "namespace", ns, &label], None);
        assert!(ok, "labelling {ns}: {err}");
    }
    let _unfinalize = [
        Unfinalize::of("python-m-kopf", &by_command.name),
        Unfinalize::of("image-cmd", &by_log.name),
    ];
    let _fixtures = [
        Fixture::start("python-m-kopf", &by_command.name, None),
        Fixture::start("image-cmd", &by_log.name, None),
    ];
    let command_op = deployment_of(&client, &by_command.name).await;
    let log_op = deployment_of(&client, &by_log.name).await;
    // kopf Deployments its spec shows (no pod), out of scope: one in a namespace
    // without the label, one excluded by name.
    for (ns, name) in [
        (&outside.name, "idle-op"),
        (&by_command.name, "excluded-op"),
    ] {
        support::idle_kopf_deployment(&client, ns, name, &["-A", "op.py"], serde_json::json!({}))
            .await;
    }

    let cka_name = format!("e2e-{}", home.name);
    let scoped = ScopedAuditor::create(&client, &home.name, &ours).await;
    let _grants = ClusterAuditGrants::apply(&home.name, &cka_name, &ours);
    let _guard = ClusterAuditGuard(cka_name.clone());
    let auditor =
        Auditor::start_cluster_wide(&scoped.kubeconfig, &home.name, &["--cluster-audits"]);
    let api: Api<ClusterKopfAudit> = Api::all(client.clone());
    // Defaults that change findings: a check disabled, a severity raised, and a log
    // window long enough that what kopf logged at start stays in it.
    let cka: ClusterKopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "ClusterKopfAudit",
        "metadata": {"name": cka_name},
        "spec": {
            "namespaceSelector": {"matchLabels": {SCOPE_LABEL: home.name}},
            "exclusions": {"deployments": [{"namespace": by_command.name, "name": "excluded-op"}]},
            "defaults": {
                "interval": "30s",
                "logs": {"window": "1h"},
                "checks": {
                    "disable": ["workload.memory-limit"],
                    "severity": {"workload.liveness": "error"}
                }
            }
        }
    }))
    .expect("ClusterKopfAudit JSON");
    let cka = api
        .create(&PostParams::default(), &cka)
        .await
        .expect("creating the ClusterKopfAudit");
    let uid = cka.uid().expect("a uid");

    // Both operators get a generated KopfAudit, named after their Deployments.
    let expected_names: BTreeSet<(String, String)> = [
        (by_command.name.clone(), command_op.clone()),
        (by_log.name.clone(), log_op.clone()),
    ]
    .into();
    let generated = wait_for(
        "a generated KopfAudit for each operator",
        Duration::from_secs(180),
        || async {
            let audits = audits_in(&client, &ours).await;
            let names: BTreeSet<(String, String)> = audits.keys().cloned().collect();
            (names == expected_names).then_some(audits)
        },
    )
    .await;
    for audit in generated.values() {
        let owner = &audit.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("ClusterKopfAudit", uid.as_str())
        );
        assert_eq!(
            audit.labels().get("kopfaudit.dev/cluster-audit"),
            Some(&cka_name)
        );
    }

    // Their findings once audited; the image-cmd operator's Event-less failure is in
    // its log a moment after it starts: wait for it, so that the set is complete.
    let (ns_log, ns_command) = (by_log.name.as_str(), by_command.name.as_str());
    let before_log = wait_for(
        "the generated KopfAudit of the image-cmd operator to find its silent failure",
        Duration::from_secs(240),
        || async {
            let found = findings_when_ready(&client, ns_log, &log_op).await?;
            found
                .iter()
                .any(|(check, _, _)| check == "events.silent-failures")
                .then_some(found)
        },
    )
    .await;
    let before_command = wait_for(
        "the generated KopfAudit of the python -m kopf operator to be audited",
        Duration::from_secs(120),
        || findings_when_ready(&client, ns_command, &command_op),
    )
    .await;
    say(format!(
        "generated findings: {ns_log}: {before_log:?}; {ns_command}: {before_command:?}"
    ));
    // The defaults took effect: no memory-limit finding, liveness raised to error.
    assert!(
        before_log.contains(&(
            "workload.liveness".to_string(),
            "error".to_string(),
            log_op.clone()
        )),
        "{before_log:?}"
    );
    assert!(
        !before_log
            .iter()
            .any(|(c, _, _)| c == "workload.memory-limit"),
        "{before_log:?}"
    );

    // `discover --like` prints the generated KopfAudits, and nothing out of scope.
    let yaml = discover(&["--like", &cka_name, "-o", "yaml"]);
    say(format!("discover --like printed:\n{yaml}"));
    let printed: Vec<KopfAudit> = serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("a KopfAudit"))
        .collect();
    let printed_names: BTreeSet<(String, String)> = printed
        .iter()
        .map(|a| (a.namespace().unwrap_or_default(), a.name_any()))
        .collect();
    assert_eq!(printed_names, expected_names, "{yaml}");
    for audit in &printed {
        let key = (audit.namespace().unwrap_or_default(), audit.name_any());
        assert_eq!(
            audit.spec, generated[&key].spec,
            "the generated spec: {yaml}"
        );
        assert!(
            audit.labels().is_empty(),
            "no label marks it generated: {yaml}"
        );
        assert!(audit.owner_references().is_empty(), "not owned: {yaml}");
    }
    assert!(
        !yaml.contains("idle-op") && !yaml.contains("excluded-op"),
        "only the ClusterKopfAudit's scope: {yaml}"
    );

    // The ClusterKopfAudit deleted: the garbage collector (kube-controller-manager)
    // deletes its KopfAudits.
    api.delete(&cka_name, &DeleteParams::background())
        .await
        .expect("deleting the ClusterKopfAudit");
    wait_for(
        "the garbage collector to delete the generated KopfAudits",
        Duration::from_secs(120),
        || async { audits_in(&client, &ours).await.is_empty().then_some(()) },
    )
    .await;

    // The printed KopfAudits applied: hand-written ones, with the same findings.
    let (ok, out, err) = kubectl_run(&["apply", "-f", "-"], Some(&yaml));
    assert!(ok, "applying what discover --like printed: {out}{err}");
    let applied = audits_in(&client, &ours).await;
    assert_eq!(
        applied.keys().cloned().collect::<BTreeSet<_>>(),
        expected_names
    );
    assert!(
        applied.values().all(|a| a.owner_references().is_empty()
            && !a.labels().contains_key("kopfaudit.dev/cluster-audit")),
        "{applied:?}"
    );
    for (ns, name, before) in [
        (ns_log, &log_op, &before_log),
        (ns_command, &command_op, &before_command),
    ] {
        let after = settled_findings(&client, ns, name, before).await;
        assert_eq!(&after, before, "{ns}/{name}: the same findings");
    }
    // A ClusterKopfAudit that does not exist (this one, now): exit 2, saying so.
    let gone = Command::new(support::auditor_binary())
        .args(["discover", "--like", &cka_name, "-o", "yaml"])
        .env("KUBECONFIG", support::kubeconfig_path())
        .output()
        .expect("running kopf-audit discover");
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert_eq!(gone.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("there is no ClusterKopfAudit {cka_name}"))
            && gone.stdout.is_empty(),
        "{stderr}"
    );
    assert!(!auditor.logs().contains("panicked"), "{}", auditor.logs());
}

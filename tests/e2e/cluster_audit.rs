//! A ClusterKopfAudit against real kopf operators running at once (`kopf.run()` from
//! Python, the image's CMD, `python -m kopf run`) and a kopf Deployment its spec shows:
//! one KopfAudit each, owned and labelled; a hand-written KopfAudit respected, and
//! winning over a generated one that came first; a generated one removed when its
//! Deployment goes; the counts in status; and, the ClusterKopfAudit deleted, its
//! KopfAudits collected by the garbage collector (kube-controller-manager runs it).
//!
//! Other tests run at the same time: the ClusterKopfAudit selects only this test's
//! namespaces, and the auditor may write only there (and only this ClusterKopfAudit's
//! status).

use crate::operator::ensure_crd;
use crate::support::{
    self, Auditor, Fixture, ScopedAuditor, TestNamespace, kubectl_run, say, wait_for,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopf_audit::api::{ClusterKopfAudit, KopfAudit};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, CustomResourceExt, ResourceExt};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Applies the ClusterKopfAudit CRD and waits until it is served.
pub(crate) async fn ensure_cluster_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "clusterkopfaudits.kopfaudit.dev",
        &PatchParams::apply("kopf-audit-e2e").force(),
        &Patch::Apply(ClusterKopfAudit::crd()),
    )
    .await
    .expect("applying the ClusterKopfAudit CRD");
    wait_for(
        "the ClusterKopfAudit CRD to be established",
        Duration::from_secs(30),
        || {
            let crds = crds.clone();
            async move {
                let crd = crds.get("clusterkopfaudits.kopfaudit.dev").await.ok()?;
                crd.status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
                    .then_some(())
            }
        },
    )
    .await;
}

/// What the scoped auditor needs besides reading and status writes: creating and
/// deleting KopfAudits in `namespaces`, and writing the status of the ClusterKopfAudit
/// `cka` only. Deleted when dropped.
pub(crate) struct ClusterAuditGrants {
    name: String,
}

impl ClusterAuditGrants {
    pub(crate) fn apply(home: &str, cka: &str, namespaces: &[&str]) -> ClusterAuditGrants {
        let name = format!("kopf-audit-cka-{home}");
        let mut manifests = format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}-status}}
rules:
- {{apiGroups: [kopfaudit.dev], resources: [clusterkopfaudits/status], resourceNames: [{cka}], verbs: [patch]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}-status}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}-status}}
subjects: [{{kind: ServiceAccount, name: kopf-audit, namespace: {home}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}-generate}}
rules:
- {{apiGroups: [kopfaudit.dev], resources: [kopfaudits], verbs: [create, patch, delete]}}
"#
        );
        for ns in namespaces {
            manifests.push_str(&format!(
                r#"---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: kopf-audit-generate, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}-generate}}
subjects: [{{kind: ServiceAccount, name: kopf-audit, namespace: {home}}}]
"#
            ));
        }
        let (ok, _, err) = kubectl_run(&["apply", "-f", "-"], Some(&manifests));
        assert!(ok, "applying the cluster audit grants: {err}");
        ClusterAuditGrants { name }
    }
}

impl Drop for ClusterAuditGrants {
    fn drop(&mut self) {
        let status = format!("{}-status", self.name);
        let generate = format!("{}-generate", self.name);
        let _ = kubectl_run(
            &[
                "delete",
                "clusterrole",
                &status,
                &generate,
                "--ignore-not-found",
            ],
            None,
        );
        let _ = kubectl_run(
            &[
                "delete",
                "clusterrolebinding",
                &status,
                "--ignore-not-found",
            ],
            None,
        );
    }
}

/// Deletes the ClusterKopfAudit when dropped (a failed test leaves none behind).
pub(crate) struct ClusterAuditGuard(pub(crate) String);

impl Drop for ClusterAuditGuard {
    fn drop(&mut self) {
        let _ = kubectl_run(
            &[
                "delete",
                "clusterkopfaudit",
                &self.0,
                "--ignore-not-found",
                "--wait=false",
            ],
            None,
        );
    }
}

/// The KopfAudits of `ns`: name to (generated by `cka`, target Deployment).
async fn audits_in(client: &Client, ns: &str, cka: &str) -> BTreeMap<String, (bool, String)> {
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("listing KopfAudits")
        .items
        .into_iter()
        .map(|a| {
            let generated = a
                .labels()
                .get("kopfaudit.dev/cluster-audit")
                .map(String::as_str)
                == Some(cka);
            let target = a.spec.target.deployment.clone().unwrap_or_default();
            (a.name_any(), (generated, target))
        })
        .collect()
}

/// The first Deployment of `ns` (a fixture's).
pub(crate) async fn deployment_of(client: &Client, ns: &str) -> String {
    Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("deployments")
        .items
        .first()
        .map(ResourceExt::name_any)
        .expect("the fixture's Deployment")
}

/// Creates the KopfAudit `ns/name` with `spec` (a team's own, not generated).
async fn written_by_a_team(client: &Client, ns: &str, name: &str, spec: serde_json::Value) {
    let audit: KopfAudit = serde_json::from_value(serde_json::json!({
        "apiVersion": "kopfaudit.dev/v1alpha1", "kind": "KopfAudit",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec
    }))
    .expect("KopfAudit JSON");
    Api::<KopfAudit>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &audit)
        .await
        .unwrap_or_else(|e| panic!("creating KopfAudit {ns}/{name}: {e}"));
}

/// A hand-written KopfAudit named `name` for the Deployment `deployment`, as often as
/// the ClusterKopfAudits of these tests (a longer interval would weaken them).
async fn hand_written(client: &Client, ns: &str, name: &str, deployment: &str) {
    let spec = serde_json::json!({"target": {"deployment": deployment}, "interval": "30s"});
    written_by_a_team(client, ns, name, spec).await;
}

/// A hand-written KopfAudit named `name` for the Deployment `deployment` that disables
/// a check every ClusterKopfAudit of these tests runs.
async fn weaker_hand_written(client: &Client, ns: &str, name: &str, deployment: &str) {
    let spec = serde_json::json!({
        "target": {"deployment": deployment},
        "interval": "5m",
        "checks": {"disable": ["workload.liveness"]}
    });
    written_by_a_team(client, ns, name, spec).await;
}

/// A KopfAudit in `ns` for the Deployment `deployment` of the namespace `target_ns`.
async fn cross_namespace(client: &Client, ns: &str, name: &str, target_ns: &str, deployment: &str) {
    let spec = serde_json::json!({
        "target": {"namespace": target_ns, "deployment": deployment},
        "interval": "5m"
    });
    written_by_a_team(client, ns, name, spec).await;
}

/// When the ClusterKopfAudit's discovery last completed, as its status says.
async fn last_discovery(api: &Api<ClusterKopfAudit>, name: &str) -> Option<jiff::Timestamp> {
    let status = api.get(name).await.ok()?.status?;
    status.last_discovery_time.map(|t| t.0)
}

/// The ClusterKopfAudit's summary once its status says `pred`.
async fn summary_when(
    api: &Api<ClusterKopfAudit>,
    name: &str,
    what: &str,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    wait_for(what, Duration::from_secs(180), || async {
        let cka = api.get(name).await.ok()?;
        let status = serde_json::to_value(cka.status?).ok()?;
        let ready = status["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        (ready && pred(&status["summary"])).then_some(status)
    })
    .await
}

#[tokio::test]
async fn a_cluster_audit_keeps_one_audit_per_kopf_operator_in_its_namespaces() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    ensure_cluster_crd(&client).await;
    let python_run = TestNamespace::create(&client, "cka-pyrun").await;
    let image_cmd = TestNamespace::create(&client, "cka-imgcmd").await;
    let python_m = TestNamespace::create(&client, "cka-pym").await;
    let home = TestNamespace::create(&client, "cka-home").await;
    let ours = [
        python_run.name.as_str(),
        image_cmd.name.as_str(),
        python_m.name.as_str(),
    ];
    let _fixtures = [
        Fixture::start("python-run", &python_run.name, None),
        Fixture::start("image-cmd", &image_cmd.name, None),
        Fixture::start("python-m-kopf", &python_m.name, None),
    ];
    // A kopf Deployment its spec shows (no pod): it keeps a generated KopfAudit to the
    // end, for the garbage collector.
    let pyrun_op = deployment_of(&client, &python_run.name).await;
    support::idle_kopf_deployment(
        &client,
        &python_run.name,
        "idle-op",
        &["-A", "op.py"],
        serde_json::json!({}),
    )
    .await;
    let imgcmd_op = deployment_of(&client, &image_cmd.name).await;
    let pym_op = deployment_of(&client, &python_m.name).await;
    // Written before the ClusterKopfAudit exists: it must be respected.
    hand_written(&client, &python_m.name, "team-audit", &pym_op).await;

    let cka_name = format!("e2e-{}", home.name);
    let scoped = ScopedAuditor::create(&client, &home.name, &ours).await;
    let _grants = ClusterAuditGrants::apply(&home.name, &cka_name, &ours);
    let _guard = ClusterAuditGuard(cka_name.clone());
    let auditor =
        Auditor::start_cluster_wide(&scoped.kubeconfig, &home.name, &["--cluster-audits"]);

    let api: Api<ClusterKopfAudit> = Api::all(client.clone());
    let cka = support::create_cluster_audit(
        &client,
        &cka_name,
        &ours,
        serde_json::json!({"interval": "30s", "logs": {"window": "5m"}}),
    )
    .await;
    let uid = cka.uid().expect("a uid");

    // All four found (kopf's first lines arrive a moment after it starts; discovery
    // runs again every interval): three generated, one declared.
    let status = summary_when(
        &api,
        &cka_name,
        "the ClusterKopfAudit to find the four operators",
        |s| s["discovered"] == 4,
    )
    .await;
    say(format!("status: {status}"));
    let summary = &status["summary"];
    assert_eq!(summary["generated"], 3, "{status}");
    assert_eq!(summary["declared"], 1, "{status}");
    let counted = ["compliant", "nonCompliant", "pending"]
        .iter()
        .map(|k| summary[*k].as_u64().unwrap_or_default())
        .sum::<u64>();
    assert_eq!(counted, 4, "every operator counted once: {status}");

    let expect = |pairs: &[(&str, bool, &str)]| -> BTreeMap<String, (bool, String)> {
        pairs
            .iter()
            .map(|(n, g, t)| (n.to_string(), (*g, t.to_string())))
            .collect()
    };
    assert_eq!(
        audits_in(&client, &python_run.name, &cka_name).await,
        expect(&[(&pyrun_op, true, &pyrun_op), ("idle-op", true, "idle-op")])
    );
    assert_eq!(
        audits_in(&client, &image_cmd.name, &cka_name).await,
        expect(&[(&imgcmd_op, true, &imgcmd_op)])
    );
    assert_eq!(
        audits_in(&client, &python_m.name, &cka_name).await,
        expect(&[("team-audit", false, &pym_op)]),
        "the hand-written KopfAudit is respected, not duplicated"
    );
    let generated = Api::<KopfAudit>::namespaced(client.clone(), &image_cmd.name)
        .get(&imgcmd_op)
        .await
        .expect("the generated KopfAudit");
    let owner = &generated.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("ClusterKopfAudit", uid.as_str(), Some(true))
    );
    assert_eq!(generated.spec.interval, "30s");
    assert_eq!(generated.spec.logs.window.as_deref(), Some("5m"));
    // A generated KopfAudit is audited like any other: `kubectl wait` works on it.
    let (ok, out, err) = kubectl_run(
        &[
            "wait",
            "--for=condition=Ready",
            "--timeout=120s",
            "-n",
            &python_run.name,
            "kopfaudit/idle-op",
        ],
        None,
    );
    assert!(ok, "kubectl wait on a generated KopfAudit: {out}{err}");

    // A team writes its own KopfAudit for an operator that has a generated one: theirs
    // wins, the generated one goes within an interval.
    hand_written(&client, &image_cmd.name, "team-audit", &imgcmd_op).await;
    wait_for(
        "the generated KopfAudit to give way",
        Duration::from_secs(120),
        || async {
            (audits_in(&client, &image_cmd.name, &cka_name).await
                == expect(&[("team-audit", false, &imgcmd_op)]))
            .then_some(())
        },
    )
    .await;

    // A team's KopfAudit that disables a check the defaults run does not replace the
    // platform's (`declaredAudits: Replace`, the default): the generated one stays.
    weaker_hand_written(&client, &python_run.name, "weak-audit", "idle-op").await;
    // Another team's KopfAudit for the same operator, across namespaces: the auditor
    // runs without --allow-cross-namespace and refuses it, so it covers nothing.
    cross_namespace(
        &client,
        &python_m.name,
        "reach-over",
        &python_run.name,
        "idle-op",
    )
    .await;
    // Names that collide: a KopfAudit written by hand takes `dup` (for a Deployment that
    // does not exist), and a Deployment is called `dup-kopf-audit`: the operators `dup`
    // and `dup-kopf-audit` still get one generated KopfAudit each.
    hand_written(&client, &image_cmd.name, "dup", "dup-elsewhere").await;
    for name in ["dup", "dup-kopf-audit"] {
        support::idle_kopf_deployment(
            &client,
            &image_cmd.name,
            name,
            &["-A", "op.py"],
            serde_json::json!({}),
        )
        .await;
    }
    // Two discoveries later, one of them surely planned with it.
    for _ in 0..2 {
        let before = last_discovery(&api, &cka_name).await;
        wait_for(
            "a discovery after the weaker KopfAudit",
            Duration::from_secs(120),
            || async { (last_discovery(&api, &cka_name).await > before).then_some(()) },
        )
        .await;
    }
    assert_eq!(
        audits_in(&client, &python_run.name, &cka_name).await,
        expect(&[
            (&pyrun_op, true, &pyrun_op),
            ("idle-op", true, "idle-op"),
            ("weak-audit", false, "idle-op"),
        ]),
        "the weaker KopfAudit runs beside the generated one, and the refused cross-namespace one replaces nothing"
    );
    let refused = Api::<KopfAudit>::namespaced(client.clone(), &python_m.name)
        .get("reach-over")
        .await
        .expect("the cross-namespace KopfAudit");
    let reason = refused.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Stalled" && c.status == "True")
            .map(|c| c.reason.clone())
    });
    assert_eq!(
        reason.as_deref(),
        Some("CrossNamespaceRefused"),
        "its refusal shows in its own status"
    );
    let image_audits = audits_in(&client, &image_cmd.name, &cka_name).await;
    let generated_targets: BTreeSet<&str> = image_audits
        .values()
        .filter(|(generated, _)| *generated)
        .map(|(_, target)| target.as_str())
        .collect();
    assert_eq!(
        generated_targets,
        BTreeSet::from(["dup", "dup-kopf-audit"]),
        "two operators, two generated KopfAudits: {image_audits:?}"
    );
    assert_eq!(
        image_audits.len(),
        4,
        "team-audit, the hand-written dup and two generated: {image_audits:?}"
    );

    // The python-run operator's Deployment goes: so does its KopfAudit.
    Api::<Deployment>::namespaced(client.clone(), &python_run.name)
        .delete(&pyrun_op, &DeleteParams::background())
        .await
        .expect("deleting the operator's Deployment");
    wait_for(
        "the gone operator's KopfAudit to be deleted",
        Duration::from_secs(120),
        || async {
            (audits_in(&client, &python_run.name, &cka_name).await
                == expect(&[
                    ("idle-op", true, "idle-op"),
                    ("weak-audit", false, "idle-op"),
                ]))
            .then_some(())
        },
    )
    .await;
    let status = summary_when(&api, &cka_name, "the counts after the changes", |s| {
        s["discovered"] == 5 && s["generated"] == 3 && s["declared"] == 2
    })
    .await;
    say(format!("status after the changes: {status}"));

    // The ClusterKopfAudit deleted: the garbage collector deletes what it generated,
    // and leaves the hand-written ones.
    api.delete(&cka_name, &DeleteParams::background())
        .await
        .expect("deleting the ClusterKopfAudit");
    wait_for(
        "the generated KopfAudits to be collected",
        Duration::from_secs(120),
        || async {
            (audits_in(&client, &python_run.name, &cka_name).await
                == expect(&[("weak-audit", false, "idle-op")]))
            .then_some(())
        },
    )
    .await;
    assert_eq!(
        audits_in(&client, &image_cmd.name, &cka_name).await,
        expect(&[
            ("dup", false, "dup-elsewhere"),
            ("team-audit", false, &imgcmd_op)
        ])
    );
    assert!(!auditor.logs().contains("panicked"), "{}", auditor.logs());
}

/// Non-kopf Deployments beside the kopf operator, as on a platform cluster.
const NOISE_DEPLOYMENTS: usize = 2_000;

/// `count` Deployments that run no kopf, with no pods (a log is never needed to tell):
/// web servers and workers whose command lines say what they run, and images whose
/// command comes from their CMD (the spec cannot decide, and no pod ever ran).
fn noise_manifests(ns: &str, count: usize) -> String {
    let mut out = String::new();
    for i in 0..count {
        let (image, command) = match i % 4 {
            0 => ("nginx:1.27", r#"command: ["nginx", "-g", "daemon off;"]"#),
            1 => ("python:3.12", r#"command: ["gunicorn", "app:wsgi"]"#),
            2 => (
                "python:3.12",
                r#"command: ["python", "-m", "celery", "worker"]"#,
            ),
            _ => ("registry.example.com/team/service:1", ""),
        };
        out.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: noise-{i}, namespace: {ns}}}\nspec:\n  replicas: 0\n  selector: {{matchLabels: {{app: noise-{i}}}}}\n  template:\n    metadata: {{labels: {{app: noise-{i}}}}}\n    spec:\n      containers:\n      - name: main\n        image: {image}\n        {command}\n"
        ));
    }
    out
}

#[tokio::test]
async fn a_cluster_audit_finds_only_kopf_among_thousands_of_deployments() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    ensure_cluster_crd(&client).await;
    let noise = TestNamespace::create(&client, "cka-noise").await;
    let kopf = TestNamespace::create(&client, "cka-kopf").await;
    let home = TestNamespace::create(&client, "cka-nhome").await;
    let ours = [noise.name.as_str(), kopf.name.as_str()];
    let _fixture = Fixture::start("image-cmd", &kopf.name, None);
    let operator = deployment_of(&client, &kopf.name).await;
    say(format!(
        "creating {NOISE_DEPLOYMENTS} non-kopf Deployments in {}",
        noise.name
    ));
    let (ok, _, err) = kubectl_run(
        &["apply", "-f", "-"],
        Some(&noise_manifests(&noise.name, NOISE_DEPLOYMENTS)),
    );
    assert!(ok, "creating the noise Deployments: {err}");

    let cka_name = format!("e2e-{}", home.name);
    let scoped = ScopedAuditor::create(&client, &home.name, &ours).await;
    let _grants = ClusterAuditGrants::apply(&home.name, &cka_name, &ours);
    let _guard = ClusterAuditGuard(cka_name.clone());
    let auditor =
        Auditor::start_cluster_wide(&scoped.kubeconfig, &home.name, &["--cluster-audits"]);
    let api: Api<ClusterKopfAudit> = Api::all(client.clone());
    support::create_cluster_audit(
        &client,
        &cka_name,
        &ours,
        serde_json::json!({"interval": "30s"}),
    )
    .await;

    let status = summary_when(
        &api,
        &cka_name,
        "the ClusterKopfAudit to find the one operator among the noise",
        |s| s["discovered"] == 1,
    )
    .await;
    say(format!("status: {status}"));
    assert_eq!(status["summary"]["generated"], 1, "{status}");
    assert_eq!(
        audits_in(&client, &kopf.name, &cka_name).await.len(),
        1,
        "exactly one KopfAudit for the operator"
    );
    assert!(
        audits_in(&client, &noise.name, &cka_name).await.is_empty(),
        "no KopfAudit for any of the {NOISE_DEPLOYMENTS} non-kopf Deployments"
    );
    let audit = Api::<KopfAudit>::namespaced(client.clone(), &kopf.name)
        .get(&operator)
        .await
        .expect("the operator's generated KopfAudit");
    assert_eq!(
        audit.spec.target.deployment.as_deref(),
        Some(operator.as_str())
    );
    // The next pass reads no log again: the operator's verdict is remembered until its
    // rollout changes (the noise is decided by its spec, or has no pod to read).
    wait_for(
        "a pass that remembers the operator's verdict",
        Duration::from_secs(120),
        || async {
            auditor
                .logs()
                .lines()
                .filter(|l| l.contains("cluster audit discovered"))
                .map(kopf_log::strip_ansi)
                .any(|l| l.contains("remembered=1") && l.contains("log_decided=0"))
                .then_some(())
        },
    )
    .await;
    let status = summary_when(&api, &cka_name, "the same after it", |s| {
        s["discovered"] == 1
    })
    .await;
    assert_eq!(status["summary"]["generated"], 1, "{status}");
    let logs = auditor.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}

/// A kopf operator installed after the ClusterKopfAudit is audited within seconds, not
/// at the next interval (here an hour): the auditor's Deployment watch (metadata only)
/// asks for a discovery when a Deployment appears or goes (5 s after, or after the
/// minute that follows the previous one: other tests change Deployments too).
#[tokio::test]
async fn an_operator_installed_later_is_audited_long_before_the_interval() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    ensure_cluster_crd(&client).await;
    let late = TestNamespace::create(&client, "cka-late").await;
    let home = TestNamespace::create(&client, "cka-lhome").await;
    let ours = [late.name.as_str()];
    let cka_name = format!("e2e-{}", home.name);
    let scoped = ScopedAuditor::create(&client, &home.name, &ours).await;
    let _grants = ClusterAuditGrants::apply(&home.name, &cka_name, &ours);
    let _guard = ClusterAuditGuard(cka_name.clone());
    let auditor =
        Auditor::start_cluster_wide(&scoped.kubeconfig, &home.name, &["--cluster-audits"]);
    let api: Api<ClusterKopfAudit> = Api::all(client.clone());
    support::create_cluster_audit(
        &client,
        &cka_name,
        &ours,
        serde_json::json!({"interval": "1h"}),
    )
    .await;
    summary_when(&api, &cka_name, "a first discovery finding nothing", |s| {
        s["discovered"] == 0
    })
    .await;

    let installed = std::time::Instant::now();
    let fixture = Fixture::start("good", &late.name, None);
    let operator = deployment_of(&client, &late.name).await;
    wait_for(
        "a KopfAudit for the operator installed after the first discovery",
        Duration::from_secs(150),
        || async {
            audits_in(&client, &late.name, &cka_name)
                .await
                .get(&operator)
                .filter(|(generated, _)| *generated)
                .map(|_| ())
        },
    )
    .await;
    say(format!(
        "generated {:.0?} after the operator was installed (interval 1h)",
        installed.elapsed()
    ));

    let removed = std::time::Instant::now();
    drop(fixture);
    Api::<Deployment>::namespaced(client.clone(), &late.name)
        .delete(&operator, &DeleteParams::default())
        .await
        .expect("deleting the operator's Deployment");
    wait_for(
        "its KopfAudit to go with its Deployment",
        Duration::from_secs(150),
        || async {
            audits_in(&client, &late.name, &cka_name)
                .await
                .is_empty()
                .then_some(())
        },
    )
    .await;
    say(format!(
        "its KopfAudit deleted {:.0?} after its Deployment",
        removed.elapsed()
    ));
    let logs = auditor.logs();
    assert!(!logs.contains("panicked"), "{logs}");
}

//! OpenReports output: with `--reports both`, every KopfAudit gets one
//! `openreports.io/v1alpha1` Report beside its PolicyReport, accepted by a CRD with the
//! OpenReports API's typed schema (tests/data/openreports-report-crd.yaml), so a report
//! of another shape would be refused.

use crate::operator::{audit_for, create_audit, ensure_crd, fixture_deployment};
use crate::support::{self, Auditor, Fixture, TestNamespace, say, wait_for};
use crate::tenancy::install_policy_report_crd;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use std::time::Duration;

/// Installs the OpenReports-shaped CRD and waits until it is served.
async fn install_open_reports_crd(client: &Client) {
    let text =
        std::fs::read_to_string(support::repo().join("tests/data/openreports-report-crd.yaml"))
            .expect("the OpenReports CRD file");
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(&text).expect("a CRD");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "reports.openreports.io",
        &PatchParams::apply("kopf-audit-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("apply the OpenReports CRD");
    wait_for(
        "the OpenReports CRD established",
        Duration::from_secs(30),
        || {
            let crds = crds.clone();
            async move {
                let crd = crds.get("reports.openreports.io").await.ok()?;
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

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// The policies (check IDs) a report's results name.
fn policies(report: &DynamicObject) -> Vec<String> {
    report.data["results"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x["policy"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn every_audit_gets_one_open_report_beside_its_policy_report() {
    let client = support::admin_client().await;
    ensure_crd(&client).await;
    install_policy_report_crd(&client).await;
    install_open_reports_crd(&client).await;
    let ns = TestNamespace::create(&client, "openreports").await;
    let _kopf = Fixture::start("bad-resources", &ns.name, None);
    let deployment = fixture_deployment(&client, &ns.name).await.name_any();
    let _auditor = Auditor::start(
        &support::kubeconfig_path(),
        &ns.name,
        &["--reports", "both"],
    );
    for name in ["first", "second"] {
        create_audit(&client, &ns.name, audit_for(name, &deployment, "30s"))
            .await
            .unwrap_or_else(|e| panic!("creating KopfAudit {name}: {e}"));
    }
    let reports: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &resource("openreports.io", "v1alpha1", "Report", "reports"),
    );
    let policy_reports: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &resource(
            "wgpolicyk8s.io",
            "v1alpha2",
            "PolicyReport",
            "policyreports",
        ),
    );
    let all = wait_for("a Report for each audit", Duration::from_secs(120), || {
        let reports = reports.clone();
        async move {
            let list = reports.list(&ListParams::default()).await.ok()?;
            (list.items.len() >= 2 && list.items.iter().all(|r| !policies(r).is_empty()))
                .then_some(list.items)
        }
    })
    .await;
    assert_eq!(
        all.len(),
        2,
        "one Report per audit: {:?}",
        all.iter().map(|r| r.name_any()).collect::<Vec<_>>()
    );
    for name in ["first", "second"] {
        let report = all
            .iter()
            .find(|r| r.name_any() == format!("kopf-audit-{name}"))
            .unwrap_or_else(|| panic!("the Report of {name}"));
        assert_eq!(report.data["source"], "kopf-audit");
        assert_eq!(report.data["scope"]["kind"], "KopfAudit");
        assert_eq!(report.data["scope"]["name"], name);
        let owner = report
            .metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.first())
            .expect("owned");
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("KopfAudit", name)
        );
        let named = policies(report);
        assert!(
            named.contains(&"workload.standalone-replicas".to_string()),
            "{named:?}"
        );
        let results = report.data["results"].as_array().expect("results");
        assert!(results.iter().all(|r| r["source"] == "kopf-audit"
            && r["resources"][0]["kind"] == "Deployment"
            && r["resources"][0]["name"] == deployment.as_str()));
        let fail = report.data["summary"]["fail"].as_u64().unwrap_or_default();
        assert!(fail >= 1, "{}", report.data["summary"]);
        // Passes: the checks that ran and found nothing, counted in the summary.
        let passes: Vec<&str> = results
            .iter()
            .filter(|r| r["result"] == "pass")
            .filter_map(|r| r["policy"].as_str())
            .collect();
        assert_eq!(
            report.data["summary"]["pass"].as_u64(),
            Some(passes.len() as u64),
            "{}",
            report.data["summary"]
        );
        assert!(
            passes.contains(&"workload.not-kopf"),
            "the target runs kopf: {passes:?}"
        );
        assert!(
            !passes.contains(&"workload.standalone-replicas"),
            "{passes:?}"
        );
        assert!(
            passes.iter().all(|p| !p.starts_with("source.")),
            "{passes:?}"
        );
        let beside = policy_reports
            .get(&format!("kopf-audit-{name}"))
            .await
            .expect("the PolicyReport is written too");
        assert_eq!(
            beside.data["results"], report.data["results"],
            "the same results in both kinds"
        );
    }
    say(format!(
        "{} Reports and PolicyReports in {}",
        all.len(),
        ns.name
    ));
}

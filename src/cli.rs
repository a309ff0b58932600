//! `kopf-audit check`: the operator's gather and evaluate, run once against the current
//! kubeconfig, for laptops and CI.

use crate::api::{AuditTarget, KopfAudit, KopfAuditSpec, KopfAuditStatus};
use crate::checks::Severity;
use crate::evaluate::{self, Outcome, Policy};
use crate::gather::{self, GatherError};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, ListParams};
use std::fmt::Write as _;

/// What `check` should audit.
#[derive(Clone, Debug)]
pub enum CheckTarget {
    /// A Deployment by name, with default settings.
    Deployment(String),
    /// An existing KopfAudit: its spec is used as written.
    Audit(String),
}

/// Why `check` could not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Reading the KopfAudit, Deployments or pods failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being read.
        what: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Gathering failed.
    #[error(transparent)]
    Gather(#[from] GatherError),
}

/// Runs one audit and returns the status the operator would write.
pub async fn check(
    client: &Client,
    namespace: &str,
    target: &CheckTarget,
    policy: &Policy,
) -> Result<KopfAuditStatus, CheckError> {
    let spec = match target {
        CheckTarget::Deployment(name) => KopfAuditSpec {
            target: AuditTarget {
                deployment: Some(name.clone()),
                ..Default::default()
            },
            handled_resources: Vec::new(),
            interval: crate::api::DEFAULT_INTERVAL.into(),
            checks: Default::default(),
            thresholds: Default::default(),
            logs: Default::default(),
            suspend: false,
        },
        CheckTarget::Audit(name) => {
            let api: Api<KopfAudit> = Api::namespaced(client.clone(), namespace);
            let audit = api.get(name).await.map_err(|source| CheckError::Api {
                what: format!("reading KopfAudit {namespace}/{name}"),
                source,
            })?;
            KopfAuditSpec {
                suspend: false,
                ..audit.spec
            }
        }
    };
    let target_ns = spec
        .target
        .namespace
        .clone()
        .unwrap_or_else(|| namespace.to_string());
    let deployments: Vec<Deployment> = Api::<Deployment>::namespaced(client.clone(), &target_ns)
        .list(&ListParams::default())
        .await
        .map_err(|source| CheckError::Api {
            what: format!("listing Deployments in {target_ns}"),
            source,
        })?
        .items;
    let pods: Vec<Pod> = Api::<Pod>::namespaced(client.clone(), &target_ns)
        .list(&ListParams::default())
        .await
        .map_err(|source| CheckError::Api {
            what: format!("listing pods in {target_ns}"),
            source,
        })?
        .items;
    let outcome = gather::gather(client, &spec, namespace, true, &deployments, &pods).await?;
    let evaluation = match &outcome {
        Outcome::Audited(e) => Some(evaluate::evaluate(&spec, e, policy)),
        _ => None,
    };
    let now = Time(Timestamp::now());
    Ok(evaluate::next_status(None, &outcome, evaluation.as_ref(), None, &now).status)
}

/// The most severe finding, for `--fail-on`.
pub fn worst(status: &KopfAuditStatus) -> Option<Severity> {
    status.findings.iter().map(|f| f.severity).max()
}

/// A table for people: findings, then skipped checks, then conditions.
pub fn table(status: &KopfAuditStatus) -> String {
    let mut out = String::new();
    for t in &status.targets {
        let _ = writeln!(
            out,
            "TARGET {}  kopf={}  mode={}  namespaces={}  peering={}  log-format={}  serviceAccount={}",
            t.name,
            t.kopf,
            t.mode.as_deref().unwrap_or("-"),
            if t.namespaces.is_empty() {
                "-".to_string()
            } else {
                t.namespaces.join(",")
            },
            t.peering.as_deref().unwrap_or("-"),
            t.log_format.as_deref().unwrap_or("-"),
            t.service_account.as_deref().unwrap_or("-"),
        );
    }
    if status.findings.is_empty() {
        out.push_str("No findings.\n");
    } else {
        let _ = writeln!(
            out,
            "{:<8} {:<36} {:<24} MESSAGE",
            "SEVERITY", "CHECK", "TARGET"
        );
        for f in &status.findings {
            let _ = writeln!(
                out,
                "{:<8} {:<36} {:<24} {}",
                f.severity.as_str(),
                f.check.as_str(),
                f.target,
                f.message
            );
            if let Some(e) = &f.evidence {
                let _ = writeln!(out, "{:<70}   evidence: {e}", "");
            }
        }
    }
    for s in &status.skipped {
        let state = if s.honoured {
            "skipped"
        } else {
            "exemption refused"
        };
        let _ = writeln!(out, "{state}: {} on {}: {}", s.check, s.target, s.reason);
    }
    let _ = writeln!(
        out,
        "{:<22} {:<8} {:<20} MESSAGE",
        "CONDITION", "STATUS", "REASON"
    );
    for c in &status.conditions {
        let _ = writeln!(
            out,
            "{:<22} {:<8} {:<20} {}",
            c.type_, c.status, c.reason, c.message
        );
    }
    out
}

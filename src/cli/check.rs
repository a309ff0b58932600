//! `kopf-audit check` and `kopf-audit report`: the operator's audit run once against the
//! current kubeconfig, for laptops and CI, and the stored results as a person reads them.

use crate::api::{KopfAudit, KopfAuditSpec, KopfAuditStatus};
use crate::catalog::Severity;
use crate::evaluate::{self, Policy};
use crate::gather::{self, Candidates, GatherError, Reach, Resolution, Shared};
use crate::model::settings;
use crate::reconcile::pipeline::run_audit;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::Api;
use std::fmt::Write as _;

/// What `check` should audit.
#[derive(Clone, Debug)]
pub(crate) enum CheckTarget {
    /// A Deployment by name, with default settings.
    Deployment(String),
    /// An existing KopfAudit: its spec is used as written.
    Audit(String),
}

/// Why `check` could not produce a result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckError {
    /// Reading the KopfAudit failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being read.
        what: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Listing the candidate targets failed.
    #[error(transparent)]
    Gather(#[from] GatherError),
}

/// Runs one audit and returns the status the operator would write.
pub(crate) async fn check(
    client: &Client,
    namespace: &str,
    target: &CheckTarget,
    policy: &Policy,
) -> Result<KopfAuditStatus, CheckError> {
    let spec = match target {
        CheckTarget::Deployment(name) => KopfAuditSpec::for_deployment(name),
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
    // The CLI runs with the caller's own credentials: what they may read, it reads.
    let reach = Reach {
        own: namespace.to_string(),
        cross_namespace: true,
        reader: format!("{namespace}/check"),
    };
    let resolution = gather::resolve(&spec, &reach);
    let candidates = match &resolution {
        Resolution::Target(target) => gather::read_candidates(client, target).await?,
        Resolution::Suspended | Resolution::Stalled(_) => Candidates::default(),
    };
    let shared = Shared::default();
    let outcome = run_audit(
        client,
        &spec,
        &reach,
        &shared,
        &resolution,
        Ok(candidates),
        policy,
    )
    .await;
    let now = Time(Timestamp::now());
    let resolve_after = settings::resolve_after(&spec);
    Ok(evaluate::next_status(None, &outcome, None, &now, resolve_after).status)
}

/// The most severe finding, for `--fail-on`.
pub(crate) fn worst(status: &KopfAuditStatus) -> Option<Severity> {
    status.findings.iter().map(|f| f.severity).max()
}

/// A table for people: findings, then skipped checks, then conditions.
pub(crate) fn table(status: &KopfAuditStatus) -> String {
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
            if let Some(fix) = &f.fix {
                let _ = writeln!(out, "{:<70}   fix:", "");
                for line in fix.lines() {
                    let _ = writeln!(out, "{:<70}     {line}", "");
                }
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

//! `kopf-audit check`: the operator's audit run once against the current kubeconfig,
//! for laptops and CI.

use crate::api::{KopfAudit, KopfAuditSpec, KopfAuditStatus};
use crate::evaluate::{self, Policy};
use crate::gather::{self, Candidates, GatherError, Reach, Resolution, Shared};
use crate::model::settings::AuditSettings;
use crate::reconcile::pipeline::{Audit, run_audit};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::Api;

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
    let settings = AuditSettings::from_spec(&spec);
    let outcome = run_audit(
        client,
        Audit {
            spec: &spec,
            settings: &settings,
        },
        &reach,
        &shared,
        &resolution,
        Ok(candidates),
        policy,
    )
    .await;
    let now = Time(Timestamp::now());
    Ok(evaluate::next_status(None, &outcome, None, &now, settings.resolve_after).status)
}

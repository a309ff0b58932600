//! What each audit's last run found of its targets: their namespace, pod selector,
//! ServiceAccount and the namespaces whose RoleBindings can change its audit. The
//! watches map a pod change or an RBAC change to the audits it can affect with this, so
//! the auditor needs no cache of the cluster's Deployments and pods: its memory follows
//! the number of audits, not the size of the cluster. An audit not yet run has no entry,
//! and needs none: it is about to run anyway.
//!
//! It also keeps the last read of each audit's target Deployments and pods (as JSON, a
//! few KiB), which the next run reuses instead of two lists while the watches show no
//! change in the target's namespace ([`WatchedChanges`]).

use super::memory::{AuditMemory, KeptTarget, SeenTarget};
use crate::api::KopfAudit;
use crate::gather::Candidates;
use crate::gather::changes::{Mark, WatchedChanges};
use crate::model::kopf_run::{find_kopf, template_containers};
use crate::model::needs;
use crate::model::rbac::{BindingKind, ServiceAccountRef};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};
use kube::runtime::reflector::ObjectRef;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

impl SeenTarget {
    /// A target as read, its kopf found in `container` (any container when `None`).
    fn of(deployment: &Deployment, container: Option<&str>) -> SeenTarget {
        let namespace = deployment.namespace().unwrap_or_default();
        let containers = template_containers(deployment);
        let binding_namespaces = find_kopf(containers, container, Some(&namespace))
            .map(|(_, run)| needs::binding_namespaces(&run, &namespace))
            .unwrap_or_default();
        SeenTarget {
            pods: Selector::try_from(deployment.spec.selector.clone()).ok(),
            account: ServiceAccountRef::of_deployment(deployment),
            binding_namespaces,
            namespace,
        }
    }

    /// Whether a binding scoped so can grant something its audit asks about: a
    /// ClusterRoleBinding anything, a RoleBinding only where the audit looks.
    fn granted_by(&self, scope: &BindingKind) -> bool {
        match scope {
            BindingKind::ClusterRoleBinding => true,
            BindingKind::RoleBinding(ns) => self.binding_namespaces.contains(ns),
        }
    }
}

/// The targets of every audit, as their last run read them, kept in the
/// [`AuditMemory`].
impl AuditMemory {
    /// Records the target Deployments an audit just read.
    pub(crate) fn remember(&self, audit: &KopfAudit, deployments: &[Deployment]) {
        let container = audit.spec.target.container.as_deref();
        let seen = deployments
            .iter()
            .map(|d| SeenTarget::of(d, container))
            .collect();
        self.with(audit, |m| m.targets = seen);
    }

    /// Keeps what an audit just read of its target, the watches' clock at `mark` when
    /// the read began, to be reused while nothing of it changes. A target read only in
    /// part (over its byte limit) is not kept.
    pub(crate) fn keep_target(&self, audit: &KopfAudit, mark: Mark, read: &Candidates) {
        let json = match read.too_large {
            None => serde_json::to_vec(&(&read.deployments, &read.pods)).ok(),
            Some(_) => None,
        };
        let kept = json.map(|json| KeptTarget {
            generation: audit.metadata.generation,
            mark,
            at: Instant::now(),
            json: json.into_boxed_slice(),
        });
        self.with(audit, |m| m.kept = kept);
    }

    /// What the audit's last run read of its target in `namespace`, when `changes` shows
    /// that a read now would find the same: the same spec, and no Deployment or pod of
    /// the namespace changed since. Otherwise it is dropped.
    pub(crate) fn kept_target(
        &self,
        audit: &KopfAudit,
        namespace: &str,
        changes: &WatchedChanges,
    ) -> Option<Candidates> {
        let json = self.with(audit, |m| {
            let kept = m.kept.as_ref()?;
            let current = kept.generation == audit.metadata.generation
                && changes.unchanged_since(Some(namespace), kept.mark, kept.at.elapsed());
            if !current {
                m.kept = None;
                return None;
            }
            Some(kept.json.clone())
        })?;
        let (deployments, pods) = serde_json::from_slice(&json).ok()?;
        Some(Candidates {
            deployments,
            pods,
            too_large: None,
        })
    }

    /// The audits with a target whose pods this pod is one of.
    pub(crate) fn audits_for_pod(&self, pod: &Pod) -> Vec<ObjectRef<KopfAudit>> {
        let namespace = pod.namespace().unwrap_or_default();
        let mut audits = Vec::new();
        self.each(|audit, m| {
            let selects = m.targets.iter().any(|t| {
                t.namespace == namespace && t.pods.as_ref().is_some_and(|s| s.matches(pod.labels()))
            });
            if selects {
                audits.push(audit.clone());
            }
        });
        audits
    }

    /// The audits an RBAC change can alter, given the scopes of the bindings through
    /// which it reaches each ServiceAccount: those with a target reached through a scope
    /// that grants something its audit asks about ([`SeenTarget::granted_by`]); and each
    /// ServiceAccount of a target reached, with those scopes, whose remembered answers
    /// the change may alter.
    pub(crate) fn audits_reached(
        &self,
        scopes_reaching: impl Fn(&ServiceAccountRef) -> BTreeSet<BindingKind>,
    ) -> (
        Vec<ObjectRef<KopfAudit>>,
        BTreeMap<ServiceAccountRef, BTreeSet<BindingKind>>,
    ) {
        let mut audits = Vec::new();
        let mut accounts: BTreeMap<ServiceAccountRef, BTreeSet<BindingKind>> = BTreeMap::new();
        self.each(|audit, m| {
            let mut altered = false;
            for target in &m.targets {
                let scopes = scopes_reaching(&target.account);
                if scopes.is_empty() {
                    continue;
                }
                altered |= scopes.iter().any(|scope| target.granted_by(scope));
                accounts
                    .entry(target.account.clone())
                    .or_default()
                    .extend(scopes);
            }
            if altered {
                audits.push(audit.clone());
            }
        });
        (audits, accounts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::audit_of;

    fn deployment(ns: &str, name: &str, sa: Option<&str>) -> Deployment {
        let mut spec = serde_json::json!({"containers": [{"name": "operator"}]});
        if let Some(sa) = sa {
            spec["serviceAccountName"] = serde_json::json!(sa);
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}
        }))
        .expect("deployment")
    }

    fn pod(ns: &str, app: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{app}-1"), "namespace": ns, "labels": {"app": app}}
        }))
        .expect("pod")
    }

    #[test]
    fn a_pod_maps_to_the_audits_whose_target_selects_it_in_its_namespace() {
        let seen = AuditMemory::default();
        seen.remember(
            &audit_of("a", "op", "op", None),
            &[deployment("a", "op", Some("sa"))],
        );
        seen.remember(
            &audit_of("b", "op", "op", None),
            &[deployment("b", "op", None)],
        );
        let names = |refs: Vec<ObjectRef<KopfAudit>>| -> Vec<String> {
            refs.into_iter()
                .map(|r| r.namespace.unwrap_or_default())
                .collect()
        };
        assert_eq!(names(seen.audits_for_pod(&pod("a", "op"))), vec!["a"]);
        assert!(seen.audits_for_pod(&pod("a", "other")).is_empty());
        assert!(seen.audits_for_pod(&pod("c", "op")).is_empty());
    }

    #[test]
    fn a_target_read_whole_is_kept_until_a_change_and_one_read_in_part_never() {
        use crate::gather::changes::Watched;
        let memory = AuditMemory::default();
        let changes = WatchedChanges::default();
        changes.listed(Watched::Deployments);
        changes.listed(Watched::Pods);
        let op = audit_of("a", "op", "op", None);
        let read = Candidates {
            deployments: vec![deployment("a", "op", Some("sa"))],
            pods: vec![pod("a", "op")],
            too_large: None,
        };
        memory.keep_target(&op, changes.mark(), &read);
        let kept = memory.kept_target(&op, "a", &changes).expect("kept");
        assert_eq!(kept.deployments, read.deployments);
        assert_eq!(kept.pods, read.pods);
        changes.changed(Watched::Deployments, "a");
        assert!(memory.kept_target(&op, "a", &changes).is_none());
        assert_eq!(memory.len(), 0, "dropped once spoilt");

        let partial = Candidates {
            too_large: Some("over 16 MiB".into()),
            ..read
        };
        memory.keep_target(&op, changes.mark(), &partial);
        assert!(memory.kept_target(&op, "a", &changes).is_none());
    }

    #[test]
    fn accounts_default_to_the_namespace_default_and_deleted_audits_are_forgotten() {
        let seen = AuditMemory::default();
        seen.remember(
            &audit_of("a", "op", "op", None),
            &[deployment("a", "op", None)],
        );
        seen.remember(
            &audit_of("b", "op", "op", None),
            &[deployment("b", "op", Some("sa"))],
        );
        let defaults = |sa: &ServiceAccountRef| {
            if sa.name == "default" {
                BTreeSet::from([BindingKind::ClusterRoleBinding])
            } else {
                BTreeSet::new()
            }
        };
        let (audits, accounts) = seen.audits_reached(defaults);
        assert_eq!(audits.len(), 1);
        assert_eq!(
            accounts.into_keys().collect::<Vec<_>>(),
            vec![ServiceAccountRef {
                namespace: "a".into(),
                name: "default".into()
            }]
        );
        seen.retain(&std::collections::HashSet::from([ObjectRef::from_obj(
            &audit_of("b", "op", "op", None),
        )]));
        assert_eq!(seen.len(), 1);
        assert!(seen.audits_reached(defaults).0.is_empty());
    }
}

//! Every built-in resource of the Kubernetes API that k8s-openapi 0.29 describes for
//! Kubernetes 1.37 (feature `v1_37`): one row per `k8s_openapi::Resource` type that is
//! served as a resource of its own (subresources such as `Scale`, `Eviction` and
//! `TokenRequest`, and the discovery documents, are left out). Within a group, the
//! version the API server prefers comes first (GA, then beta, then alpha; the higher
//! major first), and the core group comes before the others, so a name without a group
//! resolves to the core group's resource first, as kopf 1.45's `Selector.select`
//! (`_cogs/structs/references.py`) does: `events` is core `v1` `events`.

use super::Builtin;

/// The built-in resources, generated from k8s-openapi 0.29 `src/v1_37/`.
pub(super) const BUILTINS: [Builtin; 100] = [
    row("", "v1", "bindings", "Binding", true),
    row("", "v1", "componentstatuses", "ComponentStatus", false),
    row("", "v1", "configmaps", "ConfigMap", true),
    row("", "v1", "endpoints", "Endpoints", true),
    row("", "v1", "events", "Event", true),
    row("", "v1", "limitranges", "LimitRange", true),
    row("", "v1", "namespaces", "Namespace", false),
    row("", "v1", "nodes", "Node", false),
    row(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
    ),
    row("", "v1", "persistentvolumes", "PersistentVolume", false),
    row("", "v1", "pods", "Pod", true),
    row("", "v1", "podtemplates", "PodTemplate", true),
    row(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
    ),
    row("", "v1", "resourcequotas", "ResourceQuota", true),
    row("", "v1", "secrets", "Secret", true),
    row("", "v1", "serviceaccounts", "ServiceAccount", true),
    row("", "v1", "services", "Service", true),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingadmissionpolicies",
        "MutatingAdmissionPolicy",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingadmissionpolicybindings",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1beta1",
        "mutatingadmissionpolicies",
        "MutatingAdmissionPolicy",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1beta1",
        "mutatingadmissionpolicybindings",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1alpha1",
        "mutatingadmissionpolicies",
        "MutatingAdmissionPolicy",
        false,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1alpha1",
        "mutatingadmissionpolicybindings",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    row(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
    ),
    row(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        false,
    ),
    row(
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        true,
    ),
    row("apps", "v1", "daemonsets", "DaemonSet", true),
    row("apps", "v1", "deployments", "Deployment", true),
    row("apps", "v1", "replicasets", "ReplicaSet", true),
    row("apps", "v1", "statefulsets", "StatefulSet", true),
    row(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        false,
    ),
    row(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        false,
    ),
    row(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        true,
    ),
    row(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
    ),
    row(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        false,
    ),
    row(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        false,
    ),
    row(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
    ),
    row(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
    ),
    row("batch", "v1", "cronjobs", "CronJob", true),
    row("batch", "v1", "jobs", "Job", true),
    row(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
    ),
    row(
        "certificates.k8s.io",
        "v1",
        "clustertrustbundles",
        "ClusterTrustBundle",
        false,
    ),
    row(
        "certificates.k8s.io",
        "v1",
        "podcertificaterequests",
        "PodCertificateRequest",
        true,
    ),
    row(
        "certificates.k8s.io",
        "v1beta1",
        "clustertrustbundles",
        "ClusterTrustBundle",
        false,
    ),
    row(
        "certificates.k8s.io",
        "v1beta1",
        "podcertificaterequests",
        "PodCertificateRequest",
        true,
    ),
    row("coordination.k8s.io", "v1", "leases", "Lease", true),
    row(
        "coordination.k8s.io",
        "v1beta1",
        "leasecandidates",
        "LeaseCandidate",
        true,
    ),
    row(
        "coordination.k8s.io",
        "v1alpha2",
        "leasecandidates",
        "LeaseCandidate",
        true,
    ),
    row(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        true,
    ),
    row("events.k8s.io", "v1", "events", "Event", true),
    row(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "flowschemas",
        "FlowSchema",
        false,
    ),
    row(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        false,
    ),
    row(
        "internal.apiserver.k8s.io",
        "v1alpha1",
        "storageversions",
        "StorageVersion",
        false,
    ),
    row(
        "lifecycle.k8s.io",
        "v1alpha1",
        "evictionrequests",
        "EvictionRequest",
        true,
    ),
    row(
        "lifecycle.k8s.io",
        "v1alpha1",
        "evictions",
        "Eviction",
        true,
    ),
    row(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
    ),
    row("networking.k8s.io", "v1", "ingresses", "Ingress", true),
    row("networking.k8s.io", "v1", "ipaddresses", "IPAddress", false),
    row(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
    ),
    row(
        "networking.k8s.io",
        "v1",
        "servicecidrs",
        "ServiceCIDR",
        false,
    ),
    row("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false),
    row(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
    ),
    row(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    row(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    row(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
    row("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
    row(
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        "DeviceClass",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1",
        "devicetaintrules",
        "DeviceTaintRule",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "ResourceClaim",
        true,
    ),
    row(
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        true,
    ),
    row(
        "resource.k8s.io",
        "v1",
        "resourceslices",
        "ResourceSlice",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1beta2",
        "deviceclasses",
        "DeviceClass",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1beta2",
        "devicetaintrules",
        "DeviceTaintRule",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1beta2",
        "resourceclaims",
        "ResourceClaim",
        true,
    ),
    row(
        "resource.k8s.io",
        "v1beta2",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        true,
    ),
    row(
        "resource.k8s.io",
        "v1beta2",
        "resourceslices",
        "ResourceSlice",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1beta1",
        "deviceclasses",
        "DeviceClass",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1beta1",
        "resourceclaims",
        "ResourceClaim",
        true,
    ),
    row(
        "resource.k8s.io",
        "v1beta1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        true,
    ),
    row(
        "resource.k8s.io",
        "v1beta1",
        "resourceslices",
        "ResourceSlice",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1alpha3",
        "devicetaintrules",
        "DeviceTaintRule",
        false,
    ),
    row(
        "resource.k8s.io",
        "v1alpha3",
        "resourcepoolstatusrequests",
        "ResourcePoolStatusRequest",
        false,
    ),
    row(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
    ),
    row(
        "scheduling.k8s.io",
        "v1beta1",
        "podgroups",
        "PodGroup",
        true,
    ),
    row(
        "scheduling.k8s.io",
        "v1beta1",
        "workloads",
        "Workload",
        true,
    ),
    row(
        "scheduling.k8s.io",
        "v1alpha3",
        "compositepodgroups",
        "CompositePodGroup",
        true,
    ),
    row(
        "scheduling.k8s.io",
        "v1alpha3",
        "podgroups",
        "PodGroup",
        true,
    ),
    row(
        "scheduling.k8s.io",
        "v1alpha3",
        "workloads",
        "Workload",
        true,
    ),
    row("storage.k8s.io", "v1", "csidrivers", "CSIDriver", false),
    row("storage.k8s.io", "v1", "csinodes", "CSINode", false),
    row(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        true,
    ),
    row(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
    ),
    row(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        false,
    ),
    row(
        "storage.k8s.io",
        "v1",
        "volumeattributesclasses",
        "VolumeAttributesClass",
        false,
    ),
    row(
        "storagemigration.k8s.io",
        "v1",
        "storageversionmigrations",
        "StorageVersionMigration",
        false,
    ),
    row(
        "storagemigration.k8s.io",
        "v1beta1",
        "storageversionmigrations",
        "StorageVersionMigration",
        false,
    ),
];

/// One row of [`BUILTINS`].
const fn row(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        kind,
        namespaced,
    }
}

#[cfg(test)]
mod tests {
    use super::BUILTINS;
    use crate::model::source::ResourceSpec;
    use k8s_openapi::Resource;
    use std::any::TypeId;

    /// Whether the table has `T`'s row, as its `Resource` constants and scope say.
    fn has<T: Resource + 'static>() -> bool
    where
        T::Scope: 'static,
    {
        let namespaced =
            TypeId::of::<T::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        BUILTINS.iter().any(|b| {
            b.group == T::GROUP
                && b.version == T::VERSION
                && b.plural == T::URL_PATH_SEGMENT
                && b.kind == T::KIND
                && b.namespaced == namespaced
        })
    }

    #[test]
    fn the_table_agrees_with_k8s_openapi() {
        use k8s_openapi::api::{apps, batch, coordination, core, discovery, networking, rbac};
        assert!(has::<core::v1::Endpoints>());
        assert!(has::<core::v1::Service>());
        assert!(has::<core::v1::Namespace>());
        assert!(has::<core::v1::Event>());
        assert!(has::<apps::v1::Deployment>());
        assert!(has::<batch::v1::CronJob>());
        assert!(has::<coordination::v1::Lease>());
        assert!(has::<discovery::v1::EndpointSlice>());
        assert!(has::<networking::v1::NetworkPolicy>());
        assert!(has::<rbac::v1::ClusterRoleBinding>());
        assert!(has::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>());
        assert_eq!(BUILTINS.len(), 100, "every served resource of v1_37");
    }

    #[test]
    fn endpoints_and_services_are_built_in_and_core_comes_first() {
        let named = |name: &str| ResourceSpec {
            name: name.into(),
            ..ResourceSpec::default()
        };
        for name in [
            "endpoints",
            "services",
            "Service",
            "endpointslices",
            "leases",
        ] {
            assert!(named(name).builtin().is_some(), "{name}");
        }
        let events = named("events").builtin().expect("built in");
        assert_eq!((events.group, events.version), ("", "v1"));
        assert!(named("kopfexamples").builtin().is_none());
    }
}

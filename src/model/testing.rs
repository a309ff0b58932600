//! Builders the unit tests of every layer share: kopf runs, handled resources, rules.

use super::evidence::{CrdInfo, HandledResource, HandledSource};
use super::kopf_run::{KopfLogFormat, KopfRun, Peering, RunOrigin, Scope, Verbosity};
pub(crate) use super::rbac::test_rule as rule;

/// A kopf run of container `operator` with this scope and peering, defaults otherwise.
pub(crate) fn run(scope: Scope, peering: Peering) -> KopfRun {
    KopfRun {
        container: "operator".into(),
        origin: RunOrigin::CommandLine,
        scope,
        peering,
        priority: None,
        dev: false,
        log_format: KopfLogFormat::Full,
        verbosity: (Verbosity::Normal, None),
        liveness: None,
        entries: Vec::new(),
    }
}

/// A run recognised by its log (scope unknown) whose log names objects in these
/// namespaces.
pub(crate) fn logged_run(namespaces: &[&str]) -> KopfRun {
    let mut run = run(Scope::Unknown, Peering::Unknown);
    run.origin = RunOrigin::Log(super::kopf_run::LogRecognition {
        pod: "op-0".into(),
        kopf_lines: 2,
        example: "Activity 'login_via_client' succeeded.".into(),
        implicit_scope: false,
        namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
        peering: false,
        kinds: Default::default(),
        version: Default::default(),
    });
    run
}

/// `-n` with these values.
pub(crate) fn ns(names: &[&str]) -> Scope {
    Scope::Namespaced(names.iter().map(|s| s.to_string()).collect())
}

/// Core Secrets, as learned from kopf's Events.
pub(crate) fn secrets() -> HandledResource {
    HandledResource {
        group: String::new(),
        version: "v1".into(),
        plural: "secrets".into(),
        kind: Some("Secret".into()),
        namespaced: true,
        crd: None,
        source: HandledSource::Events,
    }
}

/// The custom resource `widgets.example.com` (kind Widget), inferred from RBAC.
pub(crate) fn widget(namespaced: bool, status: bool) -> HandledResource {
    HandledResource {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        kind: Some("Widget".into()),
        namespaced,
        crd: Some(CrdInfo {
            name: "widgets.example.com".into(),
            status_subresource: status,
            status_preserves_unknown_fields: true,
        }),
        source: HandledSource::RbacWatch,
    }
}

//! Tests of what kopf needs in each run mode.

use super::*;
use crate::model::testing::{ns, run, widget};

/// The needs as `check verb:severity resource scope` lines, sorted.
fn lines(needs: &[Need]) -> Vec<String> {
    let mut out: Vec<String> = needs
        .iter()
        .flat_map(|n| {
            n.verbs.iter().map(move |(v, s)| {
                let p = n.permission(*v);
                format!(
                    "{} {v}:{s} {} {}",
                    n.check.as_str(),
                    p.resource_name(),
                    p.namespace.as_deref().unwrap_or("*")
                )
            })
        })
        .collect();
    out.sort();
    out
}

#[test]
fn namespaced_exact_standalone() {
    let n = needs(
        &run(ns(&["a", "b"]), Peering::Standalone),
        Some(&[widget(true, true)]),
        "op",
        &PeeringCrds::default(),
    );
    assert_eq!(
        lines(&n),
        vec![
            "rbac.crd-scan list:error customresourcedefinitions.apiextensions.k8s.io *",
            "rbac.crd-scan watch:error customresourcedefinitions.apiextensions.k8s.io *",
            "rbac.events create:error events a",
            "rbac.events create:error events b",
            "rbac.events-patch patch:info events a",
            "rbac.events-patch patch:info events b",
            "rbac.handled-resources get:error widgets.example.com a",
            "rbac.handled-resources get:error widgets.example.com b",
            "rbac.handled-resources list:error widgets.example.com a",
            "rbac.handled-resources list:error widgets.example.com b",
            "rbac.handled-resources patch:error widgets.example.com a",
            "rbac.handled-resources patch:error widgets.example.com b",
            "rbac.handled-resources patch:error widgets.example.com/status a",
            "rbac.handled-resources patch:error widgets.example.com/status b",
            "rbac.handled-resources watch:error widgets.example.com a",
            "rbac.handled-resources watch:error widgets.example.com b",
            "rbac.namespaces list:warning namespaces *",
            "rbac.namespaces watch:warning namespaces *",
        ]
    );
    // Distinct permissions: events patch requires create, which is already asked.
    assert_eq!(permissions(&n).len(), 2 + 4 + 2 + 10);
}

#[test]
fn namespaced_patterns_check_the_own_namespace_and_need_namespaces() {
    let n = needs(
        &run(ns(&["team-*", "fixed"]), Peering::Standalone),
        Some(&[widget(true, false)]),
        "op",
        &PeeringCrds::default(),
    );
    let l = lines(&n);
    assert!(l.contains(&"rbac.namespaces list:error namespaces *".to_string()));
    assert!(l.contains(&"rbac.events create:error events op".to_string()));
    assert!(l.contains(&"rbac.events create:error events fixed".to_string()));
    assert!(!l.iter().any(|x| x.contains("team-")), "{l:#?}");
    assert!(
        !l.iter().any(|x| x.contains("/status")),
        "no status subresource"
    );
    let events_op = n
        .iter()
        .find(|x| x.check == CheckId::RbacEvents && x.namespace.as_deref() == Some("op"))
        .expect("own namespace");
    assert!(
        events_op
            .scope_note
            .as_deref()
            .is_some_and(|s| s.contains("team-*")),
        "{events_op:?}"
    );
}

#[test]
fn cluster_wide_needs_no_namespaces_and_asks_at_cluster_scope() {
    for scope in [Scope::ClusterWide, Scope::Implicit] {
        let n = needs(
            &run(scope, Peering::Standalone),
            Some(&[widget(true, true)]),
            "op",
            &PeeringCrds::default(),
        );
        let l = lines(&n);
        assert!(
            !l.iter().any(|x| x.starts_with("rbac.namespaces")),
            "{l:#?}"
        );
        assert!(l.contains(&"rbac.handled-resources list:error widgets.example.com *".into()));
        assert!(
            l.contains(&"rbac.handled-resources patch:error widgets.example.com/status *".into())
        );
        assert!(l.contains(&"rbac.events create:error events op".into()));
        assert!(!l.iter().any(|x| x.starts_with("rbac.peering")));
    }
}

#[test]
fn peering_modes() {
    let crds = |names: &[&str]| PeeringCrds {
        present: names.iter().map(|s| s.to_string()).collect(),
    };
    let peering_lines = |r: KopfRun, c: PeeringCrds| -> Vec<String> {
        lines(&needs(&r, Some(&[]), "op", &c))
            .into_iter()
            .filter(|l| l.starts_with("rbac.peering"))
            .collect()
    };
    // Standalone: never.
    assert!(
        peering_lines(
            run(ns(&["a"]), Peering::Standalone),
            crds(&["kopfpeerings.kopf.dev"])
        )
        .is_empty()
    );
    // Auto: only when the CRD for the mode exists.
    assert!(peering_lines(run(ns(&["a"]), Peering::Auto), crds(&[])).is_empty());
    assert!(
        peering_lines(
            run(ns(&["a"]), Peering::Auto),
            crds(&["clusterkopfpeerings.kopf.dev"])
        )
        .is_empty()
    );
    assert_eq!(
        peering_lines(
            run(ns(&["a"]), Peering::Auto),
            crds(&["kopfpeerings.kopf.dev"])
        ),
        vec![
            "rbac.peering get:error kopfpeerings.kopf.dev a",
            "rbac.peering list:error kopfpeerings.kopf.dev a",
            "rbac.peering patch:error kopfpeerings.kopf.dev a",
            "rbac.peering watch:error kopfpeerings.kopf.dev a",
        ]
    );
    // zalando.org only when that is the CRD present.
    assert_eq!(
        peering_lines(
            run(Scope::ClusterWide, Peering::Auto),
            crds(&["clusterkopfpeerings.zalando.org"])
        )[0],
        "rbac.peering get:error clusterkopfpeerings.zalando.org *"
    );
    assert!(
        peering_lines(
            run(Scope::ClusterWide, Peering::Auto),
            crds(&[
                "clusterkopfpeerings.zalando.org",
                "clusterkopfpeerings.kopf.dev"
            ])
        )[0]
        .contains("clusterkopfpeerings.kopf.dev")
    );
    // Named: mandatory, kopf.dev when no CRD is known.
    assert_eq!(
        peering_lines(
            run(Scope::ClusterWide, Peering::Named("x".into())),
            crds(&[])
        )
        .len(),
        4
    );
}

#[test]
fn cluster_scoped_handled_resources_post_events_in_the_own_namespace() {
    let n = needs(
        &run(ns(&["a"]), Peering::Standalone),
        Some(&[widget(false, false)]),
        "op",
        &PeeringCrds::default(),
    );
    let l = lines(&n);
    assert!(
        l.contains(&"rbac.events create:error events op".into()),
        "{l:#?}"
    );
    assert!(l.contains(&"rbac.events create:error events a".into()));
    assert!(l.contains(&"rbac.handled-resources watch:error widgets.example.com *".into()));
    assert!(!l.contains(&"rbac.handled-resources watch:error widgets.example.com a".into()));
}

#[test]
fn unknown_handled_resources_need_nothing() {
    let n = needs(
        &run(ns(&["a"]), Peering::Standalone),
        None,
        "a",
        &PeeringCrds::default(),
    );
    assert!(!n.iter().any(|x| x.check == CheckId::RbacHandledResources));
}

#[test]
fn every_namespaced_need_lies_where_role_bindings_are_watched_for_it() {
    let crds = PeeringCrds {
        present: PeeringCrds::candidates().into_iter().collect(),
    };
    let scopes = [
        ns(&["a", "b"]),
        ns(&["team-*", "exact"]),
        Scope::ClusterWide,
        Scope::Implicit,
    ];
    for scope in scopes {
        for peering in [Peering::Auto, Peering::Named("p".into())] {
            let r = run(scope.clone(), peering);
            let n = needs(
                &r,
                Some(&[widget(true, true), widget(false, false)]),
                "op",
                &crds,
            );
            let watched = binding_namespaces(&r, "op");
            for p in permissions(&n) {
                if let Some(ns) = &p.namespace {
                    assert!(
                        watched.contains(ns),
                        "{scope:?}: {} in {ns} outside {watched:?}",
                        p.resource_name()
                    );
                }
            }
        }
    }
    assert_eq!(
        binding_namespaces(&run(Scope::ClusterWide, Peering::Auto), "op"),
        BTreeSet::from(["op".to_string()]),
        "a cluster-wide run asks in its own namespace and at cluster scope only"
    );
}

#[test]
fn an_unknown_scope_asks_only_about_the_operators_own_namespace() {
    let unknown = run(Scope::Unknown, Peering::Auto);
    let n = needs(
        &unknown,
        Some(&[widget(true, true)]),
        "op",
        &PeeringCrds::default(),
    );
    let lines = lines(&n);
    // Nothing cluster-wide but kopf's CRD scan, and no namespaces or peering needs:
    // which of them kopf uses depends on the scope nobody can see.
    for line in &lines {
        assert!(
            line.ends_with(" op") || line.starts_with("rbac.crd-scan"),
            "{line}"
        );
        assert!(!line.starts_with("rbac.namespaces"), "{line}");
        assert!(!line.starts_with("rbac.peering"), "{line}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("rbac.handled-resources watch:error widgets.example.com op")),
        "{lines:#?}"
    );
}

#[test]
fn an_unknown_scope_asks_too_about_the_namespaces_its_log_names() {
    let logged = crate::model::testing::logged_run(&["op", "team-b"]);
    let n = needs(
        &logged,
        Some(&[widget(true, true)]),
        "op",
        &PeeringCrds::default(),
    );
    let lines = lines(&n);
    for ns in ["op", "team-b"] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!(
                "rbac.handled-resources watch:error widgets.example.com {ns}"
            ))),
            "{ns}: {lines:#?}"
        );
    }
    assert!(
        !lines.iter().any(|l| l.starts_with("rbac.peering")),
        "{lines:#?}"
    );
    let team_b = n
        .iter()
        .find(|n| n.permission(n.verbs[0].0).namespace.as_deref() == Some("team-b"))
        .expect("a need in team-b");
    assert!(
        team_b
            .scope_note
            .as_deref()
            .is_some_and(|note| note.contains("its log names objects")),
        "{:?}",
        team_b.scope_note
    );
    assert!(binding_namespaces(&logged, "op").contains("team-b"));
}

//! Tests of what a Deployment's spec decides, and of the projection it is read into.

use super::*;
use crate::model::kopf_run::LogRecognition;

fn container(name: &str, command: &[&str], args: &[&str]) -> Container {
    let words = |w: &[&str]| (!w.is_empty()).then(|| w.iter().map(|s| s.to_string()).collect());
    Container {
        name: name.into(),
        command: words(command),
        args: words(args),
        ..Default::default()
    }
}

fn hidden(decision: &SpecDecision) -> Vec<(usize, Hidden)> {
    match decision {
        SpecDecision::Undecided(h) => h.clone(),
        other => panic!("decided: {other:?}"),
    }
}

#[test]
fn kopf_run_and_python_dash_m_kopf_are_decided_by_the_spec() {
    for command in [
        &["kopf", "run", "-A", "/app/op.py"][..],
        &["python", "-m", "kopf", "run", "-n", "team", "op.py"],
        &["/bin/sh", "-c", "exec kopf run --standalone op.py"],
    ] {
        let c = [container("operator", command, &[])];
        match decide_from_spec(&c, "ns") {
            SpecDecision::Kopf(run) => assert_eq!(run.container, "operator"),
            other => panic!("{command:?}: {other:?}"),
        }
    }
}

#[test]
fn a_container_without_a_command_is_decided_by_its_log() {
    // The image's ENTRYPOINT runs; args alone say nothing of what it is.
    let c = [container("operator", &[], &["--verbose"])];
    assert_eq!(
        hidden(&decide_from_spec(&c, "ns")),
        [(0, Hidden::ImageCommand)]
    );
}

#[test]
fn python_launchers_and_wrappers_are_decided_by_their_log() {
    let cases: [(&[&str], Hidden); 7] = [
        (&["python", "/app/main.py"], Hidden::Python),
        (
            &["/usr/local/bin/python3.11", "-m", "myoperator"],
            Hidden::Python,
        ),
        (&["/app/main.py"], Hidden::Python),
        (&["uvicorn", "app:api"], Hidden::Python),
        (&["/docker-entrypoint.sh"], Hidden::Wrapper),
        (&["tini", "--", "python", "main.py"], Hidden::Wrapper),
        (&["bash", "-c", "cd /app && exec ./start"], Hidden::Wrapper),
    ];
    for (command, why) in cases {
        let c = [container("c", command, &[])];
        assert_eq!(
            hidden(&decide_from_spec(&c, "ns")),
            [(0, why)],
            "{command:?}"
        );
    }
}

#[test]
fn a_written_out_program_that_is_not_python_is_not_kopf() {
    let c = [
        container("web", &["nginx", "-g", "daemon off;"], &[]),
        container(
            "proxy",
            &["/usr/local/bin/envoy"],
            &["-c", "/etc/envoy.yaml"],
        ),
    ];
    assert!(matches!(decide_from_spec(&c, "ns"), SpecDecision::NotKopf));
}

#[test]
fn only_the_containers_that_hide_their_program_are_left_to_the_log() {
    let c = [
        container("proxy", &["envoy"], &[]),
        container("operator", &[], &[]),
    ];
    assert_eq!(
        hidden(&decide_from_spec(&c, "ns")),
        [(1, Hidden::ImageCommand)]
    );
}

#[test]
fn the_projection_keeps_names_selector_and_command_lines_only() {
    let d: DeploymentProjection = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "op", "namespace": "team", "uid": "u",
                         "managedFields": [{"manager": "kubectl"}]},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "op"}},
                "template": {"metadata": {"labels": {"app": "op"}}, "spec": {"containers": [{
                    "name": "operator", "image": "op:1",
                    "command": ["kopf", "run"], "args": ["-n", "$(NS)", "op.py"],
                    "env": [{"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
                    "resources": {"limits": {"memory": "1Gi"}}
                }]}}
            },
            "status": {"replicas": 1}
    }))
    .expect("a Deployment");
    assert_eq!(
        (d.metadata.namespace.as_str(), d.metadata.name.as_str()),
        ("team", "op")
    );
    assert_eq!(
        d.spec.selector.match_labels,
        Some([("app".to_string(), "op".to_string())].into())
    );
    let containers: Vec<Container> = d
        .spec
        .template
        .spec
        .containers
        .into_iter()
        .map(ContainerProjection::into_container)
        .collect();
    assert!(containers[0].resources.is_none());
    match decide_from_spec(&containers, "team") {
        SpecDecision::Kopf(run) => {
            // $(NS) is expanded from the downward API, as the kubelet does.
            assert_eq!(run.scope, Scope::Namespaced(vec!["team".into()]));
            let row = Discovered::new("team", "op", &run);
            assert_eq!(row.recognised_by, Recognition::CommandLine);
            assert_eq!(row.scope, "namespaced");
            assert_eq!(row.namespaces, ["team"]);
            assert_eq!(row.kopf_version, None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_row_found_by_the_log_names_its_pod_line_and_version() {
    let c = container("operator", &[], &[]);
    let seen = LogRecognition {
        pod: "op-1".into(),
        kopf_lines: 3,
        example: "Activity 'login_via_client' succeeded.".into(),
        implicit_scope: false,
        namespaces: ["team".to_string()].into(),
        peering: false,
        kinds: Default::default(),
        version: VersionRange::at_least(kopf_log::KopfVersion::new(1, 44, 0)),
    };
    let run = crate::model::kopf_run::from_log(
        &c,
        Some("team"),
        seen,
        crate::model::kopf_run::KopfLogFormat::Json,
    );
    let row = Discovered::new("team", "op", &run);
    assert_eq!(row.recognised_by, Recognition::Log);
    assert!(row.evidence.contains("op-1"), "{}", row.evidence);
    assert!(
        row.evidence.contains("login_via_client"),
        "{}",
        row.evidence
    );
    assert_eq!(row.kopf_version.as_deref(), Some("1.44.0 or newer"));
    assert_eq!(row.scope, "unknown");
    assert_eq!(
        row.namespaces,
        ["team"],
        "at least the namespaces its log names"
    );
}

#[test]
fn a_version_range_reads_as_text() {
    let v = |lo: Option<(u16, u16, u16)>, hi: Option<(u16, u16, u16)>| {
        let k = |(a, b, c)| kopf_log::KopfVersion::new(a, b, c);
        version_text(&VersionRange {
            at_least: lo.map(k),
            at_most: hi.map(k),
        })
    };
    assert_eq!(v(None, None), None);
    assert_eq!(
        v(Some((1, 45, 2)), Some((1, 45, 2))).as_deref(),
        Some("1.45.2")
    );
    assert_eq!(
        v(Some((1, 38, 0)), Some((1, 43, 0))).as_deref(),
        Some("1.38.0 to 1.43.0")
    );
    assert_eq!(
        v(None, Some((1, 39, 1))).as_deref(),
        Some("1.39.1 or older")
    );
    assert_eq!(v(Some((1, 44, 0)), Some((1, 40, 0))), None, "contradictory");
}

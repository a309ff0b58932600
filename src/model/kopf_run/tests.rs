//! Tests of reading how a container runs kopf.

use super::*;
use k8s_openapi::api::core::v1::EnvVar;

fn parse(c: &Container) -> Option<KopfRun> {
    parse_in_namespace(c, None)
}

fn container(command: &[&str], args: &[&str]) -> Container {
    Container {
        name: "operator".into(),
        command: Some(command.iter().map(|s| s.to_string()).collect()),
        args: Some(args.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

#[test]
fn reads_a_namespaced_standalone_operator() {
    let c = container(
        &["kopf", "run"],
        &[
            "--standalone",
            "-n",
            "team-a",
            "--namespace=team-b",
            "--liveness=http://0.0.0.0:8080/healthz",
            "/app/op.py",
        ],
    );
    let run = parse(&c).expect("kopf");
    assert_eq!(
        run.scope,
        Scope::Namespaced(vec!["team-a".into(), "team-b".into()])
    );
    assert_eq!(run.peering, Peering::Standalone);
    assert_eq!(run.liveness.as_deref(), Some("http://0.0.0.0:8080/healthz"));
    assert!(!run.scope.has_patterns());
}

#[test]
fn reads_python_dash_m_and_patterns() {
    let c = container(
        &["python", "-m", "kopf", "run", "-n", "team-*", "-P", "ring"],
        &[],
    );
    let run = parse(&c).expect("kopf");
    assert!(run.scope.has_patterns());
    assert_eq!(run.peering, Peering::Named("ring".into()));
    assert_eq!(run.log_format, KopfLogFormat::Full);
}

#[test]
fn reads_sh_c_scripts_and_cluster_wide() {
    let c = container(
        &["/bin/sh", "-c"],
        &["exec kopf run -A --log-format=json /app/op.py"],
    );
    let run = parse(&c).expect("kopf");
    assert_eq!(run.scope, Scope::ClusterWide);
    assert_eq!(run.log_format, KopfLogFormat::Json);
    assert_eq!(run.peering, Peering::Auto);
}

#[test]
fn env_sets_the_scope_and_flags_win() {
    let mut c = container(&["kopf", "run", "/app/op.py"], &[]);
    c.env = Some(vec![
        EnvVar {
            name: "KOPF_RUN_NAMESPACES".into(),
            value: Some("a b".into()),
            ..Default::default()
        },
        EnvVar {
            name: "KOPF_RUN_LOG_FORMAT".into(),
            value: Some("plain".into()),
            ..Default::default()
        },
    ]);
    let run = parse(&c).expect("kopf");
    assert_eq!(run.scope, Scope::Namespaced(vec!["a".into(), "b".into()]));
    assert_eq!(run.log_format, KopfLogFormat::Plain);
}

#[test]
fn implicit_scope_without_flags() {
    let run = parse(&container(&["kopf"], &["run", "op.py"])).expect("kopf");
    assert_eq!(run.scope, Scope::Implicit);
    assert!(run.scope.is_cluster_wide());
}

#[test]
fn not_kopf() {
    assert!(parse(&container(&["nginx"], &["-g", "daemon off;"])).is_none());
    assert!(parse(&container(&["python", "app.py", "kopf"], &[])).is_none());
    assert!(parse(&Container::default()).is_none());
}

#[test]
fn picks_the_named_or_first_kopf_container() {
    let mut sidecar = container(&["envoy"], &[]);
    sidecar.name = "proxy".into();
    let op = container(&["kopf", "run", "-A"], &[]);
    let list = [sidecar, op];
    assert_eq!(
        find_kopf(&list, None, None).expect("found").0.name,
        "operator"
    );
    assert!(find_kopf(&list, Some("proxy"), None).is_none());
}

#[test]
fn expands_namespace_references() {
    use k8s_openapi::api::core::v1::{EnvVarSource, ObjectFieldSelector};
    let mut c = container(
        &["kopf", "run", "--namespace=$(POD_NAMESPACE)", "$(UNSET)"],
        &[],
    );
    c.env = Some(vec![EnvVar {
        name: "POD_NAMESPACE".into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.namespace".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    let run = parse_in_namespace(&c, Some("team-a")).expect("kopf");
    assert_eq!(run.scope, Scope::Namespaced(vec!["team-a".into()]));
}

#[test]
fn liveness_urls() {
    let e = LivenessEndpoint::parse("http://0.0.0.0:8080/healthz").expect("url");
    assert_eq!((e.port, e.path.as_str()), (8080, "/healthz"));
    assert!(e.reachable_by_kubelet());
    let hostless = LivenessEndpoint::parse("http://:9000").expect("url");
    assert_eq!((hostless.host.as_deref(), hostless.port), (None, 9000));
    assert!(!hostless.reachable_by_kubelet());
    assert!(
        !LivenessEndpoint::parse("http://localhost:8080/healthz")
            .expect("url")
            .reachable_by_kubelet()
    );
    assert_eq!(LivenessEndpoint::parse("http://x:bad/"), None);
}

#[test]
fn namespace_patterns_match_as_kopf_matches_them() {
    // The examples of kopf 1.45's `match_namespace` docstring.
    let p = "myapp-*, !*-pr-*, *pr-123";
    assert!(match_namespace("myapp-test", p));
    assert!(match_namespace("myapp-pr-123", p));
    assert!(!match_namespace("myapp-pr-456", p));
    assert!(!match_namespace("otherapp-pr-123", p));
    let q = "!*-pr-*, *pr-123";
    assert!(match_namespace("anyapp-anything", q));
    assert!(match_namespace("otherapp-pr-123", q));
    assert!(!match_namespace("myapp-pr-456", q));
    assert!(fnmatch("team-a", "team-?"));
    assert!(fnmatch("team-b", "team-[ab]"));
    assert!(!fnmatch("team-c", "team-[ab]"));
    assert!(fnmatch("team-c", "team-[!ab]"));
    assert!(fnmatch("team-3", "team-[0-9]"));
    assert!(!fnmatch("team-a-x", "team-?"));
    let scope = Scope::Namespaced(vec!["team-*".into(), "ops".into()]);
    assert!(scope.serves("team-x") && scope.serves("ops") && !scope.serves("other"));
    assert_eq!(scope.specific_names(), vec!["ops".to_string()]);
    assert!(scope.has_patterns());
    assert!(Scope::ClusterWide.serves("anything"));
}

#[test]
fn globs_match_as_pythons_fnmatch() {
    // Cases checked against CPython 3.11's fnmatch.fnmatchcase.
    assert!(fnmatch("", "*"));
    assert!(fnmatch("", "**"));
    assert!(!fnmatch("", "?"));
    assert!(fnmatch("abc", "a*c"));
    assert!(fnmatch("abbbc", "a*b*c"));
    assert!(!fnmatch("abbbd", "a*b*c"));
    assert!(fnmatch("a*c", "a[*]c"));
    assert!(fnmatch("a]", "a[]]"));
    assert!(fnmatch("a[", "a["));
    assert!(fnmatch("a[b", "a[b"));
    assert!(fnmatch("a-", "a[!x]"));
    assert!(fnmatch("mississippi", "*sip*"));
    assert!(fnmatch("mississippi", "m*iss*ppi"));
    assert!(!fnmatch("mississippi", "m*iss*ppx"));
}

#[test]
fn hostile_globs_are_matched_in_bounded_time_and_stack() {
    // Exponential for a backtracking matcher, and deep for a recursive one.
    let name = "a".repeat(63);
    let glob = format!("{}b", "*a".repeat(5_000));
    assert!(!fnmatch(&name, &glob));
    let long = "?".repeat(200_000);
    assert!(!fnmatch(&name, &long));
    let pattern = format!("{},!{}", "*a".repeat(2_000), "[".repeat(10_000));
    assert!(!match_namespace(&name, &pattern));
}

#[test]
fn values_that_are_no_namespace_name_are_not_specific_names() {
    let scope = Scope::Namespaced(vec![
        "ops".into(),
        "v1/pods".into(),
        "UPPER".into(),
        "a".repeat(64),
    ]);
    assert_eq!(scope.specific_names(), vec!["ops".to_string()]);
}

#[test]
fn verbosity_priority_and_dev() {
    let run = parse(&container(
        &["kopf", "run", "-v", "--dev", "-p", "100"],
        &[],
    ))
    .expect("kopf");
    assert_eq!(run.verbosity.0, Verbosity::Verbose);
    assert_eq!(run.verbosity.1.as_deref(), Some("-v"));
    assert!(run.dev);
    assert_eq!(run.priority, Some(100));
    let quiet = parse(&container(&["kopf", "run", "--debug"], &[])).expect("kopf");
    assert_eq!(quiet.verbosity.0, Verbosity::Debug);
}

#[test]
fn kopf_run_variables_from_the_pods_namespace_count_however_kopf_is_started() {
    use k8s_openapi::api::core::v1::{EnvVarSource, ObjectFieldSelector};
    let mut c = container(&["kopf", "run", "op.py"], &[]);
    c.env = Some(vec![EnvVar {
        name: "KOPF_RUN_NAMESPACES".into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.namespace".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    let written = parse_in_namespace(&c, Some("team-a")).expect("kopf");
    assert_eq!(written.scope, Scope::Namespaced(vec!["team-a".into()]));
    // The same container with the command in the image: recognised by its log.
    c.command = None;
    c.args = None;
    assert!(parse_in_namespace(&c, Some("team-a")).is_none());
    let seen = LogRecognition {
        pod: "op-0".into(),
        kopf_lines: 2,
        example: "Activity 'login_via_client' succeeded.".into(),
        implicit_scope: false,
        namespaces: Default::default(),
        peering: false,
        kinds: Default::default(),
        version: Default::default(),
    };
    let hidden = from_log(&c, Some("team-a"), seen.clone(), KopfLogFormat::Full);
    assert_eq!(hidden.scope, written.scope);
    assert_eq!(hidden.peering, Peering::Unknown);
    c.env = None;
    let unknown = from_log(&c, Some("team-a"), seen.clone(), KopfLogFormat::Full);
    assert_eq!(unknown.scope, Scope::Unknown);
    assert!(!unknown.origin.flags_known());
    assert!(unknown.served_names().is_empty());
    // kopf's peering lines and its objects' namespaces are what the log tells.
    let told = LogRecognition {
        namespaces: ["team-a".to_string(), "team-b".to_string()].into(),
        peering: true,
        ..seen
    };
    let learned = from_log(&c, Some("team-a"), told, KopfLogFormat::Full);
    assert_eq!(learned.peering, Peering::Auto);
    assert_eq!(
        learned.scope,
        Scope::Unknown,
        "a lower bound, not the scope"
    );
    assert_eq!(learned.served_names(), vec!["team-a", "team-b"]);
}

#[test]
fn reads_the_files_and_modules_kopf_loads() {
    let c = container(
        &["kopf", "run"],
        &[
            "--standalone",
            "-m",
            "pkg.handlers",
            "-n",
            "team-a",
            "--module=pkg.more",
            "/app/op.py",
            "extra.py",
        ],
    );
    let run = parse(&c).expect("kopf");
    assert_eq!(
        run.entries,
        [
            Entry::Module("pkg.handlers".into()),
            Entry::Module("pkg.more".into()),
            Entry::Path("/app/op.py".into()),
            Entry::Path("extra.py".into()),
        ]
    );
    // What the shell runs after kopf is not kopf's to load.
    let c = container(&["/bin/sh", "-c"], &["kopf run -A op.py && echo done"]);
    assert_eq!(
        parse(&c).expect("kopf").entries,
        [Entry::Path("op.py".into())]
    );
    let c = container(&["kopf", "run", "-A"], &[]);
    assert!(parse(&c).expect("kopf").entries.is_empty());
}

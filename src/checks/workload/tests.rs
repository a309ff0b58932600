//! Tests of the workload checks.

use super::*;
use crate::catalog::{CheckId, Severity};
use crate::model::evidence::{Gathered, LogEvidence, WebhookConfig};
use crate::model::kopf_run::{KopfLogFormat, KopfRun, Peering, parse_in_namespace};
use crate::model::settings::{CheckSettings, WorkloadThresholds};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStateWaiting, HTTPGetAction, PodSpec,
    PodStatus, PodTemplateSpec, Probe, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

fn q(map: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
    Some(
        map.iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect(),
    )
}

fn container(args: &[&str], requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
    Container {
        name: "operator".into(),
        command: Some(vec!["kopf".into(), "run".into()]),
        args: Some(args.iter().map(|s| s.to_string()).collect()),
        resources: Some(ResourceRequirements {
            requests: q(requests),
            limits: q(limits),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn good_container() -> Container {
    let mut c = container(
        &[
            "--standalone",
            "-n",
            "ns",
            "--liveness=http://0.0.0.0:8080/healthz",
            "/app/op.py",
        ],
        &[("memory", "256Mi"), ("cpu", "100m")],
        &[("memory", "512Mi")],
    );
    c.liveness_probe = Some(Probe {
        http_get: Some(HTTPGetAction {
            port: IntOrString::Int(8080),
            path: Some("/healthz".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    c
}

fn target(container: &Container, replicas: i32, sa: Option<&str>) -> TargetEvidence {
    TargetEvidence {
        deployment: Deployment {
            metadata: kube::api::ObjectMeta {
                name: Some("op".into()),
                ..Default::default()
            },
            spec: DeploymentSpec {
                replicas: Some(replicas),
                strategy: Some(DeploymentStrategy {
                    type_: Some("Recreate".into()),
                    ..Default::default()
                }),
                template: PodTemplateSpec {
                    spec: Some(PodSpec {
                        containers: vec![container.clone()],
                        service_account_name: sa.map(str::to_string),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        },
        ..Default::default()
    }
    .with_kopf()
}

trait WithKopf {
    fn with_kopf(self) -> Self;
}

impl WithKopf for TargetEvidence {
    /// Reads the kopf container the way the gatherer does.
    fn with_kopf(self) -> Self {
        TargetEvidence::new(self.deployment, self.pods, None)
    }
}

fn parse_container(c: &Container) -> Option<KopfRun> {
    parse_in_namespace(c, None)
}

fn settings() -> CheckSettings {
    CheckSettings {
        workload: WorkloadThresholds::default(),
        event_repeats: 3,
        unhandled_after: crate::model::settings::DEFAULT_UNHANDLED_AFTER,
        window: crate::model::settings::DEFAULT_WINDOW,
        now: jiff::Timestamp::UNIX_EPOCH,
    }
}

fn run_checks(t: &TargetEvidence) -> Vec<CheckId> {
    let kopf = t.kopf.as_ref().expect("kopf");
    crate::checks::run_area(crate::catalog::Area::Workload, t, kopf, &settings())
        .into_iter()
        .map(|r| r.finding.check)
        .collect()
}

#[test]
fn well_behaved_operator_has_no_findings() {
    let t = target(&good_container(), 1, Some("op"));
    assert_eq!(run_checks(&t), Vec::<CheckId>::new());
}

#[test]
fn small_limits_cpu_limit_standalone_replicas_and_defaults() {
    let c = container(
        &["--standalone", "/app/op.py"],
        &[("memory", "64Mi")],
        &[("memory", "128Mi"), ("cpu", "500m")],
    );
    let t = target(&c, 2, None);
    let found = run_checks(&t);
    for want in [
        CheckId::WorkloadMemoryRequest,
        CheckId::WorkloadMemoryLimit,
        CheckId::WorkloadCpuLimit,
        CheckId::WorkloadCpuRequest,
        CheckId::WorkloadStandaloneReplicas,
        CheckId::WorkloadLiveness,
        CheckId::WorkloadDefaultServiceAccount,
        CheckId::WorkloadNoScopeFlag,
    ] {
        assert!(found.contains(&want), "{want} missing from {found:?}");
    }
    let run = parse_container(&c).expect("kopf");
    let limit = memory_limit::live_on("op", &c, &WorkloadThresholds::default()).expect("finding");
    assert_eq!(limit.severity, Severity::Error);
    assert!(limit.message.contains("128Mi"));
    assert_eq!(run.log_format, KopfLogFormat::Full);
}

#[test]
fn memory_limit_between_256_and_512_is_a_warning() {
    let c = container(&["-A"], &[], &[("memory", "300Mi")]);
    let f = memory_limit::live_on("op", &c, &WorkloadThresholds::default()).expect("finding");
    assert_eq!(f.severity, Severity::Warning);
    let patch: serde_json::Value =
        serde_yaml_ng::from_str(f.fix.as_deref().expect("a mechanical fix")).expect("YAML");
    let fixed = &patch["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        fixed["name"],
        c.name.as_str(),
        "merges into the container by name"
    );
    assert_eq!(fixed["resources"]["limits"]["memory"], "512Mi");
    let lenient = WorkloadThresholds {
        memory_limit: 256.0 * 1024.0 * 1024.0,
        ..Default::default()
    };
    assert!(memory_limit::live_on("op", &c, &lenient).is_none());
}

#[test]
fn liveness_probe_on_the_wrong_port() {
    let mut c = good_container();
    if let Some(p) = c.liveness_probe.as_mut().and_then(|p| p.http_get.as_mut()) {
        p.port = IntOrString::Int(9090);
    }
    let run = parse_container(&c).expect("kopf");
    let f = liveness::live_on("op", &c, &run).expect("finding");
    assert!(
        f.message.contains("9090") && f.message.contains("8080"),
        "{}",
        f.message
    );
}

fn pod_with(status: ContainerStatus) -> Pod {
    Pod {
        metadata: kube::api::ObjectMeta {
            name: Some("op-1".into()),
            ..Default::default()
        },
        status: Some(PodStatus {
            container_statuses: Some(vec![status]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn oom_killed_and_crash_loop_quote_the_previous_log() {
    let status = ContainerStatus {
        name: "operator".into(),
        restart_count: 3,
        last_state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                reason: Some("OOMKilled".into()),
                exit_code: 137,
                ..Default::default()
            }),
            ..Default::default()
        }),
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some("CrashLoopBackOff".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut t = target(&good_container(), 1, Some("op"));
    t.pods = vec![pod_with(status)];
    let found = run_checks(&t);
    assert!(found.contains(&CheckId::WorkloadOomKilled));
    let previous = parse_log(&[
        "[2026-11-30 02:41:55,039] kopf.activities.star [INFO    ] Activity 'configure' succeeded.",
        "[2026-11-30 02:41:55,040] kopf._core.engines.a [INFO    ] Initial authentication has been initiated.",
        "[2026-11-30 02:42:50,001] kopf._core.reactor.r [ERROR   ] Watcher for beacons.v1.example.com@ns has failed: 'beacons.example.com is forbidden: User \"system:serviceaccount:ns:op\" cannot list resource \"beacons\" in API group \"example.com\" in the namespace \"ns\"'",
        "Traceback (most recent call last):",
        "  File \"/usr/lib/python3.11/site-packages/kopf/_cogs/clients/api.py\", line 94, in request",
        "kopf._cogs.clients.errors.APIForbiddenError: ('beacons.example.com is forbidden', {})",
    ]);
    let logs: Gathered<LogEvidence> = Ok(LogEvidence {
        previous: [("op-1".to_string(), previous)].into(),
        ..Default::default()
    });
    let crash = crash_loop::live_on("op", &t.pods, "operator", &logs).expect("finding");
    assert!(crash.message.contains("CrashLoopBackOff"));
    let evidence = crash.evidence.unwrap_or_default();
    assert!(evidence.starts_with("pod op-1: "), "{evidence}");
    assert!(evidence.contains("is forbidden"), "{evidence}");
    assert!(
        evidence.contains("APIForbiddenError"),
        "the exception: {evidence}"
    );
    assert!(
        !evidence.contains("Activity 'configure'"),
        "not the first INFO lines: {evidence}"
    );
    let unreadable: Gathered<LogEvidence> = Err(crate::model::evidence::Unavailable::new(
        crate::model::evidence::Obstacle::Forbidden,
        "may not get pods/log",
    ));
    let crash = crash_loop::live_on("op", &t.pods, "operator", &unreadable).expect("finding");
    assert!(
        crash
            .evidence
            .unwrap_or_default()
            .contains("unreadable: may not get pods/log")
    );
}

/// Parses log lines as the gatherer does, keeping only what a check reads.
fn parse_log(lines: &[&str]) -> Vec<kopf_log::Record> {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records: Vec<kopf_log::Record> = lines
        .iter()
        .filter_map(|l| parser.push_line(l.as_bytes()))
        .collect();
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    records.retain(|r| !r.is_routine());
    records
}

#[test]
fn a_crash_before_kopf_logs_anything_quotes_python_s_traceback() {
    // The operator's module fails to import: `kopf run` dies with Python's own
    // traceback on stderr, no kopf line at all.
    let status = ContainerStatus {
        name: "operator".into(),
        restart_count: 4,
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some("CrashLoopBackOff".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut t = target(&good_container(), 1, Some("op"));
    t.pods = vec![pod_with(status)];
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut tail: Vec<kopf_log::Record> = [
        "Traceback (most recent call last):",
        "  File \"/app/operator.py\", line 12, in <module>",
        "    from backend import Widget",
        "ImportError: cannot import name 'Widget' from 'backend'; password=hunter2secretvalue",
    ]
    .iter()
    .filter_map(|l| parser.push_line(l.as_bytes()))
    .collect();
    tail.extend(parser.finish());
    let logs: Gathered<LogEvidence> = Ok(LogEvidence {
        previous: [("op-1".to_string(), Vec::new())].into(),
        previous_tail: [("op-1".to_string(), tail)].into(),
        ..Default::default()
    });
    let crash = crash_loop::live_on("op", &t.pods, "operator", &logs).expect("finding");
    let evidence = crash.evidence.unwrap_or_default();
    assert!(
        evidence.starts_with("pod op-1: ImportError: cannot import name 'Widget'"),
        "{evidence}"
    );
    assert!(
        !evidence.contains("hunter2secretvalue"),
        "redacted: {evidence}"
    );
    assert!(!evidence.contains("no error"), "{evidence}");
}

#[test]
fn a_liveness_url_without_a_host_is_unreachable() {
    let mut c = good_container();
    c.args = Some(vec!["-A".into(), "--liveness=http://:8080/healthz".into()]);
    let run = parse_container(&c).expect("kopf");
    let f = liveness::live_on("op", &c, &run).expect("finding");
    assert!(f.message.contains("localhost"), "{}", f.message);
    assert!(
        f.message.contains("http://0.0.0.0:8080/healthz"),
        "{}",
        f.message
    );
}

#[test]
fn a_healthy_pod_is_no_crash_loop() {
    let status = ContainerStatus {
        name: "operator".into(),
        restart_count: 0,
        ..Default::default()
    };
    let mut t = target(&good_container(), 1, Some("op"));
    t.pods = vec![pod_with(status)];
    assert!(crash_loop::live_on("op", &t.pods, "operator", &Ok(LogEvidence::default())).is_none());
    assert!(oom_killed::live_on("op", &t.pods, "operator").is_none());
}

// --- workload.rollout-overlap ---------------------------------------------------------

/// The good container with other arguments.
fn good_with(args: &[&str]) -> Container {
    let mut c = good_container();
    c.args = Some(args.iter().map(|s| s.to_string()).collect());
    c
}

fn with_strategy(mut t: TargetEvidence, strategy: serde_json::Value) -> TargetEvidence {
    t.deployment.spec.strategy = Some(serde_json::from_value(strategy).expect("a strategy"));
    t
}

#[test]
fn a_rolling_update_with_surge_runs_two_leaders_at_once() {
    let default_rolling = with_strategy(
        target(&good_container(), 1, Some("op")),
        serde_json::json!({"type": "RollingUpdate"}),
    );
    let kopf = default_rolling.kopf.as_ref().expect("kopf");
    let f = rollout_overlap::live_on("op", &default_rolling, &kopf.run).expect("a finding");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.evidence.as_deref(),
        Some("strategy: RollingUpdate, maxSurge: 25% (default)")
    );
    assert!(f.message.contains("Recreate"), "{}", f.message);

    // No strategy at all is RollingUpdate with 25% surge too.
    let mut unset = target(&good_container(), 1, Some("op"));
    unset.deployment.spec.strategy = None;
    assert!(run_checks(&unset).contains(&CheckId::WorkloadRolloutOverlap));

    // maxSurge 0 replaces the pod before starting the next: one at a time.
    let no_surge = with_strategy(
        target(&good_container(), 1, Some("op")),
        serde_json::json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}),
    );
    assert!(!run_checks(&no_surge).contains(&CheckId::WorkloadRolloutOverlap));
    let no_surge_percent = with_strategy(
        target(&good_container(), 1, Some("op")),
        serde_json::json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "0%"}}),
    );
    assert!(!run_checks(&no_surge_percent).contains(&CheckId::WorkloadRolloutOverlap));
}

#[test]
fn standalone_overlap_handles_twice_and_peered_replicas_are_not_single_leaders() {
    let standalone = with_strategy(
        target(&good_container(), 1, Some("op")),
        serde_json::json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}),
    );
    let kopf = standalone.kopf.as_ref().expect("kopf");
    assert_eq!(
        kopf.run.peering,
        Peering::Standalone,
        "the good container is standalone"
    );
    let f = rollout_overlap::live_on("op", &standalone, &kopf.run).expect("a finding");
    assert!(
        f.message.contains("both handle every object"),
        "{}",
        f.message
    );

    let peered = good_with(&[
        "-n",
        "ns",
        "--liveness=http://0.0.0.0:8080/healthz",
        "/app/op.py",
    ]);
    let replicas = with_strategy(
        target(&peered, 3, Some("op")),
        serde_json::json!({"type": "RollingUpdate"}),
    );
    let kopf = replicas.kopf.as_ref().expect("kopf");
    assert!(rollout_overlap::live_on("op", &replicas, &kopf.run).is_none());
}

// --- workload.debug-logging ------------------------------------------------------------

#[test]
fn debug_flags_or_a_debug_flood_are_debug_logging() {
    for flag in ["-v", "--verbose", "-d", "--debug"] {
        let c = good_with(&["--standalone", flag, "/app/op.py"]);
        let t = target(&c, 1, Some("op"));
        let kopf = t.kopf.as_ref().expect("kopf");
        let f =
            debug_logging::live_on("op", &kopf.run, &kopf.logs).unwrap_or_else(|| panic!("{flag}"));
        assert!(
            f.message.starts_with(&format!("kopf runs with {flag}")),
            "{}",
            f.message
        );
    }
    let t = target(&good_container(), 1, Some("op"));
    let kopf = t.kopf.as_ref().expect("kopf");
    let mut logs = LogEvidence::default();
    logs.stats.records = 100;
    logs.stats.debug_records = 40;
    assert!(debug_logging::live_on("op", &kopf.run, &Ok(logs.clone())).is_none());
    logs.stats.debug_records = 60;
    let f = debug_logging::live_on("op", &kopf.run, &Ok(logs.clone())).expect("a flood");
    assert!(!f.message.contains("60"), "no counts: {}", f.message);
    // Too few records say nothing.
    logs.stats.records = 10;
    logs.stats.debug_records = 10;
    assert!(debug_logging::live_on("op", &kopf.run, &Ok(logs)).is_none());
}

// --- workload.webhook-blast-radius -----------------------------------------------------

fn widgets() -> Vec<HandledResource> {
    vec![crate::model::testing::widget(true, true)]
}

fn kopf_webhook(fails_closed: bool, url: Option<&str>, service_namespace: Option<&str>) -> Webhook {
    Webhook {
        name: "validate-widget.auto.kopf.dev".into(),
        fails_closed,
        spares_kube_system: false,
        url: url.map(str::to_string),
        service_namespace: service_namespace.map(str::to_string),
        host: None,
        resources: vec![("example.com".into(), "widgets".into())],
        ca_bundle: crate::model::ca_bundle::CaBundle::Absent,
    }
}

fn configuration(webhooks: Vec<Webhook>) -> WebhookConfig {
    WebhookConfig {
        kind: crate::model::evidence::WebhookKind::Validating,
        name: "auto.kopf.dev".into(),
        webhooks,
    }
}

#[test]
fn a_failing_closed_webhook_of_a_single_replica_blocks_writes() {
    let t = target(&good_container(), 1, Some("op"));
    let configs = [configuration(vec![kopf_webhook(true, None, None)])];
    let found = webhook_blast_radius::live_on(&t, "operator", &widgets(), &configs);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f.check, CheckId::WorkloadWebhookBlastRadius);
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message
            .contains("ValidatingWebhookConfiguration auto.kopf.dev"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("failurePolicy: Fail with 1 replica(s)"),
        "{}",
        f.message
    );
    assert!(f.message.contains("kube-system"), "{}", f.message);

    // Ignore: an outage does not block writes.
    let ignoring = [configuration(vec![kopf_webhook(false, None, None)])];
    assert!(webhook_blast_radius::live_on(&t, "operator", &widgets(), &ignoring).is_empty());
}

#[test]
fn a_dev_tunnel_url_is_flagged_and_other_operators_webhooks_are_not() {
    let t = target(&good_container(), 3, Some("op"));
    let tunnel = [configuration(vec![kopf_webhook(
        false,
        Some("https://abcd-1-2.ngrok-free.app/validate-widget"),
        None,
    )])];
    let f = webhook_blast_radius::live_on(&t, "operator", &widgets(), &tunnel);
    assert!(
        f[0].message.contains("abcd-1-2.ngrok-free.app"),
        "{}",
        f[0].message
    );
    for url in [
        "https://host.k3d.internal:9443/x",
        "https://localhost:443/x",
        "https://[::1]:9443/x",
        "https://127.0.0.1/x",
    ] {
        assert!(dev_tunnel(url).is_some(), "{url}");
    }
    assert!(dev_tunnel("https://op.home.svc:443/x").is_none());
    // A webhook for resources the operator does not handle, or calling a Service in
    // another namespace, is another operator's.
    let mut gadgets = kopf_webhook(true, None, None);
    gadgets.resources = vec![("example.com".into(), "gadgets".into())];
    let elsewhere = kopf_webhook(true, None, Some("other"));
    let theirs = [configuration(vec![gadgets, elsewhere])];
    assert!(webhook_blast_radius::live_on(&t, "operator", &widgets(), &theirs).is_empty());
}

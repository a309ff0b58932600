//! Workload checks (`workload.*`): the target Deployment and its pods.
//! Each check is a pure function of the evidence and returns its findings.

use super::quantity;
use super::{CheckId, Severity, finding};
use crate::api::Finding;
use crate::evidence::{PreviousLog, TargetEvidence};
use crate::kopf_mode::{KopfRun, Peering, Scope, url_port_and_path};
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Workload thresholds after the KopfAudit's overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadThresholds {
    /// Minimum memory request in bytes.
    pub memory_request: f64,
    /// Minimum memory limit in bytes.
    pub memory_limit: f64,
}

impl Default for WorkloadThresholds {
    fn default() -> Self {
        WorkloadThresholds {
            memory_request: 256.0 * 1024.0 * 1024.0,
            memory_limit: 512.0 * 1024.0 * 1024.0,
        }
    }
}

/// Below this memory limit a kopf operator is OOMKilled before doing any work.
const MEMORY_LIMIT_ERROR_BELOW: f64 = 256.0 * 1024.0 * 1024.0;

/// How many lines of a previous container's log a crash-loop finding quotes.
pub const CRASH_QUOTE_LINES: usize = 3;

/// Runs every workload check on one target whose kopf container is `run`.
pub fn check(
    target: &TargetEvidence,
    container: &Container,
    run: &KopfRun,
    thresholds: &WorkloadThresholds,
) -> Vec<Finding> {
    let name = target_name(target);
    let mut findings = Vec::new();
    findings.extend(memory_request(name, container, thresholds));
    findings.extend(memory_limit(name, container, thresholds));
    findings.extend(cpu_limit(name, container));
    findings.extend(cpu_request(name, container));
    findings.extend(oom_killed(name, &target.pods, &container.name));
    findings.extend(crash_loop(name, target, &container.name));
    findings.extend(standalone_replicas(name, target, run));
    findings.extend(liveness(name, container, run));
    findings.extend(default_service_account(name, target));
    findings.extend(no_scope_flag(name, run));
    findings
}

/// The finding for a target with no kopf container.
pub fn not_kopf(target: &TargetEvidence, wanted_container: Option<&str>) -> Finding {
    let name = target_name(target);
    let which = wanted_container
        .map(|c| format!("container {c:?}"))
        .unwrap_or_else(|| "no container".into());
    finding(
        CheckId::WorkloadNotKopf,
        name,
        format!(
            "Deployment {name}: {which} runs kopf (`kopf run` or `python -m kopf run`); kopf-specific checks are skipped. Point spec.target at the kopf operator, or set spec.target.container."
        ),
        None,
    )
}

/// The target's name for findings.
pub fn target_name(target: &TargetEvidence) -> &str {
    target.deployment.metadata.name.as_deref().unwrap_or("")
}

fn resource<'a>(container: &'a Container, kind: &str, key: &str) -> Option<&'a str> {
    let resources = container.resources.as_ref()?;
    let map = match kind {
        "requests" => resources.requests.as_ref()?,
        _ => resources.limits.as_ref()?,
    };
    map.get(key).map(|q| q.0.as_str())
}

fn memory_request(
    target: &str,
    container: &Container,
    thresholds: &WorkloadThresholds,
) -> Option<Finding> {
    let want = quantity::human(thresholds.memory_request);
    let problem = match resource(container, "requests", "memory") {
        None => "has no memory request".to_string(),
        Some(q) => match quantity::bytes(q) {
            Some(b) if b >= thresholds.memory_request => return None,
            Some(_) => format!("requests {q} of memory, below kopf's resting baseline"),
            None => format!("has an unreadable memory request {q:?}"),
        },
    };
    Some(finding(
        CheckId::WorkloadMemoryRequest,
        target,
        format!(
            "Container {} {problem}: set resources.requests.memory to at least {want}.",
            container.name
        ),
        resource(container, "requests", "memory").map(|q| format!("requests.memory: {q}")),
    ))
}

fn memory_limit(
    target: &str,
    container: &Container,
    thresholds: &WorkloadThresholds,
) -> Option<Finding> {
    let want = quantity::human(thresholds.memory_limit);
    let limit = resource(container, "limits", "memory");
    let (problem, severity) = match limit {
        None => ("has no memory limit".to_string(), Severity::Warning),
        Some(q) => match quantity::bytes(q) {
            Some(b) if b >= thresholds.memory_limit => return None,
            Some(b) if b < MEMORY_LIMIT_ERROR_BELOW => (
                format!(
                    "is limited to {q} of memory, below kopf's resting baseline, so it will be OOMKilled under normal watch load"
                ),
                Severity::Error,
            ),
            Some(_) => (
                format!("is limited to {q} of memory, little headroom above kopf's baseline"),
                Severity::Warning,
            ),
            None => (
                format!("has an unreadable memory limit {q:?}"),
                Severity::Warning,
            ),
        },
    };
    let mut f = finding(
        CheckId::WorkloadMemoryLimit,
        target,
        format!(
            "Container {} {problem}: set resources.limits.memory to at least {want}.",
            container.name
        ),
        limit.map(|q| format!("limits.memory: {q}")),
    );
    f.severity = severity;
    Some(f)
}

fn cpu_limit(target: &str, container: &Container) -> Option<Finding> {
    let limit = resource(container, "limits", "cpu")?;
    Some(finding(
        CheckId::WorkloadCpuLimit,
        target,
        format!(
            "Container {} has a CPU limit of {limit}: CPU is compressible and a limit only throttles the operator; remove resources.limits.cpu and keep a request.",
            container.name
        ),
        Some(format!("limits.cpu: {limit}")),
    ))
}

fn cpu_request(target: &str, container: &Container) -> Option<Finding> {
    if resource(container, "requests", "cpu").is_some() {
        return None;
    }
    Some(finding(
        CheckId::WorkloadCpuRequest,
        target,
        format!(
            "Container {} has no CPU request: set resources.requests.cpu (e.g. 100m) so the scheduler reserves time for it.",
            container.name
        ),
        None,
    ))
}

fn statuses<'a>(
    pods: &'a [Pod],
    container: &'a str,
) -> impl Iterator<Item = (&'a Pod, &'a ContainerStatus)> {
    pods.iter().flat_map(move |pod| {
        pod.status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .filter(move |cs| cs.name == container)
            .map(move |cs| (pod, cs))
    })
}

fn pod_name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("")
}

fn oom_killed(target: &str, pods: &[Pod], container: &str) -> Option<Finding> {
    let is_oom = |cs: &ContainerStatus| {
        let current = cs.state.as_ref().and_then(|s| s.terminated.as_ref());
        let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
        [current, last]
            .into_iter()
            .flatten()
            .any(|t| t.reason.as_deref() == Some("OOMKilled"))
    };
    let (pod, _) = statuses(pods, container).find(|(_, cs)| is_oom(cs))?;
    Some(finding(
        CheckId::WorkloadOomKilled,
        target,
        format!(
            "Container {container} was OOMKilled: raise resources.limits.memory first (kopf idles well above 128Mi; 512Mi is the baseline), then look for a leak."
        ),
        Some(format!(
            "pod {}: lastState.terminated.reason OOMKilled",
            pod_name(pod)
        )),
    ))
}

fn crash_loop(target: &str, evidence: &TargetEvidence, container: &str) -> Option<Finding> {
    let waiting_reason = |cs: &ContainerStatus| {
        cs.state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone())
    };
    let (pod, status) = statuses(&evidence.pods, container)
        .find(|(_, cs)| waiting_reason(cs).as_deref() == Some("CrashLoopBackOff"))
        .or_else(|| statuses(&evidence.pods, container).find(|(_, cs)| cs.restart_count > 0))?;
    let state = if waiting_reason(status).as_deref() == Some("CrashLoopBackOff") {
        "is in CrashLoopBackOff"
    } else {
        "has restarted"
    };
    let quote = match evidence.previous_logs.get(pod_name(pod)) {
        Some(PreviousLog::Lines(lines)) if !lines.is_empty() => lines.join(" | "),
        Some(PreviousLog::Lines(_)) => "(the previous container's log is empty)".to_string(),
        Some(PreviousLog::Unreadable(why)) => format!("(previous log unreadable: {why})"),
        None => "(no previous log)".to_string(),
    };
    Some(finding(
        CheckId::WorkloadCrashLoop,
        target,
        format!(
            "Container {container} {state}: read the first lines of the previous container's log (quoted in evidence); an RBAC `forbidden` at boot points at a missing rule."
        ),
        Some(format!("pod {}: {quote}", pod_name(pod))),
    ))
}

fn standalone_replicas(target: &str, evidence: &TargetEvidence, run: &KopfRun) -> Option<Finding> {
    let replicas = evidence.deployment.spec.replicas.unwrap_or(1);
    if run.peering != Peering::Standalone || replicas <= 1 {
        return None;
    }
    Some(finding(
        CheckId::WorkloadStandaloneReplicas,
        target,
        format!(
            "kopf runs with --standalone (peering off) and {replicas} replicas: every replica handles every object. Set replicas to 1, or drop --standalone and enable peering."
        ),
        Some(format!("replicas: {replicas}, args: --standalone")),
    ))
}

/// How a probe reaches the container: an HTTP port and path, or something else.
fn probe_http(probe: &Probe, container: &Container) -> Option<(u16, String)> {
    let get = probe.http_get.as_ref()?;
    let port = match &get.port {
        IntOrString::Int(p) => u16::try_from(*p).ok()?,
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok())?,
    };
    Some((port, get.path.clone().unwrap_or_else(|| "/".into())))
}

fn liveness(target: &str, container: &Container, run: &KopfRun) -> Option<Finding> {
    let endpoint = run.liveness.as_deref().and_then(url_port_and_path);
    let probe = container.liveness_probe.as_ref();
    let problem = match (probe, &endpoint) {
        (None, Some((port, path))) => format!(
            "has no liveness probe although kopf serves one: add livenessProbe.httpGet on port {port} path {path}"
        ),
        (None, None) => "has no liveness probe: start kopf with --liveness=http://0.0.0.0:8080/healthz and add livenessProbe.httpGet on port 8080 path /healthz".to_string(),
        (Some(p), None) if p.http_get.is_some() => "probes HTTP but kopf serves no liveness endpoint: add --liveness=http://0.0.0.0:8080/healthz to kopf's args and point the probe at it".to_string(),
        (Some(p), Some((port, path))) => match probe_http(p, container) {
            Some((pp, ppath)) if pp == *port && ppath == *path => return None,
            Some((pp, ppath)) => format!(
                "probes port {pp} path {ppath} but kopf serves liveness on port {port} path {path}: point livenessProbe.httpGet at it"
            ),
            None => format!(
                "has a liveness probe that does not hit kopf's endpoint: use livenessProbe.httpGet on port {port} path {path}"
            ),
        },
        // An exec or TCP probe without --liveness: it checks something, not kopf's health.
        (Some(_), None) => "has a liveness probe that does not ask kopf: add --liveness=http://0.0.0.0:8080/healthz and probe it with httpGet".to_string(),
    };
    Some(finding(
        CheckId::WorkloadLiveness,
        target,
        format!("Container {} {problem}.", container.name),
        run.liveness.as_ref().map(|l| format!("--liveness={l}")),
    ))
}

fn default_service_account(target: &str, evidence: &TargetEvidence) -> Option<Finding> {
    let spec = evidence.deployment.spec.template.spec.as_ref();
    let account = spec
        .and_then(|s| s.service_account_name.as_deref())
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    if account != "default" {
        return None;
    }
    Some(finding(
        CheckId::WorkloadDefaultServiceAccount,
        target,
        "The pods run as the namespace's default ServiceAccount, sharing its RBAC with unrelated pods: create a dedicated ServiceAccount and set serviceAccountName.".to_string(),
        Some("serviceAccountName: default".into()),
    ))
}

fn no_scope_flag(target: &str, run: &KopfRun) -> Option<Finding> {
    if run.scope != Scope::Implicit {
        return None;
    }
    Some(finding(
        CheckId::WorkloadNoScopeFlag,
        target,
        "kopf runs with neither -A/--all-namespaces nor -n/--namespace: it falls back to cluster-wide with a FutureWarning that this will become an error. Add -n NAMESPACE (or -A) to its args.".to_string(),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kopf_mode::{LogFormat, parse_container};
    use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStateWaiting, HTTPGetAction, PodSpec,
        PodStatus, PodTemplateSpec, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
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
    }

    fn run_checks(t: &TargetEvidence) -> Vec<CheckId> {
        let c = &t
            .deployment
            .spec
            .template
            .spec
            .as_ref()
            .expect("pod")
            .containers[0];
        let run = parse_container(c).expect("kopf");
        check(t, c, &run, &WorkloadThresholds::default())
            .into_iter()
            .map(|f| f.check)
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
        let limit = memory_limit("op", &c, &WorkloadThresholds::default()).expect("finding");
        assert_eq!(limit.severity, Severity::Error);
        assert!(limit.message.contains("128Mi"));
        assert_eq!(run.log_format, LogFormat::Full);
    }

    #[test]
    fn memory_limit_between_256_and_512_is_a_warning() {
        let c = container(&["-A"], &[], &[("memory", "300Mi")]);
        let f = memory_limit("op", &c, &WorkloadThresholds::default()).expect("finding");
        assert_eq!(f.severity, Severity::Warning);
        let lenient = WorkloadThresholds {
            memory_limit: 256.0 * 1024.0 * 1024.0,
            ..Default::default()
        };
        assert!(memory_limit("op", &c, &lenient).is_none());
    }

    #[test]
    fn liveness_probe_on_the_wrong_port() {
        let mut c = good_container();
        if let Some(p) = c.liveness_probe.as_mut().and_then(|p| p.http_get.as_mut()) {
            p.port = IntOrString::Int(9090);
        }
        let run = parse_container(&c).expect("kopf");
        let f = liveness("op", &c, &run).expect("finding");
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
        t.previous_logs.insert(
            "op-1".into(),
            PreviousLog::Lines(vec!["first".into(), "second".into()]),
        );
        let found = run_checks(&t);
        assert!(found.contains(&CheckId::WorkloadOomKilled));
        let crash = crash_loop("op", &t, "operator").expect("finding");
        assert!(crash.message.contains("CrashLoopBackOff"));
        assert_eq!(crash.evidence.as_deref(), Some("pod op-1: first | second"));
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
        assert!(crash_loop("op", &t, "operator").is_none());
        assert!(oom_killed("op", &t.pods, "operator").is_none());
    }
}

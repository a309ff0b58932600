//! Workload checks (`workload.*`): the target Deployment and its pods.
//! Each check is a pure function of the evidence and returns its findings.

use super::{container_patch, finding};
use crate::api::Finding;
use crate::catalog::{CheckId, Severity};
use crate::model::evidence::{
    Gathered, HandledResource, KopfEvidence, LogEvidence, TargetEvidence, Webhook, WebhookConfig,
};
use crate::model::kopf_run::{KopfRun, LivenessEndpoint, Peering, Scope, Verbosity};
use crate::model::quantity;
use crate::model::settings::{CheckSettings, WorkloadThresholds};
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Below this memory limit a kopf operator is OOMKilled before doing any work.
const MEMORY_LIMIT_ERROR_BELOW: f64 = 256.0 * 1024.0 * 1024.0;

/// How many lines of a previous container's log a crash-loop finding quotes: kopf's
/// last denial, its last error and that error's exception, and the exit line of what
/// followed kopf's last line.
const CRASH_QUOTE_LINES: usize = 4;
/// How long each quoted line may be.
const QUOTE_CHARS: usize = 240;

/// What kopf's documentation uses as the liveness endpoint.
const LIVENESS_FIX: &str = "--liveness=http://0.0.0.0:8080/healthz";

/// Runs every workload check on one kopf target.
pub(crate) fn check(
    target: &TargetEvidence,
    kopf: &KopfEvidence,
    settings: &CheckSettings,
) -> Vec<Finding> {
    let Some(container) = target.kopf_container() else {
        return Vec::new();
    };
    let name = target.name();
    let run = &kopf.run;
    let thresholds = &settings.workload;
    let mut findings = Vec::new();
    findings.extend(memory_request(name, container, thresholds));
    findings.extend(memory_limit(name, container, thresholds));
    findings.extend(cpu_limit(name, container));
    findings.extend(cpu_request(name, container));
    findings.extend(oom_killed(name, &target.pods, &container.name));
    findings.extend(crash_loop(name, &target.pods, &container.name, &kopf.logs));
    findings.extend(standalone_replicas(name, target, run));
    findings.extend(liveness(name, container, run));
    findings.extend(default_service_account(name, target));
    findings.extend(no_scope_flag(name, run));
    findings.extend(rollout_overlap(name, target, run));
    findings.extend(debug_logging(name, run, &kopf.logs));
    findings.extend(grace_period(target, kopf));
    if let (Ok(handled), Ok(webhooks)) = (&kopf.handled, &kopf.webhooks) {
        findings.extend(webhook_blast_radius(
            target,
            &container.name,
            handled,
            webhooks,
        ));
    }
    findings
}

/// `workload.not-kopf`: the finding for a target with no kopf container.
pub(crate) fn not_kopf(target: &TargetEvidence, wanted_container: Option<&str>) -> Finding {
    let name = target.name();
    let which = wanted_container
        .map(|c| format!("container {c:?}"))
        .unwrap_or_else(|| "no container".into());
    finding(
        CheckId::WorkloadNotKopf,
        name,
        format!(
            "Deployment {name}: {which} runs kopf, neither on its command line (`kopf run`, `python -m kopf run`) nor by its log (no line that only kopf writes at the start of its containers' logs); kopf-specific checks are skipped. Point spec.target at the kopf operator, or set spec.target.container."
        ),
        None,
    )
}

/// The workload checks that hold for any Deployment, run on a target that is not kopf
/// (or not known to be): no memory request or limit, OOMKilled, a crash loop, the
/// default ServiceAccount. kopf's own thresholds do not apply to it.
pub(crate) fn any_workload(target: &TargetEvidence, wanted: Option<&str>) -> Vec<Finding> {
    let name = target.name();
    let not_read = Err(crate::model::evidence::Unavailable::new(
        crate::model::evidence::Obstacle::Failed,
        "the auditor reads the logs of kopf operators only",
    ));
    let mut findings = Vec::new();
    let containers = crate::model::kopf_run::template_containers(&target.deployment);
    for container in containers
        .iter()
        .filter(|c| wanted.is_none_or(|w| c.name == w))
    {
        findings.extend(memory_missing(name, container, Bound::Requests));
        findings.extend(memory_missing(name, container, Bound::Limits));
        findings.extend(oom_killed(name, &target.pods, &container.name));
        findings.extend(crash_loop(name, &target.pods, &container.name, &not_read));
    }
    findings.extend(default_service_account(name, target));
    findings
}

/// A container with no memory request (or limit) at all.
fn memory_missing(target: &str, container: &Container, bound: Bound) -> Option<Finding> {
    if resource(container, bound, "memory").is_some() {
        return None;
    }
    let (check, what, field) = match bound {
        Bound::Requests => (
            CheckId::WorkloadMemoryRequest,
            "no memory request",
            "resources.requests.memory",
        ),
        Bound::Limits => (
            CheckId::WorkloadMemoryLimit,
            "no memory limit",
            "resources.limits.memory",
        ),
    };
    Some(finding(
        check,
        target,
        format!(
            "Container {} has {what}: set {field} from its measured use.",
            container.name
        ),
        None,
    ))
}

/// Which half of a container's resources.
#[derive(Clone, Copy)]
enum Bound {
    Requests,
    Limits,
}

fn resource<'a>(container: &'a Container, bound: Bound, key: &str) -> Option<&'a str> {
    let resources = container.resources.as_ref()?;
    let map = match bound {
        Bound::Requests => resources.requests.as_ref()?,
        Bound::Limits => resources.limits.as_ref()?,
    };
    map.get(key).map(|q| q.0.as_str())
}

fn memory_request(
    target: &str,
    container: &Container,
    thresholds: &WorkloadThresholds,
) -> Option<Finding> {
    let want = quantity::human(thresholds.memory_request);
    let request = resource(container, Bound::Requests, "memory");
    let problem = match request {
        None => "has no memory request".to_string(),
        Some(q) => match quantity::bytes(q) {
            Some(b) if b >= thresholds.memory_request => return None,
            Some(_) => format!("requests {q} of memory, below kopf's resting baseline"),
            None => format!("has an unreadable memory request {q:?}"),
        },
    };
    let mut f = finding(
        CheckId::WorkloadMemoryRequest,
        target,
        format!(
            "Container {} {problem}: set resources.requests.memory to at least {want}.",
            container.name
        ),
        request.map(|q| format!("requests.memory: {q}")),
    );
    f.fix = Some(container_patch(
        &container.name,
        &format!("resources:\n  requests:\n    memory: {want}"),
    ));
    Some(f)
}

fn memory_limit(
    target: &str,
    container: &Container,
    thresholds: &WorkloadThresholds,
) -> Option<Finding> {
    let want = quantity::human(thresholds.memory_limit);
    let limit = resource(container, Bound::Limits, "memory");
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
    f.fix = Some(container_patch(
        &container.name,
        &format!("resources:\n  limits:\n    memory: {want}"),
    ));
    Some(f)
}

fn cpu_limit(target: &str, container: &Container) -> Option<Finding> {
    let limit = resource(container, Bound::Limits, "cpu")?;
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
    if resource(container, Bound::Requests, "cpu").is_some() {
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

fn crash_loop(
    target: &str,
    pods: &[Pod],
    container: &str,
    logs: &Gathered<LogEvidence>,
) -> Option<Finding> {
    let waiting_reason = |cs: &ContainerStatus| {
        cs.state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone())
    };
    let (pod, status) = statuses(pods, container)
        .find(|(_, cs)| waiting_reason(cs).as_deref() == Some("CrashLoopBackOff"))
        .or_else(|| statuses(pods, container).find(|(_, cs)| cs.restart_count > 0))?;
    let state = if waiting_reason(status).as_deref() == Some("CrashLoopBackOff") {
        "is in CrashLoopBackOff"
    } else {
        "has restarted"
    };
    let quote = match logs {
        Ok(logs) => match logs.previous.get(pod_name(pod)) {
            Some(records) => {
                let tail = logs.previous_tail.get(pod_name(pod));
                let lines = exit_lines(records, tail.map_or(&[][..], Vec::as_slice));
                if lines.is_empty() {
                    "(no error in the previous container's log)".to_string()
                } else {
                    lines.join(" | ")
                }
            }
            None => "(no previous log)".to_string(),
        },
        Err(why) => format!("(previous log unreadable: {})", why.message),
    };
    Some(finding(
        CheckId::WorkloadCrashLoop,
        target,
        format!(
            "Container {container} {state}: the lines of the previous container's log that explain the exit are quoted in evidence; an RBAC `forbidden` points at a missing rule (see the rbac findings)."
        ),
        Some(format!("pod {}: {quote}", pod_name(pod))),
    ))
}

/// The lines that explain why a container exited: the last denial, the last ERROR or
/// CRITICAL record and the last line of its traceback (the exception), and the last
/// line of what the container wrote after kopf's last line (`tail`: a Python traceback
/// kopf did not log, such as an ImportError of the operator's module), redacted.
fn exit_lines(records: &[kopf_log::Record], tail: &[kopf_log::Record]) -> Vec<String> {
    let is_error = |r: &&kopf_log::Record| r.level.is_some_and(|l| l >= kopf_log::Level::Error);
    let last_denial = records.iter().rev().find(|r| r.forbidden.is_some());
    let last_error = records.iter().rev().find(is_error);
    let mut out: Vec<String> = Vec::new();
    let mut push = |text: &str| {
        let line = kopf_log::excerpt(text, QUOTE_CHARS);
        if !line.is_empty() && !out.contains(&line) && out.len() < CRASH_QUOTE_LINES {
            out.push(line);
        }
    };
    if let Some(r) = last_denial {
        push(&r.message);
    }
    if let Some(r) = last_error {
        push(&r.message);
        if let Some(exception) = last_traceback_line(r) {
            push(exception);
        }
    }
    if let Some(r) = tail.last() {
        push(last_traceback_line(r).unwrap_or(r.message.as_str()));
    }
    out
}

/// The last non-empty line of a record's traceback: the exception.
fn last_traceback_line(record: &kopf_log::Record) -> Option<&str> {
    record
        .traceback
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
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
    let endpoint = run.liveness.as_deref().and_then(LivenessEndpoint::parse);
    let probe = container.liveness_probe.as_ref();
    if endpoint.is_none() && !run.origin.flags_known() {
        return hidden_liveness(target, container);
    }
    let problem = match (probe, &endpoint) {
        (_, Some(e)) if !e.reachable_by_kubelet() => format!(
            "serves kopf's liveness endpoint on {}, which kopf binds to localhost (kopf 1.45 `_core/engines/probing.py`: `parts.hostname or LOCALHOST`), so the kubelet's probe cannot reach it and restarts the pod in a loop: use {LIVENESS_FIX}",
            e.host.as_deref().unwrap_or("a URL without a host")
        ),
        (None, Some(e)) => format!(
            "has no liveness probe although kopf serves one: add livenessProbe.httpGet on port {} path {}",
            e.port, e.path
        ),
        (None, None) => format!(
            "has no liveness probe: start kopf with {LIVENESS_FIX} and add livenessProbe.httpGet on port 8080 path /healthz"
        ),
        (Some(p), None) if p.http_get.is_some() => format!(
            "probes HTTP but kopf serves no liveness endpoint: add {LIVENESS_FIX} to kopf's args and point the probe at it"
        ),
        (Some(p), Some(e)) => match probe_http(p, container) {
            Some((pp, ppath)) if pp == e.port && ppath == e.path => return None,
            Some((pp, ppath)) => format!(
                "probes port {pp} path {ppath} but kopf serves liveness on port {} path {}: point livenessProbe.httpGet at it",
                e.port, e.path
            ),
            None => format!(
                "has a liveness probe that does not hit kopf's endpoint: use livenessProbe.httpGet on port {} path {}",
                e.port, e.path
            ),
        },
        // An exec or TCP probe without --liveness: it checks something, not kopf's health.
        (Some(_), None) => format!(
            "has a liveness probe that does not ask kopf: add {LIVENESS_FIX} and probe it with httpGet"
        ),
    };
    Some(finding(
        CheckId::WorkloadLiveness,
        target,
        format!("Container {} {problem}.", container.name),
        run.liveness.as_ref().map(|l| format!("--liveness={l}")),
    ))
}

/// `workload.liveness` when the command line hides kopf's flags: whether kopf serves a
/// liveness endpoint is not known, so only a missing probe is reported.
fn hidden_liveness(target: &str, container: &Container) -> Option<Finding> {
    if container.liveness_probe.is_some() {
        return None;
    }
    Some(finding(
        CheckId::WorkloadLiveness,
        target,
        format!(
            "Container {} has no liveness probe: serve kopf's liveness endpoint ({LIVENESS_FIX}, or `liveness_endpoint=` in `kopf.run()`) and add livenessProbe.httpGet on port 8080 path /healthz.",
            container.name
        ),
        None,
    ))
}

fn default_service_account(target: &str, evidence: &TargetEvidence) -> Option<Finding> {
    if !evidence.service_account().is_default() {
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

/// `workload.rollout-overlap`: a rollout that starts the new pod before the old one
/// stops runs two instances of a single-leader operator at once.
fn rollout_overlap(target: &str, evidence: &TargetEvidence, run: &KopfRun) -> Option<Finding> {
    let spec = &evidence.deployment.spec;
    let replicas = spec.replicas.unwrap_or(1);
    let single_leader = replicas <= 1 || run.peering == Peering::Standalone;
    let strategy = spec.strategy.as_ref();
    let kind = strategy
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate");
    if !single_leader || kind == "Recreate" {
        return None;
    }
    // The default surge is 25%, which rounds up to one pod.
    let surge = strategy
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_surge.as_ref());
    let no_surge = match surge {
        Some(IntOrString::Int(0)) => true,
        Some(IntOrString::String(s)) => s.trim() == "0%" || s.trim() == "0",
        _ => false,
    };
    if no_surge {
        return None;
    }
    let mode = if run.peering == Peering::Standalone {
        "with --standalone both handle every object (twice the side effects, conflicting patches)"
    } else {
        "with peering the two pause each other while both are alive"
    };
    let mut f = finding(
        CheckId::WorkloadRolloutOverlap,
        target,
        format!(
            "The Deployment rolls out with {kind} and a surge, so every rollout runs two instances of the operator at once: {mode}. kopf's deployment docs use strategy: Recreate; set spec.strategy.type: Recreate (or rollingUpdate.maxSurge: 0)."
        ),
        Some(format!(
            "strategy: {kind}, maxSurge: {}",
            surge.map_or("25% (default)".to_string(), |s| match s {
                IntOrString::Int(n) => n.to_string(),
                IntOrString::String(t) => t.clone(),
            })
        )),
    );
    f.fix = Some("spec:\n  strategy:\n    type: Recreate\n    rollingUpdate: null\n".into());
    Some(f)
}

/// Hosts of the tunnels and local addresses kopf's dev-mode webhook servers use
/// (kopf `_kits/webhooks.py`: WebhookK3dServer, WebhookMinikubeServer,
/// WebhookDockerDesktopServer, WebhookNgrokTunnel, a plain WebhookServer's localhost).
const DEV_TUNNEL_HOSTS: [&str; 9] = [
    ".ngrok.io",
    ".ngrok-free.app",
    ".ngrok.app",
    "host.k3d.internal",
    "host.minikube.internal",
    "host.docker.internal",
    "localhost",
    "127.0.0.1",
    "[::1]",
];

/// `workload.webhook-blast-radius`: kopf-managed admission webhooks for the handled
/// resources that make the API server refuse writes whenever the operator is down.
/// One finding per configuration, naming what makes it fragile.
fn webhook_blast_radius(
    target: &TargetEvidence,
    container: &str,
    handled: &[HandledResource],
    configs: &[WebhookConfig],
) -> Vec<Finding> {
    let replicas = target.deployment.spec.replicas.unwrap_or(1);
    let ready = target
        .pods
        .iter()
        .flat_map(|p| {
            p.status
                .iter()
                .flat_map(|s| s.container_statuses.iter().flatten())
        })
        .filter(|cs| cs.name == container && cs.ready)
        .count();
    configs
        .iter()
        .filter_map(|config| {
            let ours: Vec<&Webhook> = config
                .webhooks
                .iter()
                .filter(|w| serves_this_operator(w, target.namespace(), handled))
                .collect();
            let mut problems: Vec<String> = Vec::new();
            let closed = ours.iter().any(|w| w.fails_closed);
            if closed && replicas <= 1 {
                problems.push(format!("failurePolicy: Fail with {replicas} replica(s): every restart or rollout of the operator refuses writes to the handled resources"));
            } else if closed && ready == 0 {
                problems.push("failurePolicy: Fail while no pod of the operator is Ready: writes to the handled resources are refused now".into());
            }
            if ours.iter().any(|w| w.fails_closed && !w.spares_kube_system) {
                problems.push("no namespaceSelector leaving kube-system out (kopf sets none): an outage blocks writes there too".into());
            }
            let tunnels: Vec<String> = ours.iter().filter_map(|w| dev_tunnel(w.url.as_deref()?)).collect();
            if let Some(host) = tunnels.first() {
                problems.push(format!("clientConfig.url points at {host}, a development tunnel or local address the API server cannot rely on"));
            }
            if problems.is_empty() {
                return None;
            }
            Some(finding(
                CheckId::WorkloadWebhookBlastRadius,
                target.name(),
                format!(
                    "kopf's {} {} admits writes for this operator: {}. Set ignore_failures=True on non-critical admission handlers, run 2+ ready replicas behind the Service, give the configuration a namespaceSelector excluding kube-system, and serve it from the cluster (kopf.WebhookServer with a Service), not a tunnel.",
                    config.kind.as_str(),
                    config.name,
                    problems.join("; ")
                ),
                Some(format!(
                    "{} webhook(s) for the handled resources, {} with failurePolicy Fail",
                    ours.len(),
                    ours.iter().filter(|w| w.fails_closed).count()
                )),
            ))
        })
        .collect()
}

/// Whether a webhook belongs to this operator: its rules cover a handled resource, and
/// it calls a Service in the operator's namespace, or a URL.
pub(crate) fn serves_this_operator(
    webhook: &Webhook,
    namespace: &str,
    handled: &[HandledResource],
) -> bool {
    let covers = webhook.resources.iter().any(|(group, plural)| {
        handled
            .iter()
            .any(|h| (group == "*" || *group == h.group) && (plural == "*" || *plural == h.plural))
    });
    covers
        && webhook
            .service_namespace
            .as_deref()
            .is_none_or(|ns| ns == namespace)
}

/// The host of a URL, if it is a development tunnel or a local address.
pub(crate) fn dev_tunnel(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(_) => host.split_once(']').map_or(host, |(h, _)| h).to_string() + "]",
        None => host.split(':').next().unwrap_or_default().to_string(),
    };
    let host = host.to_ascii_lowercase();
    DEV_TUNNEL_HOSTS
        .iter()
        .any(|t| {
            if t.starts_with('.') {
                host.ends_with(t)
            } else {
                host == *t
            }
        })
        .then_some(host)
}

/// Below this many records the share of DEBUG ones says nothing.
const MIN_RECORDS_TO_JUDGE: u64 = 50;

/// `workload.debug-logging`: DEBUG in production, by flag or by what the log holds.
fn debug_logging(target: &str, run: &KopfRun, logs: &Gathered<LogEvidence>) -> Option<Finding> {
    let why = match &run.verbosity {
        (Verbosity::Verbose | Verbosity::Debug, Some(flag)) => format!("kopf runs with {flag}"),
        _ => {
            let stats = &logs.as_ref().ok()?.stats;
            let dominated =
                stats.records >= MIN_RECORDS_TO_JUDGE && stats.debug_records * 2 > stats.records;
            if !dominated {
                return None;
            }
            // No counts: an unchanged state must give an unchanged message.
            "most records in the log window are DEBUG (kopf was started with -v/--debug or its loggers were set to DEBUG)".to_string()
        }
    };
    Some(finding(
        CheckId::WorkloadDebugLogging,
        target,
        format!(
            "{why}: at DEBUG kopf logs whole object bodies and patches (Secrets' data too, when it handles Secrets) and floods the log, crowding failures out of any bounded window. Drop -v/--verbose/-d/--debug in production (kopf logs INFO by default)."
        ),
        None,
    ))
}

/// The kubelet's grace period when the pod sets none (Kubernetes'
/// `terminationGracePeriodSeconds` default).
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// Seconds the fix leaves beyond kopf's wait, for the rest of kopf's exit.
const MARGIN_SECONDS: u64 = 10;

/// `workload.grace-period`: the daemon kopf waits for longest at the operator's exit
/// (its `cancellation_backoff` + `cancellation_timeout`: kopf 1.45
/// `_core/engines/daemons.py`, `daemon_killer` and `stop_daemon`, all daemons at once)
/// waits longer than the pod's grace period, so the kubelet's SIGKILL cuts the stop
/// short. Only the source declares the wait: live evidence has none, and nothing is
/// decided.
pub(crate) fn grace_period(target: &TargetEvidence, kopf: &KopfEvidence) -> Option<Finding> {
    let stop = kopf.declared_daemon_stop.as_ref()?;
    let set = target
        .deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.termination_grace_period_seconds);
    let grace = set.unwrap_or(DEFAULT_GRACE_SECONDS);
    let wait = stop.total();
    if u64::try_from(grace).is_ok_and(|g| wait.0 <= g.saturating_mul(1000)) {
        return None;
    }
    let shown_grace = match set {
        Some(g) => format!("terminationGracePeriodSeconds: {g}"),
        None => {
            format!("no terminationGracePeriodSeconds (the default, {DEFAULT_GRACE_SECONDS} s)")
        }
    };
    let mut f = finding(
        CheckId::WorkloadGracePeriod,
        target.name(),
        format!(
            "The pods have {shown_grace}, but when the operator exits kopf waits up to {wait} for daemon {}() to stop (cancellation_backoff {} + cancellation_timeout {}, at {}; kopf 1.45 `_core/engines/daemons.py`, `stop_daemon`): the kubelet SIGKILLs the operator first, cutting short the daemon's own cleanup and the rest of kopf's exit. Raise terminationGracePeriodSeconds above {wait}, or shorten the daemon's timeouts.",
            stop.function, stop.backoff, stop.timeout, stop.location
        ),
        Some(format!(
            "{}: {}() cancellation_backoff {} + cancellation_timeout {} = {wait}; {shown_grace}",
            stop.location, stop.function, stop.backoff, stop.timeout
        )),
    );
    f.fix = Some(format!(
        "spec:\n  template:\n    spec:\n      terminationGracePeriodSeconds: {}\n",
        wait.ceil_seconds().saturating_add(MARGIN_SECONDS)
    ));
    Some(f)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod grace_period_tests;

//! Prometheus metrics with bounded labels: audit (namespace/name), check ID, severity,
//! condition type. No pod names, no log text.

use crate::api::KopfAuditStatus;
use crate::catalog::{CheckId, ConditionStatus, ConditionType, Severity};
use crate::model::evidence::FailureCause;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, BTreeSet};

mod resources;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A KopfAudit's namespace or name as a label value: one allocation per audit, shared
/// by every series of that audit (about ten per audit, each held in its family and
/// again in [`ExportedSets`]; at 1,003 audits their copies were 6 MiB of the heap).
type Shared = Arc<str>;

/// Labels naming one KopfAudit.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub(crate) struct AuditLabels {
    /// The KopfAudit's namespace.
    pub namespace: Shared,
    /// The KopfAudit's name.
    pub name: Shared,
}

/// Labels of a failed audit: the KopfAudit and why it failed.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub(crate) struct FailureLabels {
    /// The KopfAudit's namespace.
    pub namespace: Shared,
    /// The KopfAudit's name.
    pub name: Shared,
    /// `forbidden`, `throttled`, `server_error`, `unreachable` or `other`.
    pub reason: &'static str,
}

/// Labels of a finding count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub(crate) struct FindingLabels {
    /// The KopfAudit's namespace.
    pub namespace: Shared,
    /// The KopfAudit's name.
    pub name: Shared,
    /// The check ID.
    pub check: &'static str,
    /// The effective severity.
    pub severity: &'static str,
}

/// Labels of a condition status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub(crate) struct ConditionLabels {
    /// The KopfAudit's namespace.
    pub namespace: Shared,
    /// The KopfAudit's name.
    pub name: Shared,
    /// The condition type.
    pub condition: &'static str,
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
}

/// The finding and condition label sets last exported for one audit.
type ExportedSets = (BTreeSet<FindingLabels>, BTreeSet<ConditionLabels>);

/// Labels of an API request the auditor made.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    /// The HTTP method.
    pub method: String,
    /// `true` for watch requests (long-lived), else `false`.
    pub watch: String,
}

/// Labels of an API server answer: the Kubernetes verb, the resource (with its
/// subresource) and the HTTP status code (`error` when no answer came).
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub(crate) struct ResponseLabels {
    /// `get`, `list`, `watch`, `create`, `patch`, `update`, `delete`.
    pub verb: String,
    /// `pods`, `pods/log`, `subjectaccessreviews`, `kopfaudits/status`...
    pub resource: String,
    /// `200`, `403`, `429`... or `error`.
    pub code: String,
}

/// Labels of an API request's latency.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub(crate) struct LatencyLabels {
    /// The Kubernetes verb.
    pub verb: String,
    /// The resource, with its subresource.
    pub resource: String,
}

/// Labels of the build.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    revision: String,
}

/// The latency buckets of API requests, in seconds (controller-runtime's range).
const LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A histogram of API request latency.
fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Every metric the operator exports, registered once.
pub(crate) struct Metrics {
    registry: Registry,
    audits: Family<AuditLabels, Counter>,
    failures: Family<FailureLabels, Counter>,
    status_writes: Family<AuditLabels, Counter>,
    duration: Histogram,
    last_audit: Family<AuditLabels, Gauge<f64, AtomicU64>>,
    interval: Family<AuditLabels, Gauge<f64, AtomicU64>>,
    findings: Family<FindingLabels, Gauge>,
    conditions: Family<ConditionLabels, Gauge>,
    api_requests: Family<RequestLabels, Counter>,
    api_responses: Family<ResponseLabels, Counter>,
    api_latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
    audits_running: Gauge,
    audits_queued: Gauge,
    max_concurrent_audits: Gauge,
    leader: Gauge,
    in_flight: Gauge,
    in_flight_max: Gauge,
    log_bytes_read: Counter,
    events_given_up: Counter,
    /// Label sets last exported per audit, so that resolved ones are removed.
    exported: Mutex<BTreeMap<AuditLabels, ExportedSets>>,
    /// The resources the API metrics name besides the auditor's own.
    extra_resources: Mutex<resources::ExtraResources>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric under the `kopf_audit` prefix, and the standard
    /// `process_*` metrics unprefixed.
    pub(crate) fn new() -> Self {
        let mut root = Registry::default();
        root.register_collector(Box::new(super::process::ProcessCollector));
        let registry = root.sub_registry_with_prefix("kopf_audit");
        let audits = Family::<AuditLabels, Counter>::default();
        let failures = Family::<FailureLabels, Counter>::default();
        let status_writes = Family::<AuditLabels, Counter>::default();
        let duration = Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]);
        let last_audit = Family::<AuditLabels, Gauge<f64, AtomicU64>>::default();
        let interval = Family::<AuditLabels, Gauge<f64, AtomicU64>>::default();
        let findings = Family::<FindingLabels, Gauge>::default();
        let conditions = Family::<ConditionLabels, Gauge>::default();
        let api_requests = Family::<RequestLabels, Counter>::default();
        let api_responses = Family::<ResponseLabels, Counter>::default();
        let api_latency =
            Family::<LatencyLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        let audits_running = Gauge::default();
        let audits_queued = Gauge::default();
        let max_concurrent_audits = Gauge::default();
        let leader = Gauge::default();
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").into(),
                revision: env!("KOPF_AUDIT_REVISION").into(),
            })
            .set(1);
        let in_flight = Gauge::default();
        let in_flight_max = Gauge::default();
        let log_bytes_read = Counter::default();
        let events_given_up = Counter::default();
        registry.register("audits", "Audits run", audits.clone());
        registry.register(
            "audit_failures",
            "Audits that failed and were retried",
            failures.clone(),
        );
        registry.register(
            "status_writes",
            "Status writes (zero in a steady state)",
            status_writes.clone(),
        );
        registry.register(
            "audit_duration_seconds",
            "Time to gather, evaluate and publish one audit",
            duration.clone(),
        );
        registry.register(
            "last_audit_timestamp_seconds",
            "When each audit last ran (Unix time)",
            last_audit.clone(),
        );
        registry.register(
            "interval_seconds",
            "Each audit's spec.interval: an audit is overdue when its last run is more than twice this ago",
            interval.clone(),
        );
        registry.register(
            "findings",
            "Findings per audit, check and severity",
            findings.clone(),
        );
        registry.register(
            "condition",
            "1 for each audit's current condition type and status",
            conditions.clone(),
        );
        registry.register(
            "api_requests",
            "Requests the auditor sent to the API server",
            api_requests.clone(),
        );
        registry.register(
            "api_responses",
            "API server answers to the auditor by verb, resource and HTTP code (error: none came)",
            api_responses.clone(),
        );
        registry.register(
            "api_request_duration_seconds",
            "Time from sending an API request to its answer's headers, by verb and resource",
            api_latency.clone(),
        );
        registry.register(
            "audits_running",
            "Audits running now (at most max_concurrent_audits)",
            audits_running.clone(),
        );
        registry.register(
            "audits_queued",
            "Audits due that wait for one of the max_concurrent_audits slots",
            audits_queued.clone(),
        );
        registry.register(
            "max_concurrent_audits",
            "How many audits may run at once (--max-concurrent-audits)",
            max_concurrent_audits.clone(),
        );
        registry.register(
            "leader",
            "1 while this instance holds the Lease and audits, 0 on a standby",
            leader.clone(),
        );
        registry.register(
            "build_info",
            "1, labelled with the version and the source revision it was built from",
            build,
        );
        registry.register(
            "api_requests_in_flight",
            "Requests the auditor has in flight to the API server, watches aside",
            in_flight.clone(),
        );
        registry.register(
            "api_requests_in_flight_max",
            "The most requests the auditor had in flight at once, watches aside",
            in_flight_max.clone(),
        );
        registry.register(
            "log_bytes_read",
            "Bytes of the audited operators' logs read",
            log_bytes_read.clone(),
        );
        registry.register(
            "events_given_up",
            "Transition Events never delivered: refused as invalid, or the oldest beyond the 50 one audit may owe",
            events_given_up.clone(),
        );
        Metrics {
            registry: root,
            api_responses,
            api_latency,
            audits_running,
            audits_queued,
            max_concurrent_audits,
            leader,
            events_given_up,
            in_flight,
            in_flight_max,
            log_bytes_read,
            api_requests,
            audits,
            failures,
            status_writes,
            duration,
            last_audit,
            interval,
            findings,
            conditions,
            exported: Mutex::new(BTreeMap::new()),
            extra_resources: Mutex::default(),
        }
    }

    /// Counts one API request (called by the client's request layer).
    pub(crate) fn api_request(&self, method: &str, watch: bool) {
        self.api_requests
            .get_or_create(&RequestLabels {
                method: method.to_string(),
                watch: watch.to_string(),
            })
            .inc();
    }

    /// A client layer that counts every request the auditor sends.
    pub(crate) fn request_counter<B>(
        self: &std::sync::Arc<Self>,
    ) -> tower::util::MapRequestLayer<impl Fn(http::Request<B>) -> http::Request<B> + Clone + use<B>>
    {
        let metrics = self.clone();
        tower::util::MapRequestLayer::new(move |request: http::Request<B>| {
            metrics.api_request(request.method().as_str(), is_watch(&request));
            request
        })
    }

    /// Records an answer of the API server (or none: `code` is `None`) and how long it
    /// took.
    fn api_response(&self, route: &Route, code: Option<u16>, took: Duration) {
        let now = std::time::Instant::now();
        let (response, latency, stale) = {
            let mut extra = self
                .extra_resources
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let resource = extra.label(&route.resource, code);
            let response = ResponseLabels {
                verb: route.verb.into(),
                resource: resource.clone(),
                code: code.map_or_else(|| "error".into(), |c| c.to_string()),
            };
            let latency = LatencyLabels {
                verb: route.verb.into(),
                resource,
            };
            extra.used(&response, &latency, now);
            (response, latency, extra.stale(now))
        };
        self.api_responses.get_or_create(&response).inc();
        self.api_latency
            .get_or_create(&latency)
            .observe(took.as_secs_f64());
        for (responses, latencies) in stale {
            responses.iter().for_each(|r| {
                self.api_responses.remove(r);
            });
            latencies.iter().for_each(|l| {
                self.api_latency.remove(l);
            });
        }
    }

    /// Exports an audit's interval, for the overdue alert.
    pub(crate) fn interval(&self, namespace: &str, name: &str, every: Duration) {
        self.interval
            .get_or_create(&self.audit(namespace, name))
            .set(every.as_secs_f64());
    }

    /// Counts an audit as running until the guard is dropped.
    pub(crate) fn audit_running(self: &std::sync::Arc<Self>) -> RunningAudit {
        self.audits_running.inc();
        RunningAudit(self.clone())
    }

    /// Counts an audit as queued for a slot until the guard is dropped.
    pub(crate) fn audit_queued(&self) -> QueuedAudit<'_> {
        self.audits_queued.inc();
        QueuedAudit(self)
    }

    /// Exports `--max-concurrent-audits`.
    pub(crate) fn set_max_concurrent_audits(&self, max: u16) {
        self.max_concurrent_audits.set(i64::from(max));
    }

    /// Exports whether this instance leads.
    pub(crate) fn set_leader(&self, leads: bool) {
        self.leader.set(i64::from(leads));
    }

    /// The counter of log bytes read, for the log reader to increment.
    pub(crate) fn log_bytes_read(&self) -> Counter {
        self.log_bytes_read.clone()
    }

    /// A client layer that tracks the requests in flight (watches aside).
    pub(crate) fn in_flight_tracker(self: &std::sync::Arc<Self>) -> InFlightLayer {
        InFlightLayer {
            metrics: self.clone(),
        }
    }

    /// Counts transition Events given up undelivered.
    pub(crate) fn events_given_up(&self, count: usize) {
        self.events_given_up
            .inc_by(u64::try_from(count).unwrap_or(u64::MAX));
    }

    /// The labels of audit `namespace/name`, sharing the namespace and name of every
    /// series of that audit (the first use records them), so that each audit's two
    /// strings are held once.
    fn audit(&self, namespace: &str, name: &str) -> AuditLabels {
        let fresh = AuditLabels {
            namespace: namespace.into(),
            name: name.into(),
        };
        let Ok(mut exported) = self.exported.lock() else {
            return fresh;
        };
        if let Some((held, _)) = exported.get_key_value(&fresh) {
            return held.clone();
        }
        exported.insert(fresh.clone(), ExportedSets::default());
        fresh
    }

    /// Counts one status write.
    pub(crate) fn status_write(&self, namespace: &str, name: &str) {
        self.status_writes
            .get_or_create(&self.audit(namespace, name))
            .inc();
    }

    /// Records one audit: its duration, outcome, findings and conditions.
    pub(crate) fn audited(
        &self,
        namespace: &str,
        name: &str,
        status: &KopfAuditStatus,
        took: Duration,
        failed: Option<FailureCause>,
    ) {
        let labels = self.audit(namespace, name);
        self.audits.get_or_create(&labels).inc();
        if let Some(cause) = failed {
            self.failures
                .get_or_create(&FailureLabels {
                    namespace: labels.namespace.clone(),
                    name: labels.name.clone(),
                    reason: cause.as_str(),
                })
                .inc();
        }
        self.duration.observe(took.as_secs_f64());
        let now = jiff::Timestamp::now().as_millisecond() as f64 / 1000.0;
        self.last_audit.get_or_create(&labels).set(now);

        let mut counts: BTreeMap<(CheckId, Severity), i64> = BTreeMap::new();
        for f in &status.findings {
            *counts.entry((f.check, f.severity)).or_default() += 1;
        }
        let finding_sets: BTreeSet<FindingLabels> = counts
            .iter()
            .map(|((check, severity), n)| {
                let l = FindingLabels {
                    namespace: labels.namespace.clone(),
                    name: labels.name.clone(),
                    check: check.as_str(),
                    severity: severity.as_str(),
                };
                self.findings.get_or_create(&l).set(*n);
                l
            })
            .collect();
        let condition_sets: BTreeSet<ConditionLabels> = status
            .conditions
            .iter()
            .filter_map(|c| Some((condition_type(&c.type_)?, condition_status(&c.status)?)))
            .map(|(condition, status)| {
                let l = ConditionLabels {
                    namespace: labels.namespace.clone(),
                    name: labels.name.clone(),
                    condition: condition.as_str(),
                    status: status.as_str(),
                };
                self.conditions.get_or_create(&l).set(1);
                l
            })
            .collect();
        if let Ok(mut exported) = self.exported.lock() {
            if let Some((old_f, old_c)) = exported.get(&labels) {
                for gone in old_f.difference(&finding_sets) {
                    self.findings.remove(gone);
                }
                for gone in old_c.difference(&condition_sets) {
                    self.conditions.remove(gone);
                }
            }
            exported.insert(labels, (finding_sets, condition_sets));
        }
    }

    /// Forgets the series of audits that no longer exist, so that a deleted KopfAudit
    /// does not keep alerting.
    pub(crate) fn retain_audits(&self, live: &BTreeSet<(String, String)>) {
        let Ok(mut exported) = self.exported.lock() else {
            return;
        };
        let gone: Vec<AuditLabels> = exported
            .keys()
            .filter(|l| !live.contains(&(l.namespace.to_string(), l.name.to_string())))
            .cloned()
            .collect();
        for labels in gone {
            if let Some((findings, conditions)) = exported.remove(&labels) {
                findings.iter().for_each(|l| {
                    self.findings.remove(l);
                });
                conditions.iter().for_each(|l| {
                    self.conditions.remove(l);
                });
            }
            self.last_audit.remove(&labels);
            self.interval.remove(&labels);
            self.audits.remove(&labels);
            for cause in FailureCause::ALL {
                self.failures.remove(&FailureLabels {
                    namespace: labels.namespace.clone(),
                    name: labels.name.clone(),
                    reason: cause.as_str(),
                });
            }
            self.status_writes.remove(&labels);
        }
    }

    /// The Prometheus text exposition.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Whether a request is a watch (long-lived: not counted in flight).
fn is_watch<B>(request: &http::Request<B>) -> bool {
    request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"))
}

/// One running audit, counted in `audits_running` until dropped.
pub(crate) struct RunningAudit(std::sync::Arc<Metrics>);

impl Drop for RunningAudit {
    fn drop(&mut self) {
        self.0.audits_running.dec();
    }
}

/// One audit waiting for a slot, counted in `audits_queued` until dropped.
pub(crate) struct QueuedAudit<'a>(&'a Metrics);

impl Drop for QueuedAudit<'_> {
    fn drop(&mut self) {
        self.0.audits_queued.dec();
    }
}

/// What an API request asks, in the API server's terms: its verb and resource.
#[derive(Debug, PartialEq, Eq)]
struct Route {
    verb: &'static str,
    resource: String,
}

impl Route {
    /// Reads a request's verb and resource from its method and path, as the API server's
    /// request info does: `/api/v1/namespaces/NS/pods/NAME/log` is `get pods/log`,
    /// a collection's GET is `list` (`watch` with `watch=true`).
    fn of<B>(request: &http::Request<B>) -> Route {
        let path = request.uri().path();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let rest: &[&str] = match parts.as_slice() {
            ["api", _version, rest @ ..] => rest,
            ["apis", _group, _version, rest @ ..] => rest,
            _ => &[],
        };
        let rest = match rest {
            ["namespaces", _ns, tail @ ..] if !tail.is_empty() => tail,
            other => other,
        };
        let (resource, named) = match rest {
            [] => ("other".to_string(), false),
            [plural] => ((*plural).to_string(), false),
            [plural, _name] => ((*plural).to_string(), true),
            [plural, _name, sub, ..] => (format!("{plural}/{sub}"), true),
        };
        let verb = match *request.method() {
            http::Method::GET if is_watch(request) => "watch",
            http::Method::GET if named => "get",
            http::Method::GET => "list",
            http::Method::POST => "create",
            http::Method::PATCH => "patch",
            http::Method::PUT => "update",
            http::Method::DELETE => "delete",
            _ => "other",
        };
        Route { verb, resource }
    }
}

/// A layer counting the requests in flight and their high-water mark.
#[derive(Clone)]
pub(crate) struct InFlightLayer {
    metrics: std::sync::Arc<Metrics>,
}

impl<S> tower::Layer<S> for InFlightLayer {
    type Service = InFlight<S>;

    fn layer(&self, inner: S) -> InFlight<S> {
        InFlight {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service of [`InFlightLayer`].
pub(crate) struct InFlight<S> {
    inner: S,
    metrics: std::sync::Arc<Metrics>,
}

/// Counts one request while it is in flight (dropped with its future).
struct InFlightGuard(std::sync::Arc<Metrics>);

impl InFlightGuard {
    fn enter(metrics: &std::sync::Arc<Metrics>) -> InFlightGuard {
        let now = metrics.in_flight.inc() + 1;
        if now > metrics.in_flight_max.get() {
            metrics.in_flight_max.set(now);
        }
        InFlightGuard(metrics.clone())
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.in_flight.dec();
    }
}

impl<S, B, R> tower::Service<http::Request<B>> for InFlight<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let guard = (!is_watch(&request)).then(|| InFlightGuard::enter(&self.metrics));
        let route = Route::of(&request);
        let metrics = self.metrics.clone();
        let started = std::time::Instant::now();
        let future = self.inner.call(request);
        Box::pin(async move {
            let _guard = guard;
            let answer = future.await;
            let code = answer.as_ref().ok().map(|r| r.status().as_u16());
            metrics.api_response(&route, code, started.elapsed());
            answer
        })
    }
}

/// The condition type a status names; `None` for a type the auditor does not write.
fn condition_type(type_: &str) -> Option<ConditionType> {
    ConditionType::ALL.into_iter().find(|t| t.as_str() == type_)
}

/// The condition status a status names; `None` for any other string.
fn condition_status(status: &str) -> Option<ConditionStatus> {
    [
        ConditionStatus::True,
        ConditionStatus::False,
        ConditionStatus::Unknown,
    ]
    .into_iter()
    .find(|s| s.as_str() == status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Finding;

    fn finding(check: CheckId) -> Finding {
        Finding {
            check,
            severity: check.default_severity(),
            target: "op".into(),
            message: "m".into(),
            evidence: None,
            fix: None,
            since: None,
            stale: false,
            absent_since: None,
        }
    }

    /// Every series of one audit holds the same two strings; a deleted audit's go, and
    /// an audit of the same name created again gets its own.
    #[test]
    fn one_audit_s_series_share_its_namespace_and_name() {
        let m = Metrics::new();
        m.interval("ns", "a", Duration::from_secs(30));
        let mut status = KopfAuditStatus::default();
        status.findings.push(finding(CheckId::WorkloadLiveness));
        m.audited("ns", "a", &status, Duration::from_millis(5), None);
        m.status_write("ns", "a");
        let (first, second) = (m.audit("ns", "a"), m.audit("ns", "a"));
        assert!(Arc::ptr_eq(&first.namespace, &second.namespace));
        assert!(Arc::ptr_eq(&first.name, &second.name));
        let exported = m.exported.lock().expect("not poisoned");
        let (findings, _) = exported.get(&first).expect("the audit's sets");
        assert!(
            findings
                .iter()
                .all(|l| Arc::ptr_eq(&l.namespace, &first.namespace)
                    && Arc::ptr_eq(&l.name, &first.name)),
            "{findings:?}"
        );
        drop(exported);
        m.retain_audits(&BTreeSet::new());
        assert!(!m.encode().contains(r#"name="a""#), "{}", m.encode());
        assert!(!Arc::ptr_eq(&m.audit("ns", "a").name, &first.name));
    }

    #[test]
    fn failures_carry_their_reason_and_go_with_their_audit() {
        let m = Metrics::new();
        let status = KopfAuditStatus::default();
        let took = Duration::from_millis(5);
        m.audited("ns", "a", &status, took, Some(FailureCause::Throttled));
        m.audited("ns", "a", &status, took, Some(FailureCause::Throttled));
        m.audited("ns", "a", &status, took, Some(FailureCause::Forbidden));
        let text = m.encode();
        assert!(
            text.contains(
                r#"kopf_audit_audit_failures_total{namespace="ns",name="a",reason="throttled"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"kopf_audit_audit_failures_total{namespace="ns",name="a",reason="forbidden"} 1"#
            ),
            "{text}"
        );
        m.retain_audits(&BTreeSet::new());
        assert!(!m.encode().contains(r#"name="a""#), "{}", m.encode());
    }

    #[test]
    fn findings_appear_and_resolved_ones_disappear() {
        let m = Metrics::new();
        let mut status = KopfAuditStatus {
            findings: vec![finding(CheckId::WorkloadCpuLimit)],
            ..Default::default()
        };
        m.audited("ns", "a", &status, Duration::from_millis(5), None);
        let text = m.encode();
        assert!(text.contains(r#"kopf_audit_findings{namespace="ns",name="a",check="workload.cpu-limit",severity="warning"} 1"#), "{text}");
        assert!(
            text.contains(r#"kopf_audit_audits_total{namespace="ns",name="a"} 1"#),
            "{text}"
        );
        status.findings.clear();
        m.audited("ns", "a", &status, Duration::from_millis(5), None);
        assert!(!m.encode().contains("workload.cpu-limit"));
        status.findings = vec![finding(CheckId::WorkloadCpuLimit)];
        m.audited("ns", "a", &status, Duration::from_millis(5), None);
        m.status_write("ns", "a");
        m.retain_audits(&BTreeSet::new());
        let text = m.encode();
        assert!(
            !text.contains("workload.cpu-limit"),
            "a deleted audit's series go"
        );
        assert!(!text.contains(r#"name="a""#), "every series of it: {text}");
    }

    fn route(method: http::Method, uri: &str) -> Route {
        let request = http::Request::builder()
            .method(method)
            .uri(uri)
            .body(())
            .expect("a request");
        Route::of(&request)
    }

    #[test]
    fn a_request_is_named_by_its_kubernetes_verb_and_resource() {
        let cases = [
            (
                http::Method::GET,
                "/api/v1/namespaces/ns/pods/op-1/log?tailLines=10",
                "get",
                "pods/log",
            ),
            (
                http::Method::GET,
                "/api/v1/namespaces/ns/pods?labelSelector=a",
                "list",
                "pods",
            ),
            (
                http::Method::GET,
                "/apis/kopfaudit.dev/v1alpha1/kopfaudits?watch=true",
                "watch",
                "kopfaudits",
            ),
            (
                http::Method::GET,
                "/api/v1/namespaces/ns",
                "get",
                "namespaces",
            ),
            (
                http::Method::POST,
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                "create",
                "subjectaccessreviews",
            ),
            (
                http::Method::PATCH,
                "/apis/kopfaudit.dev/v1alpha1/namespaces/ns/kopfaudits/a/status",
                "patch",
                "kopfaudits/status",
            ),
            (http::Method::GET, "/version", "list", "other"),
        ];
        for (method, uri, verb, resource) in cases {
            let got = route(method, uri);
            assert_eq!((got.verb, got.resource.as_str()), (verb, resource), "{uri}");
        }
    }

    #[test]
    fn made_up_plurals_share_one_series_and_stale_resources_lose_theirs() {
        let m = Metrics::new();
        let series = |m: &Metrics| {
            m.encode()
                .lines()
                .filter(|l| l.starts_with("kopf_audit_api_responses_total{"))
                .count()
        };
        // Five rounds of 32 made-up plurals: the API server answers 404 (or 403).
        for round in 0..5 {
            for n in 0..32 {
                let uri = format!("/apis/evil.example/v1/namespaces/t/made-up-{round}-{n}");
                let code = if n % 2 == 0 { 404 } else { 403 };
                m.api_response(
                    &route(http::Method::GET, &uri),
                    Some(code),
                    Duration::from_millis(1),
                );
            }
        }
        let text = m.encode();
        assert!(
            !text.contains("made-up"),
            "no series names a made-up plural"
        );
        assert_eq!(series(&m), 2, "one per code, all `other`");
        // A real resource that answers is named, up to the bound.
        for n in 0..(resources::MAX_EXTRA + 10) {
            let uri = format!("/apis/example.com/v1/namespaces/t/things{n}");
            m.api_response(
                &route(http::Method::GET, &uri),
                Some(200),
                Duration::from_millis(1),
            );
        }
        let text = m.encode();
        let named: BTreeSet<&str> = text
            .split("resource=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .filter(|r| r.starts_with("things"))
            .collect();
        assert_eq!(named.len(), resources::MAX_EXTRA, "named up to the bound");
        // Unrequested for the forget time, their series go.
        let later = std::time::Instant::now() + resources::FORGET_AFTER + Duration::from_secs(61);
        let stale = m
            .extra_resources
            .lock()
            .map(|mut e| e.stale(later))
            .expect("lock");
        assert_eq!(stale.len(), resources::MAX_EXTRA);
        for (responses, latencies) in stale {
            responses.iter().for_each(|r| {
                m.api_responses.remove(r);
            });
            latencies.iter().for_each(|l| {
                m.api_latency.remove(l);
            });
        }
        assert!(!m.encode().contains("resource=\"things"));
        assert_eq!(m.extra_resources.lock().map(|e| e.len()).expect("lock"), 0);
    }

    #[test]
    fn answers_by_code_running_audits_leader_build_and_process_are_exported() {
        let m = std::sync::Arc::new(Metrics::new());
        let sar = route(
            http::Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        );
        m.api_response(&sar, Some(403), Duration::from_millis(3));
        m.api_response(&sar, None, Duration::from_millis(3));
        m.set_max_concurrent_audits(8);
        m.set_leader(true);
        let running = m.audit_running();
        let queued = m.audit_queued();
        let text = m.encode();
        for want in [
            "kopf_audit_api_responses_total{verb=\"create\",resource=\"subjectaccessreviews\",code=\"403\"} 1",
            "kopf_audit_api_responses_total{verb=\"create\",resource=\"subjectaccessreviews\",code=\"error\"} 1",
            "kopf_audit_api_request_duration_seconds_count{verb=\"create\",resource=\"subjectaccessreviews\"} 2",
            "kopf_audit_audits_running 1",
            "kopf_audit_audits_queued 1",
            "kopf_audit_max_concurrent_audits 8",
            "kopf_audit_leader 1",
            "kopf_audit_build_info{version=",
            "process_resident_memory_bytes ",
            "process_cpu_seconds_total ",
            "process_open_fds ",
        ] {
            assert!(text.contains(want), "{want} missing from:\n{text}");
        }
        drop(running);
        drop(queued);
        let text = m.encode();
        assert!(text.contains("kopf_audit_audits_running 0"));
        assert!(text.contains("kopf_audit_audits_queued 0"));
    }
}

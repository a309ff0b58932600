//! Recognises kopf in a container whose command line does not show it: most real
//! operators start kopf from the image's `CMD` or `ENTRYPOINT` (the Deployment sets no
//! command), from Python (`kopf.run()`, `kopf.operator()`), or through a wrapper
//! script. kopf then shows itself in its log: every start writes kopf's own lines
//! (kopf 1.45 logs `Activity 'login_via_client' succeeded.` at INFO, in every format),
//! and its handlers, retries and peering write templates only kopf writes.
//!
//! The first lines of a container's log are read once per container instance (pod,
//! container, restart count): they never change, and kopf's startup lines are there
//! until the kubelet rotates the log. When they show nothing, the previous container's
//! first lines are read too. The verdict is remembered, so a Deployment that is not kopf
//! costs one small read per pod start, not one per audit; a kopf verdict is remembered
//! once the head is full (what kopf's first objects tell grows until then).

use super::obstacle;
use crate::model::bounded::{MAX_QUOTED_REASON_BYTES, clean};
use crate::model::evidence::{Obstacle, TargetEvidence, Unavailable, ever_ran, restart_count};
use crate::model::kopf_run::{KopfLogFormat, KopfRun, LogRecognition, from_log};
use crate::model::names::is_dns_label;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::{Api, LogParams};
use kube::{Client, ResourceExt};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// Bytes read from the start of a container's log: kopf's startup lines are its first.
const HEAD_BYTES: i64 = 64 * 1024;

/// Pods whose log is read per container before the verdict is "not kopf".
const PODS_READ: usize = 2;

/// Verdicts not used for this long are forgotten (their pods are gone).
const FORGET_AFTER: Duration = Duration::from_secs(3600);

/// At most this many verdicts are remembered; past it the least recently used go.
const MAX_VERDICTS: usize = 20_000;

/// One container instance: a pod (by uid), a container, a restart count.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Instance {
    uid: String,
    container: String,
    restarts: i32,
}

/// What the first lines of one container instance's log showed.
#[derive(Clone, Debug)]
enum Verdict {
    Kopf(LogRecognition, KopfLogFormat),
    NotKopf,
}

/// The verdicts so far, shared by all audits: a container's first lines are the same
/// whoever reads them.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    seen: Mutex<HashMap<Instance, (Verdict, Timestamp)>>,
}

impl Verdicts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Instance, (Verdict, Timestamp)>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, instance: &Instance, now: Timestamp) -> Option<Verdict> {
        let mut seen = self.lock();
        let entry = seen.get_mut(instance)?;
        entry.1 = now;
        Some(entry.0.clone())
    }

    fn put(&self, instance: Instance, verdict: Verdict, now: Timestamp) {
        let mut seen = self.lock();
        if seen.len() >= MAX_VERDICTS
            && let Some(oldest) = seen
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            seen.remove(&oldest);
        }
        seen.insert(instance, (verdict, now));
    }

    /// Forgets verdicts not used since `FORGET_AFTER` before `now`.
    pub(crate) fn forget_unused(&self, now: Timestamp) {
        let horizon = now - jiff::SignedDuration::try_from(FORGET_AFTER).unwrap_or_default();
        self.lock().retain(|_, (_, at)| *at >= horizon);
    }
}

/// What the logs say of a target whose command line shows no kopf.
#[derive(Debug)]
pub(crate) enum Recognised {
    /// A container's log shows kopf's own lines (boxed: it is most of the enum's size).
    Kopf(Box<KopfRun>),
    /// The logs read show no kopf (or no container is the one asked for).
    NotKopf,
    /// No log could be read (no pod ever ran, or the auditor may not read logs): whether
    /// the target runs kopf is not known.
    Undetermined(Unavailable),
}

/// Reads the first lines of the candidate containers' logs (the `wanted` one, else
/// every container of the pod template) and recognises kopf in them.
pub(crate) async fn recognise(
    client: &Client,
    verdicts: &Verdicts,
    target: &TargetEvidence,
    wanted: Option<&str>,
) -> Recognised {
    let containers = crate::model::kopf_run::template_containers(&target.deployment);
    let workload = Workload {
        namespace: target.namespace(),
        name: target.name(),
        containers,
        pods: &target.pods,
    };
    recognise_workload(client, verdicts, &workload, wanted).await
}

/// What the log recognition reads of a Deployment: its namespace and name, its pod
/// template's containers and its pods. Discovery fills it from projections, the audit
/// from the whole Deployment.
pub(crate) struct Workload<'a> {
    /// The Deployment's namespace (its pods').
    pub(crate) namespace: &'a str,
    /// The Deployment's name, for the reason when no log can be read.
    pub(crate) name: &'a str,
    /// The containers of its pod template.
    pub(crate) containers: &'a [Container],
    /// Its pods.
    pub(crate) pods: &'a [Pod],
}

/// [`recognise`] on a workload however it was read.
pub(crate) async fn recognise_workload(
    client: &Client,
    verdicts: &Verdicts,
    workload: &Workload<'_>,
    wanted: Option<&str>,
) -> Recognised {
    let containers = workload.containers;
    let api: Api<Pod> = Api::namespaced(client.clone(), workload.namespace);
    let mut obstacle_seen: Option<Unavailable> = None;
    let mut read_any = false;
    for container in containers
        .iter()
        .filter(|c| wanted.is_none_or(|w| c.name == w))
    {
        let pods: Vec<&Pod> = workload
            .pods
            .iter()
            .filter(|p| ever_ran(p, &container.name))
            .take(PODS_READ)
            .collect();
        for pod in pods {
            match verdict(&api, verdicts, pod, &container.name).await {
                Ok(Verdict::Kopf(seen, format)) => {
                    let namespace = Some(workload.namespace);
                    return Recognised::Kopf(Box::new(from_log(
                        container, namespace, seen, format,
                    )));
                }
                Ok(Verdict::NotKopf) => read_any = true,
                Err(why) => {
                    obstacle_seen.get_or_insert(why);
                }
            }
        }
    }
    match obstacle_seen {
        Some(why) if !read_any => Recognised::Undetermined(why),
        _ if read_any => Recognised::NotKopf,
        _ if containers_named(containers, wanted) => {
            Recognised::Undetermined(no_log(workload, wanted))
        }
        _ => Recognised::NotKopf,
    }
}

/// Whether some container is a candidate at all.
fn containers_named(containers: &[Container], wanted: Option<&str>) -> bool {
    containers
        .iter()
        .any(|c| wanted.is_none_or(|w| c.name == w))
}

/// Why nothing could be read: no candidate container of any pod ever ran.
fn no_log(workload: &Workload<'_>, wanted: Option<&str>) -> Unavailable {
    let which = wanted.map_or("no container".to_string(), |w| format!("container {w}"));
    Unavailable::new(
        Obstacle::NoRunningPod,
        format!(
            "Deployment {} does not run kopf on its command line, and {which} of its {} pod(s) ever ran, so there is no log to recognise kopf by: whether it runs kopf is not known yet. Scale it up, or see why its pods do not start.",
            workload.name,
            workload.pods.len()
        ),
    )
}

/// The verdict of one container instance: remembered, or read from its first lines
/// (and its previous container's, when the current one shows nothing).
async fn verdict(
    api: &Api<Pod>,
    verdicts: &Verdicts,
    pod: &Pod,
    container: &str,
) -> Result<Verdict, Unavailable> {
    let now = Timestamp::now();
    let restarts = restart_count(pod, container);
    let instance = Instance {
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        container: container.to_string(),
        restarts,
    };
    if let Some(known) = verdicts.get(&instance, now) {
        return Ok(known);
    }
    let name = pod.name_any();
    let (mut found, mut settled) = read_head(api, &name, container, false).await?;
    if found.is_none() && restarts > 0 {
        (found, settled) = read_head(api, &name, container, true).await?;
    }
    let verdict = match found {
        Some((seen, format)) => Verdict::Kopf(seen, format),
        None => Verdict::NotKopf,
    };
    // What a kopf log tells (the namespaces of its objects, its peering) grows until
    // its head is full: a kopf verdict on a shorter head is read again next time.
    if settled || matches!(verdict, Verdict::NotKopf) {
        verdicts.put(instance, verdict.clone(), now);
    }
    Ok(verdict)
}

/// Reads the first [`HEAD_BYTES`] of a container's log (the previous container's when
/// `previous`) and looks for kopf in them. A log that is gone (400/404) shows nothing.
/// Also says whether the head is settled: full, or a previous container's (which no
/// longer grows).
async fn read_head(
    api: &Api<Pod>,
    pod: &str,
    container: &str,
    previous: bool,
) -> Result<(Option<(LogRecognition, KopfLogFormat)>, bool), Unavailable> {
    let params = LogParams {
        container: Some(container.to_string()),
        previous,
        limit_bytes: Some(HEAD_BYTES),
        ..Default::default()
    };
    let text = match api.logs(pod, &params).await {
        Ok(text) => text,
        Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => return Ok((None, true)),
        Err(e) => {
            return Err(obstacle(
                &e,
                &format!("get pods/log of {pod} to recognise kopf"),
                &format!("get on pods/log in the namespace of {pod}"),
            ));
        }
    };
    let settled = previous || i64::try_from(text.len()).unwrap_or(i64::MAX) >= HEAD_BYTES;
    Ok((shows_kopf(pod, text.as_bytes()), settled))
}

/// What a log's text shows of kopf: `None` when no line is one only kopf writes.
pub(crate) fn shows_kopf(pod: &str, text: &[u8]) -> Option<(LogRecognition, KopfLogFormat)> {
    let mut parser = kopf_log::Parser::new(kopf_log::ParserOptions::default());
    let mut records: Vec<kopf_log::Record> = Vec::new();
    parser.push_chunk(text, &mut records);
    parser.input_cut_short();
    while let Some(r) = parser.finish() {
        records.push(r);
    }
    let version = parser.stats().kopf_version;
    let implicit_scope = records
        .iter()
        .any(|r| matches!(r.kind, kopf_log::EventKind::ScopeFutureWarning))
        || memchr::memmem::find(text, SCOPE_WARNING).is_some();
    let signed: Vec<&kopf_log::Record> = records.iter().filter(|r| only_kopf_writes(r)).collect();
    let (example, kopf_lines) = match signed.first() {
        Some(first) => (first.message.clone(), signed.len() as u64),
        // kopf died before its first line (an ImportError in the operator's code), and
        // the traceback runs through kopf's own loader.
        None => kopf_frame(text).map(|l| (l, 1))?,
    };
    Some((
        LogRecognition {
            pod: pod.to_string(),
            kopf_lines,
            example: clean(&example, MAX_QUOTED_REASON_BYTES),
            implicit_scope,
            namespaces: object_namespaces(&signed),
            peering: signed.iter().any(|r| is_peering(r)),
            kinds: object_kinds(&signed),
            version,
        },
        majority_format(&signed),
    ))
}

/// At most this many namespaces (and as many kinds) are learned from a log's objects.
const MAX_LOGGED_NAMESPACES: usize = 20;

/// The namespaces of the objects kopf's records name: kopf served objects there. Only
/// valid namespace names (a log holds anything), at most [`MAX_LOGGED_NAMESPACES`].
fn object_namespaces(records: &[&kopf_log::Record]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for ns in records
        .iter()
        .filter_map(|r| r.object.as_ref()?.namespace.as_deref())
        .filter(|ns| is_dns_label(ns))
    {
        if out.len() >= MAX_LOGGED_NAMESPACES {
            break;
        }
        out.insert(ns.to_string());
    }
    out
}

/// The `apiVersion` and `kind` of the objects kopf's JSON records name, at most
/// [`MAX_LOGGED_NAMESPACES`] (a log holds anything: the handled resources are looked up
/// only for kinds the operator's RBAC lets it watch).
fn object_kinds(records: &[&kopf_log::Record]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (api_version, kind) in records.iter().filter_map(|r| {
        let o = r.object.as_ref()?;
        Some((o.api_version.as_ref()?, o.kind.as_ref()?))
    }) {
        if out.len() >= MAX_LOGGED_NAMESPACES {
            break;
        }
        out.insert((api_version.clone(), kind.clone()));
    }
    out
}

/// Whether a record is kopf's peering at work: pausing for or resuming after peers,
/// a conflict, or a peering task failing or ending (kopf 1.45
/// `_core/engines/peering.py`). kopf peers only when not standalone.
fn is_peering(record: &kopf_log::Record) -> bool {
    use kopf_log::{BackgroundTask, EventKind};
    match &record.kind {
        EventKind::PeeringPaused | EventKind::PeeringConflict | EventKind::PeeringResumed => true,
        EventKind::TaskFailed { task, .. } | EventKind::TaskFinished { task, .. } => matches!(
            task,
            BackgroundTask::PeeringKeepAlive | BackgroundTask::PeeringObserver
        ),
        _ => false,
    }
}

/// kopf's warning when neither namespaces nor cluster-wide are given (a Python
/// `FutureWarning` on stderr, kopf 1.45 `_core/reactor/running.py`).
const SCOPE_WARNING: &[u8] = b"Absence of either namespaces or cluster-wide flag";

/// A traceback frame in kopf's own package (`File ".../site-packages/kopf/..."`).
fn kopf_frame(text: &[u8]) -> Option<String> {
    text.split(|&b| b == b'\n')
        .map(String::from_utf8_lossy)
        .find(|line| {
            let line = line.trim();
            line.starts_with("File \"") && line.contains("/kopf/")
        })
        .map(|line| line.trim().to_string())
}

/// A record only kopf writes: one of kopf's message templates (a handler's or
/// activity's outcome, a retry, peering, a denial kopf reports), a line whose wording
/// dates a kopf version, or one of kopf's own loggers named in kopf's `full` format or
/// in Python's `basicConfig` format (kopf started from Python, its logging set up by
/// the operator).
fn only_kopf_writes(record: &kopf_log::Record) -> bool {
    if record.format.is_none() {
        return false;
    }
    let template = !matches!(
        record.kind,
        kopf_log::EventKind::Other | kopf_log::EventKind::ScopeFutureWarning
    );
    let kopf_logger = matches!(
        record.format,
        Some(KopfLogFormat::Full | KopfLogFormat::Basic)
    ) && record
        .logger
        .as_deref()
        .is_some_and(|l| l == "kopf" || l.starts_with("kopf."));
    template || record.version.is_some() || kopf_logger
}

/// The format most of kopf's lines are in.
fn majority_format(records: &[&kopf_log::Record]) -> KopfLogFormat {
    let count = |f: KopfLogFormat| records.iter().filter(|r| r.format == Some(f)).count();
    [
        KopfLogFormat::Full,
        KopfLogFormat::Json,
        KopfLogFormat::Plain,
        KopfLogFormat::Basic,
    ]
    .into_iter()
    .max_by_key(|f| count(*f))
    .unwrap_or(KopfLogFormat::Full)
}

#[cfg(test)]
mod tests;

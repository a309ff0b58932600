//! Reads the operator's logs through the API server, bounded by `spec.logs`: the window
//! (`sinceSeconds`) and a byte cap (`limitBytes`), streamed chunk by chunk into the kopf
//! log parser so that no more than a chunk is held besides the records a check reads.
//! The cap is enforced here too, whatever the server or a proxy does with `limitBytes`.

use crate::model::evidence::{Gathered, LogEvidence, restarted};
use crate::model::settings::LogBounds;
use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use kube::{Client, ResourceExt};

/// At most this many records are kept per audit; the checks need a sample, not all.
pub(crate) const MAX_RECORDS: usize = 5000;

/// How far past `limitBytes` a read may go to finish its last line before it is cut.
pub(crate) const LINE_SLACK_BYTES: i64 = 64 * 1024;

/// Lines of the previous container's log read for a restarted pod: its end says why it
/// exited.
const PREVIOUS_TAIL_LINES: i64 = 2000;

/// Reads and parses the current logs of every pod's kopf container, and the previous
/// container's log of pods that restarted.
pub(crate) async fn gather(
    client: &Client,
    namespace: &str,
    pods: &[Pod],
    container: &str,
    bounds: LogBounds,
) -> Gathered<LogEvidence> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut evidence = LogEvidence::default();
    let mut current = scanner();
    let what = || format!("get pods/log in {namespace}");
    let grant = || format!("get on pods/log in {namespace}");
    for pod in pods {
        let name = pod.name_any();
        let params = current_params(container, bounds);
        let cut = read(
            &api,
            &name,
            &params,
            bounds.limit_bytes,
            &mut current,
            &mut evidence.records,
        )
        .await
        .map_err(|e| super::obstacle(&e, &what(), &grant()))?;
        evidence.truncated |= cut;
        if restarted(pod, container) {
            let mut previous = scanner();
            let mut records = Vec::new();
            let params = previous_params(container, bounds);
            match read(
                &api,
                &name,
                &params,
                bounds.limit_bytes,
                &mut previous,
                &mut records,
            )
            .await
            {
                Ok(_) => {
                    evidence.previous.insert(name, records);
                }
                // The previous container's log may be gone; the current one still counts.
                Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => {}
                Err(e) => return Err(super::obstacle(&e, &what(), &grant())),
            }
        }
    }
    evidence.stats = current.stats();
    Ok(evidence)
}

/// The current container's log within the window.
fn current_params(container: &str, bounds: LogBounds) -> LogParams {
    LogParams {
        container: Some(container.to_string()),
        timestamps: true,
        since_seconds: Some(bounds.window.as_secs().max(1) as i64),
        limit_bytes: Some(bounds.limit_bytes),
        ..Default::default()
    }
}

/// The end of the previous container's log.
fn previous_params(container: &str, bounds: LogBounds) -> LogParams {
    LogParams {
        container: Some(container.to_string()),
        previous: true,
        timestamps: true,
        tail_lines: Some(PREVIOUS_TAIL_LINES),
        limit_bytes: Some(bounds.limit_bytes),
        ..Default::default()
    }
}

/// Streams one container log into `parser`, at most `limit + LINE_SLACK_BYTES` bytes
/// whatever the server sends; returns whether the cap cut it.
async fn read(
    api: &Api<Pod>,
    pod: &str,
    params: &LogParams,
    limit: i64,
    parser: &mut kopf_log::Parser,
    out: &mut Vec<kopf_log::Record>,
) -> Result<bool, kube::Error> {
    let mut stream = Box::pin(api.log_stream(pod, params).await?);
    let mut total: i64 = 0;
    let hard_stop = limit.saturating_add(LINE_SLACK_BYTES);
    loop {
        // Whole chunks, parsed in place: no copy per line, and the parser searches each
        // chunk once for what it must look for on every line.
        let n = match stream.fill_buf().await {
            Ok([]) => break,
            Ok(chunk) => {
                let room = usize::try_from(hard_stop - total).unwrap_or(0);
                let take = chunk.len().min(room);
                parser.push_chunk(&chunk[..take], &mut Keeper(out));
                chunk.len()
            }
            Err(e) => {
                tracing::debug!(pod, error = %e, "log stream ended early");
                break;
            }
        };
        stream.consume_unpin(n);
        total = total.saturating_add(n as i64);
        if total >= hard_stop {
            break;
        }
    }
    while let Some(record) = parser.finish() {
        keep(out, record);
    }
    Ok(total >= limit)
}

/// The records a chunk completes, filtered by [`keep`].
struct Keeper<'a>(&'a mut Vec<kopf_log::Record>);

impl Extend<kopf_log::Record> for Keeper<'_> {
    fn extend<I: IntoIterator<Item = kopf_log::Record>>(&mut self, records: I) {
        for record in records {
            keep(self.0, record);
        }
    }
}

/// A parser that only counts routine lines (successes, chatter, noise) without building
/// them: the auditor's scan, at about 2.5 times the full parser's speed (BENCHMARKS.md).
fn scanner() -> kopf_log::Parser {
    kopf_log::Parser::new(kopf_log::ParserOptions::default()).with_routine(kopf_log::Routine::Count)
}

/// Keeps only the records some check reads (failures, denials, warnings about kopf's own
/// health), so memory stays far below the log's size.
fn keep(out: &mut Vec<kopf_log::Record>, record: kopf_log::Record) {
    if !record.is_routine() && out.len() < MAX_RECORDS {
        out.push(record);
    }
}

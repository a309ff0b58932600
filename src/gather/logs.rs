//! Reads the operator's logs through the API server, bounded by `spec.logs`: the
//! window (`sinceSeconds`) and a byte cap (`limitBytes`), streamed line by line into the
//! kopf log parser so that no more than one line is held besides the parsed records.

use crate::conditions::Reason;
use crate::evidence::{Gathered, LogEvidence, Unavailable};
use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use kube::{Client, ResourceExt};
use std::time::Duration;

/// The log window unless `spec.logs.window` says otherwise.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(600);
/// The byte cap per container and audit unless `spec.logs.limitBytes` says otherwise.
pub const DEFAULT_LIMIT_BYTES: i64 = 4 * 1024 * 1024;

/// How much log to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogBounds {
    /// How far back.
    pub window: Duration,
    /// At most this many bytes per container log.
    pub limit_bytes: i64,
}

impl LogBounds {
    /// The bounds a KopfAudit asks for.
    pub fn from_spec(logs: &crate::api::LogsConfig) -> LogBounds {
        let window = logs
            .window
            .as_deref()
            .and_then(crate::duration::parse)
            .unwrap_or(DEFAULT_WINDOW);
        let limit_bytes = logs
            .limit_bytes
            .as_deref()
            .and_then(crate::checks::quantity::bytes)
            .map(|b| b as i64)
            .filter(|b| *b > 0)
            .unwrap_or(DEFAULT_LIMIT_BYTES);
        LogBounds {
            window,
            limit_bytes,
        }
    }
}

/// Reads and parses the current logs of every pod's kopf container, and the previous
/// container's log of pods that restarted.
pub async fn gather(
    client: &Client,
    namespace: &str,
    pods: &[Pod],
    container: &str,
    bounds: LogBounds,
) -> Gathered<LogEvidence> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut evidence = LogEvidence::default();
    let mut current = scanner();
    let mut previous = scanner();
    for pod in pods {
        let restarted = pod
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .any(|cs| cs.name == container && cs.restart_count > 0);
        let name = pod.name_any();
        match read(
            &api,
            &name,
            container,
            bounds,
            false,
            &mut current,
            &mut evidence.records,
        )
        .await
        {
            Ok(cut) => evidence.truncated |= cut,
            Err(e) => return unavailable(namespace, e),
        }
        if restarted {
            match read(
                &api,
                &name,
                container,
                bounds,
                true,
                &mut previous,
                &mut evidence.previous,
            )
            .await
            {
                Ok(cut) => evidence.truncated |= cut,
                // The previous container's log may be gone; the current one still counts.
                Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => {}
                Err(e) => return unavailable(namespace, e),
            }
        }
    }
    evidence.stats = current.stats();
    Gathered::Ready(evidence)
}

fn unavailable(namespace: &str, error: kube::Error) -> Gathered<LogEvidence> {
    let (reason, message) = match &error {
        kube::Error::Api(s) if s.code == 403 => (
            Reason::Forbidden,
            format!(
                "The auditor may not get pods/log in {namespace}: grant it get on pods/log there."
            ),
        ),
        _ => (
            Reason::AuditFailed,
            format!("Reading the operator's log failed: {error}"),
        ),
    };
    Gathered::Unavailable(Unavailable { reason, message })
}

/// Streams one container log into `parser`; returns whether the byte cap cut it.
async fn read(
    api: &Api<Pod>,
    pod: &str,
    container: &str,
    bounds: LogBounds,
    previous: bool,
    parser: &mut kopf_log::Parser,
    out: &mut Vec<kopf_log::Record>,
) -> Result<bool, kube::Error> {
    let params = LogParams {
        container: Some(container.to_string()),
        previous,
        timestamps: true,
        since_seconds: Some(bounds.window.as_secs().max(1) as i64),
        limit_bytes: Some(bounds.limit_bytes),
        ..Default::default()
    };
    let mut stream = Box::pin(api.log_stream(pod, &params).await?);
    let mut total: i64 = 0;
    loop {
        // Whole chunks, parsed in place: no copy per line, and the parser
        // searches each chunk once for what it must look for on every line.
        let n = match stream.fill_buf().await {
            Ok([]) => break,
            Ok(chunk) => {
                parser.push_chunk(chunk, &mut Keeper(out));
                chunk.len()
            }
            Err(e) => {
                tracing::debug!(pod, error = %e, "log stream ended early");
                break;
            }
        };
        stream.consume_unpin(n);
        total = total.saturating_add(n as i64);
    }
    while let Some(record) = parser.finish() {
        keep(out, Some(record));
    }
    Ok(total >= bounds.limit_bytes)
}

/// The records a chunk completes, filtered by [`keep`].
struct Keeper<'a>(&'a mut Vec<kopf_log::Record>);

impl Extend<kopf_log::Record> for Keeper<'_> {
    fn extend<I: IntoIterator<Item = kopf_log::Record>>(&mut self, records: I) {
        for record in records {
            keep(self.0, Some(record));
        }
    }
}

/// At most this many records are kept per audit; the checks need a sample, not all.
pub const MAX_RECORDS: usize = 5000;

/// A parser that only counts routine lines (successes, chatter, noise) without building
/// them: the auditor's scan, at about 2.5 times the full parser's speed (BENCHMARKS.md).
fn scanner() -> kopf_log::Parser {
    kopf_log::Parser::new(kopf_log::ParserOptions::default()).with_routine(kopf_log::Routine::Count)
}

/// Keeps only the records some check reads (failures, denials, warnings about kopf's own
/// health), so memory stays far below the log's size.
fn keep(out: &mut Vec<kopf_log::Record>, record: Option<kopf_log::Record>) {
    if let Some(record) = record.filter(|r| !r.is_routine())
        && out.len() < MAX_RECORDS
    {
        out.push(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::LogsConfig;

    #[test]
    fn bounds_default_and_follow_the_spec() {
        assert_eq!(
            LogBounds::from_spec(&LogsConfig::default()),
            LogBounds {
                window: DEFAULT_WINDOW,
                limit_bytes: DEFAULT_LIMIT_BYTES
            }
        );
        let spec = LogsConfig {
            window: Some("2m".into()),
            limit_bytes: Some("1Mi".into()),
        };
        let b = LogBounds::from_spec(&spec);
        assert_eq!(b.window, Duration::from_secs(120));
        assert_eq!(b.limit_bytes, 1024 * 1024);
    }
}

//! What a KopfAudit's spec resolves to, with every default in one place: the thresholds
//! the checks compare against, the log bounds the gatherer reads within, and the
//! re-audit interval. The schema refuses bad values at apply time; anything unreadable
//! that still gets through falls back to the default.

use super::{duration, quantity};
use crate::api::{KopfAuditSpec, LogsConfig};
use std::time::Duration;

/// Identical events that count as spam unless the KopfAudit says otherwise.
pub(crate) const DEFAULT_EVENT_REPEATS: usize = 3;
/// kopf's resting baseline: the memory request below which a finding fires.
pub(crate) const DEFAULT_MEMORY_REQUEST: f64 = 256.0 * 1024.0 * 1024.0;
/// The memory limit below which a finding fires.
pub(crate) const DEFAULT_MEMORY_LIMIT: f64 = 512.0 * 1024.0 * 1024.0;
/// How long a handled object may stay unhandled unless `spec.thresholds.unhandledAfter`
/// says otherwise.
pub(crate) const DEFAULT_UNHANDLED_AFTER: Duration = Duration::from_secs(600);
/// The log window unless `spec.logs.window` says otherwise.
pub(crate) const DEFAULT_WINDOW: Duration = Duration::from_secs(600);
/// The byte cap per container and audit unless `spec.logs.limitBytes` says otherwise.
pub(crate) const DEFAULT_LIMIT_BYTES: i64 = 4 * 1024 * 1024;
/// The shortest re-audit period (the schema refuses less).
pub(crate) const MIN_INTERVAL: Duration = Duration::from_secs(30);
/// The re-audit period when `spec.interval` cannot be read.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);

/// Workload thresholds after the KopfAudit's overrides.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WorkloadThresholds {
    /// Minimum memory request in bytes.
    pub(crate) memory_request: f64,
    /// Minimum memory limit in bytes.
    pub(crate) memory_limit: f64,
}

impl Default for WorkloadThresholds {
    fn default() -> Self {
        WorkloadThresholds {
            memory_request: DEFAULT_MEMORY_REQUEST,
            memory_limit: DEFAULT_MEMORY_LIMIT,
        }
    }
}

/// What every check may read besides the evidence: the KopfAudit's thresholds and the
/// clock of the audit.
#[derive(Clone, Debug)]
pub(crate) struct CheckSettings {
    /// Workload thresholds.
    pub(crate) workload: WorkloadThresholds,
    /// Identical events in the window that count as spam.
    pub(crate) event_repeats: usize,
    /// How long a changed object may stay unhandled.
    pub(crate) unhandled_after: Duration,
    /// How far back the logs were read (`spec.logs.window`).
    pub(crate) window: Duration,
    /// When the evidence was gathered.
    pub(crate) now: jiff::Timestamp,
}

impl CheckSettings {
    /// The settings a spec asks for, at `now`.
    pub(crate) fn from_spec(spec: &KopfAuditSpec, now: jiff::Timestamp) -> CheckSettings {
        let read = |q: &Option<String>, default: f64| {
            q.as_deref()
                .and_then(quantity::bytes)
                .filter(|b| *b > 0.0)
                .unwrap_or(default)
        };
        CheckSettings {
            workload: WorkloadThresholds {
                memory_request: read(&spec.thresholds.memory_request, DEFAULT_MEMORY_REQUEST),
                memory_limit: read(&spec.thresholds.memory_limit, DEFAULT_MEMORY_LIMIT),
            },
            event_repeats: spec
                .thresholds
                .event_repeats
                .map_or(DEFAULT_EVENT_REPEATS, |n| n as usize),
            unhandled_after: spec
                .thresholds
                .unhandled_after
                .as_deref()
                .and_then(duration::parse)
                .unwrap_or(DEFAULT_UNHANDLED_AFTER),
            window: LogBounds::from_spec(&spec.logs).window,
            now,
        }
    }
}

/// How much log to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogBounds {
    /// How far back.
    pub(crate) window: Duration,
    /// At most this many bytes per container log.
    pub(crate) limit_bytes: i64,
}

impl LogBounds {
    /// The bounds a KopfAudit asks for.
    pub(crate) fn from_spec(logs: &LogsConfig) -> LogBounds {
        let window = logs
            .window
            .as_deref()
            .and_then(duration::parse)
            .unwrap_or(DEFAULT_WINDOW);
        let limit_bytes = logs
            .limit_bytes
            .as_deref()
            .and_then(quantity::bytes)
            .map(|b| b as i64)
            .filter(|b| *b > 0)
            .unwrap_or(DEFAULT_LIMIT_BYTES);
        LogBounds {
            window,
            limit_bytes,
        }
    }
}

/// The shortest default hold-down before a finding is resolved.
pub(crate) const MIN_DEFAULT_RESOLVE_AFTER: Duration = Duration::from_secs(600);

/// How long a finding must stay absent from complete audits before it is resolved:
/// `spec.thresholds.resolveAfter`, else two intervals and at least 10 minutes, so that
/// one lucky audit never resolves a finding and failures in bursts a few minutes apart
/// give one FindingRaised, not one pair per burst (Prometheus's `for:` and
/// Alertmanager's resolve timeout work the same way).
pub(crate) fn resolve_after(spec: &KopfAuditSpec) -> Duration {
    spec.thresholds
        .resolve_after
        .as_deref()
        .and_then(duration::parse)
        .unwrap_or_else(|| {
            interval(spec)
                .saturating_mul(2)
                .max(MIN_DEFAULT_RESOLVE_AFTER)
        })
}

/// The requeue period of an audit (the schema guarantees at least 30s).
pub(crate) fn interval(spec: &KopfAuditSpec) -> Duration {
    duration::parse(&spec.interval)
        .map(|d| d.max(MIN_INTERVAL))
        .unwrap_or(DEFAULT_INTERVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_bounds_default_and_follow_the_spec() {
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

    #[test]
    fn interval_defaults_and_floors() {
        let mut spec: KopfAuditSpec =
            serde_json::from_value(serde_json::json!({"target": {"deployment": "x"}}))
                .expect("spec");
        assert_eq!(interval(&spec), Duration::from_secs(300));
        spec.interval = "45s".into();
        assert_eq!(interval(&spec), Duration::from_secs(45));
        spec.interval = "1s".into();
        assert_eq!(interval(&spec), Duration::from_secs(30));
        assert_eq!(
            duration::parse(crate::api::DEFAULT_INTERVAL),
            Some(DEFAULT_INTERVAL)
        );
    }

    #[test]
    fn resolve_after_is_two_intervals_and_at_least_ten_minutes() {
        let mut spec: KopfAuditSpec =
            serde_json::from_value(serde_json::json!({"target": {"deployment": "x"}}))
                .expect("spec");
        assert_eq!(resolve_after(&spec), Duration::from_secs(600));
        spec.interval = "1h".into();
        assert_eq!(resolve_after(&spec), Duration::from_secs(7200));
        spec.thresholds.resolve_after = Some("0s".into());
        assert_eq!(resolve_after(&spec), Duration::ZERO);
    }

    #[test]
    fn thresholds_follow_the_spec() {
        let spec: KopfAuditSpec = serde_json::from_value(serde_json::json!({
            "target": {"deployment": "x"},
            "thresholds": {"memoryLimit": "1Gi", "eventRepeats": 5}
        }))
        .expect("spec");
        let s = CheckSettings::from_spec(&spec, jiff::Timestamp::UNIX_EPOCH);
        assert_eq!(s.workload.memory_limit, 1024.0 * 1024.0 * 1024.0);
        assert_eq!(s.workload.memory_request, DEFAULT_MEMORY_REQUEST);
        assert_eq!(s.event_repeats, 5);
    }
}

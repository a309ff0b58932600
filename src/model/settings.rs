//! What a KopfAudit's spec resolves to, with every default in one place: the thresholds
//! the checks compare against, the log bounds the gatherer reads within, the re-audit
//! interval and the resolve hold-down. An audit reads its spec once, into
//! [`AuditSettings`], when it starts, and passes that down. The schema refuses bad
//! values at apply time; anything unreadable that still gets through falls back to the
//! default.

use super::{duration, quantity};
use crate::api::{AuditDefaults, KopfAuditSpec, LogsConfig, Thresholds};
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
/// The shortest default hold-down before a finding is resolved.
pub(crate) const MIN_DEFAULT_RESOLVE_AFTER: Duration = Duration::from_secs(600);

/// Everything an audit reads from its KopfAudit's spec besides the target, read once
/// when the audit starts: the gatherer reads its log bounds, the checks its
/// thresholds, the status merge its hold-down and the requeue its interval.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AuditSettings {
    /// The requeue period (`spec.interval`, at least 30s).
    pub(crate) interval: Duration,
    /// How long a finding must stay absent before it is resolved (see
    /// [`AuditSettings::read`]).
    pub(crate) resolve_after: Duration,
    /// What the checks compare against (`spec.thresholds`).
    pub(crate) thresholds: CheckThresholds,
    /// How much log to read (`spec.logs`).
    pub(crate) logs: LogBounds,
}

impl AuditSettings {
    /// The settings a KopfAudit's spec asks for.
    pub(crate) fn from_spec(spec: &KopfAuditSpec) -> AuditSettings {
        AuditSettings::read(&spec.interval, &spec.thresholds, &spec.logs)
    }

    /// The settings a ClusterKopfAudit's `spec.defaults` gives every KopfAudit it
    /// generates: the same fields, read the same way.
    pub(crate) fn from_defaults(defaults: &AuditDefaults) -> AuditSettings {
        AuditSettings::read(&defaults.interval, &defaults.thresholds, &defaults.logs)
    }

    /// The settings of an interval, thresholds and log bounds as a spec writes them
    /// (a KopfAudit's, or the defaults a ClusterKopfAudit gives the ones it generates).
    ///
    /// The resolve hold-down is `thresholds.resolveAfter`, else two intervals and at
    /// least 10 minutes, so that one lucky audit never resolves a finding and failures
    /// in bursts a few minutes apart give one FindingRaised, not one pair per burst
    /// (Prometheus's `for:` and Alertmanager's resolve timeout work the same way).
    fn read(interval: &str, thresholds: &Thresholds, logs: &LogsConfig) -> AuditSettings {
        let interval = read_interval(interval);
        let resolve_after = thresholds
            .resolve_after
            .as_deref()
            .and_then(duration::parse)
            .unwrap_or_else(|| interval.saturating_mul(2).max(MIN_DEFAULT_RESOLVE_AFTER));
        AuditSettings {
            interval,
            resolve_after,
            thresholds: CheckThresholds::read(thresholds),
            logs: LogBounds::read(logs),
        }
    }

    /// What the checks read, with the clock of the evidence they judge.
    pub(crate) fn checks(&self, now: jiff::Timestamp) -> CheckSettings {
        CheckSettings {
            workload: self.thresholds.workload.clone(),
            event_repeats: self.thresholds.event_repeats,
            unhandled_after: self.thresholds.unhandled_after,
            window: self.logs.window,
            now,
        }
    }
}

impl Default for AuditSettings {
    /// The settings of a spec that sets nothing but its target.
    fn default() -> Self {
        AuditSettings::read(
            crate::api::DEFAULT_INTERVAL,
            &Thresholds::default(),
            &LogsConfig::default(),
        )
    }
}

/// The requeue period a spec's interval asks for (the schema guarantees at least 30s);
/// the schema's default, [`crate::api::DEFAULT_INTERVAL`], when it cannot be read.
fn read_interval(interval: &str) -> Duration {
    duration::parse(interval)
        .or_else(|| duration::parse(crate::api::DEFAULT_INTERVAL))
        .map_or(MIN_INTERVAL, |d| d.max(MIN_INTERVAL))
}

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

/// `spec.thresholds` after the defaults: what the checks compare against.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckThresholds {
    /// Workload thresholds.
    pub(crate) workload: WorkloadThresholds,
    /// Identical events in the window that count as spam.
    pub(crate) event_repeats: usize,
    /// How long a changed object may stay unhandled.
    pub(crate) unhandled_after: Duration,
}

impl CheckThresholds {
    fn read(thresholds: &Thresholds) -> CheckThresholds {
        let read = |q: &Option<String>, default: f64| {
            q.as_deref()
                .and_then(quantity::bytes)
                .filter(|b| *b > 0.0)
                .unwrap_or(default)
        };
        CheckThresholds {
            workload: WorkloadThresholds {
                memory_request: read(&thresholds.memory_request, DEFAULT_MEMORY_REQUEST),
                memory_limit: read(&thresholds.memory_limit, DEFAULT_MEMORY_LIMIT),
            },
            event_repeats: thresholds
                .event_repeats
                .map_or(DEFAULT_EVENT_REPEATS, |n| n as usize),
            unhandled_after: thresholds
                .unhandled_after
                .as_deref()
                .and_then(duration::parse)
                .unwrap_or(DEFAULT_UNHANDLED_AFTER),
        }
    }
}

/// What every check may read besides the evidence: the KopfAudit's thresholds and the
/// clock of the audit (made by [`AuditSettings::checks`]).
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

/// How much log to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogBounds {
    /// How far back.
    pub(crate) window: Duration,
    /// At most this many bytes per container log.
    pub(crate) limit_bytes: i64,
}

impl LogBounds {
    fn read(logs: &LogsConfig) -> LogBounds {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(spec: &KopfAuditSpec) -> Duration {
        AuditSettings::from_spec(spec).interval
    }

    fn resolve_after(spec: &KopfAuditSpec) -> Duration {
        AuditSettings::from_spec(spec).resolve_after
    }

    #[test]
    fn log_bounds_default_and_follow_the_spec() {
        assert_eq!(
            LogBounds::read(&LogsConfig::default()),
            LogBounds {
                window: DEFAULT_WINDOW,
                limit_bytes: DEFAULT_LIMIT_BYTES
            }
        );
        let spec = LogsConfig {
            window: Some("2m".into()),
            limit_bytes: Some("1Mi".into()),
        };
        let b = LogBounds::read(&spec);
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
        spec.interval = "five minutes".into();
        assert_eq!(interval(&spec), Duration::from_secs(300));
        assert_eq!(AuditSettings::default().interval, Duration::from_secs(300));
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
        let s = AuditSettings::from_spec(&spec).checks(jiff::Timestamp::UNIX_EPOCH);
        assert_eq!(s.workload.memory_limit, 1024.0 * 1024.0 * 1024.0);
        assert_eq!(s.workload.memory_request, DEFAULT_MEMORY_REQUEST);
        assert_eq!(s.event_repeats, 5);
    }
}

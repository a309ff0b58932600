//! The `process_*` metrics every Prometheus client exports (CPU, memory, file
//! descriptors, start time), read from `/proc/self` at each scrape, as the Go and Python
//! clients do: a dashboard or alert written for controller-runtime's operators works on
//! the auditor unchanged. Off Linux, nothing is exported.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks per second of `/proc/<pid>/stat`'s CPU times: `USER_HZ`, 100 on every
/// Linux architecture's ABI (it is fixed for user space, whatever the kernel's HZ).
const USER_HZ: f64 = 100.0;

/// Reads the process's figures at each scrape.
#[derive(Debug, Default)]
pub(crate) struct ProcessCollector;

/// One scrape's figures.
#[derive(Debug, Default, PartialEq)]
struct Figures {
    cpu_seconds: f64,
    resident_bytes: i64,
    virtual_bytes: i64,
    open_fds: i64,
    max_fds: Option<i64>,
    start_time_seconds: Option<f64>,
}

/// User plus system CPU seconds, and the start time in ticks after boot, from
/// `/proc/self/stat` (fields 14, 15 and 22, counted after the command's closing
/// parenthesis, which may itself hold spaces).
fn parse_stat(stat: &str) -> Option<(f64, u64)> {
    let after = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state): field N is at index N - 3.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let start: u64 = fields.get(19)?.parse().ok()?;
    Some(((utime + stime) as f64 / USER_HZ, start))
}

/// A `Vm...:  123 kB` line of `/proc/self/status`, in bytes.
fn status_kib(status: &str, key: &str) -> Option<i64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: i64 = line
        .get(key.len()..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The soft limit on open files from `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<i64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.get("Max open files".len()..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The boot time (Unix seconds) from `/proc/stat`'s `btime` line.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

impl Figures {
    /// Reads them now; `None` where `/proc` is not there (not Linux).
    fn read() -> Option<Figures> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let (cpu_seconds, start_ticks) = parse_stat(&stat)?;
        let boot = std::fs::read_to_string("/proc/stat")
            .ok()
            .as_deref()
            .and_then(boot_time);
        Some(Figures {
            cpu_seconds,
            resident_bytes: status_kib(&status, "VmRSS:").unwrap_or(0),
            virtual_bytes: status_kib(&status, "VmSize:").unwrap_or(0),
            open_fds: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as i64),
            max_fds: std::fs::read_to_string("/proc/self/limits")
                .ok()
                .as_deref()
                .and_then(max_open_files),
            start_time_seconds: boot.map(|b| b as f64 + start_ticks as f64 / USER_HZ),
        })
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(f) = Figures::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(f.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                Some(f.resident_bytes),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                Some(f.virtual_bytes),
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                Some(f.open_fds),
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                f.max_fds,
            ),
        ];
        for (name, help, value) in gauges {
            let Some(value) = value else { continue };
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        if let Some(start) = f.start_time_seconds {
            let gauge = ConstGauge::new(start);
            gauge.encode(encoder.encode_descriptor(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                None,
                gauge.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_a_command_with_spaces_and_parentheses() {
        let stat = "4242 (kopf (audit) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0 123456 10000000 2000 18446744073709551615";
        assert_eq!(parse_stat(stat), Some((3.0, 123456)));
    }

    #[test]
    fn status_limits_and_boot_time_are_read() {
        let status = "Name:\tkopf-audit\nVmSize:\t  204800 kB\nVmRSS:\t   10240 kB\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(10 * 1024 * 1024));
        assert_eq!(status_kib(status, "VmSize:"), Some(200 * 1024 * 1024));
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n";
        assert_eq!(max_open_files(limits), Some(1048576));
        assert_eq!(
            boot_time("cpu  1 2 3\nbtime 1764633600\n"),
            Some(1764633600)
        );
    }

    #[test]
    fn this_process_is_measured_on_linux() {
        let figures = Figures::read().expect("/proc is there on Linux");
        assert!(figures.resident_bytes > 0, "{figures:?}");
        assert!(figures.open_fds > 0, "{figures:?}");
        assert!(
            figures.start_time_seconds.is_some_and(|s| s > 1.0e9),
            "{figures:?}"
        );
    }
}

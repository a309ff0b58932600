//! Tests of runtime.kopf-version.

use super::*;
use crate::checks::runtime::tests::{captured, parse};

#[test]
fn the_version_is_read_from_the_wording_and_old_ones_warn() {
    for (file, severity, shown) in [
        (
            "kopf-1.38.0-handlers.full.log",
            Severity::Warning,
            "kopf 1.38.0",
        ),
        (
            "kopf-1.43.0-handlers.full.log",
            Severity::Warning,
            "kopf 1.43.0",
        ),
        (
            "kopf-1.45.2-handlers.full.log",
            Severity::Info,
            "kopf 1.45.2",
        ),
    ] {
        let f = decide("op", &captured(file)).unwrap_or_else(|| panic!("{file}"));
        assert_eq!(f.severity, severity, "{file}: {}", f.message);
        assert!(f.message.contains(shown), "{file}: {}", f.message);
    }
    let ok = "[2026-11-30 02:41:55,039] kopf.objects         [INFO    ] [ns/a] Handler 'reconcile' succeeded.";
    let unknown = parse(&[ok]);
    if unknown.version.is_unbounded() {
        assert!(decide("op", &unknown).is_none());
    }
}

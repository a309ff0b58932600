//! End-to-end tests against the local cluster started by `hack/cluster.sh up` (the
//! README's test command starts it). They FAIL with the reason when it is not running.

mod accuracy;
mod bounds;
// Headless Chromium, shared with tests/html_report.rs.
#[path = "../browser/mod.rs"]
mod browser;
mod chart;
mod cluster_audit;
mod conflict;
mod delivery;
mod discover;
mod discover_like;
mod evidence;
mod faults;
mod harness;
mod helm;
mod hostile;
mod image;
mod kubectl;
mod leader;
mod logs;
mod metrics_access;
mod operator;
mod production;
mod prometheus;
mod quickstart;
mod rbac;
mod recognition;
mod redaction;
mod reports;
mod support;
mod tenancy;
mod tenant_bounds;

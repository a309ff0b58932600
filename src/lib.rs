//! kopf-audit: audits Python operators written with kopf and reports in
//! `status.conditions`, Events on change and metrics.
//!
//! Layers run one way; no module imports from a layer above it:
//!
//! - [`catalog`]: every public name (check IDs, severities, areas, condition types and
//!   reasons, Event reasons); imports nothing of the crate.
//! - [`api`]: the `KopfAudit` custom resource.
//! - `model`: plain data: how kopf runs, the evidence, RBAC facts and needs, settings.
//! - `gather` (API I/O) and `checks` (pure): evidence in, findings out.
//! - `evaluate` (pure): findings, conditions, the next status, the Events to emit.
//! - `publish` (API I/O) and `reconcile` (the controller): status, Events, metrics.
//! - `cli`: the command line, [`main`].

pub mod api;
pub mod catalog;
pub(crate) mod checks;
pub(crate) mod cli;
pub(crate) mod evaluate;
pub(crate) mod gather;
pub(crate) mod model;
pub(crate) mod publish;
pub(crate) mod reconcile;
#[cfg(test)]
pub(crate) mod testing;

pub use cli::main;

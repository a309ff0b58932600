//! kopf-audit: audits Python operators written with kopf and reports in
//! `status.conditions`, Events on change and metrics.
//!
//! One audit is three phases: [`gather`] (API I/O), [`evaluate`] with [`checks`] (pure),
//! [`publish`] (API I/O).

pub mod api;
pub mod checks;
pub mod cli;
pub mod conditions;
pub mod controller;
pub mod duration;
pub mod evaluate;
pub mod evidence;
pub mod gather;
pub mod http;
pub mod kopf_mode;
pub mod leader;
pub mod metrics;
pub mod publish;
pub mod reference;

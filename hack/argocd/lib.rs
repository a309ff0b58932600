//! Nothing to build: the health check is `health.lua`; `tests/health.rs` tests it.

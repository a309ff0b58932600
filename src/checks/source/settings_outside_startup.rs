//! `source.settings-outside-startup`: a kopf setting written outside an
//! `@kopf.on.startup` handler, where kopf does not apply it (kopf 1.45
//! `_core/reactor/running.py`). Reads the settings the source writes.

use super::{SourceFinding, raise};
use crate::catalog::CheckId;
use crate::model::source::SourceFacts;

/// The decider: one finding per setting written outside a startup handler, at it.
pub(crate) fn source(facts: &SourceFacts) -> Vec<SourceFinding> {
    facts
        .settings
        .iter()
        .filter(|s| !s.in_startup)
        .map(|s| {
            raise(
                CheckId::SourceSettingsOutsideStartup,
                &s.location.file,
                &s.location,
                format!(
                    "settings.{} is written outside an @kopf.on.startup handler: kopf applies the settings its startup handlers set, before it starts watching (kopf 1.45 `_core/reactor/running.py`). Move it into `@kopf.on.startup() def configure(settings: kopf.OperatorSettings, **_)`.",
                    s.path
                ),
            )
        })
        .collect()
}

//! The statuses this instance wrote, until its cache shows them: an audit that starts
//! before the watch has delivered the last write compares against what was written,
//! not against the stale copy (which would write again and repeat its Events). Kept in
//! the [`AuditMemory`].

use super::memory::{AuditMemory, WrittenStatus};
use crate::api::{KopfAudit, KopfAuditStatus};

impl AuditMemory {
    /// The status to compare with: the one written last when the cached copy is older.
    pub(crate) fn stored(&self, audit: &KopfAudit) -> Option<KopfAuditStatus> {
        let rv = audit.metadata.resource_version.as_ref();
        self.with(audit, |m| match &m.written {
            Some(w) if rv.is_some_and(|rv| w.older.contains(rv)) => Some(w.status.clone()),
            Some(_) => {
                m.written = None;
                audit.status.clone()
            }
            None => audit.status.clone(),
        })
    }

    /// Records a write made on top of `audit` (as cached) that produced `rv`.
    pub(crate) fn record(&self, audit: &KopfAudit, rv: Option<String>, status: &KopfAuditStatus) {
        self.with(audit, |m| {
            let entry = m.written.get_or_insert_with(|| WrittenStatus {
                older: Vec::new(),
                last: None,
                status: status.clone(),
            });
            entry.older.extend(audit.metadata.resource_version.clone());
            entry.older.extend(entry.last.take());
            entry.older.sort();
            entry.older.dedup();
            entry.last = rv;
            entry.status = status.clone();
        });
    }
}

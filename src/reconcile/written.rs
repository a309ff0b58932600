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

    /// Forgets the status written for `audit` once the watch delivers that very write:
    /// the cache holds it then, and a copy per audit kept until its next run would be
    /// the auditor's largest steady cost after the cache itself.
    pub(crate) fn delivered(&self, audit: &KopfAudit) {
        let Some(rv) = audit.metadata.resource_version.as_ref() else {
            return;
        };
        self.with(audit, |m| {
            if m.written
                .as_ref()
                .is_some_and(|w| w.last.as_ref() == Some(rv))
            {
                m.written = None;
            }
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rv: &str, status: Option<KopfAuditStatus>) -> KopfAudit {
        let mut audit = crate::testing::audit_of("ns", "audit", "op", Some("u-1"));
        audit.metadata.resource_version = Some(rv.into());
        audit.status = status;
        audit
    }

    fn status(message: &str) -> KopfAuditStatus {
        KopfAuditStatus {
            last_handled_requested_at: Some(message.into()),
            ..KopfAuditStatus::default()
        }
    }

    #[test]
    fn the_written_status_is_compared_with_until_the_watch_delivers_it_then_forgotten() {
        let memory = AuditMemory::default();
        let cached = at("1", Some(status("old")));
        memory.record(&cached, Some("2".into()), &status("new"));
        assert_eq!(
            memory.stored(&cached),
            Some(status("new")),
            "the stale copy is not compared with"
        );
        memory.delivered(&at("1", Some(status("old"))));
        assert_eq!(memory.len(), 1, "an older event forgets nothing");
        memory.delivered(&at("2", Some(status("new"))));
        assert_eq!(memory.len(), 0, "the write delivered: nothing kept");
        assert_eq!(
            memory.stored(&at("2", Some(status("new")))),
            Some(status("new"))
        );
    }
}

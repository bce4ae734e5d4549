//! How complete a call's evidence is
//! ([design: observed effects disclosed](../../../docs/design.md#observed-effects-disclosed)):
//! each source that observes calls from outside them (a database's log read by the proxy, a
//! watched tree, outbound requests through the egress proxy) can fall short of a call's
//! interval, in one of two ways:
//!
//! - **pending**: the source had not read through the call's end when its share was taken
//!   (the capture had not read the database's log that far within `--capture-wait-ms`, the
//!   watch had not read the call's end marker in time). What was read is in the effect; what
//!   came later is not the call's.
//! - **incomplete**: part of the call's interval was lost for good (a replication slot made
//!   again, a purged binary log, an inotify queue overflow, a watched root removed, a tunnel
//!   the egress proxy could not read).
//!
//! A source in both is incomplete. The call's [`EvidenceStatus`] is the worst of its sources:
//! `incomplete`, else `pending`, else `observed`. The Prometheus recorder counts each
//! incomplete source once per call (`hintaudit_evidence_incomplete_total{source}`).
//!
//! ```
//! use hintaudit_core::{Completeness, DatabaseKind, EvidenceSource, EvidenceStatus};
//! let mut c = Completeness::default();
//! assert_eq!(c.status(), EvidenceStatus::Observed);
//! c.pending(EvidenceSource::Database(DatabaseKind::Postgres));
//! assert_eq!(c.status(), EvidenceStatus::Pending);
//! c.incomplete(EvidenceSource::Files);
//! c.incomplete(EvidenceSource::Files);
//! assert_eq!(c.status(), EvidenceStatus::Incomplete);
//! assert_eq!(c.incomplete_sources(), [EvidenceSource::Files]);
//! assert_eq!(EvidenceSource::Files.as_str(), "files");
//! ```

use crate::database::DatabaseKind;

/// A source of a call's evidence that observes it from outside and can fall short of the
/// call's interval. Its `as_str` is the `source` label of
/// `hintaudit_evidence_incomplete_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EvidenceSource {
    /// A database's log, read by `hintaudit proxy`'s capture: `sqlite`, `postgresql` or
    /// `mysql` (MariaDB too), the kind's `db.system.name` as the capture's `backend` label.
    Database(DatabaseKind),
    /// The watched trees (`hintaudit proxy --watch`): `files`.
    Files,
    /// Outbound requests through the egress proxy (hintaudit-egress): `egress`.
    Egress,
}

impl EvidenceSource {
    /// Every source, in label order: exporters create each series at 0.
    pub const ALL: [EvidenceSource; 5] = [
        EvidenceSource::Database(DatabaseKind::Sqlite),
        EvidenceSource::Database(DatabaseKind::Postgres),
        EvidenceSource::Database(DatabaseKind::MySql),
        EvidenceSource::Files,
        EvidenceSource::Egress,
    ];

    /// `sqlite`, `postgresql`, `mysql`, `files` or `egress`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EvidenceSource::Database(kind) => kind.system_name(),
            EvidenceSource::Files => "files",
            EvidenceSource::Egress => "egress",
        }
    }

    /// Its position in [`EvidenceSource::ALL`].
    fn bit(self) -> u8 {
        let i = EvidenceSource::ALL
            .iter()
            .position(|s| *s == self)
            .unwrap_or(0);
        1 << i
    }
}

/// A call's evidence as a whole: the `status` of its disclosure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EvidenceStatus {
    /// Every source read the call's whole interval.
    Observed,
    /// A source had not read through the call's end when its share was taken; none lost any
    /// of it.
    Pending,
    /// A source lost part of the call's interval.
    Incomplete,
}

impl EvidenceStatus {
    /// `observed`, `pending` or `incomplete`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EvidenceStatus::Observed => "observed",
            EvidenceStatus::Pending => "pending",
            EvidenceStatus::Incomplete => "incomplete",
        }
    }
}

/// Which sources fell short of a call's interval, and how: [`Effect::completeness`]. Each
/// source is noted once; empty (the default) when the evidence is whole.
///
/// [`Effect::completeness`]: crate::Effect::completeness
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Completeness {
    pending: u8,
    incomplete: u8,
}

impl Completeness {
    /// `source` had not read through the call's end when its share was taken.
    pub fn pending(&mut self, source: EvidenceSource) {
        self.pending |= source.bit();
    }

    /// `source` lost part of the call's interval. Returns whether this is new for the call.
    pub fn incomplete(&mut self, source: EvidenceSource) -> bool {
        let new = self.incomplete & source.bit() == 0;
        self.incomplete |= source.bit();
        new
    }

    /// The worst of the sources: `Incomplete`, else `Pending`, else `Observed`.
    pub fn status(&self) -> EvidenceStatus {
        if self.incomplete != 0 {
            EvidenceStatus::Incomplete
        } else if self.pending != 0 {
            EvidenceStatus::Pending
        } else {
            EvidenceStatus::Observed
        }
    }

    /// The sources that lost part of the call's interval, in [`EvidenceSource::ALL`] order.
    pub fn incomplete_sources(&self) -> Vec<EvidenceSource> {
        Self::of(self.incomplete)
    }

    /// The sources that had not read through the call's end and lost none of it, in
    /// [`EvidenceSource::ALL`] order.
    pub fn pending_sources(&self) -> Vec<EvidenceSource> {
        Self::of(self.pending & !self.incomplete)
    }

    fn of(bits: u8) -> Vec<EvidenceSource> {
        EvidenceSource::ALL
            .into_iter()
            .filter(|s| bits & s.bit() != 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unique_and_the_kinds_system_names() {
        let labels: Vec<&str> = EvidenceSource::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(labels, ["sqlite", "postgresql", "mysql", "files", "egress"]);
    }

    /// One row per set of notes: (pending, incomplete) → status, pending and incomplete
    /// sources shown.
    #[test]
    fn the_worst_source_decides_and_incomplete_wins_over_pending() {
        use EvidenceSource::*;
        const PG: EvidenceSource = Database(DatabaseKind::Postgres);
        type Sources = &'static [EvidenceSource];
        let rows: [(Sources, Sources, EvidenceStatus, Sources); 5] = [
            (&[], &[], EvidenceStatus::Observed, &[]),
            (&[PG], &[], EvidenceStatus::Pending, &[PG]),
            (&[], &[Files], EvidenceStatus::Incomplete, &[]),
            (&[PG, Files], &[Files], EvidenceStatus::Incomplete, &[PG]),
            (&[Files], &[Egress, Files], EvidenceStatus::Incomplete, &[]),
        ];
        for (pending, incomplete, status, shown_pending) in rows {
            let mut c = Completeness::default();
            pending.iter().for_each(|s| c.pending(*s));
            incomplete.iter().for_each(|s| {
                c.incomplete(*s);
            });
            assert_eq!(c.status(), status, "{pending:?} {incomplete:?}");
            assert_eq!(
                c.pending_sources(),
                shown_pending,
                "{pending:?} {incomplete:?}"
            );
            let mut want: Vec<EvidenceSource> = incomplete.to_vec();
            want.sort_by_key(|s| s.bit());
            assert_eq!(c.incomplete_sources(), want);
        }
    }

    #[test]
    fn a_source_is_new_once_per_call() {
        let mut c = Completeness::default();
        assert!(c.incomplete(EvidenceSource::Files));
        assert!(!c.incomplete(EvidenceSource::Files));
        assert!(c.incomplete(EvidenceSource::Egress));
        c.pending(EvidenceSource::Files);
        assert_eq!(c.status(), EvidenceStatus::Incomplete);
        assert!(c.pending_sources().is_empty());
    }
}

//! One observer's share of one call: what a source that watches calls from outside them (a
//! database's log, a watched tree) saw the call change, and whether it saw the whole call
//! ([design: adding a kind of state](../../../docs/design.md#adding-a-kind-of-state)).
//!
//! An observer begins with a call, and once the call answered settles into one [`Share`].
//! Every share becomes the call's effects in one place, [`Share::record`]: its changes as the
//! [`Effect`](crate::Effect)'s transactions, statements and files, a gap as the source's
//! evidence `incomplete`, a late share as `pending` ([`Completeness`](crate::Completeness)).
//! The I/O (reading a log, a tree's events) is the observer's own; this is the plain shape
//! every observer hands back.
//!
//! ```
//! use hintaudit_core::files::{ChangeKind, FileChange};
//! use hintaudit_core::{CallScope, EvidenceSource, EvidenceStatus, Share};
//! let scope = CallScope::new("save_note");
//! let mut share = Share::new(EvidenceSource::Files);
//! share.files.push(FileChange { path: "notes/a.md".into(), kind: ChangeKind::Created });
//! share.gap = true;
//! share.record(scope.effects());
//! let effect = scope.effects().snapshot();
//! assert_eq!(effect.files.len(), 1);
//! assert_eq!(effect.completeness.status(), EvidenceStatus::Incomplete);
//! ```

use crate::completeness::EvidenceSource;
use crate::effect::{StatementEffect, TransactionObservation};
use crate::files::FileChange;
use crate::scope::CallEffects;

/// What one observer saw of one call: the changes it attributes to the call, and how
/// complete that is. Changes the observer could not attribute to this call alone
/// (ambiguous, unattributed) are not in it: the observer tells the judge of them as written
/// elsewhere.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Share {
    /// The observer: the source marked pending or incomplete.
    pub source: EvidenceSource,
    /// Transactions observed (a database log's commits: tables, row images).
    pub transactions: Vec<TransactionObservation>,
    /// Statements observed (a database log's truncations).
    pub statements: Vec<StatementEffect>,
    /// Changes of watched files (paths as findings show them).
    pub files: Vec<FileChange>,
    /// The source lost part of the call's interval (a new replication slot, a purged binary
    /// log, an inotify queue overflow): the call's evidence is `incomplete`.
    pub gap: bool,
    /// The source had not read through the call's end in time: the call's evidence is
    /// `pending`, and what came later is not in the share.
    pub late: bool,
}

impl Share {
    /// An empty, complete share of `source`.
    pub fn new(source: EvidenceSource) -> Share {
        Share {
            source,
            transactions: Vec::new(),
            statements: Vec::new(),
            files: Vec::new(),
            gap: false,
            late: false,
        }
    }

    /// An empty share of `source` that came too late (`pending`).
    pub fn late(source: EvidenceSource) -> Share {
        Share {
            late: true,
            ..Share::new(source)
        }
    }

    /// An empty share of `source` that lost the call (`incomplete`): its observer failed.
    pub fn lost(source: EvidenceSource) -> Share {
        Share {
            gap: true,
            ..Share::new(source)
        }
    }

    /// Puts the share into the call's `effects`: the one place an observer's evidence
    /// becomes the call's. A late share marks the source pending, a gap incomplete (and is
    /// logged once with the tool).
    pub fn record(self, effects: &CallEffects) {
        for t in self.transactions {
            effects.record_transaction(t);
        }
        for s in self.statements {
            effects.record_statement(s);
        }
        for f in self.files {
            effects.record_file(f);
        }
        if self.late {
            effects.mark_pending(self.source);
        }
        if self.gap && effects.mark_incomplete(self.source) {
            tracing::warn!(
                target: "hintaudit::proxy",
                tool = effects.tool(),
                source = self.source.as_str(),
                "{}: its evidence is incomplete",
                lost(self.source)
            );
        }
    }
}

/// What a gap in `source` lost, as the warning says it.
fn lost(source: EvidenceSource) -> &'static str {
    match source {
        EvidenceSource::Database(_) => "the capture did not read the whole log of this call",
        EvidenceSource::Files => "the file watch lost events during this call",
        EvidenceSource::Egress => "the egress proxy did not read all of this call's requests",
    }
}

//! Process-wide audit counters: unattributed statements and audit failures.
//!
//! They back `hintaudit_unattributed_statements_total{operation}` and
//! `hintaudit_audit_errors_total{stage}`, as
//! [design: telemetry names](../../../docs/design.md#5-telemetry-names) names them. Audit
//! code anywhere in the process increments them with atomics (no locks, no allocation);
//! exporters read them at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::effect::Operation;

/// Where an audit failure happened. The audited call always goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuditStage {
    /// Statement classification failed in a way other than "unparseable".
    Classify,
    /// A database hook could not be installed or bound.
    Hook,
    /// A transaction oracle query failed.
    Oracle,
    /// The judge could not run.
    Judge,
    /// A recorder failed to record findings.
    Record,
    /// An exporter dropped data (queue full, collector down).
    Export,
    /// Hints could not be learned from the inner server.
    Registry,
    /// The fleet's shared history (Redis, Valkey) failed, timed out or was full: the repeat
    /// was judged by this process's own history.
    History,
}

impl AuditStage {
    /// Every stage, for iteration by exporters.
    pub const ALL: [AuditStage; 8] = [
        AuditStage::Classify,
        AuditStage::Hook,
        AuditStage::Oracle,
        AuditStage::Judge,
        AuditStage::Record,
        AuditStage::Export,
        AuditStage::Registry,
        AuditStage::History,
    ];

    /// The `stage` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStage::Classify => "classify",
            AuditStage::Hook => "hook",
            AuditStage::Oracle => "oracle",
            AuditStage::Judge => "judge",
            AuditStage::Record => "record",
            AuditStage::Export => "export",
            AuditStage::Registry => "registry",
            AuditStage::History => "history",
        }
    }

    fn index(self) -> usize {
        AuditStage::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

/// Process-wide audit counters. Get them with [`stats`].
#[derive(Debug)]
pub struct AuditStats {
    unattributed: [AtomicU64; Operation::ALL.len()],
    unattributed_rows: AtomicU64,
    setup_acquires: AtomicU64,
    unaudited_acquires: AtomicU64,
    errors: [AtomicU64; AuditStage::ALL.len()],
}

static STATS: AuditStats = AuditStats {
    unattributed: [const { AtomicU64::new(0) }; Operation::ALL.len()],
    unattributed_rows: AtomicU64::new(0),
    setup_acquires: AtomicU64::new(0),
    unaudited_acquires: AtomicU64::new(0),
    errors: [const { AtomicU64::new(0) }; AuditStage::ALL.len()],
};

/// The process-wide audit counters.
pub fn stats() -> &'static AuditStats {
    &STATS
}

impl AuditStats {
    /// Counts a statement that ran outside any call scope.
    pub fn unattributed_statement(&self, operation: Operation) {
        self.unattributed[operation.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts row changes that no call was bound to.
    pub fn unattributed_rows(&self, rows: u64) {
        self.unattributed_rows.fetch_add(rows, Ordering::Relaxed);
    }

    /// Counts a connection handed out for set-up work: the driver's connection, taken
    /// through sqlx's `Acquire` outside any call scope (`sqlx::migrate!().run(&pool)`).
    pub fn setup_acquire(&self) {
        self.setup_acquires.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection handed out through sqlx's `Acquire` inside a call scope: its
    /// statements are not audited one by one (the call's
    /// [`crate::Effect::unaudited_acquires`] says so too).
    pub fn unaudited_acquire(&self) {
        self.unaudited_acquires.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an audit failure at `stage`, and logs the first of each stage at WARN level.
    pub fn audit_error(&self, stage: AuditStage, what: &dyn std::fmt::Display) {
        let before = self.errors[stage.index()].fetch_add(1, Ordering::Relaxed);
        if before == 0 {
            tracing_log(stage, what);
        }
    }

    /// Statements run outside any call scope, by operation, since the process started.
    pub fn unattributed_statements(&self, operation: Operation) -> u64 {
        self.unattributed[operation.index()].load(Ordering::Relaxed)
    }

    /// Row changes no call was bound to, since the process started.
    pub fn unattributed_row_changes(&self) -> u64 {
        self.unattributed_rows.load(Ordering::Relaxed)
    }

    /// Connections handed out for set-up work since the process started (see
    /// [`AuditStats::setup_acquire`]).
    pub fn setup_acquires(&self) -> u64 {
        self.setup_acquires.load(Ordering::Relaxed)
    }

    /// Connections handed out through sqlx's `Acquire` inside a call scope since the process
    /// started (see [`AuditStats::unaudited_acquire`]).
    pub fn unaudited_acquires(&self) -> u64 {
        self.unaudited_acquires.load(Ordering::Relaxed)
    }

    /// Audit failures at `stage` since the process started.
    pub fn audit_errors(&self, stage: AuditStage) -> u64 {
        self.errors[stage.index()].load(Ordering::Relaxed)
    }
}

fn tracing_log(stage: AuditStage, what: &dyn std::fmt::Display) {
    tracing::warn!(
        stage = stage.as_str(),
        "hintaudit: audit failure: {what} (further failures at this stage are only counted)"
    );
}

//! What one tool call did: statements, row changes, transaction observations, outbound
//! reaches and effects the server reports itself.
//!
//! An [`Effect`] is filled while the call runs (see [`crate::CallEffects`]) and handed to the
//! [`crate::Judge`] when the call ends. Evidence sources and their precision
//! follow [design: evidence](../../../docs/design.md#3-evidence).

use std::sync::Arc;

use crate::enforce::Refusal;
pub use crate::outbound::OutboundReach;

/// What a SQL statement does, as statement analysis classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// `SELECT`, `VALUES`, `WITH ... SELECT`, `SHOW`, `EXPLAIN`.
    Select,
    /// `SELECT ... FOR UPDATE` / `FOR SHARE`: a lock, not a write.
    SelectForUpdate,
    /// `INSERT` without a conflict clause that updates.
    Insert,
    /// `INSERT ... ON CONFLICT`, `ON DUPLICATE KEY UPDATE`, `REPLACE`, `INSERT OR REPLACE`,
    /// `MERGE`.
    Upsert,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `TRUNCATE`.
    Truncate,
    /// `CREATE`, `ALTER`, `DROP`, `RENAME` and other schema changes.
    Ddl,
    /// `CALL` of a stored procedure.
    Call,
    /// `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`.
    Transaction,
    /// Session settings that touch no table: `SET`, `PRAGMA` reads, `USE`.
    Session,
    /// The statement could not be parsed: a possible write (confidence likely).
    Unknown,
}

impl Operation {
    /// The operation name for `db.operation.name` and metric labels (OpenTelemetry database
    /// semantic conventions use the SQL keyword).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Select => "SELECT",
            Operation::SelectForUpdate => "SELECT FOR UPDATE",
            Operation::Insert => "INSERT",
            Operation::Upsert => "UPSERT",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Truncate => "TRUNCATE",
            Operation::Ddl => "DDL",
            Operation::Call => "CALL",
            Operation::Transaction => "TRANSACTION",
            Operation::Session => "SESSION",
            Operation::Unknown => "UNKNOWN",
        }
    }

    /// Every operation, for pre-allocating per-operation counters.
    pub const ALL: [Operation; 12] = [
        Operation::Select,
        Operation::SelectForUpdate,
        Operation::Insert,
        Operation::Upsert,
        Operation::Update,
        Operation::Delete,
        Operation::Truncate,
        Operation::Ddl,
        Operation::Call,
        Operation::Transaction,
        Operation::Session,
        Operation::Unknown,
    ];

    /// The index of this operation in [`Operation::ALL`].
    pub fn index(self) -> usize {
        Operation::ALL.iter().position(|o| *o == self).unwrap_or(0)
    }

    /// Whether the statement by its kind changes table data or schema.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Operation::Insert
                | Operation::Upsert
                | Operation::Update
                | Operation::Delete
                | Operation::Truncate
                | Operation::Ddl
        )
    }
}

/// How a statement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementOutcome {
    /// It ran without error. Whether its changes committed is told by row changes and
    /// transaction observations.
    Ok,
    /// The driver returned an error.
    Failed,
    /// It ran, and the transaction it ran in rolled back: whatever it wrote was undone.
    RolledBack,
}

/// One statement a call ran, with what statement analysis and the driver said of it.
///
/// What statement analysis found is shared (`Arc`): the audited pool records a statement by
/// cloning its cached classification, which then costs reference counts, not allocations.
/// Build the lists from a `Vec` with `.into()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementEffect {
    /// The operation.
    pub operation: Operation,
    /// Tables written (targets of INSERT/UPDATE/DELETE/TRUNCATE/DDL), lower-cased as written,
    /// schema-qualified when the statement qualified them.
    pub tables: Arc<[String]>,
    /// Tables read (FROM, JOIN, subqueries), lower-cased.
    pub read_tables: Arc<[String]>,
    /// Columns assigned by `UPDATE ... SET` or an upsert's update clause, lower-cased.
    pub set_columns: Arc<[String]>,
    /// Whether an upsert may overwrite existing rows (`DO UPDATE`, `REPLACE`), as opposed to
    /// `DO NOTHING` / `INSERT IGNORE`.
    pub overwrites: bool,
    /// Evidence that a SET cannot converge on repeat, e.g. `views = views + 1`: columns set
    /// from themselves by arithmetic or concatenation, or from a non-deterministic function.
    /// Each entry is `(column, expression text)`.
    pub non_convergent: Arc<[(String, String)]>,
    /// Functions called that are not known to be pure built-ins (lower-cased names): they
    /// may write (a PL/pgSQL function called from SELECT).
    pub opaque_calls: Arc<[String]>,
    /// Whether this is `DROP` (of a table, view, schema…), a destructive DDL.
    pub drops: bool,
    /// Rows affected as the driver reported it, where that is trustworthy (PostgreSQL and
    /// MySQL writes). Never set on SQLite, where it is stale. On a `TRUNCATE` (which no
    /// driver counts), `Some(0)` with [`StatementEffect::observed`] says the database log
    /// showed the table already empty: a truncation that removed nothing.
    pub rows_affected: Option<u64>,
    /// Whether row-level observation (SQLite hooks, the PostgreSQL oracle) covered this
    /// statement, so that the absence of row changes means it changed nothing.
    pub observed: bool,
    /// Session-only objects the statement created (temporary tables): writes to them in the
    /// same call are no effect on the environment.
    pub session_tables: Arc<[String]>,
    /// Set when the statement is not proved read-only and nothing observed it: why it may
    /// write, and why it was not observed (`calls f, not known to be read-only; not
    /// observed: the text ends its own transaction`). A statement that may write and was not
    /// seen is reported (likely), never passed.
    pub unobserved: Option<Arc<str>>,
    /// How the statement ended.
    pub outcome: StatementOutcome,
    /// A low-cardinality summary, as OpenTelemetry's `db.query.summary`: `SELECT appointments`.
    pub summary: Arc<str>,
}

impl StatementEffect {
    /// A statement with the given operation and written tables, and nothing else known.
    pub fn new(operation: Operation, tables: Vec<String>) -> Self {
        let summary: Arc<str> = if tables.is_empty() {
            operation.as_str().into()
        } else {
            format!("{} {}", operation.as_str(), tables.join(" ")).into()
        };
        StatementEffect {
            operation,
            tables: tables.into(),
            read_tables: Arc::new([]),
            set_columns: Arc::new([]),
            overwrites: false,
            non_convergent: Arc::new([]),
            opaque_calls: Arc::new([]),
            drops: false,
            rows_affected: None,
            observed: false,
            session_tables: Arc::new([]),
            unobserved: None,
            outcome: StatementOutcome::Ok,
            summary,
        }
    }
}

/// The kind of a row change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowOperation {
    /// A row was inserted.
    Insert,
    /// An existing row was updated.
    Update,
    /// A row was deleted.
    Delete,
}

impl RowOperation {
    /// `insert`, `update` or `delete`: the metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RowOperation::Insert => "insert",
            RowOperation::Update => "update",
            RowOperation::Delete => "delete",
        }
    }
}

/// What row images say about an update.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RowImage {
    /// No row images (the preupdate hook is off, or the backend has none).
    #[default]
    Unknown,
    /// Old and new rows are equal.
    Unchanged,
    /// These columns (lower-cased names; empty when the names are not known) differ.
    Changed(Vec<String>),
}

/// One row change, as a database hook or oracle reported it: confirmed evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowChange {
    /// The table, lower-cased.
    pub table: String,
    /// Insert, update or delete.
    pub operation: RowOperation,
    /// The index in [`Effect::statements`] of the statement that caused it, where known.
    pub statement: Option<usize>,
    /// True once the change committed; false when it was rolled back.
    pub committed: bool,
    /// What row images say, for updates.
    pub image: RowImage,
    /// Whether a trigger made the change (SQLite preupdate depth > 0), where known.
    pub nested: Option<bool>,
    /// The row's identity within its table where the hook gives one (SQLite's rowid), so
    /// that an update or delete of a row this call inserted earlier is known not to overwrite
    /// or remove anything that existed before the call (see
    /// [design: rules](../../../docs/design.md#2-rules)). `None` where unknown.
    pub row_id: Option<i64>,
}

/// Per-table counts a transaction oracle read (PostgreSQL `pg_stat_xact_user_tables`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableWrites {
    /// The table, lower-cased, unqualified.
    pub table: String,
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Rows deleted.
    pub deleted: u64,
}

/// Where a [`TransactionObservation`]'s counts come from: the words its evidence uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObservationSource {
    /// The PostgreSQL transaction oracle (`pg_stat_get_xact_tuples_*`), or a direct write's
    /// command tag standing in for it: evidence reads `oracle: t +1 ~0 -0`.
    #[default]
    Oracle,
    /// Rows affected as the driver counted them (MySQL's upsert convention): evidence reads
    /// `rows affected: t +0 ~1 -0`.
    RowsAffected,
    /// The database's own log (PostgreSQL logical decoding, MySQL's row binlog), read by
    /// `hintaudit proxy` and attributed to the call by the log's positions: evidence reads
    /// `database log: t +1 ~0 -0`. The counts are the commit's, but whose commit it was rests
    /// on timing (the server may have background work): likely.
    Log,
}

impl ObservationSource {
    /// `oracle` or `rows affected`: the evidence's words.
    pub fn as_str(self) -> &'static str {
        match self {
            ObservationSource::Oracle => "oracle",
            ObservationSource::RowsAffected => "rows affected",
            ObservationSource::Log => "database log",
        }
    }

    /// How strong a committed count from this source is: confirmed, except for the
    /// database log, whose attribution to a call is likely.
    pub fn confidence(self) -> crate::finding::Confidence {
        match self {
            ObservationSource::Log => crate::finding::Confidence::Likely,
            _ => crate::finding::Confidence::Confirmed,
        }
    }
}

/// What a transaction oracle said of one transaction (PostgreSQL; see
/// [design: evidence](../../../docs/design.md#3-evidence)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransactionObservation {
    /// `pg_current_xact_id_if_assigned()` was non-NULL: the transaction wrote something.
    pub wrote: bool,
    /// Tables with non-zero counts.
    pub tables: Vec<TableWrites>,
    /// Sequences the transaction took for a change (`nextval`, `setval`, `ALTER SEQUENCE`:
    /// on PostgreSQL, a `ROW EXCLUSIVE` or stronger lock on the sequence), lower-cased,
    /// unqualified; those owned by a table the transaction wrote are left out (an insert's
    /// serial default). Sequences are not transactional: a rollback does not undo them.
    pub sequences: Vec<String>,
    /// Whether the transaction committed (false: rolled back).
    pub committed: bool,
    /// Where the counts come from.
    pub source: ObservationSource,
    /// Updates among `tables`' counts whose old row was known beside the new one (the
    /// database log's row images, [`ObservationSource::Log`]), by table and by what the images
    /// say; the rest of the updates have no image. Empty from the oracle and rows affected.
    pub images: Vec<ImagedUpdates>,
}

/// Committed updates of one table whose old and new rows were both known, with what comparing
/// them says: [`RowImage::Unchanged`] (re-set to what it held) or [`RowImage::Changed`] with
/// the columns that differ, judged by the rules row changes are ([`RowChange::image`]).
/// Only the comparison is kept: never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagedUpdates {
    /// The table, lower-cased, unqualified.
    pub table: String,
    /// What the images say: never [`RowImage::Unknown`] (updates without an image are not
    /// listed).
    pub image: RowImage,
    /// Rows, at least 1.
    pub rows: u64,
}

/// The kind of change an explicitly reported effect made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplicitChange {
    /// Something was added (a file created, a message queued, a mail sent).
    Add,
    /// Something existing was overwritten.
    Overwrite,
    /// Something was deleted.
    Delete,
}

/// An effect the server reports itself (files, queues, mail), via the explicit API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplicitEffect {
    /// What was changed, e.g. `file:/var/exports/a.csv` or `queue:mail`.
    pub target: String,
    /// How it was changed.
    pub change: ExplicitChange,
}

/// Everything one tool call did that hintaudit observed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effect {
    /// Statements, in the order they started.
    pub statements: Vec<StatementEffect>,
    /// Row changes, in the order the hooks reported them.
    pub row_changes: Vec<RowChange>,
    /// Transaction oracle observations.
    pub transactions: Vec<TransactionObservation>,
    /// Outbound requests.
    pub outbound: Vec<OutboundReach>,
    /// Effects the server reported itself.
    pub explicit: Vec<ExplicitEffect>,
    /// Changes of watched files (`hintaudit proxy --watch`, `hintaudit verify --watch`),
    /// judged on content: an evidence kind of its own, a file system being no
    /// `db.system.name`.
    pub files: Vec<crate::files::FileChange>,
    /// Who saw [`Effect::files`]: the proxy's live watch (the default) or verify's
    /// snapshots; it words their evidence and sets its confidence.
    pub files_source: crate::files::FileSource,
    /// Connections (or sqlx transactions) the call took through sqlx's `Acquire`, whose
    /// statements were not audited one by one (hintaudit-sqlx): SQLite still attributes
    /// their row changes to the call (`RowChange::statement` `None`); on other backends the
    /// call's evidence is incomplete.
    pub unaudited_acquires: u32,
    /// What enforce mode refused (statements, outbound requests): `enforced` findings. A
    /// refused statement is not a write attempt.
    pub refusals: Vec<Refusal>,
    /// Which sources fell short of the call's interval (pending or incomplete): empty when
    /// every source read it whole, as in-process. Not an effect: [`Effect::is_empty`]
    /// ignores it.
    pub completeness: crate::completeness::Completeness,
}

impl Effect {
    /// Whether nothing at all was observed.
    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
            && self.row_changes.is_empty()
            && self.transactions.is_empty()
            && self.outbound.is_empty()
            && self.explicit.is_empty()
            && self.files.is_empty()
            && self.unaudited_acquires == 0
            && self.refusals.is_empty()
    }

    /// A one-line summary for tables: `3 stmts (SELECT 2, UPDATE 1); rows: appointments update 1`.
    pub fn summary(&self) -> String {
        use std::collections::BTreeMap;
        let mut ops: BTreeMap<&str, usize> = BTreeMap::new();
        for s in &self.statements {
            *ops.entry(s.operation.as_str()).or_default() += 1;
        }
        let mut rows: BTreeMap<(String, &str, bool), usize> = BTreeMap::new();
        for r in &self.row_changes {
            *rows
                .entry((r.table.clone(), r.operation.as_str(), r.committed))
                .or_default() += 1;
        }
        let mut out = if ops.is_empty() {
            "no statements".to_owned()
        } else {
            let ops: Vec<String> = ops.iter().map(|(k, v)| format!("{k} {v}")).collect();
            ops.join(", ")
        };
        if !rows.is_empty() {
            let rows: Vec<String> = rows
                .iter()
                .map(|((t, op, committed), n)| {
                    let rb = if *committed { "" } else { " (rolled back)" };
                    format!("{t} {op} {n}{rb}")
                })
                .collect();
            out.push_str("; rows: ");
            out.push_str(&rows.join(", "));
        }
        for t in &self.transactions {
            for w in &t.tables {
                out.push_str(&format!(
                    "; {}: {} +{} ~{} -{}",
                    t.source.as_str(),
                    w.table,
                    w.inserted,
                    w.updated,
                    w.deleted
                ));
            }
            for q in &t.sequences {
                out.push_str(&format!("; sequence {q} changed"));
            }
        }
        if !self.outbound.is_empty() {
            out.push_str(&format!("; outbound {}", self.outbound.len()));
        }
        if !self.explicit.is_empty() {
            out.push_str(&format!("; reported {}", self.explicit.len()));
        }
        if !self.refusals.is_empty() {
            out.push_str(&format!("; refused {}", self.refusals.len()));
        }
        if self.unaudited_acquires > 0 {
            out.push_str(&format!(
                "; statements through sqlx's Acquire not audited one by one ({})",
                self.unaudited_acquires
            ));
        }
        out
    }
}

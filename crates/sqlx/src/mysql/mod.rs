//! The MySQL and MariaDB backend: statements classified with sqlparser's MySQL dialect, rows
//! affected from the OK packet, upserts told apart by the affected-rows convention
//! (`upsert`), and writes hidden in triggers and stored routines found by expanding each
//! statement through the triggers it fires and the routines it calls (`catalog`, `derive`).
//!
//! # Evidence ([design: evidence](../../../../docs/design.md#3-evidence))
//!
//! - Rows affected of `INSERT`/`UPDATE`/`DELETE`/upserts: `confirmed` for the statement's own
//!   table. sqlx connects with `CLIENT_FOUND_ROWS`, so an `UPDATE` counts the rows it
//!   matched.
//! - An upsert whose `VALUES` rows number `r` and that affected `n > r` rows overwrote
//!   `n - r` rows: recorded as per-table counts (a [`TransactionObservation`] whose
//!   evidence reads `oracle: t +0 ~k -0`), `confirmed`; `n ≤ r`: no overwrite.
//! - Writes in triggers and routines, read from `information_schema` once per pool (and again
//!   after DDL or `USE`): derived statements of the call, `likely`, whose summary says how
//!   they were found (`DELETE holds (via trigger t on bookings)`).
//! - A text of several statements is split with sqlparser (`split`) and each statement
//!   recorded and judged with the rows affected of its own result.
//! - A write in a transaction that rolls back (an [`crate::AuditedTransaction`] or a raw
//!   `BEGIN`/`START TRANSACTION` … `ROLLBACK`) is marked failed: an attempt.
//!
//! `db.system.name` is `mariadb` when `SELECT VERSION()` says MariaDB, else `mysql`
//! ([`hintaudit_core::DatabaseKind::system_name_of`]); it is read with the catalog, before
//! the pool's first statement.

mod catalog;
/// Rows a statement affected, as the OK packets count them.
mod counted;
mod derive;
mod pending;
mod split;
mod upsert;

use std::sync::{Arc, Mutex};

use hintaudit_core::{
    AuditStage, CallEffects, DatabaseKind, ObservationSource, Operation, StatementOutcome,
    TransactionObservation, semconv, stats,
};
use sqlx::Error;
use sqlx::error::DatabaseError;
use sqlx::mysql::{MySql, MySqlConnection};

use crate::backend::{Answer, Backend, Ctx, InTransaction, Read, ReadOnlySql, TxEnd, sealed};
use crate::classify::{Classification, SqlDialect, TxControl, is_dml};
use crate::drive::{Live, unfinished};
use crate::execute::{AuditedQuery, Sink, StatementEnd};
use catalog::Catalog;
use counted::Counted;
use pending::Pending;

/// A MySQL pool's audit state: the catalog of triggers and routines (and what the server
/// calls itself), loaded before the first statement and again after DDL.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct MySqlPoolState {
    catalog: Mutex<Option<Arc<Catalog>>>,
}

impl MySqlPoolState {
    fn catalog(&self) -> Option<Arc<Catalog>> {
        self.catalog.lock().ok().and_then(|c| c.clone())
    }

    fn set(&self, catalog: Option<Arc<Catalog>>) {
        if let Ok(mut c) = self.catalog.lock() {
            *c = catalog;
        }
    }

    /// The catalog, loaded on `conn` when there is none yet. A failed load is counted once
    /// and leaves an empty catalog (no trigger evidence) until the next DDL.
    async fn ensure(&self, conn: &mut MySqlConnection) -> Arc<Catalog> {
        if let Some(c) = self.catalog() {
            return c;
        }
        let c = Arc::new(match catalog::load(conn).await {
            Ok(c) => c,
            Err(e) => {
                stats().audit_error(AuditStage::Oracle, &e);
                Catalog {
                    system: MySql::KIND.system_name(),
                    ..Catalog::default()
                }
            }
        });
        self.set(Some(c.clone()));
        c
    }
}

/// A held MySQL connection's audit state: a transaction the caller opened with a raw
/// `BEGIN`/`START TRANSACTION`.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct MySqlConnState {
    raw: Option<Pending>,
}

/// An [`crate::AuditedTransaction`]'s audit state.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct MySqlTxState {
    pending: Pending,
}

impl sealed::Sealed for MySql {}

/// A statement's connection and audit state ([`Backend::Route`]).
#[doc(hidden)]
pub struct Run<'e> {
    conn: &'e mut MySqlConnection,
    state: &'e mut MySqlConnState,
    tx: Option<&'e mut MySqlTxState>,
    pool: &'e MySqlPoolState,
    catalog: Arc<Catalog>,
    /// Its attribution and rows, finished as the caller left it when dropped part-way.
    live: Live<Counted>,
    /// Its text, where it is read again once it ran ([`text_needed`]).
    sql: Option<String>,
}

async fn start(ctx: Ctx<'_, MySql>) -> Run<'_> {
    let Ctx {
        conn,
        state,
        tx,
        pool,
        att,
        ..
    } = ctx;
    let catalog = pool.ensure(conn).await;
    att.span.record(semconv::DB_SYSTEM_NAME, catalog.system);
    Run {
        conn,
        state,
        tx,
        pool,
        catalog,
        live: unfinished::<MySql, Counted>(att),
        sql: None,
    }
}

impl Run<'_> {
    /// The open transaction's pending state, if any.
    fn pending(&mut self) -> Option<&mut Pending> {
        match self.tx.as_deref_mut() {
            Some(tx) => Some(&mut tx.pending),
            None => self.state.raw.as_mut(),
        }
    }

    /// Records how the text ended (`results`: rows affected per result, in order; `failed`:
    /// the driver answered with an error after them), and what follows from each of its
    /// statements: upsert counts, derived writes, the raw transaction state, a stale
    /// catalog. A text of several statements is judged per statement (see `split`).
    fn finish(&mut self, sql: &str, results: &[u64], failed: bool) {
        let total: u64 = results.iter().sum();
        let Some(pieces) = split::statements(&self.live.att.class, sql) else {
            let class = self.live.att.class.clone();
            let end = self.statement(
                &class,
                self.live.att.sink.clone(),
                sql,
                (!failed).then_some(total),
            );
            self.live.att.finish(end);
            return;
        };
        // The span tells the whole text; the call's effect, each statement.
        self.live.att.finish(StatementEnd {
            outcome: if failed {
                StatementOutcome::Failed
            } else {
                StatementOutcome::Ok
            },
            rows_affected: pieces
                .iter()
                .any(|(c, _)| is_dml(c.effect.operation))
                .then_some(total),
            observed: false,
        });
        for (i, (class, text)) in pieces.iter().enumerate() {
            let sink = self.live.att.sink.as_ref().map(|sink| {
                let effects = sink.effects.clone();
                if i == 0 {
                    sink.update(|s| *s = class.effect.clone());
                    return sink.clone();
                }
                let index = Some(effects.record_statement(class.effect.clone()));
                Sink { effects, index }
            });
            // MySQL stops at the first failing statement: it and those after it changed
            // nothing.
            let rows = match results.get(i) {
                Some(n) => Some(*n),
                None if failed => None,
                None => Some(0),
            };
            let end = self.statement(class, sink.clone(), text, rows);
            if let Some(sink) = sink {
                sink.update(|s| {
                    s.outcome = end.outcome;
                    s.rows_affected = end.rows_affected;
                    s.observed = end.observed;
                });
            }
        }
    }

    /// One statement's end (`rows` affected; `None`: it failed or never ran), and what
    /// follows from it.
    fn statement(
        &mut self,
        class: &Classification,
        sink: Option<Sink>,
        sql: &str,
        rows: Option<u64>,
    ) -> StatementEnd {
        let write = class.effect.operation.is_write();
        let Some(rows) = rows else {
            if let Some(sink) = sink
                && let Some(p) = self.pending()
            {
                p.statement(sink, write);
            }
            return StatementEnd::FAILED;
        };
        let op = class.effect.operation;
        let counts = upsert::judge(class, sql, rows);
        if let (Some(upsert::Upsert::NoOverwrite), Some(sink)) = (&counts, &sink) {
            // The convention says nothing was overwritten: not a "may have overwritten".
            sink.update(|s| s.overwrites = false);
        }
        let overwrote = match counts {
            Some(upsert::Upsert::Overwrote(w)) => Some(w),
            _ => None,
        };
        let end = StatementEnd {
            outcome: StatementOutcome::Ok,
            rows_affected: class.own_row_count.then_some(rows),
            observed: overwrote.is_some(),
        };
        if let Some(sink) = sink {
            let effects = sink.effects.clone();
            if let Some(p) = self.pending() {
                p.statement(sink, write);
            }
            if let Some(w) = overwrote {
                let obs = TransactionObservation {
                    wrote: true,
                    tables: vec![w],
                    committed: true,
                    source: ObservationSource::RowsAffected,
                    ..Default::default()
                };
                match self.pending() {
                    Some(p) => p.counts(effects.clone(), obs),
                    None => effects.record_transaction(obs),
                }
            }
            self.derive(&effects, class, sql, rows);
        }
        match class.tx_control {
            Some(TxControl::Begin) if self.tx.is_none() => {
                // BEGIN inside a transaction commits it first (MySQL).
                self.end_raw(true);
                self.state.raw = Some(Pending::default());
            }
            Some(TxControl::Commit) => self.end_raw(true),
            Some(TxControl::Rollback) => self.end_raw(false),
            _ => {}
        }
        if matches!(op, Operation::Ddl | Operation::Session) || unparsed_ddl(class) {
            // DDL may add triggers or routines (and commits implicitly; sqlparser reads no
            // `CREATE TRIGGER … BEGIN … END`, so an unparseable text counts too); USE
            // changes the database.
            self.pool.set(None);
            if op == Operation::Ddl {
                self.end_raw(true);
            }
        }
        end
    }

    fn end_raw(&mut self, committed: bool) {
        if self.tx.is_none()
            && let Some(mut p) = self.state.raw.take()
        {
            p.end(committed);
        }
    }

    /// Records the writes the statement's triggers and routines may have made.
    fn derive(&mut self, effects: &Arc<CallEffects>, class: &Classification, sql: &str, rows: u64) {
        for effect in derive::derived(&self.catalog, class, sql, rows) {
            let write = effect.operation.is_write();
            let index = effects.record_statement(effect);
            if let Some(p) = self.pending() {
                p.statement(
                    Sink {
                        effects: effects.clone(),
                        index: Some(index),
                    },
                    write,
                );
            }
        }
    }
}

impl Backend for MySql {
    const KIND: DatabaseKind = DatabaseKind::MySql;
    const DIALECT: SqlDialect = SqlDialect::MySql;
    /// `mysql` or `mariadb`, recorded once the server said which it is (see `start`).
    const SPAN_SYSTEM_NAME: Option<&'static str> = None;
    type PoolState = MySqlPoolState;
    type ConnState = MySqlConnState;
    type TxState = MySqlTxState;
    type Route<'e> = Run<'e>;
    type Rows = Counted;
    const READ_ONLY: ReadOnlySql = ReadOnlySql {
        begin: Some("START TRANSACTION READ ONLY"),
        // MariaDB names it `tx_read_only`, MySQL 8 `transaction_read_only`.
        probe: Some(
            "SHOW SESSION VARIABLES WHERE Variable_name IN ('tx_read_only', \
             'transaction_read_only') AND Value = 'OFF'",
        ),
        on: "SET SESSION TRANSACTION READ ONLY",
        off: "SET SESSION TRANSACTION READ WRITE",
        reset: "SET SESSION TRANSACTION READ WRITE",
        in_tx: InTransaction::RefuseUnproved,
    };

    /// `ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION`, SQLSTATE `25006`.
    fn is_read_only_refusal(e: &dyn DatabaseError) -> bool {
        crate::backend::sqlstate_read_only(e)
    }

    async fn before<'e, 'q>(
        ctx: Ctx<'e, Self>,
        query: &'q AuditedQuery<Self>,
        _answer: &'q Answer<'e, Self>,
    ) -> Result<(Run<'e>, Read), Error>
    where
        'e: 'q,
    {
        let mut run = start(ctx).await;
        run.sql = text_needed(&run.live.att.class).then(|| query.text().to_owned());
        // Every result is read, for its rows affected, also for `fetch_optional`.
        Ok((run, Read::Drain))
    }

    fn statement<'r>(run: &'r mut Run<'_>) -> (&'r mut MySqlConnection, &'r mut Counted) {
        (&mut *run.conn, &mut run.live.rows)
    }

    async fn after<'e>(mut run: Run<'e>, result: Result<(), Error>) -> Result<(), Error>
    where
        Self: 'e,
    {
        run.live.defuse();
        let results = run.live.rows.results();
        let sql = run.sql.take();
        run.finish(
            sql.as_deref().unwrap_or_default(),
            &results,
            result.is_err(),
        );
        result
    }

    fn after_end(tx: &mut MySqlTxState, end: TxEnd, answer: &Result<(), Error>) {
        tx.pending.end(end == TxEnd::Commit && answer.is_ok());
    }

    /// Dropped without COMMIT or ROLLBACK: sqlx rolls back.
    fn dropped_unended(tx: &mut MySqlTxState) {
        tx.pending.end(false);
    }
}

/// An unparseable text that starts like DDL (`CREATE TRIGGER … BEGIN … END`, which sqlparser
/// does not read): the catalog may be stale after it.
fn unparsed_ddl(class: &Classification) -> bool {
    let first = class.sanitized.split_whitespace().next().unwrap_or("");
    class.effect.operation == Operation::Unknown
        && ["CREATE", "ALTER", "DROP", "RENAME", "USE"]
            .iter()
            .any(|k| first.eq_ignore_ascii_case(k))
}

/// Whether the statement's text is read again once it ran: upserts (their `VALUES` rows),
/// `CALL` (the procedure's name) and texts of several statements. Others skip the copy.
fn text_needed(class: &Classification) -> bool {
    matches!(class.effect.operation, Operation::Upsert | Operation::Call)
        || class
            .sanitized
            .trim_end()
            .trim_end_matches(';')
            .contains(';')
}

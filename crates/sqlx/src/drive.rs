//! The statement itself, between a backend's start and its end: [`drain`] reads the
//! driver's answer to its end, counting the rows affected ([`RowCount`]) and handing the
//! items on as the caller asked ([`Answer`]): the one drain-and-count loop of every backend,
//! in autocommit, in the PostgreSQL oracle's transaction and in an audited transaction.
//! [`unfinished`] finishes a statement's attribution when its future is dropped part-way.

use futures_util::TryStreamExt;
use hintaudit_core::StatementOutcome;
use sqlx::{Database, Either, Error, Executor};

use crate::backend::{Answer, Backend, Step};
use crate::execute::{Attribution, AuditedQuery, StatementEnd};
use crate::guard::Guard;

/// Rows a statement affected, counted from its answer as it is read.
pub(crate) trait RowCount<DB: Database> {
    /// Counts one item of the answer.
    fn add(&mut self, item: &Step<DB>);
    /// Rows affected so far, over all results.
    fn total(&self) -> u64;
}

/// The driver's count: the rows affected of every result, added up.
impl<DB: Database> RowCount<DB> for u64
where
    DB::QueryResult: RowsAffected,
{
    fn add(&mut self, item: &Step<DB>) {
        if let Either::Left(r) = item {
            *self += r.rows_affected();
        }
    }

    fn total(&self) -> u64 {
        *self
    }
}

/// `rows_affected` of every driver's result, which sqlx has on each type, not in a trait.
pub(crate) trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

#[cfg(feature = "sqlite")]
impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::sqlite::SqliteQueryResult::rows_affected(self)
    }
}

#[cfg(feature = "postgres")]
impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::postgres::PgQueryResult::rows_affected(self)
    }
}

#[cfg(feature = "mysql")]
impl RowsAffected for sqlx::mysql::MySqlQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::mysql::MySqlQueryResult::rows_affected(self)
    }
}

/// Runs `query` on `conn` and reads its answer to the end: each item counted into `rows`,
/// then handed to `answer`. Stops at the driver's first error, which it returns.
pub(crate) async fn drain<DB: Backend>(
    conn: &mut DB::Connection,
    query: AuditedQuery<DB>,
    rows: &mut impl RowCount<DB>,
    answer: &mut Answer<'_, DB>,
) -> Result<(), Error> {
    let mut s = DB::raw(conn).fetch_many(query);
    while let Some(item) = s.try_next().await? {
        rows.add(&item);
        match answer {
            Answer::Stream(y) => y.send(item).await,
            Answer::First(first) => {
                if let (None, Either::Right(row)) = (&first, item) {
                    *first = Some(row);
                }
            }
            Answer::Buffer { items, rows } => match item {
                Either::Right(_) if *rows == 0 => {}
                Either::Right(_) => {
                    *rows -= 1;
                    items.push(item);
                }
                Either::Left(_) => items.push(item),
            },
        }
    }
    Ok(())
}

/// The rows a statement counts (`C`), finishing `att` when dropped before [`Guard::defuse`]:
/// the caller stopped reading, which is no failure of the statement; the rows affected so
/// far are recorded for DML only. PostgreSQL statements the oracle does not wrap, MySQL.
pub(crate) fn unfinished<'a, DB: Database, C: RowCount<DB> + Default>(
    att: &'a Attribution,
) -> Guard<C, impl FnOnce(&mut C) + 'a> {
    Guard::new(C::default(), move |rows: &mut C| {
        att.finish(StatementEnd {
            outcome: StatementOutcome::Ok,
            rows_affected: crate::classify::is_dml(att.class.effect.operation)
                .then_some(rows.total()),
            observed: false,
        })
    })
}

//! The one drive loop of every backend, [`run`]: the backend's [`Backend::before`] picks
//! the statement's route, the statement is read to its end by [`drain`] (each item counted
//! into the backend's [`RowCount`] and handed on as the caller asked, [`Answer`]), or by
//! `fetch_optional` where the route says so ([`Read`]), then the backend's
//! [`Backend::after`] takes the drained result. In autocommit, in the PostgreSQL oracle's
//! transaction and in an audited transaction alike. [`unfinished`] finishes a statement's
//! attribution when its future is dropped part-way.

use futures_util::TryStreamExt;
use hintaudit_core::StatementOutcome;
use sqlx::{Database, Error, Executor};

use crate::backend::{Answer, Backend, Ctx, Read};
use crate::execute::{Attribution, AuditedQuery, StatementEnd};
use crate::guard::Guard;
use crate::rows::RowCount;

/// Runs one audited statement: [`Backend::before`], the statement read as the route says
/// ([`Read`]), [`Backend::after`] with its result; its results and rows go where `answer`
/// says. Not boxed, and not in the statement's span: the caller boxes and instruments once,
/// around whatever else it does for the statement (the pool acquires a connection), instead
/// of a stream inside a stream.
pub(crate) async fn run<'e, 'a: 'e, DB: Backend>(
    ctx: Ctx<'e, DB>,
    query: AuditedQuery<DB>,
    answer: &'e mut Answer<'a, DB>,
) -> Result<(), Error> {
    let (mut route, read) = DB::before(ctx, &query, answer).await?;
    let (conn, rows) = DB::statement(&mut route);
    let mut held = None;
    let result = match read {
        Read::Drain => drain(conn, query, rows, answer).await,
        Read::Hold { rows: keep } => {
            let held = held.insert(Answer::Buffer {
                items: Vec::new(),
                rows: keep,
            });
            drain(conn, query, rows, held).await
        }
        Read::FirstRow { counts_row } => {
            // sqlx's own fetch_optional: the statement stops at its first row, as it does
            // unaudited.
            DB::raw(conn).fetch_optional(query).await.map(|row| {
                if counts_row && row.is_some() {
                    rows.add_rows(1);
                }
                if let Answer::First(first) = answer {
                    *first = row;
                }
            })
        }
    };
    DB::after(route, result).await?;
    if let Some(held) = held {
        answer.deliver(held.into_items()).await;
    }
    Ok(())
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
        answer.offer(item).await;
    }
    Ok(())
}

/// A statement's attribution and the rows counted so far (`C`), in a [`Guard`].
pub(crate) struct Counting<C> {
    pub(crate) att: Attribution,
    pub(crate) rows: C,
}

/// [`Counting`] that runs its function when dropped before [`Guard::defuse`].
pub(crate) type Live<C> = Guard<Counting<C>, fn(&mut Counting<C>)>;

/// `att` and its rows (`C`), finishing `att` when dropped before [`Guard::defuse`]: the
/// caller stopped reading, which is no failure of the statement; the rows affected so far
/// are recorded for DML only ([`stopped`]). PostgreSQL statements the oracle does not wrap,
/// MySQL.
pub(crate) fn unfinished<DB: Database, C: RowCount<DB> + Default>(att: Attribution) -> Live<C> {
    Guard::new(
        Counting {
            att,
            rows: C::default(),
        },
        stopped::<DB, C>,
    )
}

/// The caller stopped reading the statement: see [`unfinished`].
pub(crate) fn stopped<DB: Database, C: RowCount<DB>>(c: &mut Counting<C>) {
    let att = &c.att;
    att.finish(StatementEnd {
        outcome: StatementOutcome::Ok,
        rows_affected: crate::classify::is_dml(att.class.effect.operation)
            .then_some(c.rows.total()),
        observed: false,
    })
}

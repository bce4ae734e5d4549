//! `Executor for &AuditedPool`: each statement runs on a connection taken from the pool for it
//! alone, acquired inside the statement's span. Everything else a statement needs is the same
//! as on a held connection: the prologue is [`Shared::start`], the connection an
//! [`AuditedConnection`] released when the statement ends.

use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use futures_util::{FutureExt, TryStreamExt};
use sqlx::{Describe, Either, Error, Execute, Executor, SqlStr};

use crate::backend::{Answer, keep_first};
use crate::backend::{Backend, describe_raw, prepare_raw};
use crate::execute::{Attribution, AuditedQuery, StatementEnd, boxed_in_span};
use crate::guard::Guard;
use crate::held::connection::AuditedConnection;
use crate::held::{AuditedConn, Raw};
use crate::pool::AuditedPool;
use crate::pool::inner::Shared;
use crate::stream::DetachableStream;

impl<'p, DB: Backend> Executor<'p> for &'_ AuditedPool<DB> {
    type Database = DB;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<DB::QueryResult, DB::Row>, Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, DB>,
    {
        let statement = Pooled::start(&self.shared, query);
        let span = statement.att.span.clone();
        // Detachable: the producer owns its connection, so a backend may finish the
        // statement after the caller dropped the stream (PostgreSQL: the oracle's COMMIT).
        Box::pin(DetachableStream::new(move |y| {
            let run = async move {
                let (mut conn, att, query) = statement.acquire().await?;
                let answer = &mut Answer::Stream(&y);
                crate::enforce::run(conn.pooled_context(att), query, answer).await
            };
            boxed_in_span(run, span)
        }))
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<DB::Row>, Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, DB>,
    {
        if DB::OPTIONAL_AS_STREAM {
            let mut items = self.fetch_many(query);
            return Box::pin(async move {
                let mut first = None;
                while let Some(item) = items.try_next().await? {
                    keep_first(&mut first, item);
                }
                Ok(first)
            });
        }
        let statement = Pooled::start(&self.shared, query);
        let span = statement.att.span.clone();
        let run = async move {
            let (mut conn, att, query) = statement.acquire().await?;
            let mut answer = Answer::First(None);
            crate::enforce::run(conn.pooled_context(att), query, &mut answer).await?;
            Ok(answer.into_first())
        };
        boxed_in_span(run, span)
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [DB::TypeInfo],
    ) -> BoxFuture<'e, Result<DB::Statement, Error>>
    where
        'p: 'e,
    {
        let pool = self.shared.pool.clone();
        async move {
            let mut conn = pool.acquire().await?;
            prepare_raw::<DB>(&mut conn, sql, parameters).await
        }
        .boxed()
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<DB>, Error>>
    where
        'p: 'e,
    {
        let pool = self.shared.pool.clone();
        async move {
            let mut conn = pool.acquire().await?;
            describe_raw::<DB>(&mut conn, sql).await
        }
        .boxed()
    }
}

/// A connection taken from the pool for one statement, released through
/// [`Backend::release`] when dropped.
type ForOne<DB> = Guard<AuditedConnection<DB>, fn(&mut AuditedConnection<DB>)>;

/// [`Backend::release`] of a connection about to go back to the pool.
fn release<DB: Backend>(conn: &mut AuditedConnection<DB>) {
    let AuditedConn { state, raw, .. } = &mut **conn;
    if let Raw::Pooled(raw) = raw {
        DB::release(state, raw);
    }
}

/// A statement run straight on the pool, from its start (when the executor is called) until
/// it has a connection: the prologue of both `fetch_many` and `fetch_optional`.
struct Pooled<DB: Backend> {
    shared: Arc<Shared<DB>>,
    query: AuditedQuery<DB>,
    att: Attribution,
}

impl<DB: Backend> Pooled<DB> {
    /// Starts the statement: see [`Shared::start`].
    fn start<'q, E: Execute<'q, DB>>(shared: &Arc<Shared<DB>>, query: E) -> Self {
        let (query, att) = shared.start(query);
        Pooled {
            shared: shared.clone(),
            query,
            att,
        }
    }

    /// Acquires a connection for this statement alone; a failure ends the statement's
    /// attribution as failed before the error goes back to the caller. The connection goes
    /// back to the pool through [`Backend::release`], when the statement ends or is dropped.
    async fn acquire(self) -> Result<(ForOne<DB>, Attribution, AuditedQuery<DB>), Error> {
        let Pooled { shared, query, att } = self;
        match shared.pool.acquire().await {
            Ok(conn) => {
                let conn = AuditedConnection::new(conn, shared);
                Ok((Guard::new(conn, release::<DB>), att, query))
            }
            Err(e) => {
                att.finish(StatementEnd::FAILED);
                Err(e)
            }
        }
    }
}

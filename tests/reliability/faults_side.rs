//! Case 3's PostgreSQL sides: a bare sqlx pool or an `AuditedPool`, each on a fresh schema.

use std::time::Duration;

use hintaudit::sqlx::AuditedPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AssertSqlSafe, PgPool, Postgres};

use crate::outcome::Side;
use crate::support::{self, PgSchema};

/// The bare server's pool or the audited server's.
pub(crate) type PgSide = Side<PgPool, AuditedPool<Postgres>>;

/// One side's pool on a fresh schema holding `t (id serial, n int)`; `timeout_ms` sets
/// `statement_timeout` on its connections.
pub(crate) async fn side(
    test: &str,
    audited: bool,
    max: u32,
    acquire: Duration,
    timeout_ms: Option<u32>,
) -> Option<(PgSide, PgSchema)> {
    let (mut options, schema): (PgConnectOptions, PgSchema) = support::pg_schema(test).await?;
    if let Some(ms) = timeout_ms {
        options = options.options([("statement_timeout", ms.to_string())]);
    }
    let ddl = format!(
        "CREATE TABLE {}.t (id serial PRIMARY KEY, n int NOT NULL)",
        schema.schema
    );
    sqlx::raw_sql(AssertSqlSafe(ddl))
        .execute(&schema.admin)
        .await
        .expect("table");
    let pool_options = || {
        PgPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(acquire)
    };
    let pool = if audited {
        Side::Audited(
            AuditedPool::options()
                .connect_with(pool_options(), options)
                .await
                .expect("audited pool"),
        )
    } else {
        Side::Bare(
            pool_options()
                .connect_with(options)
                .await
                .expect("bare pool"),
        )
    };
    Some((pool, schema))
}

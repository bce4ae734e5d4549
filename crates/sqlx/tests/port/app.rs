// A small notes app, written the way the sqlx docs and examples write code. It is compiled
// once per build: `Pool` is `sqlx::Pool<Db>` in the bare build and
// `hintaudit_sqlx::AuditedPool<Db>` in the audited one, and that alias is the only
// difference (see `main.rs`). `Db`, its connect options, its migrations and its
// `BEGIN ... ` statement come from the backend, as an app is written for one database; so
// do its statement texts (`queries::sql`), in the backend's placeholder syntax.

use sqlx::{Acquire, Executor, Row};

pub use super::queries::{bump_views, note};
use super::queries::sql;
use super::{BEGIN_WITH, ConnectOptions, Db, MIGRATOR, Pool};

/// Opens the pool: `Pool::connect_with(options)`.
pub async fn open(options: ConnectOptions) -> Result<Pool, sqlx::Error> {
    Pool::connect_with(options).await
}

/// Opens the pool with pool options, converting the pool sqlx builds (`From<sqlx::Pool>`).
pub async fn open_sized(options: ConnectOptions, max: u32) -> Result<Pool, sqlx::Error> {
    let pool = sqlx::pool::PoolOptions::<Db>::new()
        .max_connections(max)
        .connect_with(options)
        .await?;
    // The bare build converts the pool into itself.
    #[allow(clippy::useless_conversion)]
    let pool = Pool::from(pool);
    Ok(pool)
}

/// Runs the migrations: `sqlx::migrate!(..).run(&pool)`.
pub async fn migrate(pool: &Pool) -> Result<(), sqlx::migrate::MigrateError> {
    MIGRATOR.run(pool).await
}

/// Creates a note on the pool; its id.
pub async fn create(pool: &Pool, title: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(sql::CREATE_NOTE)
        .bind(title)
        .fetch_one(pool)
        .await
}

/// Creates a note in a transaction opened with the backend's own `BEGIN` (`begin_with`).
pub async fn create_with(pool: &Pool, title: &str) -> Result<i64, sqlx::Error> {
    let mut tx = pool.begin_with(BEGIN_WITH).await?;
    let id = sqlx::query_scalar(sql::CREATE_NOTE)
        .bind(title)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(id)
}

/// Logs an event: a helper over `impl Executor`, for the pool, `&mut *tx` and `&mut *conn`.
pub async fn log_event<'e>(
    executor: impl Executor<'e, Database = Db>,
    note: i64,
    what: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(sql::LOG_EVENT)
        .bind(note)
        .bind(what)
        .execute(executor)
        .await?;
    Ok(())
}

/// The events of a note, oldest first: a helper over `impl Executor`.
pub async fn events<'e>(
    executor: impl Executor<'e, Database = Db>,
    note: i64,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(sql::EVENTS)
        .bind(note)
        .fetch_all(executor)
        .await
}

/// Renames a note and logs it in one transaction, through `&mut *tx`.
pub async fn rename(pool: &Pool, id: i64, title: &str) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(sql::RENAME)
        .bind(title)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    log_event(&mut *tx, id, "rename").await?;
    tx.commit().await
}

/// Renames a note twice in one transaction, the second time in a savepoint it rolls back.
pub async fn rename_keep_first(
    pool: &Pool,
    id: i64,
    first: &str,
    second: &str,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(sql::RENAME)
        .bind(first)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let mut savepoint = tx.begin().await?;
    sqlx::query(sql::RENAME)
        .bind(second)
        .bind(id)
        .execute(&mut *savepoint)
        .await?;
    savepoint.rollback().await?;
    tx.commit().await
}

/// Starts a rename and abandons it: the dropped transaction rolls back.
pub async fn rename_abandoned(pool: &Pool, id: i64, title: &str) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(sql::RENAME)
        .bind(title)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Reads every title on one held connection (`&mut *conn`), counting a view of each note,
/// and logs the read in a transaction on that connection (`conn.begin()`).
pub async fn read_all(pool: &Pool) -> Result<Vec<String>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    sqlx::query("UPDATE notes SET views = views + 1")
        .execute(&mut *conn)
        .await?;
    let rows = sqlx::query("SELECT title FROM notes ORDER BY id")
        .fetch_all(&mut *conn)
        .await?;
    let mut tx = conn.begin().await?;
    log_event(&mut *tx, 0, "read_all").await?;
    tx.commit().await?;
    rows.iter().map(|r| r.try_get("title")).collect()
}

/// Counts the notes through anything that can hand out a connection: a helper over
/// `impl Acquire`, for `&pool`, `&mut conn` and `&mut tx`.
pub async fn count<'a>(conn: impl Acquire<'a, Database = Db>) -> Result<i64, sqlx::Error> {
    let mut conn = conn.acquire().await?;
    sqlx::query_scalar("SELECT COUNT(*) FROM notes")
        .fetch_one(&mut *conn)
        .await
}

/// The pool's size and idle connections.
pub fn pool_status(pool: &Pool) -> (u32, usize) {
    (pool.size(), pool.num_idle())
}

/// Closes the pool.
pub async fn shutdown(pool: &Pool) -> bool {
    pool.close().await;
    pool.is_closed()
}

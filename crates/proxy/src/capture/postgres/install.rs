//! The writer trigger ([design: the proxy's evidence](../../../../../docs/design.md#the-proxys-evidence)):
//! in schema `hintaudit`, a function that emits one transactional logical decoding message
//! per writing transaction naming its backend (pid, client address and port, backend start,
//! application_name), a statement-level trigger calling it on every table, and, for a
//! superuser, an event trigger that puts it on tables created later.
//!
//! Shared by every proxy on the database: installed idempotently under an advisory lock,
//! never removed by a proxy (another may be using it). `DROP SCHEMA hintaudit CASCADE`
//! removes everything (the triggers and the event trigger depend on its functions).

use sqlx::{Connection, PgConnection, PgPool};

/// The advisory lock every proxy takes to install (`hintaudit` as a number).
const INSTALL_LOCK: i64 = 0x6869_6e74_6175_6474;

/// The schema and its functions. `note_writer` emits once per transaction: a
/// transaction-local setting remembers it did (rolled back with a subtransaction, as the
/// message is).
const FUNCTIONS: [&str; 4] = [
    "CREATE SCHEMA IF NOT EXISTS hintaudit",
    r#"CREATE OR REPLACE FUNCTION hintaudit.note_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF pg_catalog.current_setting('hintaudit.noted', true) IS DISTINCT FROM 'on' THEN
    PERFORM pg_catalog.set_config('hintaudit.noted', 'on', true);
    PERFORM pg_catalog.pg_logical_emit_message(true, 'hintaudit', pg_catalog.concat_ws(' ',
      pg_catalog.pg_backend_pid(),
      coalesce(pg_catalog.host(pg_catalog.inet_client_addr()), '-'),
      coalesce(pg_catalog.inet_client_port()::text, '-'),
      coalesce((SELECT (pg_catalog.date_part('epoch', a.backend_start) * 1000000)::bigint
         FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) a), 0),
      pg_catalog.current_setting('application_name')));
  END IF;
  RETURN NULL;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION hintaudit.watch(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = t AND tgname = 'hintaudit_writer') THEN
    EXECUTE pg_catalog.format('CREATE TRIGGER hintaudit_writer AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION hintaudit.note_writer()', t);
  END IF;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION hintaudit.watch_new_tables() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT objid FROM pg_catalog.pg_event_trigger_ddl_commands()
           WHERE object_type = 'table' AND schema_name NOT LIKE 'pg\_temp%' LOOP
    PERFORM hintaudit.watch(r.objid::regclass);
  END LOOP;
END $$"#,
];

/// The event trigger (superuser only), made once.
const EVENT_TRIGGER: &str = r#"DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger WHERE evtname = 'hintaudit_watch_new_tables') THEN
    CREATE EVENT TRIGGER hintaudit_watch_new_tables ON ddl_command_end
      WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
      EXECUTE FUNCTION hintaudit.watch_new_tables();
  END IF;
END $$"#;

/// The tables that have no writer trigger yet: ordinary and partitioned tables, not
/// temporary, outside the system schemas and `hintaudit`.
const UNWATCHED: &str = "SELECT c.oid::regclass::text FROM pg_catalog.pg_class c \
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
     WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't' \
     AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'hintaudit') \
     AND n.nspname NOT LIKE 'pg\\_toast%' \
     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t \
                     WHERE t.tgrelid = c.oid AND t.tgname = 'hintaudit_writer')";

/// What the install did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Installed {
    /// Tables given the trigger now (those that had it are not counted).
    pub(crate) tables: usize,
    /// Tables that could not get it (no TRIGGER privilege, a lock not granted within 2 s):
    /// their commits have no writer, so the position rule settles them.
    pub(crate) refused: Vec<String>,
    /// Whether tables created later get it too (the event trigger exists).
    pub(crate) new_tables: bool,
}

/// Installs the writer trigger on `pool`'s database: the functions, the event trigger when
/// the role is a superuser, and the trigger on every table without it, each table in a
/// transaction of its own waiting at most 2 s for its lock (`CREATE TRIGGER` takes `SHARE
/// ROW EXCLUSIVE`, which waits for the table's writers and holds off new ones meanwhile).
///
/// # Errors
/// When the schema or the functions cannot be made (no `CREATE` on the database).
pub(crate) async fn install(pool: &PgPool, superuser: bool) -> Result<Installed, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    locked(&mut tx).await?;
    for sql in FUNCTIONS {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut *tx)
            .await?;
    }
    if superuser {
        sqlx::raw_sql(sqlx::AssertSqlSafe(EVENT_TRIGGER))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    let new_tables: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger \
         WHERE evtname = 'hintaudit_watch_new_tables' AND evtenabled <> 'D')",
    )
    .fetch_one(&mut *conn)
    .await?;
    let unwatched: Vec<String> = sqlx::query_scalar(UNWATCHED).fetch_all(&mut *conn).await?;
    let mut installed = Installed {
        new_tables,
        ..Installed::default()
    };
    for table in unwatched {
        match watch(&mut conn, &table).await {
            Ok(()) => installed.tables += 1,
            Err(e) => {
                tracing::warn!(target: "hintaudit::proxy", table, "capture: no writer trigger: {e}");
                installed.refused.push(table);
            }
        }
    }
    Ok(installed)
}

async fn locked(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(INSTALL_LOCK)
        .execute(conn)
        .await
        .map(|_| ())
}

/// Puts the trigger on `table` (a regclass's text), in a transaction of its own.
async fn watch(conn: &mut PgConnection, table: &str) -> Result<(), sqlx::Error> {
    let mut tx = conn.begin().await?;
    locked(&mut tx).await?;
    sqlx::query("SET LOCAL lock_timeout = '2s'")
        .execute(&mut *tx)
        .await?;
    sqlx::query("SELECT hintaudit.watch($1::regclass)")
        .bind(table)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

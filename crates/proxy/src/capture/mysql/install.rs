//! The writer triggers on MySQL/MariaDB ([design: the proxy's evidence](../../../../../docs/design.md#the-proxys-evidence)):
//! database `hintaudit` with table `writers` (one row per connection that wrote), and on each
//! table of the watched database three row triggers (`AFTER INSERT`, `UPDATE`, `DELETE`)
//! that put the writing connection's row there once per transaction, so that the binary log
//! shows, inside the transaction, a row event naming its thread, session and client
//! address (read by decode.rs).
//!
//! Once per transaction: the row's `mark` is the session's number and `@@last_gtid` (the
//! GTID of the session's last commit, the same all through a transaction), written with
//! `INSERT … ON DUPLICATE KEY UPDATE`; the first row of a transaction changes it, and the
//! others write the same values, which the server does not log. A rolled-back transaction
//! rolls the row back too, so the next one writes it again.
//!
//! MySQL and MariaDB have no event triggers: the tables created later are given the
//! triggers by [`Installer::install`] again, run when the binary log shows a `CREATE`,
//! `ALTER` or `RENAME TABLE` and every [`RESCAN_EVERY`].
//!
//! Shared by every proxy on the server: installed idempotently under a named lock
//! (`GET_LOCK`), never removed by a proxy. Removal: drop every trigger named
//! `hintaudit_writer_%`, then `DROP DATABASE hintaudit`.

use std::collections::BTreeSet;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Pool};

use crate::capture::trouble::Outage;

/// The database the writers' rows live in.
pub(crate) const SCHEMA: &str = "hintaudit";

/// The table of writers' rows in [`SCHEMA`]: `thread`, `host`, `session`, `mark`.
pub(crate) const TABLE: &str = "writers";

/// How often the tables are looked at again, at most this long after one was created
/// without a trace in the binary log (`sql_log_bin = 0`, another default database).
pub(crate) const RESCAN_EVERY: Duration = Duration::from_secs(60);

const SETUP: [&str; 2] = [
    "CREATE DATABASE IF NOT EXISTS hintaudit",
    "CREATE TABLE IF NOT EXISTS hintaudit.writers (\
       thread BIGINT UNSIGNED NOT NULL PRIMARY KEY, \
       host VARCHAR(255) NOT NULL, \
       session BIGINT UNSIGNED NOT NULL, \
       mark VARCHAR(128) NOT NULL) ENGINE = InnoDB",
];

/// Every trigger's body. An error in it (the table dropped by hand) is swallowed, so that
/// the audited server's write goes on without a writer.
const BODY: &str = "BEGIN \
  DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END; \
  IF @hintaudit_session IS NULL THEN \
    SET @hintaudit_session = UUID_SHORT(); \
    SET @hintaudit_host = (SELECT HOST FROM information_schema.PROCESSLIST \
                           WHERE ID = CONNECTION_ID()); \
  END IF; \
  INSERT INTO hintaudit.writers (thread, host, session, mark) \
    VALUES (CONNECTION_ID(), COALESCE(@hintaudit_host, ''), @hintaudit_session, \
            CONCAT(@hintaudit_session, '/', COALESCE(@@last_gtid, ''))) \
    ON DUPLICATE KEY UPDATE host = VALUES(host), session = VALUES(session), \
                            mark = VALUES(mark); \
END";

/// The row events a trigger watches, with the letter its name carries.
const EVENTS: [(&str, char); 3] = [("INSERT", 'i'), ("UPDATE", 'u'), ("DELETE", 'd')];

/// What an install did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Installed {
    /// Triggers created now (those that existed are not counted).
    pub(crate) triggers: usize,
    /// Tables that could not get one (no TRIGGER privilege, the metadata lock not granted
    /// within 2 s): their commits name no writer, so the position rule settles them.
    pub(crate) refused: Vec<String>,
}

/// Installs the writer triggers on one database.
#[derive(Debug)]
pub(crate) struct Installer {
    pool: Pool,
    database: String,
    /// Set when the binary log shows a table created, altered or renamed.
    pub(crate) rescan: tokio::sync::Notify,
    /// Installs that failed, counted once until one works again.
    pub(crate) outage: Outage,
}

impl Installer {
    pub(crate) fn new(pool: Pool, database: String) -> Self {
        Installer {
            pool,
            database,
            rescan: tokio::sync::Notify::new(),
            outage: Outage::default(),
        }
    }

    /// Makes `hintaudit.writers` and gives every table of the database the triggers it lacks,
    /// under the named lock `hintaudit.install`; forgets the rows of connections gone.
    ///
    /// # Errors
    /// When the lock, the database `hintaudit` or its table cannot be had (no `CREATE`).
    pub(crate) async fn install(&self) -> Result<Installed, mysql_async::Error> {
        let mut conn = self.pool.get_conn().await?;
        // At most 2 s for each table's metadata lock (CREATE TRIGGER holds off the table's
        // statements while it waits), 1 s for a row lock.
        conn.query_drop("SET SESSION lock_wait_timeout = 2, innodb_lock_wait_timeout = 1")
            .await?;
        let locked: Option<i64> = conn
            .query_first("SELECT GET_LOCK('hintaudit.install', 30)")
            .await?;
        if locked != Some(1) {
            return Err(mysql_async::Error::Other(
                "another proxy held the lock hintaudit.install for 30 s".into(),
            ));
        }
        let done = self.locked_install(&mut conn).await;
        conn.query_drop("DO RELEASE_LOCK('hintaudit.install')")
            .await?;
        done
    }

    async fn locked_install(&self, conn: &mut Conn) -> Result<Installed, mysql_async::Error> {
        for sql in SETUP {
            conn.query_drop(sql).await?;
        }
        forget_gone(conn).await;
        let mut installed = Installed::default();
        for (table, event, letter) in self.missing(conn).await? {
            let sql = create_trigger(&self.database, &table, event, letter);
            match conn.query_drop(sql).await {
                Ok(()) => installed.triggers += 1,
                Err(e) => {
                    tracing::warn!(target: "hintaudit::proxy", table, event, "capture: no writer trigger: {e}");
                    if !installed.refused.contains(&table) {
                        installed.refused.push(table);
                    }
                }
            }
        }
        Ok(installed)
    }

    /// The (table, event, letter) of every trigger the database's tables lack.
    async fn missing(
        &self,
        conn: &mut Conn,
    ) -> Result<Vec<(String, &'static str, char)>, mysql_async::Error> {
        let tables: Vec<String> = conn
            .exec(
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? \
                 AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')",
                (&self.database,),
            )
            .await?;
        let present: BTreeSet<(String, String)> = conn
            .exec::<(String, String), _, _>(
                "SELECT EVENT_OBJECT_TABLE, EVENT_MANIPULATION FROM information_schema.TRIGGERS \
                 WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME LIKE 'hintaudit\\_writer\\_%'",
                (&self.database,),
            )
            .await?
            .into_iter()
            .collect();
        Ok(tables
            .into_iter()
            .flat_map(|t| EVENTS.map(|(event, letter)| (t.clone(), event, letter)))
            .filter(|(t, event, _)| !present.contains(&(t.clone(), (*event).to_owned())))
            .collect())
    }
}

/// Deletes the rows of connections no longer in `PROCESSLIST`, so the table stays as small
/// as the connections alive: read without locks first, then deleted by key, so that no live
/// connection's row is locked. Safe against a live one all the same (without `PROCESS` this
/// session sees only its own user's threads): its next transaction writes its row again. A
/// failure is logged.
async fn forget_gone(conn: &mut Conn) {
    let gone: Result<Vec<u64>, _> = conn
        .query(
            "SELECT thread FROM hintaudit.writers WHERE thread NOT IN \
             (SELECT ID FROM information_schema.PROCESSLIST) LIMIT 10000",
        )
        .await;
    let deleted = match gone {
        Ok(gone) if gone.is_empty() => Ok(()),
        Ok(gone) => {
            let ids: Vec<String> = gone.iter().map(u64::to_string).collect();
            let sql = format!(
                "DELETE FROM hintaudit.writers WHERE thread IN ({})",
                ids.join(",")
            );
            conn.query_drop(sql).await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = deleted {
        tracing::debug!(target: "hintaudit::proxy", "capture: hintaudit.writers not pruned: {e}");
    }
}

/// `CREATE TRIGGER IF NOT EXISTS` for `event` on `database`.`table`.
fn create_trigger(database: &str, table: &str, event: &str, letter: char) -> String {
    format!(
        "CREATE TRIGGER IF NOT EXISTS {}.{} AFTER {event} ON {}.{} FOR EACH ROW {BODY}",
        quoted(database),
        quoted(&trigger_name(table, letter)),
        quoted(database),
        quoted(table),
    )
}

/// `hintaudit_writer_<letter>_<table>`; for a table name too long for MySQL's 64
/// characters, its first 28 and a hash of it (FNV-1a, stable across builds).
fn trigger_name(table: &str, letter: char) -> String {
    let name = format!("hintaudit_writer_{letter}_{table}");
    if name.chars().count() <= 64 {
        return name;
    }
    let hash = table.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let head: String = table.chars().take(28).collect();
    format!("hintaudit_writer_{letter}_{head}_{hash:016x}")
}

/// An identifier in backquotes.
fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_names_fit_and_differ() {
        assert_eq!(trigger_name("items", 'i'), "hintaudit_writer_i_items");
        let long_a = "a".repeat(60);
        let long_b = format!("{}b", "a".repeat(59));
        let (a, b) = (trigger_name(&long_a, 'u'), trigger_name(&long_b, 'u'));
        assert!(
            a.chars().count() <= 64 && b.chars().count() <= 64,
            "{a} {b}"
        );
        assert_ne!(a, b);
        assert_eq!(quoted("we`ird"), "`we``ird`");
    }
}

//! How the oracle's transaction around an autocommit statement straight on the pool ends,
//! now that it is a raw `BEGIN` and one message of `SAVEPOINT`, snapshot and `COMMIT`
//! (which sqlx does not count as a transaction): a statement that fails, and a `COMMIT`
//! that fails, answer the caller as the bare pool does and leave no transaction open; a
//! statement dropped between `BEGIN` and its answer leaves none either, nor the pool's
//! next statement inside it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sqlx::postgres::PgSslMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use super::*;

/// A deferred foreign key, violated only at `COMMIT`, by a function (so the oracle wraps it).
const DEFERRED: &str = "
CREATE TABLE parents (id int PRIMARY KEY);
CREATE TABLE children (parent int REFERENCES parents DEFERRABLE INITIALLY DEFERRED);
CREATE FUNCTION adopt(p int) RETURNS int LANGUAGE sql AS 'INSERT INTO children VALUES (p) RETURNING p';
";

/// Rows in `table` of the test's schema, read on the admin pool.
async fn count(db: &Db, table: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {}.{table}", db.schema);
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&db.admin)
        .await
        .expect("count")
}

/// The pool's next statement runs in autocommit: its write is at once visible elsewhere.
async fn next_write_commits(db: &Db, pool: &AuditedPool<Postgres>) {
    let before = count(db, "audit_log").await;
    sqlx::query("INSERT INTO audit_log (what) VALUES ('next')")
        .execute(pool)
        .await
        .expect("the pool's next statement");
    assert_eq!(
        count(db, "audit_log").await,
        before + 1,
        "committed: no transaction left open on the pool's connection"
    );
}

/// The same error, as the bare pool gives it.
fn same_error(bare: &sqlx::Error, audited: &sqlx::Error) {
    assert_eq!(bare.to_string(), audited.to_string());
    let code = |e: &sqlx::Error| {
        e.as_database_error()
            .and_then(|d| d.code())
            .map(|c| c.into_owned())
    };
    assert_eq!(code(bare), code(audited));
    assert!(code(audited).is_some(), "a database error: {audited}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_statement_that_fails_keeps_its_error_and_leaves_no_transaction() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let pool = one_connection(db.fresh.options.clone()).await;
    // mark_viewed(1) inserts, then the first row divides by zero.
    let sql = "SELECT mark_viewed(g), 1 / (g - 1) FROM generate_series(1, 2) AS g";
    let bare = sqlx::query(sql)
        .execute(db.pool.inner())
        .await
        .expect_err("division by zero");
    let scope = CallScope::new("views");
    let effects = scope.effects_handle();
    let audited = scope
        .run(sqlx::query(sql).execute(&pool))
        .await
        .expect_err("division by zero");
    same_error(&bare, &audited);
    let e = effects.snapshot();
    assert_eq!(e.statements.len(), 1, "{e:?}");
    assert_eq!(e.statements[0].outcome, StatementOutcome::Failed, "{e:?}");
    assert!(e.transactions.is_empty(), "nothing observed: {e:?}");
    assert_eq!(count(&db, "page_views").await, 0, "rolled back");
    next_write_commits(&db, &pool).await;
    pool.close().await;
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_failing_in_the_oracles_last_message_is_the_statements_error() {
    let Some(db) = db(PgOracle::Writes, &format!("{SETUP}{DEFERRED}")).await else {
        return;
    };
    let pool = one_connection(db.fresh.options.clone()).await;
    let bare = sqlx::query("SELECT adopt(42)")
        .execute(db.pool.inner())
        .await
        .expect_err("the deferred foreign key fails at COMMIT");
    let scope = CallScope::new("adopt");
    let effects = scope.effects_handle();
    let audited = scope
        .run(sqlx::query("SELECT adopt(42)").execute(&pool))
        .await
        .expect_err("the deferred foreign key fails at COMMIT");
    same_error(&bare, &audited);
    let e = effects.snapshot();
    assert_eq!(e.statements[0].outcome, StatementOutcome::Failed, "{e:?}");
    // The snapshot before COMMIT is kept: the write seen, not committed.
    assert_eq!(e.transactions.len(), 1, "{e:?}");
    assert!(!e.transactions[0].committed, "{e:?}");
    let t = table(&e, "children").unwrap_or_else(|| panic!("no observation: {e:?}"));
    assert_eq!(t.inserted, 1, "{e:?}");
    assert_eq!(count(&db, "children").await, 0);
    next_write_commits(&db, &pool).await;
    pool.close().await;
    db.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_statement_dropped_after_begin_leaves_no_transaction_open() {
    let Some(db) = db(PgOracle::Writes, SETUP).await else {
        return;
    };
    let upstream = (db.fresh.options.get_host(), db.fresh.options.get_port());
    let upstream = tokio::net::lookup_host(upstream)
        .await
        .expect("resolve")
        .next()
        .expect("an address");
    let proxy = HoldingProxy::start(upstream).await;
    let options = db
        .fresh
        .options
        .clone()
        .host("127.0.0.1")
        .port(proxy.addr.port())
        .ssl_mode(PgSslMode::Disable);
    let pool = one_connection(options).await;
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&pool)
        .await
        .expect("pid");
    proxy.arm();
    let scope = CallScope::new("views");
    let effects = scope.effects_handle();
    let mut call = Box::pin(scope.run(sqlx::query("SELECT mark_viewed(1)").execute(&pool)));
    tokio::select! {
        r = &mut call => panic!("ended with BEGIN's answer held back: {r:?}"),
        () = proxy.holding() => {}
    }
    // The server has begun the oracle's transaction; the client has not heard it. The call
    // is cancelled there.
    drop(call);
    proxy.release();
    next_write_commits(&db, &pool).await;
    let e = effects.snapshot();
    assert_eq!(e.statements[0].outcome, StatementOutcome::Failed, "{e:?}");
    assert_eq!(count(&db, "page_views").await, 0, "the statement never ran");
    // The session that began it is gone (closed, so rolled back), not idle in a transaction.
    eventually_gone(&db.admin, pid).await;
    pool.close().await;
    db.drop_schema().await;
}

/// A pool of one connection, so that every use is on the same server session.
async fn one_connection(options: PgConnectOptions) -> AuditedPool<Postgres> {
    AuditedPool::<Postgres>::options()
        .connect_with(PgPoolOptions::new().max_connections(1), options)
        .await
        .expect("connect")
}

/// Waits (up to a minute) until backend `pid` has ended.
async fn eventually_gone(admin: &sqlx::PgPool, pid: i32) {
    for _ in 0..600 {
        let state: Option<String> =
            sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
                .bind(pid)
                .fetch_optional(admin)
                .await
                .expect("activity");
        if state.is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("backend {pid} still there after a minute");
}

/// A loopback proxy to PostgreSQL that, once armed, holds back the server's answer to the
/// next simple query `BEGIN` until released.
struct HoldingProxy {
    addr: SocketAddr,
    gate: Arc<Gate>,
}

#[derive(Default)]
struct Gate {
    armed: AtomicBool,
    /// `BEGIN` went to the server: its answer is held.
    held: AtomicBool,
    holding: Notify,
    released: Notify,
}

/// A simple query message `BEGIN`: `Q`, length 10, the text and its NUL.
const BEGIN: &[u8] = b"Q\0\0\0\x0aBEGIN\0";

impl HoldingProxy {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(upstream).await.expect("upstream");
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(relay(cr, sw, g.clone(), Side::ToServer));
                tokio::spawn(relay(sr, cw, g.clone(), Side::ToClient));
            }
        });
        HoldingProxy { addr, gate }
    }

    fn arm(&self) {
        self.gate.armed.store(true, Ordering::SeqCst);
    }

    /// Waits until the server's answer to `BEGIN` is held back.
    async fn holding(&self) {
        self.gate.holding.notified().await;
    }

    fn release(&self) {
        self.gate.released.notify_one();
    }
}

/// Which way [`relay`] passes bytes.
#[derive(Clone, Copy)]
enum Side {
    /// Client to server: an armed `BEGIN` marks its answer held before it is passed on.
    ToServer,
    /// Server to client: a held answer waits for the release before it is passed on.
    ToClient,
}

/// Passes what `from` reads on to `to`, one chunk at a time, through the gate.
async fn relay(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    gate: Arc<Gate>,
    side: Side,
) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        match side {
            Side::ToServer => {
                if chunk.windows(BEGIN.len()).any(|w| w == BEGIN)
                    && gate.armed.swap(false, Ordering::SeqCst)
                {
                    gate.held.store(true, Ordering::SeqCst);
                }
            }
            Side::ToClient => {
                if gate.held.swap(false, Ordering::SeqCst) {
                    gate.holding.notify_one();
                    gate.released.notified().await;
                }
            }
        }
        if to.write_all(chunk).await.is_err() {
            break;
        }
    }
}

//! The bench's MCP server: two tools (`get` reads 2 statements, `touch` writes 3) on a bare
//! sqlx pool or hintaudit's audited pool, and the SQLite file they run on.

use hintaudit::sqlx::AuditedPool;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::schemars::{self, JsonSchema};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde::Deserialize;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use sqlx::{Sqlite, SqlitePool};

#[derive(Debug, Clone)]
pub enum Pool {
    Bare(SqlitePool),
    Audited(AuditedPool<Sqlite>),
}

macro_rules! on_pool {
    ($p:expr, $pool:ident => $body:expr) => {
        match $p {
            Pool::Bare($pool) => $body,
            Pool::Audited($pool) => $body,
        }
    };
}

#[derive(Debug, Clone)]
pub struct Bench {
    pub pool: Pool,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Id {
    id: i64,
}

#[tool_router]
impl Bench {
    #[tool(
        description = "Read an item and its tag.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get(&self, Parameters(Id { id }): Parameters<Id>) -> Result<String, String> {
        let name: String = on_pool!(&self.pool, p => sqlx::query_scalar("SELECT name FROM items WHERE id = $1").bind(id).fetch_one(p).await)
            .map_err(|e| e.to_string())?;
        let tag: Option<String> = on_pool!(&self.pool, p => sqlx::query_scalar("SELECT tag FROM tags WHERE item_id = $1").bind(id).fetch_optional(p).await)
            .map_err(|e| e.to_string())?;
        Ok(format!("{name} {tag:?}"))
    }

    #[tool(
        description = "Update an item.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn touch(&self, Parameters(Id { id }): Parameters<Id>) -> Result<String, String> {
        on_pool!(&self.pool, p => sqlx::query("UPDATE items SET name = 'item ' || $1 WHERE id = $1").bind(id).execute(p).await)
            .map_err(|e| e.to_string())?;
        on_pool!(&self.pool, p => sqlx::query("INSERT INTO tags (item_id, tag) VALUES ($1, 'seen') ON CONFLICT (item_id) DO UPDATE SET tag = excluded.tag").bind(id).execute(p).await)
            .map_err(|e| e.to_string())?;
        let n: i64 = on_pool!(&self.pool, p => sqlx::query_scalar("SELECT COUNT(*) FROM tags").fetch_one(p).await)
            .map_err(|e| e.to_string())?;
        Ok(n.to_string())
    }
}

#[tool_handler]
impl ServerHandler for Bench {}

pub fn options(path: &std::path::Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
}

pub async fn setup(path: &std::path::Path) {
    let pool = SqlitePool::connect_with(options(path)).await.unwrap();
    for sql in [
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
        "CREATE TABLE tags (item_id INTEGER PRIMARY KEY, tag TEXT NOT NULL)",
        "INSERT INTO items (id, name) SELECT value, 'item ' || value FROM generate_series(1, 1000)",
    ] {
        if sqlx::query(sql).execute(&pool).await.is_err() {
            // Older SQLite without generate_series: insert one by one.
            for i in 1..=1000 {
                sqlx::query("INSERT OR IGNORE INTO items (id, name) VALUES ($1, 'item ' || $1)")
                    .bind(i)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        }
    }
    pool.close().await;
}

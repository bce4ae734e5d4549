// The app's compile-time checked queries for SQLite (`query!`, `query_as!`), expanded
// offline from `crates/sqlx/.sqlx/`. Written as the sqlx docs write them.

use super::Pool;

/// The app's runtime statements (`sqlx::query`), in this backend's placeholder syntax.
pub mod sql {
    pub const CREATE_NOTE: &str = "INSERT INTO notes (title) VALUES ($1) RETURNING id";
    pub const LOG_EVENT: &str = "INSERT INTO events (note_id, what) VALUES ($1, $2)";
    pub const EVENTS: &str = "SELECT what FROM events WHERE note_id = $1 ORDER BY id";
    pub const RENAME: &str = "UPDATE notes SET title = $1 WHERE id = $2";
}

/// One note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: i64,
    pub title: String,
    pub views: i64,
}

/// The note `id`, if any.
pub async fn note(pool: &Pool, id: i64) -> Result<Option<Note>, sqlx::Error> {
    sqlx::query_as!(
        Note,
        r#"SELECT id AS "id!", title, views FROM notes WHERE id = ?1"#,
        id
    )
    .fetch_optional(pool)
    .await
}

/// Counts one more view of the note `id`; how many notes matched.
pub async fn bump_views(pool: &Pool, id: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query!("UPDATE notes SET views = views + 1 WHERE id = ?1", id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}

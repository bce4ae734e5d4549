// The scenario both builds run: every app function, each as one tool call in its own
// [`CallScope`] (which the bare build ignores), and what the app answered.

use hintaudit_core::CallScope;

use super::ConnectOptions;
use super::app;
use crate::{Calls, Observed};

/// Runs `call` as the tool `name`, keeping what the call scope saw.
async fn tool<T>(calls: &mut Calls, name: &'static str, call: impl Future<Output = T>) -> T {
    let scope = CallScope::new(name);
    let effects = scope.effects_handle();
    let out = scope.run(call).await;
    calls.push((name, effects.snapshot()));
    out
}

/// Opens the app's pool on `options`, migrates it and runs every app function once.
pub async fn run(options: ConnectOptions) -> (Observed, Calls) {
    let pool = app::open(options.clone()).await.expect("open");
    app::migrate(&pool).await.expect("migrate");
    let mut calls = Calls::new();
    let c = &mut calls;
    let mut seen = Observed {
        after_migrate: tool(c, "count", app::count(&pool)).await.expect("count"),
        ..Observed::default()
    };
    let first = tool(c, "create", app::create(&pool, "first"))
        .await
        .expect("create");
    let second = tool(c, "create_with", app::create_with(&pool, "second"))
        .await
        .expect("create_with");
    seen.ids = (first, second);
    tool(c, "rename", app::rename(&pool, first, "renamed"))
        .await
        .expect("rename");
    tool(
        c,
        "rename_keep_first",
        app::rename_keep_first(&pool, second, "kept", "dropped"),
    )
    .await
    .expect("rename_keep_first");
    tool(
        c,
        "rename_abandoned",
        app::rename_abandoned(&pool, second, "lost"),
    )
    .await
    .expect("rename_abandoned");
    seen.bumped = tool(c, "bump_views", app::bump_views(&pool, first))
        .await
        .expect("bump_views");
    seen.titles = tool(c, "read_all", app::read_all(&pool))
        .await
        .expect("read_all");
    // A second pool, opened with pool options and converted: it sees the same database.
    let sized = app::open_sized(options, 2).await.expect("open_sized");
    let note = tool(c, "note", app::note(&sized, first))
        .await
        .expect("note");
    seen.first = note.map(|n| (n.id, n.title, n.views));
    seen.missing = tool(c, "missing", app::note(&sized, 10_000))
        .await
        .expect("note")
        .is_none();
    seen.events = tool(c, "events", app::events(&pool, first))
        .await
        .expect("events");
    seen.read_events = tool(c, "read_events", app::events(&pool, 0))
        .await
        .expect("events");
    seen.counts = tool(c, "counts", async {
        let mut conn = pool.acquire().await?;
        let on_conn = app::count(&mut conn).await?;
        let mut tx = pool.begin().await?;
        let in_tx = app::count(&mut tx).await?;
        let events = app::events(&mut *tx, first).await?.len();
        tx.rollback().await?;
        Ok::<_, sqlx::Error>((on_conn, in_tx, events))
    })
    .await
    .expect("counts");
    seen.status = app::pool_status(&pool);
    seen.closed = app::shutdown(&pool).await && app::shutdown(&sized).await;
    (seen, calls)
}

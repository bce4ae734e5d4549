//! The fixture's planted lies found live through the proxy on PostgreSQL, overlapping calls,
//! a write outside calls, the upstream crashing, the slot lost, and the prerequisites.

use serde_json::json;

use crate::holds::Holds;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_lies_are_found_live_over_stdio_and_another_writers_commit_is_foreign() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_lies";
    let db = fresh_db(&admin, name).await;
    let metrics_addr = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    let upstream = fixture(py, &db, "");
    let m = metrics_addr.to_string();
    let client = stdio_client(
        &hintaudit(),
        &[
            "proxy",
            "--stdio",
            &upstream,
            "--database",
            &db,
            "--metrics",
            &m,
        ],
    )
    .await;
    client.list_all_tools().await.expect("tools/list");
    let a = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    call(&client, "get_item", a(json!({"id": 1}))).await;
    call(&client, "archive_item", a(json!({"id": 2}))).await;
    call(&client, "add_note", a(json!({"id": 9, "text": "nine"}))).await;
    call(
        &client,
        "read_query",
        a(json!({"query": "SELECT * FROM public.items"})),
    )
    .await;
    call(&client, "list_tables", a(json!({}))).await;

    // Once no call is pending (`metrics` waits for it) every call is judged: metrics are final.
    let s = metrics(metrics_addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0
    );
    for honest in ["add_note", "read_query", "list_tables"] {
        for rule in [
            "read_only_write",
            "undeclared_destructive",
            "idempotency_broken",
        ] {
            assert_eq!(violations(&s, honest, rule), 0.0, "{honest} {rule}");
        }
    }
    // add_note's insert was seen, and attributed to it.
    let inserted = s.value(
        "hintaudit_tool_row_changes_total",
        &[
            ("tool", "add_note"),
            ("table", "notes"),
            ("operation", "insert"),
        ],
    );
    assert_eq!(inserted, Some(1.0), "{}", s.text);
    assert!(commits(&s, "attributed") >= 3.0);

    // A write by another writer (this test's own connection, not the proxy's child): it
    // names its writer, which is not the upstream's, so it is foreign, and counted.
    let before = commits(&s, "foreign");
    let pool = sqlx::PgPool::connect(&db).await.expect("connect");
    sqlx::query("INSERT INTO public.notes (id, text) VALUES (100, 'cron')")
        .execute(&pool)
        .await
        .expect("background write");
    let s = until(metrics_addr, |s| commits(s, "foreign") > before).await;
    assert_eq!(commits(&s, "foreign"), before + 1.0, "{}", s.text);
    assert_eq!(violations(&s, "add_note", "undeclared_destructive"), 0.0);
    pool.close().await;
    client.cancel().await.ok();
    drop_db(&admin, name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_calls_over_http_give_an_ambiguous_set_never_a_wrong_culprit() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_overlap";
    let db = fresh_db(&admin, name).await;
    // archive_item deletes, then stays in flight until the test releases it.
    let mut holds = Holds::new(name);
    let hold = holds.env("archive_item");
    let (_fixture, upstream) = fixture_http(py, &db, &[("FIXTURE_HOLD_AFTER", &hold)]).await;
    let (proxy, addr) = proxy_http(&["--upstream", &upstream, "--database", &db]).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    let pool = sqlx::PgPool::connect(&db).await.expect("connect");

    let slow = {
        let url = format!("http://{addr}/mcp");
        tokio::spawn(async move {
            let c = http_client(&url).await;
            let a = json!({"id": 2}).as_object().cloned().unwrap_or_default();
            call(&c, "archive_item", a).await
        })
    };
    // Once its DELETE has committed, get_item's UPDATE commits while archive_item is in flight.
    let held = holds.held(1).await;
    deleted(&pool, 2).await;
    read_past_here(&pool, addr).await;
    let a = json!({"id": 1}).as_object().cloned().unwrap_or_default();
    call(&client, "get_item", a).await;
    assert!(!slow.is_finished(), "archive_item answered while held");
    held.iter().for_each(|h| holds.release(h));
    slow.await.expect("archive_item answered");

    let s = metrics(addr).await;
    // The DELETE committed while only archive_item was in flight: its own.
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0,
        "{}",
        s.text
    );
    // The UPDATE committed while both were in flight: a set of two tools, blamed on neither.
    assert!(commits(&s, "ambiguous") >= 1.0, "{}", s.text);
    assert_eq!(violations(&s, "get_item", "read_only_write"), 0.0);
    let archive_updates = s.value(
        "hintaudit_tool_row_changes_total",
        &[
            ("tool", "archive_item"),
            ("table", "items"),
            ("operation", "update"),
        ],
    );
    assert_eq!(archive_updates.unwrap_or(0.0), 0.0, "not archive_item's");

    // --serialize: the same overlap, one call at a time upstream: exact attribution.
    let (serial, addr) =
        proxy_http(&["--upstream", &upstream, "--database", &db, "--serialize"]).await;
    let url = format!("http://{addr}/mcp");
    let slow = tokio::spawn({
        let url = url.clone();
        async move {
            let c = http_client(&url).await;
            let a = json!({"id": 3}).as_object().cloned().unwrap_or_default();
            call(&c, "archive_item", a).await
        }
    });
    let held = holds.held(1).await;
    deleted(&pool, 3).await;
    // get_item waits for its turn, which comes once archive_item is released and answers.
    let get_item = tokio::spawn(async move {
        let client = http_client(&url).await;
        let a = json!({"id": 1}).as_object().cloned().unwrap_or_default();
        call(&client, "get_item", a).await
    });
    held.iter().for_each(|h| holds.release(h));
    slow.await.expect("archive_item answered");
    get_item.await.expect("get_item answered");
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(
        violations(&s, "archive_item", "undeclared_destructive"),
        1.0
    );
    assert_eq!(commits(&s, "ambiguous"), 0.0);
    pool.close().await;
    drop((proxy, serial));
    drop_db(&admin, name).await;
}

/// Waits until item `id` is gone (at most 20 s).
/// Waits until the proxy at `addr` has read the log past every commit made so far: a marker
/// row this test's own connection writes (another writer's, so `foreign`, never a call's) is
/// counted once read, and the log is read in order. A call that begins after this starts
/// past those commits (its start is the position the capture holds), however loaded the
/// machine.
async fn read_past_here(pool: &sqlx::PgPool, addr: std::net::SocketAddr) {
    sqlx::query("INSERT INTO public.notes (id, text) VALUES (-1, 'marker')")
        .execute(pool)
        .await
        .expect("marker");
    let s = until(addr, |s| commits(s, "foreign") >= 1.0).await;
    assert_eq!(commits(&s, "foreign"), 1.0, "the marker read: {}", s.text);
}

async fn deleted(pool: &sqlx::PgPool, id: i64) {
    for _ in 0..200 {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM public.items WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .expect("count");
        if n == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("item {id} was never deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_keeps_serving_when_the_upstream_crashes_and_when_the_slot_is_lost() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_trouble";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "FIXTURE_EXIT_TOOL=list_tables");
    let (proxy, addr) = proxy_http(&["--stdio", &upstream, "--database", &db]).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    let item = |id: i64| json!({"id": id}).as_object().cloned().unwrap_or_default();
    call(&client, "get_item", item(1)).await;

    // The upstream process exits in the middle of a call: that call fails, saying so.
    let crashed = call(&client, "list_tables", Default::default()).await;
    assert!(
        crashed["error"]
            .as_str()
            .is_some_and(|e| e.contains("upstream")),
        "{crashed}"
    );
    // The proxy starts the upstream again; a request sent before it noticed the exit may
    // fail too (it cannot know whether that one reached the upstream), so list until one
    // answers. Then calls are audited again.
    let mut listed = false;
    for _ in 0..50 {
        if client.list_all_tools().await.is_ok() {
            listed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(listed, "the proxy serves again after the upstream's exit");
    call(&client, "get_item", item(1)).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        2.0,
        "{}",
        s.text
    );

    // The slot's session is terminated (as a database restart or an operator would): the
    // capture makes a new slot, counts the failure, and the proxy goes on auditing.
    let old: String = sqlx::query_scalar(
        "SELECT slot_name::text FROM pg_replication_slots \
         WHERE database = $1 AND slot_name LIKE 'hintaudit_proxy_%'",
    )
    .bind(name)
    .fetch_one(&admin)
    .await
    .expect("the proxy's slot");
    let terminated: bool = sqlx::query_scalar(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1",
    )
    .bind(&old)
    .fetch_one(&admin)
    .await
    .expect("terminate");
    assert!(terminated);
    let errors = |s: &hintaudit_test_support::scrape::Scraped| {
        s.value("hintaudit_audit_errors_total", &[("stage", "oracle")])
            .unwrap_or(0.0)
    };
    let s = until(addr, |s| errors(s) >= 1.0).await;
    assert!(errors(&s) >= 1.0, "the lost slot is counted");
    // The new slot (another name; the old one went with its session), once it is consistent:
    // creating a slot waits for the transactions running then to end, and what commits
    // before that point is the gap the proxy warns about.
    let mut renewed = false;
    for _ in 0..300 {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_replication_slots WHERE database = $1 AND active \
             AND slot_name <> $2 AND confirmed_flush_lsn IS NOT NULL",
        )
        .bind(name)
        .bind(&old)
        .fetch_one(&admin)
        .await
        .expect("slots");
        if n == 1 {
            renewed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(renewed, "the capture made a new slot");
    call(&client, "get_item", item(1)).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        3.0,
        "{}",
        s.text
    );
    drop((client, proxy));
    drop_db(&admin, name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_prerequisites_and_an_in_memory_sqlite_fail_clearly() {
    let Some(admin) = pg_or_skip().await else {
        return;
    };
    let role = "hintaudit_proxy_norepl";
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP ROLE IF EXISTS {role}")))
        .execute(&admin)
        .await
        .expect("drop role");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE ROLE {role} LOGIN NOREPLICATION"
    )))
    .execute(&admin)
    .await
    .expect("create role");
    let base = pg_url();
    let (scheme_user, rest) = base.split_once('@').expect("user@host in the URL");
    let (scheme, _) = scheme_user.split_once("://").expect("scheme");
    let url = format!("{scheme}://{role}@{rest}");
    let cases = [
        (url.as_str(), "REPLICATION"),
        ("sqlite::memory:", "names no file"),
        ("mysql://root@127.0.0.1:3306", "name the server's database"),
    ];
    for (database, says) in cases {
        let out = std::process::Command::new(hintaudit())
            .args(["proxy", "--stdio", "true", "--database", database])
            .output()
            .expect("hintaudit runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{database}: {stderr}");
        assert!(stderr.contains(says), "{database}: {stderr}");
    }
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP ROLE IF EXISTS {role}")))
        .execute(&admin)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_serves_again_when_an_http_upstream_restarts() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_restart";
    let db = fresh_db(&admin, name).await;
    let port = free_port();
    let start = || {
        let mut cmd = tokio::process::Command::new(py);
        cmd.arg(sql_server())
            .args(["--db", &db, "--http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        Child(cmd.spawn().expect("python starts"))
    };
    let upstream_addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut server = start();
    wait_port(upstream_addr).await;
    let upstream = format!("http://{upstream_addr}/mcp");
    let (proxy, addr) = proxy_http(&["--upstream", &upstream, "--database", &db]).await;
    let client = http_client(&format!("http://{addr}/mcp")).await;
    let item = json!({"id": 1}).as_object().cloned().unwrap_or_default();
    call(&client, "get_item", item.clone()).await;
    // Its commit judged first: the writer is told from the server's sockets in /proc, which
    // a server killed before the capture read its commit no longer has (design.md, *Who
    // wrote*: a writer that exits right after answering).
    metrics(addr).await;

    // The server goes away (a container restart): calls fail, saying so.
    server.0.kill().await.expect("kill");
    let down = call(&client, "get_item", item.clone()).await;
    assert!(
        down["error"]
            .as_str()
            .is_some_and(|e| e.contains("upstream")),
        "{down}"
    );
    // It comes back on the same address, with no memory of the proxy's session.
    let _server = start();
    wait_port(upstream_addr).await;
    let mut listed = false;
    for _ in 0..50 {
        if client.list_all_tools().await.is_ok() {
            listed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        listed,
        "the proxy serves again after the upstream's restart"
    );
    call(&client, "get_item", item).await;
    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "get_item", "read_only_write"),
        2.0,
        "{}",
        s.text
    );
    drop((client, proxy));
    drop_db(&admin, name).await;
}

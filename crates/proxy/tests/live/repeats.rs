//! Idempotency from the log's row images, both ways, on PostgreSQL and MariaDB: the fixture's
//! repeat tools (`FIXTURE_REPEATS=1`), each declaring idempotentHint true and each called
//! twice with the same arguments by one client, through the proxy:
//!
//! - bump_views (`views = views + 1`): the repeat's new row differs, `idempotency_broken`;
//! - set_qty (a re-set, destructiveHint false): its first call overwrites the quantity
//!   (`undeclared_destructive`), its repeat sets the same value again: nothing more;
//! - clear_notes (TRUNCATE): the repeat truncates a table the log showed empty, no finding.

use serde_json::json;

use crate::mariadb::{exec, fresh_my_db, my_parts};
use crate::support::*;

/// Calls each repeat tool twice through the proxy at `addr`, then checks the findings.
async fn repeats_are_judged_by_row_images(addr: std::net::SocketAddr) {
    let client = http_client(&format!("http://{addr}/mcp")).await;
    client.list_all_tools().await.expect("tools/list");
    let calls = [
        ("bump_views", json!({"id": 1})),
        ("set_qty", json!({"id": 1, "qty": 7})),
        ("clear_notes", json!({})),
    ];
    for (tool, arguments) in &calls {
        for _ in 0..2 {
            let answer = call(&client, tool, args(arguments.clone())).await;
            assert!(answer.get("error").is_none(), "{tool}: {answer}");
        }
    }
    let s = metrics(addr).await;
    let found = |tool: &str, rule: &str| violations(&s, tool, rule);
    assert_eq!(
        found("bump_views", "idempotency_broken"),
        1.0,
        "the counter's repeat changed the row again: {}",
        s.text
    );
    assert_eq!(
        found("set_qty", "idempotency_broken"),
        0.0,
        "a re-set to the same value: {}",
        s.text
    );
    assert_eq!(
        found("set_qty", "undeclared_destructive"),
        1.0,
        "its first call overwrote the quantity, its repeat nothing: {}",
        s.text
    );
    assert_eq!(
        found("clear_notes", "idempotency_broken"),
        0.0,
        "the repeated TRUNCATE removed nothing: {}",
        s.text
    );
    assert_eq!(commits(&s, "ambiguous"), 0.0, "one call at a time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_are_judged_by_row_images_on_postgres() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_repeats";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "FIXTURE_REPEATS=1");
    let (proxy, addr) = proxy_http(&["--stdio", &upstream, "--database", &db]).await;
    repeats_are_judged_by_row_images(addr).await;
    drop(proxy);
    drop_db(&admin, name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_are_judged_by_row_images_on_mariadb() {
    let Some((admin, py)) = my_parts().await else {
        return;
    };
    let name = "hintaudit_proxy_repeats";
    let db = fresh_my_db(&admin, name).await;
    let upstream = fixture(py, &db, "FIXTURE_REPEATS=1");
    let (proxy, addr) = proxy_http(&["--stdio", &upstream, "--database", &db]).await;
    repeats_are_judged_by_row_images(addr).await;
    drop(proxy);
    exec(&admin, [format!("DROP DATABASE IF EXISTS {name}")]).await;
}

//! Draft action metadata through the proxy (docs/design.md#action-metadata): the Python
//! fixture (FIXTURE_ACTION_METADATA=1) declares it in its tools' `_meta`, as the Python SDK
//! keeps it. `drop_item` declares outcome `Benign` and deletes a row: the database log shows
//! it, `undeclared_outcome`; with `--correct-hints` a client is told and re-lists it with
//! outcome `consequential`. `show_item` (outcome `BENIGN`, destination `Internal`, reads) is
//! honest: no finding, served as listed.

use std::time::Duration;

use hintaudit_core::ACTION_METADATA_KEY;
use hintaudit_test_support::mcp::ListChangedWatcher;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::correct::{listing, watching_client};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_benign_outcome_that_deletes_is_found_and_corrected() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let name = "hintaudit_proxy_action";
    let db = fresh_db(&admin, name).await;
    let upstream = fixture(py, &db, "FIXTURE_ACTION_METADATA=1");
    let (proxy, addr) =
        proxy_http(&["--stdio", &upstream, "--database", &db, "--correct-hints"]).await;
    let watcher = ListChangedWatcher::default();
    let client = watching_client(addr, watcher.clone()).await;
    let before = listing(&client).await;
    let declared = &before["drop_item"]["_meta"][ACTION_METADATA_KEY];
    assert_eq!(declared["outcome"], json!("Benign"), "{declared}");

    for (tool, id) in [("show_item", 1), ("drop_item", 2)] {
        let params = CallToolRequestParams::new(tool).with_arguments(args(json!({ "id": id })));
        client.call_tool(params).await.expect("tools/call");
    }
    tokio::time::timeout(Duration::from_secs(60), watcher.changed.notified())
        .await
        .expect("notifications/tools/list_changed");

    let s = metrics(addr).await;
    assert_eq!(
        violations(&s, "drop_item", "undeclared_outcome"),
        1.0,
        "{}",
        s.text
    );
    assert_eq!(
        violations(&s, "show_item", "undeclared_outcome"),
        0.0,
        "{}",
        s.text
    );
    assert_eq!(
        violations(&s, "show_item", "undeclared_destination"),
        0.0,
        "{}",
        s.text
    );

    let after = listing(&client).await;
    let served = &after["drop_item"]["_meta"][ACTION_METADATA_KEY];
    assert_eq!(served["outcome"], json!("consequential"), "{served}");
    assert_eq!(
        served["inputMetadata"], declared["inputMetadata"],
        "{served}"
    );
    assert_eq!(
        after["show_item"], before["show_item"],
        "honest: served as listed"
    );
    client.cancel().await.expect("cancel");
    drop(proxy);
    drop_db(&admin, name).await;
}

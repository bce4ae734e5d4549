//! The call scope: each tool body sees its own, and carried tasks see it too.

use hintaudit_rmcp::{CallScope, HintAudit};
use rmcp::model::CallToolRequestParams;

use crate::common::*;

#[tokio::test]
async fn tool_body_sees_its_own_scope() {
    let client = connect(HintAudit::new(Clinic::new())).await;
    let answer = client
        .call_tool(CallToolRequestParams::new("get_appointment"))
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "get_appointment");

    // Without the layer, there is no scope.
    let bare = connect(Clinic::new()).await;
    let answer = bare
        .call_tool(CallToolRequestParams::new("get_appointment"))
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "none");
    assert!(CallScope::current().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_see_their_own_scope() {
    let client = connect(HintAudit::new(ScopeProbe)).await;
    let calls = (0..40).map(|n| {
        let peer = client.peer().clone();
        async move {
            let name = format!("probe_{n}");
            let answer = peer
                .call_tool(CallToolRequestParams::new(name.clone()))
                .await
                .unwrap();
            (name, text_of(&answer))
        }
    });
    let handles: Vec<_> = calls.map(tokio::spawn).collect();
    for handle in handles {
        let (name, seen) = handle.await.unwrap();
        assert_eq!(seen, format!("{name}|{name}"));
    }
}

#[tokio::test]
async fn spawned_tasks_see_the_scope_only_when_carried() {
    let client = connect(HintAudit::new(Clinic::new())).await;
    let answer = client
        .call_tool(CallToolRequestParams::new("spawner"))
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "carried=spawner plain=none");
}

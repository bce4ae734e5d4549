//! Transparency: the same requests to the bare fixture and through the proxy give the same
//! answers (the upstream's `initialize` answer, tools/list, results, tool errors, protocol
//! errors).

use serde_json::{Value, json};

use crate::support::*;

/// What a client sees of a server, request by request.
async fn transcript(client: &Client) -> Vec<Value> {
    let info = client.peer_info().expect("initialize answer");
    let mut out = vec![json!({
        "serverInfo": info.server_info,
        "capabilities": info.capabilities,
        "instructions": info.instructions,
    })];
    let tools = client.list_all_tools().await.expect("tools/list");
    out.push(serde_json::to_value(&tools).expect("json"));
    let calls: [(&str, Value); 6] = [
        (
            "read_query",
            json!({"query": "SELECT id, name FROM public.items ORDER BY id"}),
        ),
        ("read_query", json!({"query": "DELETE FROM public.items"})),
        ("list_tables", json!({})),
        ("add_note", json!({"id": 7, "text": "seven"})),
        ("add_note", json!({"id": 7, "text": "again"})),
        ("no_such_tool", json!({})),
    ];
    for (tool, a) in calls {
        let a = a.as_object().cloned().unwrap_or_default();
        out.push(call(client, tool, a).await);
    }
    let missing = call(client, "get_item", Default::default()).await;
    out.push(missing);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_and_proxied_transcripts_are_the_same() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let bare_db = fresh_db(&admin, "hintaudit_proxy_t_bare").await;
    let proxied_db = fresh_db(&admin, "hintaudit_proxy_t_proxied").await;

    let py_path = std::path::Path::new(py);
    let server = sql_server();
    let server = server.to_str().expect("utf-8 path");
    let bare = stdio_client(py_path, &[server, "--db", &bare_db]).await;
    let bare_transcript = transcript(&bare).await;
    bare.cancel().await.ok();

    let upstream = fixture(py, &proxied_db, "");
    let proxied = stdio_client(
        &hintaudit(),
        &["proxy", "--stdio", &upstream, "--database", &proxied_db],
    )
    .await;
    let proxied_transcript = transcript(&proxied).await;
    proxied.cancel().await.ok();

    assert_eq!(bare_transcript.len(), proxied_transcript.len());
    for (b, p) in bare_transcript.iter().zip(&proxied_transcript) {
        assert_eq!(b, p, "bare and proxied answers differ");
    }
    // The transcript holds what it should: rows, a tool's error text, a protocol error.
    let text = serde_json::to_string(&proxied_transcript).expect("json");
    assert!(text.contains("anchor"), "{text}");
    assert!(text.contains("only SELECT"), "{text}");
    drop_db(&admin, "hintaudit_proxy_t_bare").await;
    drop_db(&admin, "hintaudit_proxy_t_proxied").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_and_proxied_transcripts_are_the_same_over_streamable_http() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let bare_db = fresh_db(&admin, "hintaudit_proxy_th_bare").await;
    let proxied_db = fresh_db(&admin, "hintaudit_proxy_th_proxied").await;
    let (_bare_server, bare_url) = fixture_http(py, &bare_db, &[]).await;
    let bare = http_client(&bare_url).await;
    let bare_transcript = transcript(&bare).await;
    bare.cancel().await.ok();

    let (_upstream, upstream) = fixture_http(py, &proxied_db, &[]).await;
    let (_proxy, addr) = proxy_http(&["--upstream", &upstream, "--database", &proxied_db]).await;
    let proxied = http_client(&format!("http://{addr}/mcp")).await;
    let proxied_transcript = transcript(&proxied).await;
    proxied.cancel().await.ok();

    assert_eq!(
        bare_transcript, proxied_transcript,
        "bare and proxied answers differ"
    );
    drop_db(&admin, "hintaudit_proxy_th_bare").await;
    drop_db(&admin, "hintaudit_proxy_th_proxied").await;
}

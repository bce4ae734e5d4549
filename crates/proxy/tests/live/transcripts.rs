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
    let (proxy, addr) = proxy_http(&["--upstream", &upstream, "--database", &proxied_db]).await;
    let proxied = http_client(&format!("http://{addr}/mcp")).await;
    let proxied_transcript = transcript(&proxied).await;
    proxied.cancel().await.ok();

    assert_eq!(
        bare_transcript, proxied_transcript,
        "bare and proxied answers differ"
    );
    drop(proxy);
    drop_db(&admin, "hintaudit_proxy_th_bare").await;
    drop_db(&admin, "hintaudit_proxy_th_proxied").await;
}

/// Collects the progress notifications a client receives: (progress, message).
#[derive(Clone, Default)]
struct Progress(Seen, Tokens);

/// (progress, message) of each notification.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(f64, Option<String>)>>>;

type Tokens = std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::ProgressToken>>>;

impl rmcp::ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let mut tokens = self.1.lock().unwrap_or_else(|e| e.into_inner());
        tokens.push(params.progress_token.clone());
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.push((params.progress, params.message));
    }
}

/// count_to(5) through `program args`: the result and the progress notifications seen.
async fn progress_of(
    program: &std::path::Path,
    args: &[&str],
) -> (Value, Vec<(f64, Option<String>)>) {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).env("FIXTURE_PROGRESS", "1");
    let (proc, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let seen = Progress::default();
    let client = seen.clone().serve(proc).await.expect("handshake");
    let params = CallToolRequestParams::new("count_to")
        .with_arguments(json!({"n": 5}).as_object().cloned().unwrap_or_default());
    let handle = client
        .peer()
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    let result =
        serde_json::to_value(handle.await_response().await.expect("answer")).expect("json");
    // Notifications sent before the answer may be handled just after it.
    for _ in 0..100 {
        if seen.0.lock().unwrap_or_else(|e| e.into_inner()).len() >= 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let got = seen.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let tokens = seen.1.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        tokens.iter().all(|t| *t == token),
        "the request's own token: {tokens:?}"
    );
    client.cancel().await.ok();
    (result, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_pass_through_with_the_clients_own_token() {
    let Some((admin, py)) = parts().await else {
        return;
    };
    let db = fresh_db(&admin, "hintaudit_proxy_progress").await;
    let server = sql_server();
    let server = server.to_str().expect("utf-8 path");
    let bare = progress_of(std::path::Path::new(py), &[server, "--db", &db]).await;
    let upstream = fixture(py, &db, "FIXTURE_PROGRESS=1");
    let mut proxied = progress_of(&hintaudit(), &["proxy", "--stdio", &upstream]).await;
    assert_eq!(bare.1.len(), 5, "{bare:?}");
    // rmcp hands each notification to its handler on a task of its own, in the test's client
    // as in the proxy's: every notification passes, in an order rmcp does not keep.
    let mut bare = bare;
    bare.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    proxied.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(bare, proxied, "bare and proxied progress differ");
    drop_db(&admin, "hintaudit_proxy_progress").await;
}

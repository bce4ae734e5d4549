//! An MCP client that answers the server's requests (sampling, elicitation, roots) and
//! records what the server sends it (log messages, tools list changes, progress), for the
//! relay tests; and the helpers that call tools on any client.

// Sampling, roots and logging are deprecated (SEP-2577), and still spoken by the fixture.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestMetaObject, Root,
    SamplingMessage,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// What a [`Recorder`] saw from its server.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// The `data` of each log message, as text.
    pub logs: Vec<String>,
    /// How many tools list_changed notifications.
    pub tools_changed: usize,
    /// (token, progress, message) of each progress notification.
    pub progress: Vec<(ProgressToken, f64, Option<String>)>,
    /// The server→client requests answered: `sampling`, `elicitation`, `roots`.
    pub asked: Vec<&'static str>,
}

/// A client that declares sampling, elicitation and roots on protocol 2025-11-25 (the last
/// with server→client requests), under its own name, with `_meta` on its `initialize`.
#[derive(Clone)]
pub struct Recorder {
    pub name: &'static str,
    seen: Arc<Mutex<Seen>>,
}

impl Recorder {
    pub fn new(name: &'static str) -> Self {
        Recorder {
            name,
            seen: Arc::default(),
        }
    }

    fn with_seen(&self, f: impl FnOnce(&mut Seen)) {
        f(&mut self.seen.lock().unwrap_or_else(|e| e.into_inner()));
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until `done` holds of what was seen (at most 20 s); what was seen then.
    pub async fn until(&self, done: impl Fn(&Seen) -> bool) -> Seen {
        for _ in 0..400 {
            let seen = self.seen();
            if done(&seen) {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.seen()
    }
}

impl ClientHandler for Recorder {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.with_seen(|s| s.asked.push("sampling"));
        let text = format!("{} sampled", self.name);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(text),
            "test-model".into(),
        ))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        self.with_seen(|s| s.asked.push("elicitation"));
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": self.name})))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        self.with_seen(|s| s.asked.push("roots"));
        Ok(ListRootsResult::new(vec![Root::new(format!(
            "file:///{}",
            self.name
        ))]))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = params
            .data
            .as_str()
            .map_or_else(|| params.data.to_string(), str::to_owned);
        self.with_seen(|s| s.logs.push(text));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.with_seen(|s| s.tools_changed += 1);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.with_seen(|s| {
            s.progress
                .push((params.progress_token, params.progress, params.message));
        });
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = ClientCapabilities::builder()
            .enable_roots()
            .enable_sampling()
            .enable_elicitation()
            .build();
        let mut info = ClientConfig::new(capabilities, Implementation::new(self.name, "1.2.3"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let mut meta = RequestMetaObject::default();
        meta.insert("io.hintaudit/client".into(), json!(self.name));
        info.meta = Some(meta);
        info
    }
}

/// An MCP client with `handler` of a stdio server started as `program args`, with `env`.
pub async fn stdio_with<H: ClientHandler>(
    handler: H,
    program: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> RunningService<RoleClient, H> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).envs(env.iter().copied());
    let (proc, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn");
    handler.serve(proc).await.expect("MCP handshake over stdio")
}

/// An MCP client with `handler` of the streamable HTTP server at `url`.
pub async fn http_with<H: ClientHandler>(handler: H, url: &str) -> RunningService<RoleClient, H> {
    handler
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("MCP handshake over HTTP")
}

/// tools/call `tool` with `arguments` and `_meta` on `peer`: the answer as JSON (a result, or
/// an error as text).
pub async fn call_with_meta(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: Value,
    meta: Option<RequestMetaObject>,
) -> Value {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let mut options = PeerRequestOptions::no_options();
    if let Some(meta) = meta {
        options = options.with_meta(meta);
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let answer = match peer.send_request_with_option(request, options).await {
        Ok(handle) => handle.await_response().await,
        Err(e) => Err(e),
    };
    match answer {
        Ok(r) => serde_json::to_value(r).expect("json"),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// tools/call `tool` with `arguments` on `peer`.
pub async fn call_on(peer: &Peer<RoleClient>, tool: &str, arguments: Value) -> Value {
    call_with_meta(peer, tool, arguments, None).await
}

/// The text of a tool result's first content block.
pub fn text(answer: &Value) -> String {
    answer["content"][0]["text"]
        .as_str()
        .map_or_else(|| answer.to_string(), str::to_owned)
}

/// tools/call `tool` with `arguments` on `peer`: the answer as JSON, and the progress token
/// the request carried.
pub async fn call_tracked(
    peer: &Peer<RoleClient>,
    tool: &str,
    arguments: Value,
) -> (Value, ProgressToken) {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    let answer = handle.await_response().await.expect("answer");
    (serde_json::to_value(answer).expect("json"), token)
}

/// A fresh directory for a test's fixture: its SQLite file and the marks it writes
/// (`FIXTURE_RELAY`).
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hintaudit-relay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The pids the fixture wrote in `dir` (one `pid-N` file per process started).
pub fn pids(dir: &std::path::Path) -> Vec<u32> {
    let mut out: Vec<u32> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| {
                    e.ok()?
                        .file_name()
                        .to_str()?
                        .strip_prefix("pid-")?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_unstable();
    out
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits until `done` holds (at most 20 s); whether it did.
pub async fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..400 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

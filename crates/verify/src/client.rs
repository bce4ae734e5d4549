//! The MCP client: rmcp over a child process (stdio) or streamable HTTP.
//!
//! tools/list is sent as a raw request so that a listing rmcp's typed model rejects (a hint
//! that is a string, say) is still read, tolerantly, through
//! [`DeclaredHints::from_annotations_json`].

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hintaudit_core::{DeclaredHints, Hint};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, CustomRequest, ServerResult,
};
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::db::redact;
use crate::error::{VerifyError, one_line};

/// Where the server under test is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSpec {
    /// A command line, split like a POSIX shell would, started as a child process that
    /// speaks MCP on its stdin and stdout.
    Stdio(String),
    /// A streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    Url(String),
}

/// One tool as tools/list declares it.
#[derive(Debug, Clone)]
pub(crate) struct ToolInfo {
    pub name: String,
    pub hints: DeclaredHints,
    /// Hints present with a `null` (or otherwise non-boolean) value.
    pub null_hints: Vec<Hint>,
    pub input_schema: Value,
}

impl ToolInfo {
    pub fn from_json(tool: &Value) -> Option<ToolInfo> {
        let name = tool.get("name")?.as_str()?.to_owned();
        let annotations = tool.get("annotations");
        let null_hints = Hint::ALL
            .into_iter()
            .filter(|h| {
                annotations
                    .and_then(|a| a.get(h.spec_name()))
                    .is_some_and(|v| !v.is_boolean())
            })
            .collect();
        Some(ToolInfo {
            name,
            hints: DeclaredHints::from_annotations_json(annotations),
            null_hints,
            input_schema: tool
                .get("inputSchema")
                .cloned()
                .unwrap_or(Value::Object(Default::default())),
        })
    }
}

/// Environment variables for the child: `(name, value)`.
type Env = Vec<(String, String)>;

/// Splits a command line like a POSIX shell: leading `NAME=value` words set the child's
/// environment, the rest are the program and its arguments. `None` when it cannot be parsed
/// or names no program.
fn split_command(line: &str) -> Option<(Env, Vec<String>)> {
    let mut words = shlex::split(line)?.into_iter().peekable();
    let mut env = Vec::new();
    while let Some((name, value)) = words.peek().and_then(|w| w.split_once('=')) {
        let valid = name
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
        if !valid || name.is_empty() {
            break;
        }
        env.push((name.to_owned(), value.to_owned()));
        words.next();
    }
    let words: Vec<String> = words.collect();
    (!words.is_empty()).then_some((env, words))
}

/// The innermost cause of an error chain (rmcp wraps transport errors several times; the
/// innermost says what happened: "Connection refused", "connection closed").
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// How one tools/call ended, when the server is still there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true`, or a JSON-RPC error: the text, one line.
    Error(String),
}

pub(crate) struct McpClient {
    service: RunningService<RoleClient, ()>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    timeout: Duration,
}

const STDERR_LINES: usize = 5;

impl McpClient {
    /// Starts or reaches the server and completes the MCP handshake within `timeout`.
    pub async fn connect(spec: &ServerSpec, timeout: Duration) -> Result<McpClient, VerifyError> {
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let handshake = match spec {
            ServerSpec::Stdio(line) => {
                let (env, words) = split_command(line).ok_or_else(|| {
                    VerifyError::Usage(format!("cannot parse --stdio {:?}", redact(line)))
                })?;
                let mut cmd = tokio::process::Command::new(&words[0]);
                cmd.args(&words[1..]).envs(env);
                let (proc, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| {
                        VerifyError::server(format!("cannot start {:?}: {e}", words[0]))
                    })?;
                if let Some(stderr) = stderr {
                    let tail = stderr_tail.clone();
                    tokio::spawn(async move {
                        let mut lines = BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                            if t.len() == STDERR_LINES {
                                t.pop_front();
                            }
                            t.push_back(line);
                        }
                    });
                }
                tokio::time::timeout(timeout, ().serve(proc)).await
            }
            ServerSpec::Url(url) => {
                if !url.starts_with("http://") {
                    return Err(VerifyError::Usage(format!(
                        "--url {}: only http:// URLs are supported (this build has no TLS)",
                        redact(url)
                    )));
                }
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                tokio::time::timeout(timeout, ().serve(transport)).await
            }
        };
        let client = McpClient {
            service: match handshake {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    let tail = Self::tail_of(&stderr_tail);
                    let what = match spec {
                        ServerSpec::Stdio(_) => "the MCP handshake failed".to_owned(),
                        ServerSpec::Url(url) => format!("cannot reach {}", redact(url)),
                    };
                    // rmcp does not chain a transport error as its source: unwrap it here.
                    let cause = match &e {
                        ClientInitializeError::TransportError { error, .. } => {
                            root_cause(error.error.as_ref())
                        }
                        other => root_cause(other),
                    };
                    return Err(VerifyError::server(format!("{what}: {cause}{tail}")));
                }
                Err(_) => {
                    return Err(VerifyError::server(format!(
                        "no answer to the MCP handshake within {} s",
                        timeout.as_secs_f64()
                    )));
                }
            },
            stderr_tail,
            timeout,
        };
        Ok(client)
    }

    fn tail_of(tail: &Mutex<VecDeque<String>>) -> String {
        let t = tail.lock().unwrap_or_else(|e| e.into_inner());
        match t.back() {
            Some(last) => format!(" (server stderr: {})", one_line(last)),
            None => String::new(),
        }
    }

    fn fatal(&self, what: &str, e: ServiceError) -> VerifyError {
        let tail = Self::tail_of(&self.stderr_tail);
        match e {
            ServiceError::Timeout { .. } => VerifyError::server(format!(
                "{what}: no answer within {} s (--timeout){tail}",
                self.timeout.as_secs_f64()
            )),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => VerifyError::server(
                format!("{what}: the server closed the connection or exited{tail}"),
            ),
            other => VerifyError::server(format!("{what}: {other}{tail}")),
        }
    }

    async fn request(&self, what: &str, req: ClientRequest) -> Result<ServerResult, VerifyError> {
        let handle = self
            .service
            .send_request_with_option(req, PeerRequestOptions::with_timeout(self.timeout))
            .await
            .map_err(|e| self.fatal(what, e))?;
        match handle.await_response().await {
            Ok(r) => Ok(r),
            Err(ServiceError::McpError(e)) => Err(VerifyError::server(format!(
                "{what}: error {}: {}",
                e.code.0, e.message
            ))),
            Err(e) => Err(self.fatal(what, e)),
        }
    }

    /// Every tool, following pagination (at most 1,000 pages).
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, VerifyError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = cursor.as_ref().map(|c| serde_json::json!({ "cursor": c }));
            let req = ClientRequest::CustomRequest(CustomRequest::new("tools/list", params));
            let result = self.request("tools/list", req).await?;
            let json = match result {
                ServerResult::CustomResult(c) => c.0,
                other => serde_json::to_value(&other)
                    .map_err(|e| VerifyError::server(format!("tools/list: {e}")))?,
            };
            let list = json
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| VerifyError::server("tools/list: the result has no tools array"))?;
            tools.extend(list.iter().filter_map(ToolInfo::from_json));
            cursor = json
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    /// Calls a tool. A result with `isError` and a JSON-RPC error are outcomes; a timeout,
    /// a closed connection or an exited server are errors.
    pub async fn call(&self, tool: &str, arguments: &Value) -> Result<CallOutcome, VerifyError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params.arguments = Some(map.clone());
        }
        let req = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let what = format!("tools/call {tool}");
        let handle = self
            .service
            .send_request_with_option(req, PeerRequestOptions::with_timeout(self.timeout))
            .await
            .map_err(|e| self.fatal(&what, e))?;
        match handle.await_response().await {
            Ok(ServerResult::CallToolResult(r)) => Ok(if r.is_error == Some(true) {
                let text = r
                    .content
                    .iter()
                    .find_map(|c| c.as_text().map(|t| t.text.clone()))
                    .unwrap_or_else(|| "isError".into());
                CallOutcome::Error(one_line(&text))
            } else {
                CallOutcome::Ok
            }),
            Ok(ServerResult::CustomResult(c)) => Ok(
                if c.0.get("isError").and_then(Value::as_bool) == Some(true) {
                    CallOutcome::Error("isError".into())
                } else {
                    CallOutcome::Ok
                },
            ),
            Ok(_) => Ok(CallOutcome::Ok),
            Err(ServiceError::McpError(e)) => Ok(CallOutcome::Error(one_line(&format!(
                "error {}: {}",
                e.code.0, e.message
            )))),
            Err(e) => Err(self.fatal(&what, e)),
        }
    }

    /// Ends the session (and the child process).
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn command_lines_split_like_a_shell() {
        let (env, words) =
            split_command("DATABASE_URL='sqlite:a b.db' RUST_LOG=off bookings --stdio").unwrap();
        assert_eq!(
            env,
            vec![
                ("DATABASE_URL".into(), "sqlite:a b.db".into()),
                ("RUST_LOG".into(), "off".into())
            ]
        );
        assert_eq!(words, ["bookings", "--stdio"]);
        let (env, words) = split_command("python3 server.py --opt=x").unwrap();
        assert!(env.is_empty());
        assert_eq!(words, ["python3", "server.py", "--opt=x"]);
        assert!(split_command("A=1").is_none());
        assert!(split_command("'unclosed").is_none());
        assert!(split_command("").is_none());
    }

    #[test]
    fn listing_is_read_tolerantly() {
        let tool = json!({
            "name": "t",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": null, "destructiveHint": "yes", "idempotentHint": true}
        });
        let info = ToolInfo::from_json(&tool).unwrap();
        assert_eq!(info.hints.read_only, None);
        assert_eq!(info.hints.destructive, None);
        assert_eq!(info.hints.idempotent, Some(true));
        assert_eq!(info.null_hints, vec![Hint::ReadOnly, Hint::Destructive]);
        let bare = ToolInfo::from_json(&json!({"name": "u", "annotations": null})).unwrap();
        assert_eq!(bare.hints, DeclaredHints::default());
        assert!(bare.input_schema.is_object());
        assert!(ToolInfo::from_json(&json!({"annotations": {}})).is_none());
    }
}

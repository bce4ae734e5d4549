//! The MCP client: rmcp over a child process (stdio) or streamable HTTP.
//!
//! tools/list is sent as a raw request so that a listing rmcp's typed model rejects (a hint
//! that is a string, say) is still read, tolerantly, through
//! [`DeclaredHints::from_annotations_json`].

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use hintaudit_core::{ActionMetadata, DeclaredHints, Hint};
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
use crate::outcome::reads_as_error;
use crate::proxy::PROXY_VARIABLES;

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
    /// Position in tools/list, pages concatenated.
    pub index: usize,
    /// Whether the listing has an `annotations` object for the tool.
    pub annotated: bool,
    /// The draft action metadata it declares, in `_meta` or `annotations`.
    pub action: Option<ActionMetadata>,
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
            index: 0,
            annotated: annotations.is_some_and(Value::is_object),
            action: ActionMetadata::from_tool_json(tool.get("_meta"), annotations),
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

/// The words of a `--stdio` command line that may name a resource: the values of its
/// `NAME=value` prefix, then the program and its arguments (empty when it cannot be parsed).
pub(crate) fn command_words(line: &str) -> Vec<String> {
    split_command(line)
        .map(|(env, words)| env.into_iter().map(|(_, v)| v).chain(words).collect())
        .unwrap_or_default()
}

/// Starts a `--stdio` server: its command line's environment, the proxy variables (see
/// [`McpClient::connect`]), its stderr kept in `stderr_tail`. Returns the child's transport
/// and process id.
fn spawn_stdio(
    line: &str,
    stderr_tail: &StderrTail,
    proxy: Option<&str>,
) -> Result<(TokioChildProcess, Option<u32>), VerifyError> {
    let (env, words) = split_command(line)
        .ok_or_else(|| VerifyError::Usage(format!("cannot parse --stdio {:?}", redact(line))))?;
    let mut cmd = tokio::process::Command::new(&words[0]);
    if let Some(proxy) = proxy {
        for name in PROXY_VARIABLES {
            cmd.env(name, proxy);
        }
        cmd.env_remove("NO_PROXY").env_remove("no_proxy");
    }
    cmd.args(&words[1..]).envs(env);
    let (proc, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| VerifyError::server(format!("cannot start {:?}: {e}", words[0])))?;
    let pid = proc.id();
    if let Some(stderr) = stderr {
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut t = tail.lock();
                if t.len() == STDERR_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
    }
    Ok((proc, pid))
}

/// A `--url` server's URL, if it is plain `http://` (no TLS client in this build).
fn http_only(url: &str) -> Result<&str, VerifyError> {
    if !url.starts_with("http://") {
        return Err(VerifyError::Usage(format!(
            "--url {}: only http:// URLs are supported (this build has no TLS \
             client; put the server on loopback http:// for the test)",
            redact(url)
        )));
    }
    Ok(url)
}

/// Why the handshake failed, in words: the innermost cause (for a `--url` server, whether
/// the connection was refused), then the server's last stderr lines.
async fn handshake_failed(
    spec: &ServerSpec,
    e: &ClientInitializeError,
    stderr_tail: &StderrTail,
) -> VerifyError {
    let tail = tail_of(stderr_tail);
    // rmcp does not chain a transport error as its source: unwrap it here.
    let (cause, outer) = match e {
        ClientInitializeError::TransportError { error, .. } => {
            (root_cause(error.error.as_ref()), error.error.to_string())
        }
        other => (root_cause(other), other.to_string()),
    };
    let what = match spec {
        ServerSpec::Stdio(_) => format!("the MCP handshake failed: {cause}"),
        ServerSpec::Url(url) => {
            let refused = refused(url).await;
            http_failure(&redact(url), &cause, &outer, refused)
        }
    };
    VerifyError::server(format!("{what}{tail}"))
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

/// How one tools/call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    /// A result without `isError` whose text does not read as an error.
    Ok,
    /// A result with `isError: true`, a JSON-RPC error, or a result whose text reads as an
    /// error ([`crate::outcome::reads_as_error`]): the text, one line.
    Error(String),
    /// No result: the call timed out, or the server closed the connection or exited. The
    /// session is unusable; the caller restarts it.
    Lost(String),
}

/// The last lines a server wrote on stderr, shared by every session of one run.
pub(crate) type StderrTail = Arc<Mutex<VecDeque<String>>>;

/// How many stderr lines a report and an error message keep.
pub const STDERR_LINES: usize = 20;

pub(crate) struct McpClient {
    service: RunningService<RoleClient, ()>,
    timeout: Duration,
    /// The process id of a stdio server verify started.
    pid: Option<u32>,
}

impl McpClient {
    /// Starts or reaches the server and completes the MCP handshake within `timeout`. A
    /// stdio server started with `proxy` (a URL) gets it in every proxy variable
    /// ([`PROXY_VARIABLES`]) and no `NO_PROXY`/`no_proxy`, unless its command line's own
    /// `NAME=value` prefix sets them.
    pub async fn connect(
        spec: &ServerSpec,
        timeout: Duration,
        stderr_tail: &StderrTail,
        proxy: Option<&str>,
    ) -> Result<McpClient, VerifyError> {
        let (handshake, pid) = match spec {
            ServerSpec::Stdio(line) => {
                let (proc, pid) = spawn_stdio(line, stderr_tail, proxy)?;
                (tokio::time::timeout(timeout, ().serve(proc)).await, pid)
            }
            ServerSpec::Url(url) => {
                let transport = StreamableHttpClientTransport::from_uri(http_only(url)?);
                (
                    tokio::time::timeout(timeout, ().serve(transport)).await,
                    None,
                )
            }
        };
        let service = match handshake {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(handshake_failed(spec, &e, stderr_tail).await),
            Err(_) => {
                return Err(VerifyError::server(format!(
                    "no answer to the MCP handshake within {} s",
                    timeout.as_secs_f64()
                )));
            }
        };
        Ok(McpClient {
            service,
            timeout,
            pid,
        })
    }

    /// The process id of a stdio server (`None` for a `--url` server).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The time each later request may take (the handshake had its own).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn lost(&self, e: ServiceError) -> String {
        match e {
            ServiceError::Timeout { .. } => format!(
                "no answer within {} s (--timeout)",
                self.timeout.as_secs_f64()
            ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                "the server closed the connection or exited".to_owned()
            }
            other => one_line(&other.to_string()),
        }
    }

    fn fatal(&self, what: &str, e: ServiceError) -> VerifyError {
        VerifyError::server(format!("{what}: {}", self.lost(e)))
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
            let first = tools.len();
            tools.extend(list.iter().enumerate().filter_map(|(i, t)| {
                let mut info = ToolInfo::from_json(t)?;
                info.index = first + i;
                Some(info)
            }));
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

    /// Calls a tool. A result with `isError`, a result that reads as an error and a
    /// JSON-RPC error are [`CallOutcome::Error`]; a timeout, a closed connection or an
    /// exited server are [`CallOutcome::Lost`].
    pub async fn call(&self, tool: &str, arguments: &Value) -> CallOutcome {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params.arguments = Some(map.clone());
        }
        let req = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match self
            .service
            .send_request_with_option(req, PeerRequestOptions::with_timeout(self.timeout))
            .await
        {
            Ok(h) => h,
            Err(e) => return CallOutcome::Lost(self.lost(e)),
        };
        match handle.await_response().await {
            Ok(ServerResult::CallToolResult(r)) => {
                let text = r
                    .content
                    .iter()
                    .find_map(|c| c.as_text().map(|t| t.text.clone()));
                if r.is_error == Some(true) {
                    return CallOutcome::Error(one_line(text.as_deref().unwrap_or("isError")));
                }
                match text.as_deref().and_then(reads_as_error) {
                    Some(why) => CallOutcome::Error(one_line(&format!(
                        "{why} (isError false): {}",
                        text.unwrap_or_default()
                    ))),
                    None => CallOutcome::Ok,
                }
            }
            Ok(ServerResult::CustomResult(c)) => {
                if c.0.get("isError").and_then(Value::as_bool) == Some(true) {
                    CallOutcome::Error("isError".into())
                } else {
                    CallOutcome::Ok
                }
            }
            Ok(_) => CallOutcome::Ok,
            Err(ServiceError::McpError(e)) => {
                CallOutcome::Error(one_line(&format!("error {}: {}", e.code.0, e.message)))
            }
            Err(e) => CallOutcome::Lost(self.lost(e)),
        }
    }

    /// Ends the session (and the child process).
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
    }
}

/// The server's last stderr line as a message suffix: ` (server stderr: …)`. The CLI prints
/// the last [`STDERR_LINES`] lines after the message; reports carry them too.
pub(crate) fn tail_of(tail: &StderrTail) -> String {
    let t = tail.lock();
    match t.back() {
        Some(last) => format!(" (server stderr: {})", one_line(last)),
        None => String::new(),
    }
}

/// Whether a TCP connection to the URL's host and port is refused (the HTTP client's error
/// does not always say so).
async fn refused(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let addr = if authority.contains(':') && !authority.ends_with(']') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    tokio::task::spawn_blocking(move || {
        use std::net::ToSocketAddrs;
        addr.to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .is_some_and(|a| {
                matches!(
                    std::net::TcpStream::connect_timeout(&a, Duration::from_secs(2)),
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
                )
            })
    })
    .await
    .unwrap_or(false)
}

/// What went wrong reaching a streamable HTTP endpoint, in words a user can act on.
fn http_failure(url: &str, cause: &str, outer: &str, refused: bool) -> String {
    let all = format!("{outer} {cause}").to_ascii_lowercase();
    if refused || all.contains("connection refused") {
        format!(
            "cannot reach {url}: connection refused (nothing listens there; is the server started?)"
        )
    } else if all.contains("405") || all.contains("method not allowed") {
        format!(
            "{url} refused a POST (HTTP 405): it is not a streamable HTTP endpoint; only \
             streamable HTTP is supported, not the legacy HTTP+SSE transport (an endpoint \
             such as /sse)"
        )
    } else if all.contains("404") {
        format!(
            "{url}: HTTP 404: no MCP endpoint at this path (streamable HTTP servers often serve /mcp)"
        )
    } else if all.contains("certificate") || all.contains("tls") || all.contains("ssl") {
        format!("cannot reach {url}: TLS failed: {cause}")
    } else if all.contains("dns") || all.contains("failed to lookup") {
        format!("cannot reach {url}: the host name does not resolve: {cause}")
    } else {
        format!("cannot reach {url}: {cause}")
    }
}

#[cfg(test)]
mod tests;

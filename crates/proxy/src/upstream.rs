//! The upstream MCP server: a child process over stdio (started as `hintaudit verify --stdio`
//! starts one: `NAME=value` words first set its environment) or a streamable HTTP endpoint.
//!
//! One connection serves every downstream session. When the child exits or the connection
//! closes, the request in flight fails with an internal error that says so, and the next
//! request connects again (a new child for `--stdio`): the proxy keeps serving.
//! Notifications the upstream sends (progress, log messages, list changes) go to the
//! downstream sessions ([`Relay`]).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[allow(deprecated)] // logging notifications: deprecated upstream (SEP-2577), still relayed
use rmcp::model::{
    ClientConfig, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, RoleServer, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Where the upstream server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamSpec {
    /// A command line, split like a POSIX shell; leading `NAME=value` words set the child's
    /// environment.
    Stdio(String),
    /// A streamable HTTP endpoint, `http://host:port/mcp`.
    Http(String),
}

/// Why the upstream cannot be reached.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The `--stdio` command line cannot be parsed, or names no program.
    #[error("cannot parse --stdio {0:?}")]
    Command(String),
    /// The child process could not be started.
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The MCP handshake failed or timed out.
    #[error("the upstream MCP handshake failed: {0}")]
    Handshake(String),
}

/// Environment variables for the child: `(name, value)`.
type Env = Vec<(String, String)>;

/// Splits a command line: leading `NAME=value` words, then the program and its arguments.
fn split_command(line: &str) -> Option<(Env, Vec<String>)> {
    let mut words = shlex::split(line)?.into_iter().peekable();
    let mut env = Vec::new();
    while let Some((name, value)) = words.peek().and_then(|w| w.split_once('=')) {
        let valid = !name.is_empty()
            && name
                .chars()
                .enumerate()
                .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
        if !valid {
            break;
        }
        env.push((name.to_owned(), value.to_owned()));
        words.next();
    }
    let words: Vec<String> = words.collect();
    (!words.is_empty()).then_some((env, words))
}

/// The downstream sessions, for notifications the upstream sends.
#[derive(Debug, Clone, Default)]
pub struct Relay {
    inner: Arc<Mutex<RelayState>>,
}

#[derive(Debug, Default)]
struct RelayState {
    peers: Vec<Peer<RoleServer>>,
    /// The upstream progress token of a request in flight → the downstream token and session.
    progress: HashMap<ProgressToken, (ProgressToken, Peer<RoleServer>)>,
}

impl Relay {
    fn state(&self) -> std::sync::MutexGuard<'_, RelayState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers a downstream session, for broadcast notifications.
    pub fn session(&self, peer: &Peer<RoleServer>) {
        let mut s = self.state();
        s.peers.retain(|p| !p.is_transport_closed());
        if s.peers.len() < 1024 {
            s.peers.push(peer.clone());
        }
    }

    /// Progress for `upstream` goes to `downstream` on `peer` while the request is in flight.
    pub fn progress(
        &self,
        upstream: ProgressToken,
        downstream: ProgressToken,
        peer: Peer<RoleServer>,
    ) {
        self.state().progress.insert(upstream, (downstream, peer));
    }

    /// The request with progress token `upstream` finished. Its mapping stays a moment
    /// longer: rmcp handles each notification on a task of its own, so progress the upstream
    /// sent just before its answer may be handled just after it.
    pub fn done(&self, upstream: &ProgressToken) {
        let relay = self.clone();
        let token = upstream.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            relay.state().progress.remove(&token);
        });
    }

    fn peers(&self) -> Vec<Peer<RoleServer>> {
        let mut s = self.state();
        s.peers.retain(|p| !p.is_transport_closed());
        s.peers.clone()
    }
}

impl ClientHandler for Relay {
    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let target = self.state().progress.get(&params.progress_token).cloned();
        if let Some((token, peer)) = target {
            params.progress_token = token;
            let _ = peer.notify_progress(params).await;
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        for peer in self.peers() {
            #[allow(deprecated)]
            let _ = peer.notify_logging_message(params.clone()).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        for peer in self.peers() {
            let _ = peer.notify_resource_updated(params.clone()).await;
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        for peer in self.peers() {
            let _ = peer.notify_resource_list_changed().await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        for peer in self.peers() {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        for peer in self.peers() {
            let _ = peer.notify_prompt_list_changed().await;
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

type Service = RunningService<RoleClient, Relay>;

/// The connection to the upstream server, made again when it is lost.
#[derive(Debug)]
pub struct Upstream {
    spec: UpstreamSpec,
    relay: Relay,
    timeout: Duration,
    service: tokio::sync::Mutex<Option<Service>>,
    /// Connections made so far (1 after start; more after restarts).
    connects: std::sync::atomic::AtomicU64,
}

impl Upstream {
    /// Connects to the upstream server and completes the MCP handshake within `timeout`.
    ///
    /// # Errors
    /// When the command cannot be parsed or started, or the handshake fails.
    pub async fn connect(
        spec: UpstreamSpec,
        relay: Relay,
        timeout: Duration,
    ) -> Result<Upstream, UpstreamError> {
        let up = Upstream {
            spec,
            relay,
            timeout,
            service: tokio::sync::Mutex::new(None),
            connects: Default::default(),
        };
        up.peer().await?;
        Ok(up)
    }

    /// The relay that carries upstream notifications downstream.
    pub fn relay(&self) -> &Relay {
        &self.relay
    }

    /// How many times the proxy connected to the upstream (started its child).
    pub fn connects(&self) -> u64 {
        self.connects.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The upstream's answer to `initialize`, as last connected.
    pub async fn info(&self) -> Option<rmcp::model::ServerConfig> {
        let guard = self.service.lock().await;
        let peer = guard.as_ref().and_then(|s| s.peer_info())?;
        let mut info = rmcp::model::ServerConfig::new(peer.capabilities.clone())
            .with_protocol_version(peer.protocol_version.clone());
        if let Some(server) = &peer.server_info {
            info = info.with_server_info(server.clone());
        }
        if let Some(text) = &peer.instructions {
            info = info.with_instructions(text.clone());
        }
        info.meta = peer.meta.clone();
        Some(info)
    }

    /// The peer to send requests to: the current connection, or a new one when the last
    /// was lost (the child exited, the HTTP server went away).
    ///
    /// # Errors
    /// When a new connection cannot be made.
    pub async fn peer(&self) -> Result<Peer<RoleClient>, UpstreamError> {
        let mut guard = self.service.lock().await;
        if let Some(s) = guard.as_ref()
            && !s.is_transport_closed()
            && !s.is_closed()
        {
            return Ok(s.peer().clone());
        }
        if let Some(old) = guard.take() {
            tracing::warn!(target: "hintaudit::proxy", "the upstream connection was lost; connecting again");
            let _ = old.cancel().await;
        }
        let service = self.handshake().await?;
        let peer = service.peer().clone();
        *guard = Some(service);
        self.connects
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(peer)
    }

    async fn handshake(&self) -> Result<Service, UpstreamError> {
        let started = match &self.spec {
            UpstreamSpec::Stdio(line) => {
                let (env, words) =
                    split_command(line).ok_or_else(|| UpstreamError::Command(line.clone()))?;
                let mut cmd = tokio::process::Command::new(&words[0]);
                cmd.args(&words[1..]).envs(env);
                let (proc, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|source| UpstreamError::Spawn {
                        program: words[0].clone(),
                        source,
                    })?;
                if let Some(stderr) = stderr {
                    // The child's stderr, line by line, on ours: a stdio proxy's stdout is
                    // the protocol.
                    tokio::spawn(async move {
                        let mut lines = BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            eprintln!("{line}");
                        }
                    });
                }
                tokio::time::timeout(self.timeout, self.relay.clone().serve(proc)).await
            }
            UpstreamSpec::Http(url) => {
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                tokio::time::timeout(self.timeout, self.relay.clone().serve(transport)).await
            }
        };
        match started {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(UpstreamError::Handshake(e.to_string())),
            Err(_) => Err(UpstreamError::Handshake(format!(
                "no answer within {} s",
                self.timeout.as_secs_f64()
            ))),
        }
    }

    /// Drops the current connection, so that the next [`Upstream::peer`] connects again.
    pub async fn reset(&self) {
        if let Some(old) = self.service.lock().await.take() {
            let _ = old.cancel().await;
        }
    }

    /// Closes the connection (a `--stdio` child is stopped).
    pub async fn close(&self) {
        if let Some(s) = self.service.lock().await.take() {
            let _ = s.cancel().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        let (env, words) = split_command("A=1 B_2='x y' python3 s.py --db 'a b'").unwrap();
        assert_eq!(
            env,
            [("A".into(), "1".into()), ("B_2".into(), "x y".into())]
        );
        assert_eq!(words, ["python3", "s.py", "--db", "a b"]);
        assert!(split_command("A=1").is_none());
        assert!(split_command("'unclosed").is_none());
    }
}

//! The upstream MCP server: a child process over stdio (started as `hintaudit verify --stdio`
//! starts one: `NAME=value` words first set its environment) or a streamable HTTP endpoint.
//!
//! An [`Upstream`] is one connection, with one [`Relay`] as its client side: the start-up
//! connection, or a downstream session's own ([`Upstream::another`]). When the child exits or
//! the connection closes, the request in flight fails with an internal error that says so,
//! and the next request connects again with the same relay, so the same `initialize` params
//! (a new child for `--stdio`): the proxy keeps serving.

use std::process::Stdio;
use std::time::Duration;

use rmcp::service::{Peer, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::capture::UpstreamLink;
use crate::capture::child_env;
use crate::relay::Relay;

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

type Service = RunningService<RoleClient, Relay>;

/// A connection to the upstream server, made again when it is lost, with the same relay.
#[derive(Debug)]
pub struct Upstream {
    spec: UpstreamSpec,
    relay: Relay,
    timeout: Duration,
    service: tokio::sync::Mutex<Option<Service>>,
    /// Connections made so far (1 after start; more after restarts).
    connects: std::sync::atomic::AtomicU64,
    /// This connection's number, unique in the process: its child's application_name.
    id: u64,
    /// The pid of its current child (`--stdio`), 0 before the first.
    child: std::sync::atomic::AtomicU32,
}

/// The next [`Upstream::id`].
static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Upstream {
    /// Connects to the upstream server and completes the MCP handshake within `timeout`,
    /// introducing itself with the relay's client params ([`Relay::for_session`]; the
    /// start-up connection's [`Relay::default`] declares no capabilities).
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
            id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            child: Default::default(),
        };
        up.peer().await?;
        Ok(up)
    }

    /// Another connection to the same server, with `relay` as its client side (a downstream
    /// session's own connection: a new child for `--stdio`, a new MCP session over HTTP).
    ///
    /// # Errors
    /// As [`Upstream::connect`].
    pub async fn another(&self, relay: Relay) -> Result<Upstream, UpstreamError> {
        Upstream::connect(self.spec.clone(), relay, self.timeout).await
    }

    /// The relay: this connection's client side.
    pub fn relay(&self) -> &Relay {
        &self.relay
    }

    /// This connection's number, unique in the process (kept across reconnections). With a
    /// PostgreSQL capture, a `--stdio` child's `PGAPPNAME` is `hintaudit:<nonce>:<id>`.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether it runs a child process (`--stdio`), whose database connections are its own.
    pub fn is_child(&self) -> bool {
        matches!(self.spec, UpstreamSpec::Stdio(_))
    }

    /// The connection as the capture tells writers apart: its number and its child's pid.
    pub fn link(&self) -> UpstreamLink {
        let pid = self.child.load(std::sync::atomic::Ordering::Relaxed);
        UpstreamLink {
            connection: self.id,
            child: (pid != 0).then_some(pid),
        }
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
                // The child's database connections name it, unless its command line does.
                if let Some((name, value)) = child_env(self.id) {
                    cmd.env(name, value);
                }
                cmd.args(&words[1..]).envs(env);
                let (proc, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|source| UpstreamError::Spawn {
                        program: words[0].clone(),
                        source,
                    })?;
                if let Some(pid) = proc.id() {
                    self.child.store(pid, std::sync::atomic::Ordering::Relaxed);
                }
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

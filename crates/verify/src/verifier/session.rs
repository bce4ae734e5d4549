//! The MCP session of a run, restarted after a call that timed out or lost the server.

use std::time::Duration;

use hintaudit_core::OutboundReach;
use serde_json::Value;

use crate::client::{CallOutcome, McpClient, ServerSpec, StderrTail, ToolInfo};
use crate::error::VerifyError;
use crate::proxy::{RecordingProxy, UnattributedRequest};
use crate::verifier::DEFAULT_TIMEOUT_SECS;

/// The server under test: one live session, or none after a lost call that could not be
/// restarted. A stdio server runs behind the recording proxy (crate::proxy) for the whole
/// run, restarts included.
pub(crate) struct Session {
    spec: ServerSpec,
    timeout: Duration,
    tail: StderrTail,
    client: Option<McpClient>,
    proxy: Option<RecordingProxy>,
}

impl Session {
    /// Starts (or reaches) the server and completes the handshake, allowed the call
    /// timeout but at least [`DEFAULT_TIMEOUT_SECS`] (a server starting under load is slow).
    pub async fn start(
        spec: &ServerSpec,
        timeout: Duration,
        tail: StderrTail,
    ) -> Result<Session, VerifyError> {
        let handshake = timeout.max(Duration::from_secs(DEFAULT_TIMEOUT_SECS));
        let proxy = match spec {
            ServerSpec::Stdio(_) => Some(RecordingProxy::start().await.map_err(|e| {
                VerifyError::server(format!("cannot start the recording proxy: {e}"))
            })?),
            ServerSpec::Url(_) => None,
        };
        let url = proxy.as_ref().map(RecordingProxy::url);
        let client = McpClient::connect(spec, handshake, &tail, url.as_deref())
            .await?
            .with_timeout(timeout);
        Ok(Session {
            spec: spec.clone(),
            timeout,
            tail,
            client: Some(client),
            proxy,
        })
    }

    async fn connect(&self, handshake: Duration) -> Result<McpClient, VerifyError> {
        let proxy = self.proxy.as_ref().map(RecordingProxy::url);
        McpClient::connect(&self.spec, handshake, &self.tail, proxy.as_deref()).await
    }

    /// Whether the server's outbound HTTP requests are recorded (a stdio server, which
    /// verify starts behind its proxy); a `--url` server's are not seen.
    pub fn watches_outbound(&self) -> bool {
        self.proxy.is_some()
    }

    /// The requests that arrived while no call was in flight.
    pub fn unattributed_outbound(&self) -> Vec<UnattributedRequest> {
        self.proxy
            .as_ref()
            .map(|p| p.recording().unattributed())
            .unwrap_or_default()
    }

    /// The server this session starts or reaches.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// The process id of the stdio server running now (`None` for a `--url` server, or
    /// while stopped).
    pub fn server_pid(&self) -> Option<u32> {
        self.client.as_ref().and_then(McpClient::pid)
    }

    fn client(&self) -> Result<&McpClient, VerifyError> {
        self.client
            .as_ref()
            .ok_or_else(|| VerifyError::server("the server is gone"))
    }

    /// tools/list, every page.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, VerifyError> {
        self.client()?.list_tools().await
    }

    /// Calls a tool, with the outbound requests that arrived at the proxy while it ran;
    /// after [`CallOutcome::Lost`] the session is restarted (a stdio server is started
    /// again; an HTTP server gets a new session). An error means the restart failed and the
    /// run cannot go on.
    pub async fn call(
        &mut self,
        tool: &str,
        arguments: &Value,
    ) -> (
        Vec<OutboundReach>,
        Result<CallOutcome, (CallOutcome, VerifyError)>,
    ) {
        let recording = self.proxy.as_ref().map(|p| p.recording().clone());
        if let Some(r) = &recording {
            r.begin(tool);
        }
        let outcome = match self.client() {
            Ok(c) => Ok(c.call(tool, arguments).await),
            Err(e) => Err(e),
        };
        // Before a restart: what a restarted server sends is no call's.
        let sent = recording.map(|r| r.end()).unwrap_or_default();
        match outcome {
            Ok(outcome) => (sent, self.restart_if_lost(tool, outcome).await),
            Err(e) => (
                sent,
                Err((CallOutcome::Lost("the server is gone".into()), e)),
            ),
        }
    }

    async fn restart_if_lost(
        &mut self,
        tool: &str,
        outcome: CallOutcome,
    ) -> Result<CallOutcome, (CallOutcome, VerifyError)> {
        if let CallOutcome::Lost(why) = &outcome {
            if let Some(old) = self.client.take() {
                old.close().await;
            }
            // A restart under load may take longer than one call may: at least the default.
            let handshake = self.timeout.max(Duration::from_secs(DEFAULT_TIMEOUT_SECS));
            match self.connect(handshake).await {
                Ok(c) => self.client = Some(c.with_timeout(self.timeout)),
                Err(e) => {
                    let e = VerifyError::server(format!(
                        "tools/call {tool}: {why}; restarting the server failed: {e}"
                    ));
                    return Err((outcome, e));
                }
            }
        }
        Ok(outcome)
    }

    /// Stops the server (ends the session) until [`Session::resume`]; calls meanwhile fail.
    pub async fn stop(&mut self) {
        if let Some(old) = self.client.take() {
            old.close().await;
        }
    }

    /// Starts the server again after [`Session::stop`].
    pub async fn resume(&mut self) -> Result<(), VerifyError> {
        let handshake = self.timeout.max(Duration::from_secs(DEFAULT_TIMEOUT_SECS));
        let c = self.connect(handshake).await?;
        self.client = Some(c.with_timeout(self.timeout));
        Ok(())
    }

    /// Ends the session (and a stdio server).
    pub async fn close(self) {
        if let Some(c) = self.client {
            c.close().await;
        }
    }
}

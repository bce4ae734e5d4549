//! The MCP session of a run, restarted after a call that timed out or lost the server.

use std::time::Duration;

use serde_json::Value;

use crate::client::{CallOutcome, McpClient, ServerSpec, StderrTail, ToolInfo};
use crate::error::VerifyError;
use crate::verifier::DEFAULT_TIMEOUT_SECS;

/// The server under test: one live session, or none after a lost call that could not be
/// restarted.
pub(crate) struct Session {
    spec: ServerSpec,
    timeout: Duration,
    tail: StderrTail,
    client: Option<McpClient>,
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
        let client = McpClient::connect(spec, handshake, &tail)
            .await?
            .with_timeout(timeout);
        Ok(Session {
            spec: spec.clone(),
            timeout,
            tail,
            client: Some(client),
        })
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

    /// Calls a tool; after [`CallOutcome::Lost`] the session is restarted (a stdio server
    /// is started again; an HTTP server gets a new session). An error means the restart
    /// failed and the run cannot go on.
    pub async fn call(
        &mut self,
        tool: &str,
        arguments: &Value,
    ) -> Result<CallOutcome, (CallOutcome, VerifyError)> {
        let outcome = match self.client() {
            Ok(c) => c.call(tool, arguments).await,
            Err(e) => return Err((CallOutcome::Lost("the server is gone".into()), e)),
        };
        if let CallOutcome::Lost(why) = &outcome {
            if let Some(old) = self.client.take() {
                old.close().await;
            }
            // A restart under load may take longer than one call may: at least the default.
            let handshake = self.timeout.max(Duration::from_secs(DEFAULT_TIMEOUT_SECS));
            match McpClient::connect(&self.spec, handshake, &self.tail).await {
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
        let c = McpClient::connect(&self.spec, handshake, &self.tail).await?;
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

//! A downstream session's own upstream connection, opened at the session's `initialize` and
//! closed when the session ends (its handler is dropped: rmcp drops a session's handler when
//! the session's service loop ends, on the client's DELETE, a closed stdio, or shutdown).

use std::sync::{Arc, OnceLock};

use rmcp::RoleServer;
use rmcp::model::{InitializeRequestParams, ServerConfig};
use rmcp::service::Peer;

use crate::capture::Capture;
use crate::relay::Relay;
use crate::upstream::{Upstream, UpstreamError};

/// The upstream connection of one downstream session, once it is open.
#[derive(Debug, Default)]
pub(crate) struct Session {
    own: OnceLock<Own>,
    /// The proxy's capture: a child is stopped once it has read the log up to then.
    capture: Option<Capture>,
}

#[derive(Debug)]
struct Own {
    upstream: Arc<Upstream>,
    /// The upstream's answer to this session's handshake.
    info: ServerConfig,
}

impl Session {
    /// A session not open yet, whose child (`--stdio`) is stopped, when it closes, only once
    /// `capture` has read the log up to then ([`Capture::read_to_now`]).
    pub(crate) fn new(capture: Option<Capture>) -> Session {
        Session {
            own: OnceLock::new(),
            capture,
        }
    }

    /// Opens the session's connection, like `template` (same server), introducing itself with
    /// the client's `initialize` params and relaying to `downstream`. A session opens one
    /// connection: a second call keeps the first.
    ///
    /// # Errors
    /// When the upstream cannot be reached or refuses the handshake.
    pub(crate) async fn open(
        &self,
        template: &Upstream,
        client: InitializeRequestParams,
        downstream: Peer<RoleServer>,
    ) -> Result<(), UpstreamError> {
        if self.own.get().is_some() {
            return Ok(());
        }
        let upstream = template
            .another(Relay::for_session(client, downstream))
            .await?;
        let info = upstream.info().await.unwrap_or_default();
        let own = Own {
            upstream: Arc::new(upstream),
            info,
        };
        if let Err(lost) = self.own.set(own) {
            // Opened twice at once: keep the first, close this one.
            lost.upstream.close().await;
        }
        Ok(())
    }

    /// The session's connection, once open.
    pub(crate) fn upstream(&self) -> Option<&Arc<Upstream>> {
        self.own.get().map(|o| &o.upstream)
    }

    /// The upstream's answer to the session's handshake, once open.
    pub(crate) fn info(&self) -> Option<&ServerConfig> {
        self.own.get().map(|o| &o.info)
    }

    /// Closes the session's connection (a `--stdio` child is stopped, once the capture has
    /// read the log up to now).
    pub(crate) async fn close(&self) {
        if let Some(up) = self.upstream() {
            if let Some(capture) = &self.capture {
                capture.read_to_now().await;
            }
            up.close().await;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let Some(own) = self.own.take() else {
            return;
        };
        // Dropping the connection cancels it too; closing waits for the child to stop.
        let capture = self.capture.take();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Some(capture) = capture {
                    capture.read_to_now().await;
                }
                own.upstream.close().await;
            });
        }
    }
}

//! What passing a request on shares in both directions (a client's request upstream, in
//! forward/; a server's request downstream, in relay/): the `_meta` sent on, and the wait for
//! the answer while the asker may cancel.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ProgressToken, RequestMetaObject,
};
use rmcp::service::{RequestHandle, ServiceError, ServiceRole};
use tokio_util::sync::CancellationToken;

/// The keys of MCP 2026-07-28's per-request envelope in `_meta` (protocol version, client
/// info and capabilities, log level), which a client without a session sends with each
/// request. The proxy's connections made a handshake of their own, on which servers refuse
/// a request carrying them, so they are not sent on.
const ENVELOPE: [&str; 4] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
];

/// The `_meta` to send on, and the asker's progress token, taken out: rmcp gives each request
/// it sends a token of its own, which the proxy maps back to the asker's. The 2026-07-28
/// envelope ([`ENVELOPE`]) is left out too.
pub(crate) fn meta_and_token(
    meta: &RequestMetaObject,
) -> (RequestMetaObject, Option<ProgressToken>) {
    let mut meta = meta.clone();
    let token = meta.get_progress_token();
    meta.remove("progressToken");
    for key in ENVELOPE {
        meta.remove(key);
    }
    (meta, token)
}

/// The answer to `handle`. When `asker` is cancelled first, the cancellation is sent on
/// under the request's own id with `reason`, and rmcp settles the answer as cancelled.
pub(crate) async fn answer_or_cancel<R: ServiceRole>(
    handle: RequestHandle<R>,
    asker: &CancellationToken,
    reason: &str,
) -> Result<R::PeerResp, ServiceError> {
    let (id, peer) = (handle.id.clone(), handle.peer.clone());
    let answer = handle.await_response();
    tokio::pin!(answer);
    tokio::select! {
        r = &mut answer => r,
        () = asker.cancelled() => {
            let param = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
            let _ = peer.send_notification(CancelledNotification::new(param).into()).await;
            answer.await
        }
    }
}

/// The error to give the asker when the peer a request was passed on to (`peer`: `upstream`
/// or `client`) did not answer it: the peer's own JSON-RPC error unchanged (code, message,
/// data), else an internal error naming the peer.
pub(crate) fn passed_on_error(e: ServiceError, peer: &str) -> McpError {
    match e {
        ServiceError::McpError(e) => e,
        other => McpError::internal_error(format!("hintaudit proxy: {peer}: {other}"), None),
    }
}

/// The error to give the asker when the peer (`upstream` or `client`) answered with a result
/// of another kind than the request's.
pub(crate) fn unexpected_answer(peer: &str) -> McpError {
    McpError::internal_error(
        format!("hintaudit proxy: unexpected answer from the {peer}"),
        None,
    )
}

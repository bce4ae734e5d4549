//! Server→client requests from the upstream, sent on to the downstream session's client:
//! the same request with the upstream's `_meta`, its progress relayed back upstream with the
//! upstream's token, its cancellation by the upstream sent on downstream, and the client's
//! answer or JSON-RPC error (code, message, data) returned unchanged.
//!
//! On the start-up connection (no session) each request gets what rmcp's default client
//! answers: `ping` succeeds, `roots/list` is empty, `elicitation/create` is declined, sampling
//! and custom requests are "method not found". That connection declares no client
//! capabilities, so a server that follows the spec sends none of them.

// Sampling and roots are deprecated upstream (SEP-2577), and still relayed.
#![allow(deprecated)]

use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestMethod, CreateMessageRequestParams,
    CreateMessageResult, CustomRequest, CustomResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorCode, ListRootsRequest, ListRootsResult, PingRequest,
    ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData as McpError, RoleClient};

use super::Relay;
use crate::exchange::{answer_or_cancel, meta_and_token, passed_on_error, unexpected_answer};

/// `ping` from the upstream: the client's own answer.
pub(super) async fn ping(
    relay: &Relay,
    context: RequestContext<RoleClient>,
) -> Result<(), McpError> {
    if relay.downstream().is_none() {
        return Ok(());
    }
    let request = ServerRequest::PingRequest(PingRequest::default());
    send(relay, request, context).await.map(|_| ())
}

/// `sampling/createMessage`.
pub(super) async fn create_message(
    relay: &Relay,
    params: CreateMessageRequestParams,
    context: RequestContext<RoleClient>,
) -> Result<CreateMessageResult, McpError> {
    if relay.downstream().is_none() {
        return Err(McpError::method_not_found::<CreateMessageRequestMethod>());
    }
    let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
    match send(relay, request, context).await? {
        ClientResult::CreateMessageResult(r) => Ok(*r),
        _ => Err(unexpected()),
    }
}

/// `roots/list`.
pub(super) async fn list_roots(
    relay: &Relay,
    context: RequestContext<RoleClient>,
) -> Result<ListRootsResult, McpError> {
    if relay.downstream().is_none() {
        return Ok(ListRootsResult::default());
    }
    let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
    match send(relay, request, context).await? {
        ClientResult::ListRootsResult(r) => Ok(r),
        _ => Err(unexpected()),
    }
}

/// `elicitation/create`.
pub(super) async fn create_elicitation(
    relay: &Relay,
    params: ElicitRequestParams,
    context: RequestContext<RoleClient>,
) -> Result<ElicitResult, McpError> {
    if relay.downstream().is_none() {
        return Ok(ElicitResult::new(ElicitationAction::Decline));
    }
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    match send(relay, request, context).await? {
        ClientResult::ElicitResult(r) => Ok(r),
        _ => Err(unexpected()),
    }
}

/// A request of a method rmcp does not know.
pub(super) async fn custom(
    relay: &Relay,
    request: CustomRequest,
    context: RequestContext<RoleClient>,
) -> Result<CustomResult, McpError> {
    if relay.downstream().is_none() {
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ));
    }
    match send(relay, ServerRequest::CustomRequest(request), context).await? {
        ClientResult::CustomResult(r) => Ok(r),
        _ => Err(unexpected()),
    }
}

/// Sends `request` to the session's client with the upstream request's `_meta` and waits for
/// its answer; relays the client's progress upstream, and the upstream's cancellation
/// downstream.
async fn send(
    relay: &Relay,
    request: ServerRequest,
    context: RequestContext<RoleClient>,
) -> Result<ClientResult, McpError> {
    let Some(peer) = relay.downstream() else {
        return Err(unexpected());
    };
    let (meta, upstream_token) = meta_and_token(&context.meta);
    let options = PeerRequestOptions::no_options().with_meta(meta);
    let handle = peer
        .send_request_with_option(request, options)
        .await
        .map_err(downstream_error)?;
    let down_token = handle.progress_token.clone();
    if let Some(token) = upstream_token {
        relay.expect_back(down_token.clone(), token, context.peer.clone());
    }
    let result = answer_or_cancel(handle, &context.ct, "cancelled by the server").await;
    relay.back_done(&down_token);
    result.map_err(downstream_error)
}

fn downstream_error(e: ServiceError) -> McpError {
    passed_on_error(e, "client")
}

fn unexpected() -> McpError {
    unexpected_answer("client")
}

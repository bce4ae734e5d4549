//! The call's status and the session id, row by row.

use super::*;
use hintaudit_core::CallStatus;
use rmcp::model::{CallToolResult, ErrorCode, Extensions};

#[test]
fn status_and_error_type() {
    let rows: [(Result<CallToolResponse, McpError>, CallStatus, Option<&str>); 4] = [
        (
            Ok(CallToolResult::success(vec![]).into()),
            CallStatus::Ok,
            None,
        ),
        (
            Ok(CallToolResult::error(vec![]).into()),
            CallStatus::ToolError,
            Some("tool_error"),
        ),
        (
            Err(McpError::invalid_params("bad", None)),
            CallStatus::ProtocolError,
            Some("-32602"),
        ),
        (
            Err(McpError::new(ErrorCode(-32000), "custom", None)),
            CallStatus::ProtocolError,
            Some("-32000"),
        ),
    ];
    for (result, status, error_type) in rows {
        let (s, e) = call_status(&result);
        assert_eq!((s, e.as_deref()), (status, error_type), "{result:?}");
    }
}

#[test]
fn session_id_comes_from_the_http_parts() {
    let mut extensions = Extensions::new();
    assert_eq!(session_id(&extensions), None);
    let (parts, ()) = http::Request::builder()
        .header("Mcp-Session-Id", "session-1")
        .body(())
        .unwrap()
        .into_parts();
    extensions.insert(parts);
    assert_eq!(session_id(&extensions), Some("session-1"));
}

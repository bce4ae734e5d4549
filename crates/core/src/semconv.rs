//! The span attributes of
//! [design: telemetry names](../../../docs/design.md#5-telemetry-names): OpenTelemetry
//! semantic conventions for MCP (`mcp.*`, `gen_ai.*`, `jsonrpc.*`) and databases (`db.*`),
//! and hintaudit's own under `hintaudit.`. Use them as tracing field names with braces:
//! `tracing::info_span!("tools/call", { semconv::MCP_METHOD_NAME } = "tools/call")`.
//! `otel.name`, `otel.kind` and `otel.status_code` are tracing-opentelemetry's special fields.

/// Span name override (tracing-opentelemetry).
pub const OTEL_NAME: &str = "otel.name";
/// Span kind (tracing-opentelemetry): `server`, `client`, `internal`.
pub const OTEL_KIND: &str = "otel.kind";
/// Span status (tracing-opentelemetry): `error` or `ok`.
pub const OTEL_STATUS_CODE: &str = "otel.status_code";

/// MCP method, e.g. `tools/call` (semconv: MCP).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// MCP session id, when the transport has one (semconv: MCP).
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// The tool name (semconv: GenAI). For a tool the server does not declare, the name the
/// client sent cut to at most [`TOOL_NAME_MAX_BYTES`] bytes (on a character boundary).
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// What stands for a tool the server does not declare where values must stay few: the
/// `tool` label of every metric, and the span name `tools/call __unknown__`
/// ([design: telemetry names](../../../docs/design.md#5-telemetry-names)).
pub const UNKNOWN_TOOL: &str = "__unknown__";
/// The longest undeclared tool name kept in `gen_ai.tool.name`, in bytes (UTF-8): the
/// MCP specification's recommended tool name limit (1 to 128 characters, all ASCII).
pub const TOOL_NAME_MAX_BYTES: usize = 128;

/// `name` cut to at most [`TOOL_NAME_MAX_BYTES`] bytes, at the last character boundary
/// within the limit.
///
/// ```
/// use hintaudit_core::semconv::bounded_tool_name;
/// assert_eq!(bounded_tool_name("get_slot"), "get_slot");
/// assert_eq!(bounded_tool_name(&"é".repeat(100)).len(), 128);
/// assert_eq!(bounded_tool_name(&format!("a{}", "é".repeat(100))).len(), 127);
/// ```
pub fn bounded_tool_name(name: &str) -> &str {
    &name[..name.floor_char_boundary(TOOL_NAME_MAX_BYTES.min(name.len()))]
}
/// `execute_tool` for tool calls (semconv: GenAI).
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The JSON-RPC request id (semconv: RPC/JSON-RPC).
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
/// Error class on failed calls: `tool_error` or the JSON-RPC error code (semconv: general).
pub const ERROR_TYPE: &str = "error.type";

/// Database system, e.g. `sqlite`, `postgresql`, `mysql` (semconv: database).
pub const DB_SYSTEM_NAME: &str = "db.system.name";
/// Operation, e.g. `SELECT` (semconv: database).
pub const DB_OPERATION_NAME: &str = "db.operation.name";
/// Table the operation acts on (semconv: database).
pub const DB_COLLECTION_NAME: &str = "db.collection.name";
/// Low-cardinality summary, e.g. `SELECT appointments` (semconv: database).
pub const DB_QUERY_SUMMARY: &str = "db.query.summary";
/// Query text with literals replaced by `?` (semconv: database).
pub const DB_QUERY_TEXT: &str = "db.query.text";
/// Rows affected, as proposed upstream (not yet in the conventions).
pub const DB_RESPONSE_AFFECTED_ROWS: &str = "db.response.affected_rows";

/// Declared `readOnlyHint`: `true`, `false` or `unset`.
pub const HINT_READ_ONLY: &str = "hintaudit.hint.read_only";
/// Declared `destructiveHint`: `true`, `false` or `unset`.
pub const HINT_DESTRUCTIVE: &str = "hintaudit.hint.destructive";
/// Declared `idempotentHint`: `true`, `false` or `unset`.
pub const HINT_IDEMPOTENT: &str = "hintaudit.hint.idempotent";
/// Declared `openWorldHint`: `true`, `false` or `unset`.
pub const HINT_OPEN_WORLD: &str = "hintaudit.hint.open_world";
/// The verdict: `clean`, `info`, `warning` or `critical`.
pub const VERDICT: &str = "hintaudit.verdict";

/// Name of the span event carrying one finding.
pub const FINDING_EVENT: &str = "hintaudit.finding";
/// The `tracing` target of the [`FINDING_EVENT`] events: they are TRACE-level events for the
/// trace exporter only, never a log line (the recorder logs each finding once). A subscriber
/// that exports spans lets this target through at TRACE (hintaudit-telemetry's
/// `otel_filter()` does).
pub const FINDING_EVENT_TARGET: &str = "hintaudit::finding";
/// Finding attribute: rule id.
pub const FINDING_RULE: &str = "hintaudit.rule";
/// Finding attribute: hint (`readOnlyHint`, …).
pub const FINDING_HINT: &str = "hintaudit.hint";
/// Finding attribute: severity.
pub const FINDING_SEVERITY: &str = "hintaudit.severity";
/// Finding attribute: confidence.
pub const FINDING_CONFIDENCE: &str = "hintaudit.confidence";
/// Finding attribute: evidence text.
pub const FINDING_EVIDENCE: &str = "hintaudit.evidence";

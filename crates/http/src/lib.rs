//! hintaudit-http: evidence for `openWorldHint` from the HTTP requests a tool makes.
//!
//! Two ways in, one recorder ([`OutboundRecorder`]): a `reqwest-middleware` middleware
//! ([`OutboundAuditMiddleware`]) and a tower layer for hyper-based clients
//! ([`OutboundAuditLayer`]). Each records the request's host, port and method in the
//! [`CallScope`](hintaudit_core::CallScope) of the tool call sending it; the judge then
//! compares the destinations with the policy's
//! [`ClosedWorld`](hintaudit_core::ClosedWorld): `undeclared_open_world` for a tool declaring
//! `openWorldHint: false` that reaches outside, `read_only_write` for a read-only tool that
//! sends a mutating request (POST, PUT, PATCH, DELETE) outside.
//!
//! What it cannot see: requests sent by any other client (a plain `reqwest::Client`, another
//! library's own client, a subprocess), raw sockets, and what happens on a reused
//! connection below the request level (the request is recorded, not the connection).
//!
//! ```
//! use hintaudit_core::CallScope;
//! use hintaudit_http::OutboundAuditMiddleware;
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(OutboundAuditMiddleware::default())
//!     .build();
//! let scope = CallScope::new("notify_patient");
//! let effects = scope.effects_handle();
//! // Port 9 (discard) on loopback: the request fails, it is recorded all the same.
//! let _ = scope.run(client.post("http://127.0.0.1:9/notify").send()).await;
//! assert_eq!(effects.snapshot().outbound[0].method, "POST");
//! # }
//! ```
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// The tower layer for hyper-based clients.
mod layer;
/// The reqwest-middleware middleware.
mod middleware;
/// The recorder both share.
mod reach;

pub use layer::{OutboundAudit, OutboundAuditLayer, ResponseFuture};
pub use middleware::OutboundAuditMiddleware;
pub use reach::{OpenWorldRefused, OutboundRecorder};

//! What hintaudit's test suites share (`publish = false`): a real OTLP/gRPC receiver on
//! loopback ([`otlp`]), a `/metrics` scrape over a real socket and a text-format parser
//! ([`scrape`]), `promtool check metrics` ([`promtool`]), and a real rmcp client over an
//! in-memory stream ([`mcp`]).
//!
//! Use it from integration tests (`tests/`) and benches only: the unit tests inside a crate's
//! `src/` would see that crate's types twice.
//!
//! ```no_run
//! # async fn run() {
//! use hintaudit_test_support::otlp::{spans, start_receiver};
//! let (receiver, addr) = start_receiver().await;
//! // ... export to http://{addr} over OTLP/gRPC, flush ...
//! assert!(spans(&receiver).iter().all(|s| !s.name.is_empty()));
//! # let _ = addr; }
//! ```

pub mod mcp;
pub mod otlp;
pub mod promtool;
pub mod scrape;

/// Whether a test that needs an external tool must not skip: `HINTAUDIT_REQUIRE_ALL` or
/// `tool_var` (say `HINTAUDIT_REQUIRE_PROMTOOL`) is `1` or `true`, as CI sets them.
pub fn required(tool_var: &str) -> bool {
    ["HINTAUDIT_REQUIRE_ALL", tool_var]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1" || x.eq_ignore_ascii_case("true")))
}

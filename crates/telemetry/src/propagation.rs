//! Trace context in MCP's `params._meta` (SEP-414): the client puts W3C `traceparent` and
//! `tracestate` there; the server span continues the client's trace.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};

/// The `_meta` key of the W3C trace parent.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C trace state.
pub const TRACESTATE: &str = "tracestate";

struct MetaExtractor<'a>(&'a Map<String, Value>);

impl Extractor for MetaExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

struct MetaInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

/// The remote parent a client sent in a request's `_meta` map: a context holding the span
/// context of `traceparent` (and `tracestate`), marked remote. `None` when there is no
/// `traceparent` string or it is not a valid W3C trace parent (version 00, non-zero ids).
///
/// ```
/// use hintaudit_telemetry::{inject_meta, remote_parent};
/// use opentelemetry::trace::TraceContextExt;
/// let meta = serde_json::json!({
///     "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
///     "tracestate": "vendor=x",
///     "progressToken": 7
/// });
/// let cx = remote_parent(meta.as_object().unwrap()).expect("a valid traceparent");
/// let span = cx.span();
/// assert_eq!(span.span_context().trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert!(span.span_context().is_remote());
/// // And back: what a client would send.
/// let mut out = serde_json::Map::new();
/// inject_meta(&cx, &mut out);
/// assert_eq!(out["traceparent"], meta["traceparent"]);
/// // No traceparent, or a malformed one: no parent.
/// assert!(remote_parent(&serde_json::Map::new()).is_none());
/// ```
pub fn remote_parent(meta: &Map<String, Value>) -> Option<Context> {
    meta.get(TRACEPARENT)?.as_str()?;
    let cx = TraceContextPropagator::new().extract(&MetaExtractor(meta));
    cx.span().span_context().is_valid().then_some(cx)
}

/// Writes the span context of `cx` into a `_meta` map as `traceparent` (and `tracestate`
/// when non-empty): what an instrumented MCP client sends. Does nothing for a context without
/// a valid span.
pub fn inject_meta(cx: &Context, meta: &mut Map<String, Value>) {
    TraceContextPropagator::new().inject_context(cx, &mut MetaInjector(meta));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_valid_trace_parents_count() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let rows = [
            (json!({ "traceparent": ok }), true),
            (json!({ "traceparent": ok, "tracestate": "a=b" }), true),
            (json!({}), false),
            (json!({ "traceparent": 7 }), false),
            (json!({ "traceparent": "garbage" }), false),
            (
                json!({ "traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01" }),
                false,
            ),
            (json!({ "Traceparent": ok }), false),
        ];
        for (meta, want) in rows {
            let got = remote_parent(meta.as_object().unwrap()).is_some();
            assert_eq!(got, want, "{meta}");
        }
    }

    #[test]
    fn tracestate_and_sampling_flag_survive() {
        let meta = json!({
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            "tracestate": "congo=t61rcWkgMzE"
        });
        let cx = remote_parent(meta.as_object().unwrap()).unwrap();
        let span = cx.span();
        let sc = span.span_context();
        assert!(!sc.is_sampled());
        assert_eq!(sc.trace_state().get("congo"), Some("t61rcWkgMzE"));
    }
}

//! Telemetry end to end: the `hintaudit demo` server (the bookings example over streamable
//! HTTP, behind the layer and the audited SQLite pool) driven by a real rmcp client; its
//! `/metrics` scraped over HTTP, parsed with a text-format parser and checked by promtool; its
//! spans exported over OTLP/gRPC to a real receiver on loopback.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod metrics;
mod support;
mod traces;

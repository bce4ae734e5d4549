//! End-to-end tests of the layer: real rmcp servers behind `HintAudit`, a real rmcp client,
//! over an in-memory duplex stream (rmcp's async read/write transport).
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod common;
mod correct;
mod delegation;
mod disclose;
mod learn;
mod listen;
mod recorder;
mod scope;
mod tasks;
mod transparency;

//! End-to-end tests of the layer: real rmcp servers behind `HintAudit`, a real rmcp client,
//! over an in-memory duplex stream (rmcp's async read/write transport).

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

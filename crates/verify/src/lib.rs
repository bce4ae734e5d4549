#![doc = include_str!("../README.md")]
//!
//! Exit codes of [`run`]: 0 clean; 1 findings at or above `--fail-on`; 2 usage, connection or
//! server failure, with a one-line message on stderr and no report.

mod arguments;
mod cases;
mod cli;
mod client;
mod db;
mod effect;
mod error;
mod format;
mod ids;
mod report;
mod snapshot;
mod verifier;

pub use cases::{Case, Cases};
pub use cli::{FailOn, VerifyArgs, run};
pub use client::ServerSpec;
pub use db::SnapshotStats;
pub use error::VerifyError;
pub use format::Format;
pub use report::{
    CallRecord, CaseReport, Report, ToolReport, ToolStatus, VERIFY_RULES, is_behaviour_rule,
};
pub use snapshot::TableDiff;
pub use verifier::{DEFAULT_TIMEOUT_SECS, Verifier};

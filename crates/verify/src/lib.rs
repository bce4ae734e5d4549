#![doc = include_str!("../README.md")]
//!
//! Exit codes of [`run`]: 0 clean; 1 findings at or above `--fail-on`, or a tool not
//! exercised (unless `--allow-unexercised`); 2 usage, connection, database-check or server
//! failure, with a one-line message on stderr and no report, or a run that ended early (its
//! report is still written).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod arguments;
mod cases;
mod cli;
mod client;
mod db;
mod effect;
mod error;
mod files;
mod format;
mod ids;
mod objects;
mod outcome;
mod process_tree;
mod proxy;
mod report;
mod secrets;
mod sequences;
mod snapshot;
mod state_args;
mod suggest;
mod suggestion;
mod verifier;

pub use cases::{Case, Cases};
pub use cli::{FailOn, VerifyArgs, run};
pub use client::STDERR_LINES;
pub use client::ServerSpec;
pub use db::SnapshotStats;
pub use error::VerifyError;
pub use files::{ChangeKind, FileChange};
pub use format::Format;
pub use objects::ObjectKind;
pub use proxy::UnattributedRequest;
pub use report::{
    CallRecord, CaseReport, Report, ToolReport, ToolStatus, VERIFY_RULES, is_action_rule,
    is_behaviour_rule,
};
pub use snapshot::TableDiff;
pub use suggest::json_patch;
pub use suggestion::Suggestion;
pub use verifier::{DEFAULT_TIMEOUT_SECS, DatabaseCopy, Verifier};

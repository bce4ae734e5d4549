#![cfg_attr(
    all(feature = "sqlite", feature = "telemetry", feature = "verify"),
    doc = include_str!("../README.md")
)]
#![cfg_attr(
    not(all(feature = "sqlite", feature = "telemetry", feature = "verify")),
    doc = "hintaudit: checks MCP tool hints against what tools do. This build leaves out \
           features the README's examples use; see the README."
)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// Hints, effects, the judge and its policy: `hintaudit-core`.
pub mod core {
    pub use hintaudit_core::*;
}

/// The tower layer for rmcp servers: `hintaudit-rmcp`.
pub mod rmcp {
    pub use hintaudit_rmcp::*;
}

/// Prometheus metrics and OpenTelemetry traces: `hintaudit-telemetry` (feature `telemetry`).
#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
pub mod telemetry {
    pub use hintaudit_telemetry::*;
}

/// The offline check of any MCP server: `hintaudit-verify` (feature `verify`).
#[cfg(feature = "verify")]
#[cfg_attr(docsrs, doc(cfg(feature = "verify")))]
pub mod verify {
    pub use hintaudit_verify::*;
}

/// The audited sqlx pool: `hintaudit-sqlx`.
pub mod sqlx {
    pub use hintaudit_sqlx::*;
}

pub use hintaudit_core::{
    CallScope, DeclaredHints, Finding, Hint, Judge, LogRecorder, Policy, Recorder, Rule, Severity,
};
pub use hintaudit_rmcp::{HintAudit, HintAuditLayer};
pub use hintaudit_sqlx::AuditedPool;

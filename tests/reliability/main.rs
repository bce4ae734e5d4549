//! The reliability suite (issue 13): attribution at scale, cancellation and panics, database
//! faults, a telemetry outage, hostile input, privacy canaries and a property test of the
//! classifier, each printing its figures
//! as `FIGURE <case> key=value ...` lines that `docs/reliability.md` copies.
//!
//! Fast sizes run in `cargo test`; `HINTAUDIT_RELIABILITY_LONG=1` (set by `.ci/run`) runs the
//! full sizes, each bounded in time.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod attribution;
mod cancel;
mod exposure;
mod fallback;
mod faults_pg;
mod faults_side;
mod faults_sqlite;
mod faults_storm;
mod hostile;
mod hostile_bytes;
mod late_rows;
mod outage;
mod outcome;
mod privacy;
mod proof;
mod properties;
mod support;

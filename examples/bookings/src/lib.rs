//! bookings: a clinic appointments MCP server on sqlx, served through hintaudit's audited
//! pool, with honest tools and tools whose hints lie. hintaudit's demo, tests and benchmark
//! run against it; [`PLANTED_CALL_FINDINGS`] lists what an auditor must find.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! let db = bookings::Db::connect("sqlite::memory:").await?;
//! let server = bookings::Bookings::new(db);
//! # let _ = server; Ok(()) }
//! ```
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod db;
mod planted;
mod tools;

pub use db::{Db, MIGRATION_LOCK, Placeholders};
pub use planted::{
    BOOKKEEPING_TABLES, PLANTED_CALL_FINDINGS, PLANTED_LISTING_FINDINGS,
    PLANTED_OPEN_WORLD_FINDINGS, Planted,
};
pub use tools::{Appointment, Bookings, Notifier, Patient};

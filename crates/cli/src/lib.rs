//! hintaudit-cli: the `hintaudit` command.
//!
//! - `hintaudit demo`: the bookings example, audited live (see [`demo`]).
//! - `hintaudit traffic`: steady rounds of calls against running bookings servers, the
//!   compose stack's traffic generator (see [`traffic`]).
//!
//! The library half exists so end-to-end tests drive the same code the binary runs.
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod demo;
mod signal;
pub mod traffic;

pub use signal::shutdown_signal;

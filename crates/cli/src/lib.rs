//! hintaudit-cli: the `hintaudit` command.
//!
//! - `hintaudit demo`: the bookings example, audited live (see [`demo`]).
//!
//! The library half exists so end-to-end tests drive the same code the binary runs.

pub mod demo;

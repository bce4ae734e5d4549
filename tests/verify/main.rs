//! End-to-end tests of `hintaudit verify`: real servers over stdio and streamable HTTP, real
//! databases. Tests that need Python's `mcp` package, PostgreSQL or MariaDB print why they
//! skip when it is absent; `HINTAUDIT_REQUIRE_ALL=1` (CI) makes every one mandatory, and
//! `HINTAUDIT_REQUIRE_PG=1` makes the PostgreSQL ones mandatory, `HINTAUDIT_REQUIRE_NPM=1`
//! the ones on the official npm servers.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod bookings_example;
mod cli;
mod failures;
mod files;
mod formats;
mod npm_servers;
mod python;
mod real_servers;
mod reference_servers;
mod reset;
mod state;
mod support;

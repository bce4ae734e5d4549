//! End-to-end tests of the live audit: the bookings example served over streamable HTTP
//! through the layer and the audited pool, driven by a real rmcp client, on a real SQLite
//! file and (mandatory in CI) a real PostgreSQL and a real MariaDB.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod action;
mod concurrency;
mod correct;
mod fleet;
mod fleet_correct;
mod listen;
mod rules;
mod stateless;
mod suggest;
mod support;
mod transparency;

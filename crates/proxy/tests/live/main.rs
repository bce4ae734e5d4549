//! `hintaudit proxy` end to end, with real parts: the `hintaudit` binary, the Python fixture
//! server (tests/verify/python_server/sql_server.py, the official MCP SDK) over stdio and
//! streamable HTTP, a PostgreSQL server with `wal_level = logical` and a MariaDB server with
//! its binary log on in ROW format.
//!
//! The relay tests (relay.rs: server→client requests, notifications per session, an upstream
//! child per session) run the fixture on a SQLite file of their own and need Python only.
//!
//! The no-wait tests (nowait.rs: answers before judgements, late judgements, shutdown) run the
//! proxy in this process, to hold its capture from reading; the coalescing test (coalesce.rs)
//! runs the capture alone, through its library API.
//!
//! The writer tests (writers.rs on PostgreSQL, writers_mariadb.rs on MariaDB: 4 and 16
//! concurrent clients, two proxies on one database, a table created later) check that each
//! commit goes to the call on the connection that wrote it.
//!
//! The DBHub tests (dbhub.rs) drive a TypeScript database server nobody here wrote (npm,
//! pinned) with 1, 4 and 16 concurrent clients on PostgreSQL and MariaDB: its two lying tools
//! found on every call, nothing else, every commit its own call's.
//!
//! The SQLite tests (sqlite_wal.rs) run the Python fixture on a SQLite file in WAL mode of
//! their own: the proxy reads its writes from the WAL (issue 48), with one and four
//! sessions, a server that checkpoints after every commit, the server's own TRUNCATE
//! checkpoint, and a database left in rollback-journal mode. They need Python only.
//!
//! The file tests (files.rs) run the proxy with `--watch` in front of the Python files
//! fixture and the official npm filesystem and memory servers, with no database; the
//! disturbance test (disturb.rs) drives the memory server from four sessions, with writes by
//! others between repeats of its deletes (attributed, ambiguous, unattributed).
//! The repeat tests (repeats.rs) judge idempotency from the log's row images, both ways, on
//! PostgreSQL and MariaDB.
//!
//! The outage tests (outage.rs) stop and start a private PostgreSQL and MariaDB server under
//! a running proxy: one audit error for the outage, however often the capture tried again.
//!
//! Each test makes a database of its own, so only its own commits reach its slot; the
//! restart tests (restart.rs) restart a PostgreSQL and a MariaDB server of their own. Without
//! a server or Python they print why and skip (`HINTAUDIT_REQUIRE_PG`,
//! `HINTAUDIT_REQUIRE_MYSQL`, `HINTAUDIT_REQUIRE_ALL` make them fail instead). No test asserts on time.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod action;
mod cancel;
mod clients;
mod coalesce;
mod correct;
mod dbhub;
mod disclose;
mod disturb;
mod files;
mod holds;
mod indirect;
mod listen;
mod listing;
mod mariadb;
mod nowait;
mod outage;
mod postgres;
mod relay;
mod repeats;
mod restart;
mod sqlite_checkpoints;
mod sqlite_wal;
mod stateless;
mod support;
mod transcripts;
mod writers;
mod writers_mariadb;

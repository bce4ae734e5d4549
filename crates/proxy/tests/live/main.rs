//! `hintaudit proxy` end to end, with real parts: the `hintaudit` binary, the Python fixture
//! server (tests/verify/python_server/sql_server.py, the official MCP SDK) over stdio and
//! streamable HTTP, and a PostgreSQL server with `wal_level = logical`.
//!
//! Each test makes a database of its own, so only its own commits reach its slot. Without
//! PostgreSQL or Python they print why and skip (`HINTAUDIT_REQUIRE_PG`,
//! `HINTAUDIT_REQUIRE_ALL` make them fail instead). No test asserts on time.

mod postgres;
mod support;
mod transcripts;

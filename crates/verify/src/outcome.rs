//! When a tool result that is not flagged `isError` is still a failed call.
//!
//! Many servers return a refused or failed call as ordinary text (`isError: false`):
//! `Error: syntax error at or near "hintaudit"`, `{"error": "password authentication
//! failed"}`. Such a call did not run, so it is no evidence that the tool is harmless. But
//! only a result that *is* a failure message, as a whole, counts as one; a report *about*
//! errors is a call that ran (`Invalid index check: No invalid indexes found.`, `0 errors`,
//! a list of invalid rows). Over the first text content of the result, a failure is:
//!
//! 1. a JSON error envelope: `success` or `ok` false, or a truthy `error`/`errors` member
//!    beside nothing but envelope members (`message`, `code`, `detail`, …, or members that
//!    are null); a JSON object with data beside its errors is a report;
//! 2. an answer labelled as an error: its first word is `error`, `err`, `fatal`,
//!    `exception`, `failed`, `failure` or `fail` (case-insensitively, optionally after `[`),
//!    standing alone (`Error: …`, `[ERROR] …`, `FAILED`), followed by a code (`error 1146:
//!    …`, `error None: …`) or opening a message (`Failed to …`, `Error executing …`,
//!    `Error while …`); or a first heading that names what failed (`Database error: …`,
//!    `Query failed: …`);
//! 3. a first line with a SQLSTATE (`SQLSTATE[42S02]`, `ERROR 1146 (42S02): …`);
//! 4. a first line that is a driver's error text, after an exception class
//!    (`psycopg.errors.UndefinedTable: …`) or a driver's prefix (`error returned from
//!    database: …`): `relation "x" does not exist`, `no such table: t`, `near "x": syntax
//!    error`, `Access denied for user …`, `Traceback (most recent call last):`, …
//!    ([`DRIVER_OPENINGS`]).
//!
//! Nothing else: an answer that merely starts with `Invalid`, `Cannot` or `Errors`, or
//! mentions a database error further in, is a call that ran.

use serde_json::{Map, Value};

/// First words that label an answer as a failure (`Error: …`, `Failed to …`).
const LABELS: &[&str] = &[
    "error",
    "err",
    "fatal",
    "exception",
    "failed",
    "failure",
    "fail",
];

/// What a heading may say failed (`Database error: …`, `Query failed: …`).
const FAILED_SUBJECTS: &[&str] = &[
    "database",
    "db",
    "query",
    "sql",
    "statement",
    "execution",
    "connection",
    "transaction",
    "internal",
    "server",
    "request",
    "tool",
    "command",
    "runtime",
    "unexpected",
    "unhandled",
];

/// Words after a leading label that make it a message about a failure (`Error while …`,
/// `Failed to …`) rather than the first word of a heading (`Error rate: …`).
const MESSAGE_LINKS: &[&str] = &[
    "to", "while", "in", "on", "during", "when", "for", "at", "with", "from", "of", "by",
];

/// How drivers' error messages open (lower case), as drivers word them: PostgreSQL (libpq,
/// psycopg, asyncpg, node-postgres, sqlx), SQLite (its C library, Python's sqlite3),
/// MySQL/MariaDB (the server's texts, PyMySQL's `(1146, "…")` tuples).
pub(crate) const DRIVER_OPENINGS: &[&str] = &[
    "syntax error at or near",
    "syntax error at end of input",
    "permission denied for",
    "password authentication failed",
    "cannot execute",
    "duplicate key value violates",
    "null value in column",
    "insert or update on table",
    "update or delete on table",
    "current transaction is aborted",
    "invalid input syntax for",
    "could not connect to server",
    "connection to server",
    "no such table",
    "no such column",
    "no such function",
    "near \"",
    "unique constraint failed",
    "not null constraint failed",
    "foreign key constraint failed",
    "check constraint failed",
    "attempt to write a readonly database",
    "database is locked",
    "access denied for user",
    "you have an error in your sql syntax",
    "unknown column",
    "unknown table",
    "unknown database",
    "lock wait timeout exceeded",
    "deadlock found when trying to get lock",
    "deadlock detected",
    "traceback (most recent call last)",
];

/// Objects whose messages read `<object> "x" does not exist` or `already exists`.
const MISSING_OBJECTS: &[&str] = &[
    "relation", "column", "table", "function", "schema", "database", "role", "type", "view",
    "index", "sequence",
];

/// Envelope members of a JSON error answer: they say what failed, not what was found.
const ENVELOPE: &[&str] = &[
    "error",
    "errors",
    "message",
    "msg",
    "code",
    "status",
    "statusCode",
    "status_code",
    "detail",
    "details",
    "hint",
    "reason",
    "type",
    "name",
    "title",
    "traceback",
    "stack",
    "success",
    "ok",
];

/// Whether a result's text is a failure message (see the module docs); `None` when it is
/// not, else the reason, one short phrase.
pub(crate) fn reads_as_error(text: &str) -> Option<&'static str> {
    let trimmed = text.trim();
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(trimmed) {
        return json_failure(&map);
    }
    let first_line: String = trimmed
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect::<String>()
        .to_lowercase();
    let opening = first_line.trim_start_matches(['[', '(', '*', '!', ' ']);
    if labelled(opening) {
        return Some("the result text is an error message");
    }
    if has_sqlstate(&first_line) {
        return Some("the result text is a database error (SQLSTATE)");
    }
    if driver_text(opening) {
        return Some("the result text is a database driver's error");
    }
    None
}

/// A JSON answer that is an error envelope, or says `success`/`ok` false.
fn json_failure(map: &Map<String, Value>) -> Option<&'static str> {
    if [map.get("success"), map.get("ok")]
        .into_iter()
        .flatten()
        .any(|v| v == &Value::Bool(false))
    {
        return Some("a JSON result saying success false");
    }
    let truthy = |v: &Value| {
        !matches!(v, Value::Null | Value::Bool(false))
            && v.as_str() != Some("")
            && v.as_array().is_none_or(|a| !a.is_empty())
    };
    let erred = map.get("error").is_some_and(truthy) || map.get("errors").is_some_and(truthy);
    let envelope = map
        .iter()
        .all(|(k, v)| v.is_null() || ENVELOPE.contains(&k.as_str()));
    (erred && envelope).then_some("a JSON error answer")
}

/// The first word of `s` (letters, digits, `'`, `_`) and what follows it.
fn first_word(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_'))
        .unwrap_or(s.len());
    s.split_at(end)
}

/// An answer labelled as an error: a label word standing alone, followed by a code, or
/// opening a message; or a heading naming what failed (`Query failed: …`).
fn labelled(opening: &str) -> bool {
    let (word, rest) = first_word(opening);
    if LABELS.contains(&word) {
        let spaced = rest.starts_with([' ', '\t']);
        let rest = rest.trim_start_matches([' ', '\t']);
        // `Error: …`, `[ERROR] …`, `FAILED`, `error -32603: …`; not `Error-free`.
        let alone = rest.is_empty()
            || rest.starts_with([':', ']', ')', '!', '.', ',', ';', '>'])
            || (spaced && rest.starts_with('-'));
        let (next, _) = first_word(rest.trim_start_matches('-'));
        let code = next.chars().any(|c| c.is_ascii_digit()) || matches!(next, "none" | "null");
        let message = MESSAGE_LINKS.contains(&next) || next.ends_with("ing");
        return alone || code || message;
    }
    let Some((head, _)) = opening.split_once(':') else {
        return false;
    };
    let words: Vec<&str> = head.split_whitespace().collect();
    matches!(words.as_slice(), [subject, .., last]
        if words.len() <= 3
            && FAILED_SUBJECTS.contains(subject)
            && matches!(*last, "error" | "failed" | "failure" | "exception"))
}

/// A SQLSTATE in the line: `sqlstate` itself, or MySQL's `error 1146 (42s02)` /
/// `1064 (42000):` form.
fn has_sqlstate(line: &str) -> bool {
    if line.contains("sqlstate") {
        return true;
    }
    let line = line.strip_prefix("error ").unwrap_or(line);
    let (code, rest) = first_word(line);
    let state = rest.strip_prefix(" (").and_then(|r| r.get(..6));
    code.len() == 4
        && code.chars().all(|c| c.is_ascii_digit())
        && state
            .is_some_and(|s| s.ends_with(')') && s[..5].chars().all(|c| c.is_ascii_alphanumeric()))
}

/// A line that opens with a driver's error text, after an exception class
/// (`sqlite3.OperationalError: `), a driver's prefix (`error returned from database: `) or
/// PyMySQL's `(1146, "` tuple.
fn driver_text(opening: &str) -> bool {
    let mut text = opening;
    for prefix in ["error returned from database: ", "(code: "] {
        text = text.strip_prefix(prefix).unwrap_or(text);
    }
    if let Some((class, rest)) = text.split_once(": ")
        && !class.contains(' ')
        && (class.ends_with("error") || class.ends_with("exception") || class.contains('.'))
    {
        text = rest;
    }
    // PyMySQL: `(1146, "Table 'shop.items' doesn't exist")`; sqlx: `(code: 1) no such table`.
    if let Some((code, rest)) = text.split_once([',', ')'])
        && code.chars().all(|c| c.is_ascii_digit())
        && !code.is_empty()
    {
        text = rest.trim_start_matches([' ', '"', '\'']);
    }
    let missing = MISSING_OBJECTS.iter().any(|o| {
        text.strip_prefix(o).is_some_and(|r| r.starts_with(' '))
            && (text.contains("does not exist")
                || text.contains("doesn't exist")
                || text.contains("already exists"))
    });
    missing || DRIVER_OPENINGS.iter().any(|d| text.starts_with(d))
}

#[cfg(test)]
mod tests {
    use super::reads_as_error;

    /// Real answers (`isError: false`) of MCP servers and drivers' error texts, and real
    /// reports about errors. (result text, is a failure message)
    #[test]
    fn failure_messages_are_errors_and_reports_about_errors_are_not() {
        let rows: &[(&str, bool)] = &[
            // mcp-server-sqlite (the reference server): `Database error: {e}`, `Error: {e}`.
            ("Database error: no such table: items", true),
            ("Error: near \"hintaudit\": syntax error", true),
            // mysql_mcp_server, postgres-mcp: `Error executing query: …`.
            (
                "Error executing query: 1146 (42S02): Table 'shop.items' doesn't exist",
                true,
            ),
            ("Error executing query: relation \"x\" does not exist", true),
            ("error None: password authentication failed", true),
            ("error -32603: internal error", true),
            ("[ERROR] connection lost", true),
            ("ERROR\nsomething went wrong", true),
            ("FAILED", true),
            ("Failed to execute: near \"hintaudit\": syntax error", true),
            ("Failed to execute: boom\nQuery: SELECT 1", true),
            (
                "Query failed: Access denied for user 'root'@'localhost'",
                true,
            ),
            (
                "Error: duplicate key value\nDETAIL: Key (id)=(1) already exists.",
                true,
            ),
            (
                "Error calculating database health: boom\nLINE 1: SELECT",
                true,
            ),
            // Drivers' own texts, bare or after an exception class or prefix.
            ("ERROR:  relation \"users\" does not exist", true),
            ("relation \"users\" does not exist", true),
            ("syntax error at or near \"hintaudit\"", true),
            ("permission denied for table items", true),
            ("cannot execute INSERT in a read-only transaction", true),
            (
                "duplicate key value violates unique constraint \"items_pkey\"",
                true,
            ),
            (
                "connection to server at \"127.0.0.1\", port 5432 failed: Connection refused",
                true,
            ),
            (
                "psycopg.errors.UndefinedTable: relation \"x\" does not exist",
                true,
            ),
            (
                "asyncpg.exceptions.UndefinedTableError: relation \"x\" does not exist",
                true,
            ),
            ("no such table: items", true),
            ("sqlite3.OperationalError: no such table: items", true),
            ("UNIQUE constraint failed: items.id", true),
            ("attempt to write a readonly database", true),
            ("database is locked", true),
            ("(1146, \"Table 'shop.items' doesn't exist\")", true),
            ("ERROR 1146 (42S02): Table 'shop.items' doesn't exist", true),
            (
                "1064 (42000): You have an error in your SQL syntax; check the manual",
                true,
            ),
            (
                "SQLSTATE[42S02]: Base table or view not found: 1146 Table 'shop.x' doesn't exist",
                true,
            ),
            (
                "error returned from database: (code: 1) no such table: items",
                true,
            ),
            (
                "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: x",
                true,
            ),
            // JSON error answers (DBHub, Supabase's MCP server).
            ("{\"error\": \"permission denied\"}", true),
            (
                "{\"success\": false, \"error\": \"boom\", \"code\": \"EXECUTION_ERROR\"}",
                true,
            ),
            (
                "{\"error\": {\"name\": \"PostgresError\", \"message\": \"relation \\\"x\\\" does not exist\"}}",
                true,
            ),
            (
                "{\"data\": null, \"errors\": [{\"message\": \"boom\"}]}",
                true,
            ),
            // Reports about errors, and data: calls that ran.
            ("Invalid index check: none found", false),
            ("Invalid index check: No invalid indexes found.", false),
            (
                "Invalid index check: No invalid indexes found.\nDuplicate index check: No \
                 duplicate indexes found.\nConnection health: Connections healthy: 3 total\n",
                false,
            ),
            ("0 errors", false),
            ("0 errors, 2 warnings", false),
            ("No errors found.", false),
            ("Errors: 3\nWarnings: 0", false),
            ("Error rate: 0.0%\nLatency: 3 ms", false),
            ("Error-free: yes", false),
            ("Failed jobs: none\nQueued jobs: 2", false),
            ("Last error: none", false),
            ("Invalid rows (2):\n- id 4: qty -1\n- id 9: qty -3", false),
            ("[(4, 'bob@'), (9, 'x')]", false),
            (
                "Found 2 rows whose table does not exist in the catalog: [('a',), ('b',)]",
                false,
            ),
            (
                "{\"checked\": 10, \"errors\": [{\"id\": 4, \"problem\": \"negative qty\"}]}",
                false,
            ),
            ("{\"rows\": [], \"error\": null}", false),
            ("{\"success\": true, \"rows_affected\": 1}", false),
            ("[{\"id\": 1, \"name\": \"anchor\"}]", false),
            ("Inserted 1 row", false),
            ("Table created", false),
            ("Table items created; relation count now 3", false),
            ("3", false),
            ("", false),
            ("errand list: milk", false),
            // Not a failure message as a whole: no label, no SQLSTATE, no driver's text.
            ("Invalid input: id must be an integer", false),
            ("Cannot connect to the server", false),
            ("Status: degraded (1 syntax error in the log)", false),
        ];
        for (text, want) in rows {
            assert_eq!(reads_as_error(text).is_some(), *want, "{text:?}");
        }
    }
}

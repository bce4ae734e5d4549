//! When a tool result that is not flagged `isError` still reads as an error.
//!
//! Many servers return a refused or failed call as ordinary text (`isError: false`):
//! `Error: syntax error at or near "hintaudit"`, `{"error": "password authentication
//! failed"}`. Such a call did not run, so it is no evidence that the tool is harmless.
//! The heuristic, in order, over the first text content of the result:
//!
//! 1. a JSON object with a truthy `error`/`errors` member, or `success`/`ok` false;
//! 2. text whose first word is an error word (`error`, `failed`, `exception`, `traceback`,
//!    `fatal`, `denied`, ...), case-insensitively, optionally after `[`;
//! 3. a database error phrase in the first 300 characters (`syntax error`, `permission
//!    denied`, `password authentication failed`, `access denied for user`, `no such table`,
//!    `does not exist`, `sqlstate`, ...).
//!
//! A false positive only makes a call count as failed: the tool can end up "not exercised",
//! never "passed" by mistake.

use serde_json::Value;

/// Words that, first in a result text, mean the call failed.
const LEADING_WORDS: &[&str] = &[
    "error",
    "errors",
    "err",
    "failed",
    "failure",
    "fail",
    "exception",
    "traceback",
    "fatal",
    "denied",
    "forbidden",
    "unauthorized",
    "invalid",
    "cannot",
    "can't",
    "unable",
];

/// Phrases database drivers put in their error messages.
const DB_PHRASES: &[&str] = &[
    "syntax error",
    "permission denied",
    "password authentication failed",
    "access denied for user",
    "authentication failed",
    "connection refused",
    "could not connect",
    "no such table",
    "no such column",
    "does not exist",
    "doesn't exist",
    "unknown column",
    "unknown table",
    "sqlstate",
    "you have an error in your sql syntax",
    "read-only transaction",
    "database is locked",
];

/// Whether a result's text reads as an error (see the module docs); `None` when it does not,
/// else the reason, one short phrase.
pub(crate) fn reads_as_error(text: &str) -> Option<&'static str> {
    let trimmed = text.trim();
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(trimmed) {
        let truthy = |v: &Value| {
            !matches!(v, Value::Null | Value::Bool(false))
                && v.as_str() != Some("")
                && v.as_array().is_none_or(|a| !a.is_empty())
        };
        if map.get("error").is_some_and(truthy) || map.get("errors").is_some_and(truthy) {
            return Some("a JSON result with an error member");
        }
        if [map.get("success"), map.get("ok")]
            .into_iter()
            .flatten()
            .any(|v| v == &Value::Bool(false))
        {
            return Some("a JSON result saying success false");
        }
        return None;
    }
    let lower: String = trimmed.chars().take(300).collect::<String>().to_lowercase();
    let first = lower
        .trim_start_matches(['[', '(', '*', '!', ' '])
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_'))
        .next()
        .unwrap_or("");
    if LEADING_WORDS.contains(&first) {
        return Some("the result text starts with an error word");
    }
    if DB_PHRASES.iter().any(|p| lower.contains(p)) {
        return Some("the result text holds a database error");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::reads_as_error;

    #[test]
    fn error_texts_are_recognised_and_data_is_not() {
        // (result text, reads as an error)
        let rows: &[(&str, bool)] = &[
            ("Error: syntax error at or near \"hintaudit\"", true),
            ("error executing query: relation \"x\" does not exist", true),
            ("[ERROR] connection lost", true),
            ("Failed to execute: near \"hintaudit\": syntax error", true),
            ("Traceback (most recent call last):", true),
            (
                "Database error: password authentication failed for user \"app\"",
                true,
            ),
            (
                "Query failed: Access denied for user 'root'@'localhost'",
                true,
            ),
            (
                "psycopg.errors.UndefinedTable: relation does not exist",
                true,
            ),
            ("no such table: items", true),
            ("{\"error\": \"permission denied\"}", true),
            ("{\"success\": false, \"message\": \"nope\"}", true),
            ("{\"rows\": [], \"error\": null}", false),
            ("{\"success\": true, \"rows_affected\": 1}", false),
            ("[{\"id\": 1, \"name\": \"anchor\"}]", false),
            ("Inserted 1 row", false),
            ("Table created", false),
            ("3", false),
            ("", false),
            ("errand list: milk", false),
        ];
        for (text, want) in rows {
            assert_eq!(reads_as_error(text).is_some(), *want, "{text:?}");
        }
    }
}

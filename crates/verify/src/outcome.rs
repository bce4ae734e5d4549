//! When a tool result that is not flagged `isError` still reads as an error.
//!
//! Many servers return a refused or failed call as ordinary text (`isError: false`):
//! `Error: syntax error at or near "hintaudit"`, `{"error": "password authentication
//! failed"}`. Such a call did not run, so it is no evidence that the tool is harmless.
//! The heuristic, in order, over the first text content of the result:
//!
//! 1. a JSON object with a truthy `error`/`errors` member, or `success`/`ok` false;
//! 2. text whose first word is an error word (`error`, `failed`, `exception`, `traceback`,
//!    `fatal`, `denied`, `invalid`, ...), case-insensitively, optionally after `[`, when the
//!    answer reads as that error as a whole: the word stands alone as its label (`Error:
//!    …`, `[ERROR] …`, `FAILED`), or the answer is one message rather than a report. A
//!    report is a text of several lines of which at least two are headed `Some words: …`
//!    (`Invalid index check: No invalid indexes found.` then `Duplicate index check: …`):
//!    its first word heads its first line, not the answer;
//! 3. a database error phrase in the first 300 characters (`syntax error`, `permission
//!    denied`, `password authentication failed`, `access denied for user`, `no such table`,
//!    `does not exist`, `sqlstate`, `traceback (most recent call last)`, ...).
//!
//! A false positive only makes a call count as failed: the tool can end up "not exercised",
//! never "passed" by mistake; a successful report that merely starts with an error word is
//! not one.

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
    "traceback (most recent call last)",
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
    let opening = lower.trim_start_matches(['[', '(', '*', '!', ' ']);
    let first = opening
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_'))
        .next()
        .unwrap_or("");
    if LEADING_WORDS.contains(&first) && !heads_a_report(first, &opening[first.len()..], trimmed) {
        return Some("the result text starts with an error word");
    }
    if DB_PHRASES.iter().any(|p| lower.contains(p)) {
        return Some("the result text holds a database error");
    }
    None
}

/// Words after a leading error word that make it a message about a failure (`Error
/// while …`, `Failed to …`) rather than the first word of a heading (`Invalid index check`).
const MESSAGE_LINKS: &[&str] = &[
    "to", "while", "in", "on", "during", "when", "for", "at", "with", "from", "of", "by",
];

/// Whether an answer whose first word is the error word `word`, followed by `rest` (the
/// answer lower-cased from there), is a report that merely starts with it: the word heads
/// a longer heading of the first line (not `Error: …`, `[ERROR] …`, `FAILED`; not a
/// message such as `Error executing …`, `Failed to …`, `Cannot …`), and the answer is a
/// report ([`is_report`]).
fn heads_a_report(word: &str, rest: &str, answer: &str) -> bool {
    let rest = rest.trim_start_matches([' ', '\t']);
    let next = rest
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_'))
        .next()
        .unwrap_or("");
    let labels_the_answer = next.is_empty();
    let message = MESSAGE_LINKS.contains(&next)
        || next.ends_with("ing")
        || matches!(word, "cannot" | "can't" | "unable");
    !labels_the_answer && !message && is_report(answer)
}

/// Whether a text is a report of several headed lines rather than one message: at least two
/// of its lines (not indented) open with a heading of one to six words and a colon.
fn is_report(text: &str) -> bool {
    let headed = |line: &&str| {
        !line.starts_with([' ', '\t'])
            && line.split_once(':').is_some_and(|(head, _)| {
                let words = head.split_whitespace().count();
                (1..=6).contains(&words)
                    && head
                        .chars()
                        .all(|c| c.is_alphanumeric() || " _-'".contains(c))
            })
    };
    text.lines().filter(headed).take(2).count() == 2
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
            // One message whose first word is an error word: an error.
            ("Invalid input: id must be an integer", true),
            ("Cannot connect to the server", true),
            (
                "Error: duplicate key value\nDETAIL: Key (id)=(1) already exists.",
                true,
            ),
            ("ERROR\nsomething went wrong", true),
            (
                "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: x",
                true,
            ),
            (
                "Error calculating database health: boom\nLINE 1: SELECT",
                true,
            ),
            ("Failed to execute: boom\nQuery: SELECT 1", true),
            ("Errors: 3\nWarnings: 0", true),
            // A report whose first heading starts with an error word: no error (postgres-mcp's
            // analyze_db_health).
            (
                "Invalid index check: No invalid indexes found.\nDuplicate index check: No \
                 duplicate indexes found.\nConnection health: Connections healthy: 3 total\n",
                false,
            ),
            ("Failed jobs: none\nQueued jobs: 2", false),
            ("Error rate: 0.0%\nLatency: 3 ms", false),
            // One line headed by an error word is one message, not a report.
            ("Invalid index check: No invalid indexes found.", true),
        ];
        for (text, want) in rows {
            assert_eq!(reads_as_error(text).is_some(), *want, "{text:?}");
        }
    }
}

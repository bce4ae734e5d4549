//! SQLite `PRAGMA`s: which ones only read or set a connection's own state.
//!
//! A pragma given a value may write the database file (`user_version`, `application_id`,
//! `page_size`, `auto_vacuum`, `writable_schema`, …): those are judged as DDL. The ones below
//! change only the connection (settings) or read (introspection), with or without a value.
//! Source: <https://www.sqlite.org/pragma.html>.

/// Pragmas that set or read the connection's own state, whatever their value.
const SETTINGS: &[&str] = &[
    "foreign_keys",
    "busy_timeout",
    "synchronous",
    "cache_size",
    "temp_store",
    "recursive_triggers",
    "case_sensitive_like",
    "query_only",
    "journal_mode",
    "locking_mode",
    "defer_foreign_keys",
    "mmap_size",
    "analysis_limit",
    "cell_size_check",
    "automatic_index",
    "ignore_check_constraints",
    "reverse_unordered_selects",
    "trusted_schema",
    "optimize",
    "wal_checkpoint",
];

/// Pragmas that read, taking a table, index or schema name as their argument.
const READS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_info",
    "index_xinfo",
    "index_list",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
    "database_list",
    "collation_list",
    "function_list",
    "module_list",
    "pragma_list",
    "compile_options",
];

/// Whether `PRAGMA name` (lower-case, without its schema) with or without a value is a
/// session statement (a setting or a read) rather than a possible write.
pub(crate) fn is_session(name: &str, has_value: bool) -> bool {
    !has_value || SETTINGS.contains(&name) || READS.contains(&name)
}

/// For a text the parser could not read: whether it is a `PRAGMA` that is a setting or a
/// read, going by its words alone (`PRAGMA [schema.]name`, then nothing, `= value` or
/// `(value)`). Anything else, including a pragma name that is not a plain identifier, is
/// not.
pub(crate) fn is_session_text(sql: &str) -> bool {
    let Some(rest) = strip_keyword(sql.trim_start(), "PRAGMA") else {
        return false;
    };
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(rest.len());
    let (dotted, tail) = rest.split_at(end);
    let name = dotted
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    let tail = tail.trim();
    let has_value = !(tail.is_empty() || tail == ";");
    is_session(&name, has_value)
}

/// `text` after a leading `keyword` (ASCII case-insensitive) and at least one space.
fn strip_keyword<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    let head = text.get(..keyword.len())?;
    let rest = &text[keyword.len()..];
    (head.eq_ignore_ascii_case(keyword) && rest.starts_with(char::is_whitespace)).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::is_session_text;

    #[test]
    fn settings_and_reads_are_session_other_values_are_not() {
        for sql in [
            "PRAGMA table_info(notes)",
            "pragma main.table_info(notes)",
            "PRAGMA foreign_keys = ON",
            "PRAGMA user_version",
            "PRAGMA user_version;",
        ] {
            assert!(is_session_text(sql), "{sql}");
        }
        for sql in [
            "PRAGMA user_version = -1",
            "PRAGMA application_id(7)",
            "PRAGMA RE id = 1 FMR UPDAT$$$$$SELECT '$$'",
            "PRAGMA 'x' = 1",
            "PRAGMA",
            "PRAGMAtable_info(t)",
            "SELECT 1",
        ] {
            assert!(!is_session_text(sql), "{sql}");
        }
    }
}

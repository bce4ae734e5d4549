//! The one exception to the cautious fallback, stated independently of the classifier: an
//! unparsed `PRAGMA` of a connection setting or a read (<https://www.sqlite.org/pragma.html>),
//! or a bare `PRAGMA name` (a query), may be judged a session statement. Shared by the
//! property test (`properties.rs`) and the libFuzzer target (`fuzz/fuzz_targets/classify.rs`,
//! which includes this file by path), so both state the same property.

/// Pragmas whose every form only sets the connection's state or reads.
const SESSION_PRAGMAS: &[&str] = &[
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

/// Whether an unparsed `sql` may be judged a session statement instead of unknown.
pub fn session_allowed(sql: &str) -> bool {
    let mut words = sql.split_whitespace();
    if !words
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("PRAGMA"))
    {
        return false;
    }
    let rest: String = words.collect::<Vec<_>>().join(" ");
    let name_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(rest.len());
    let name = rest[..name_end]
        .rsplit('.')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let value = rest[name_end..].trim();
    !name.is_empty()
        && (value.is_empty() || value == ";" || SESSION_PRAGMAS.contains(&name.as_str()))
}

/// What a text proved read-only must never be, stated apart from the proof's own allowlist:
/// a write, an unknown text or a procedure call by its operation, a write to any table, or a
/// call of a function statement analysis finds opaque. `None` when it holds (or the text is
/// not proved), else what broke it.
pub fn proof_broken(c: &hintaudit_sqlx::Classification) -> Option<String> {
    use hintaudit_core::Operation;
    let e = &c.effect;
    let broken = c.proved_read_only()
        && (e.operation.is_write()
            || matches!(e.operation, Operation::Unknown | Operation::Call)
            || !e.tables.is_empty()
            || !e.opaque_calls.is_empty());
    broken.then(|| {
        format!(
            "proved read-only, yet {:?} writing {:?} calling {:?}",
            e.operation, e.tables, e.opaque_calls
        )
    })
}

//! What the classifier knows about SQL functions: which are pure built-ins, which are
//! non-deterministic, and which converge when applied to a column again and again.
//!
//! Everything not listed here is *opaque*: it may write (a PL/pgSQL function called from
//! `SELECT`), so the statement is reported with it in `opaque_calls`.

/// Deterministic built-ins of SQLite, PostgreSQL and MySQL that never write. Lower-case.
#[rustfmt::skip]
const PURE: &[&str] = &[
    // aggregates
    "count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg", "array_agg",
    "json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg", "json_group_array",
    "json_group_object", "bool_and", "bool_or", "every", "bit_and", "bit_or", "stddev",
    "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "median", "mode",
    "percentile_cont", "percentile_disc", "xmlagg",
    // window functions
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value",
    // strings
    "lower", "upper", "trim", "ltrim", "rtrim", "btrim", "length", "char_length",
    "character_length", "octet_length", "bit_length", "substr", "substring", "replace", "instr",
    "position", "strpos", "concat", "concat_ws", "left", "right", "lpad", "rpad", "repeat",
    "reverse", "split_part", "initcap", "ascii", "chr", "char", "unicode", "format", "printf",
    "quote", "quote_ident", "quote_literal", "quote_nullable", "md5", "sha1", "sha224",
    "sha256", "sha384", "sha512", "encode", "decode", "hex", "unhex", "to_hex", "soundex",
    "translate", "regexp_replace", "regexp_match", "regexp_matches", "regexp_substr",
    "regexp_like", "regexp_count", "regexp_instr", "regexp_split_to_array",
    "regexp_split_to_table", "starts_with", "like", "glob", "string_to_array",
    "array_to_string", "overlay", "zeroblob", "locate", "lcase", "ucase", "mid", "space",
    "field", "find_in_set", "elt", "bin", "oct", "lengthb", "octet", "uuid_extract_timestamp",
    "to_char", "to_number", "to_date", "to_timestamp", "normalize", "unistr", "casefold",
    // null handling, conditionals
    "coalesce", "ifnull", "nullif", "iif", "if", "greatest", "least", "nvl", "isnull",
    // numbers
    "abs", "round", "floor", "ceil", "ceiling", "trunc", "truncate", "sign", "mod", "power",
    "pow", "sqrt", "cbrt", "exp", "ln", "log", "log2", "log10", "pi", "degrees", "radians",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "div", "gcd",
    "lcm", "width_bucket", "scale", "min_scale", "trim_scale", "factorial",
    // date/time formatting and arithmetic (deterministic unless given 'now'; see below)
    "date", "time", "datetime", "julianday", "strftime", "unixepoch", "timediff", "date_trunc",
    "date_part", "extract", "make_date", "make_time", "make_timestamp", "make_timestamptz",
    "make_interval", "age", "justify_days", "justify_hours", "justify_interval", "date_add",
    "date_sub", "adddate", "subdate", "datediff", "timestampdiff", "timestampadd",
    "date_format", "str_to_date", "from_unixtime", "unix_timestamp", "to_days", "year", "month",
    "day", "dayofweek", "dayofmonth", "dayofyear", "hour", "minute", "second", "week",
    "weekday", "quarter", "last_day", "isfinite", "timezone", "date_bin",
    // casts and types
    "cast", "try_cast", "convert", "typeof", "pg_typeof", "format_type", "to_regclass",
    "to_regtype", "likelihood", "likely", "unlikely",
    // json
    "json", "jsonb", "json_array", "json_object", "json_extract", "json_insert", "json_replace",
    "json_set", "json_remove", "json_patch", "json_type", "json_valid", "json_quote",
    "json_array_length", "json_each", "json_tree", "jsonb_array_length", "json_build_object",
    "jsonb_build_object", "json_build_array", "jsonb_build_array", "to_json", "to_jsonb",
    "row_to_json", "json_typeof", "jsonb_typeof", "jsonb_set", "jsonb_insert",
    "jsonb_strip_nulls", "json_strip_nulls", "jsonb_pretty", "json_extract_path",
    "json_extract_path_text", "jsonb_extract_path", "jsonb_extract_path_text",
    "json_array_elements", "jsonb_array_elements", "json_array_elements_text",
    "jsonb_array_elements_text", "json_object_keys", "jsonb_object_keys", "jsonb_path_query",
    "jsonb_path_exists", "json_contains", "json_unquote", "json_keys", "json_length",
    "jsonb_exists",
    // arrays, ranges, sets
    "array_length", "cardinality", "array_append", "array_prepend", "array_cat", "array_remove",
    "array_replace", "array_position", "array_positions", "unnest", "array_lower",
    "array_upper", "array_ndims", "array_dims", "array_fill", "generate_series",
    "generate_subscripts", "lower_inf", "upper_inf", "isempty", "range_merge", "int4range",
    "int8range", "numrange", "tsrange", "tstzrange", "daterange",
    // misc read-only
    "exists", "any", "all", "some", "row", "values", "grouping", "last_insert_rowid", "changes",
    "total_changes", "sqlite_version", "version", "current_user", "session_user", "user",
    "current_schema", "current_database", "current_catalog", "database", "schema",
    "pg_backend_pid", "inet_client_addr", "pg_column_size", "pg_relation_size",
    "pg_total_relation_size", "pg_size_pretty", "has_table_privilege", "obj_description",
    "col_description", "pg_get_serial_sequence", "currval", "lastval", "crc32", "to_tsvector",
    "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery", "ts_rank",
    "ts_rank_cd", "ts_headline", "setweight", "similarity", "word_similarity",
    "pg_current_xact_id_if_assigned", "pg_current_xact_id", "txid_current_if_assigned",
    // catalog reads (introspection tools, and the catalog's own views)
    "pg_has_role", "has_column_privilege", "has_any_column_privilege",
    "has_schema_privilege", "has_database_privilege", "has_sequence_privilege",
    "has_function_privilege", "pg_get_expr", "pg_get_constraintdef", "pg_get_indexdef",
    "pg_get_viewdef", "pg_get_functiondef", "pg_get_function_arguments",
    "pg_get_function_result", "pg_get_triggerdef", "pg_get_userbyid", "pg_table_is_visible",
    "pg_type_is_visible", "pg_function_is_visible", "pg_relation_filenode",
    "pg_indexes_size", "pg_table_size", "pg_database_size", "pg_get_keywords",
    "pg_postmaster_start_time", "pg_is_in_recovery", "current_schemas", "to_regproc",
    "to_regnamespace", "host",
    "inet", "cidr", "family", "masklen", "netmask", "point", "box", "circle", "st_distance",
    "st_makepoint", "st_setsrid",
];

/// Built-ins that never write but answer differently each time: `SET x = now()` cannot
/// converge. `datetime('now')` and friends are recognised by their argument, not here.
#[rustfmt::skip]
const NON_DETERMINISTIC: &[&str] = &[
    "now", "random", "randomblob", "random_bytes", "gen_random_uuid", "uuid_generate_v1",
    "uuid_generate_v1mc", "uuid_generate_v4", "uuidv4", "uuidv7", "uuid", "uuid_short",
    "clock_timestamp", "statement_timestamp", "transaction_timestamp", "timeofday",
    "current_timestamp", "current_date", "current_time", "localtimestamp", "localtime",
    "sysdate", "utc_timestamp", "utc_date", "utc_time", "curdate", "curtime", "rand", "setseed",
    "nextval",
];

/// Built-ins that change only the session (settings, advisory locks, the session's own
/// sleep): no table, sequence or file changes. Never opaque to the read-only proof.
#[rustfmt::skip]
const SESSION: &[&str] = &[
    "set_config", "current_setting", "pg_advisory_lock", "pg_advisory_lock_shared",
    "pg_try_advisory_lock", "pg_try_advisory_lock_shared", "pg_advisory_unlock",
    "pg_advisory_unlock_shared", "pg_advisory_unlock_all", "pg_advisory_xact_lock",
    "pg_advisory_xact_lock_shared", "pg_try_advisory_xact_lock",
    "pg_try_advisory_xact_lock_shared", "pg_sleep", "get_lock", "release_lock",
    "release_all_locks", "is_free_lock", "is_used_lock", "sleep",
];

/// Functions that, given a column, return a value that applying them again leaves as it is
/// (`trim(trim(x)) = trim(x)`), or that pick among their arguments.
#[rustfmt::skip]
const CONVERGING: &[&str] = &[
    "trim", "ltrim", "rtrim", "btrim", "lower", "upper", "lcase", "ucase", "initcap",
    "coalesce", "ifnull", "nullif", "nvl", "iif", "if", "greatest", "least", "min", "max",
    "abs", "round", "floor", "ceil", "ceiling", "trunc", "truncate", "cast", "try_cast",
    "convert", "normalize", "casefold", "json", "jsonb", "date_trunc", "sign",
];

/// Date/time functions that, given a column and a modifier (`datetime(col, '+1 day')`,
/// `date_add(col, interval 1 day)`), move it: not convergent.
#[rustfmt::skip]
const DATE_ARITHMETIC: &[&str] = &[
    "date", "time", "datetime", "julianday", "strftime", "unixepoch", "date_add", "date_sub",
    "adddate", "subdate", "timestampadd",
];

/// SQLite date functions that read the clock when an argument is `'now'` (or when called
/// without arguments).
const SQLITE_CLOCK: &[&str] = &[
    "date",
    "time",
    "datetime",
    "julianday",
    "strftime",
    "unixepoch",
];

/// Whether `name` (lower-case, unqualified) is a known pure built-in.
pub(crate) fn is_pure(name: &str) -> bool {
    PURE.contains(&name)
}

/// Whether `name` is a known non-deterministic built-in that does not write.
pub(crate) fn is_non_deterministic(name: &str) -> bool {
    NON_DETERMINISTIC.contains(&name)
}

/// Whether `name` converges when re-applied to its own result.
pub(crate) fn is_converging(name: &str) -> bool {
    CONVERGING.contains(&name)
}

/// Whether `name` shifts a date by a modifier when called with more than one argument.
pub(crate) fn is_date_arithmetic(name: &str) -> bool {
    DATE_ARITHMETIC.contains(&name)
}

/// Whether `name` reads the clock when given `'now'` or no argument.
pub(crate) fn is_clock_when_now(name: &str) -> bool {
    SQLITE_CLOCK.contains(&name)
}

/// Whether `name` (lower-case, unqualified) is a built-in known not to write tables,
/// sequences or files: pure, non-deterministic reads of the clock or a random source, or
/// session-only (settings, advisory locks). The read-only proof's allowlist (see
/// `proof`); `nextval` and `setval` are not on it.
pub(crate) fn is_known_read_only(name: &str) -> bool {
    (is_pure(name) || is_non_deterministic(name) || SESSION.contains(&name))
        && !matches!(name, "nextval" | "setval")
}

/// Whether a call may write or has effects beyond its result or the session: anything not
/// [`is_known_read_only`]. `nextval` and `setval` count as opaque: they change a sequence.
pub(crate) fn is_opaque(name: &str) -> bool {
    !is_known_read_only(name)
}

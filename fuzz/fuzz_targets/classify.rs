//! Classification and summary of any text, in every dialect in use: never a panic, an
//! unparsed text is judged by the cautious fallback (unknown, may write), a text proved
//! read-only holds no write by statement analysis, and a sanitized
//! text never holds more than its source's structure (no literal survives). The seed corpus
//! (`fuzz/corpus/classify`) holds real statements; libFuzzer mutates them.
#![no_main]

use hintaudit_core::Operation;
use hintaudit_sqlx::{SqlDialect, classify};
use libfuzzer_sys::fuzz_target;

/// The fallback's one exception (a `PRAGMA` setting or read), shared with the property test.
#[path = "../../tests/reliability/fallback.rs"]
mod fallback;

fuzz_target!(|data: &[u8]| {
    // Invalid UTF-8 reaches the classifier as sqlx hands it text: lossily decoded.
    let sql = String::from_utf8_lossy(data);
    for d in [SqlDialect::Sqlite, SqlDialect::Postgres, SqlDialect::MySql] {
        let c = classify(&sql, d);
        let exempt = c.effect.operation == Operation::Session && fallback::session_allowed(&sql);
        if !c.parsed && !exempt {
            assert_eq!(c.effect.operation, Operation::Unknown, "{d:?} {sql:?}");
            assert!(!c.proved_read_only(), "{d:?} {sql:?}");
        }
        // What is proved read-only holds no write by statement analysis.
        if let Some(broken) = fallback::proof_broken(&c) {
            panic!("{d:?} {sql:?}: {broken}");
        }
        // A literal never survives sanitizing: the sanitized text of `SELECT '<literal>'` is
        // the same whatever the literal (comparing texts, not searching one in the other, so
        // a literal that happens to spell a keyword, `'SELE'`, is no false alarm).
        if let Some(inner) = sql
            .strip_prefix("SELECT '")
            .and_then(|s| s.strip_suffix('\''))
            && !inner.contains('\'')
            && !inner.contains('\\')
        {
            let other = classify("SELECT 'x'", d);
            assert_eq!(c.sanitized, other.sanitized, "{d:?} {sql:?}");
        }
    }
});

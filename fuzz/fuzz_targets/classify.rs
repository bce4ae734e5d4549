//! Classification and summary of any text, in every dialect in use: never a panic, an
//! unparsed text is judged by the cautious fallback (unknown, may write), and a sanitized
//! text never holds more than its source's structure (no literal survives). The seed corpus
//! (`fuzz/corpus/classify`) holds real statements; libFuzzer mutates them.
#![no_main]

use hintaudit_core::Operation;
use hintaudit_sqlx::{SqlDialect, classify};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Invalid UTF-8 reaches the classifier as sqlx hands it text: lossily decoded.
    let sql = String::from_utf8_lossy(data);
    for d in [SqlDialect::Sqlite, SqlDialect::Postgres, SqlDialect::MySql] {
        let c = classify(&sql, d);
        if !c.parsed {
            assert_eq!(c.effect.operation, Operation::Unknown, "{d:?} {sql:?}");
            assert!(c.may_write(), "{d:?} {sql:?}");
        }
        // A planted literal never survives sanitizing.
        if let Some(inner) = sql.strip_prefix("SELECT '").and_then(|s| s.strip_suffix('\''))
            && !inner.contains('\'')
            && inner.len() > 3
            && inner.chars().all(|ch| ch.is_ascii_alphanumeric())
        {
            assert!(!c.sanitized.contains(inner), "{d:?} {sql:?} -> {:?}", c.sanitized);
        }
    }
});

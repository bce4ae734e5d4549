//! A text of several statements (`raw_sql`, or any text sent without arguments: sqlx's
//! MySQL connection allows multi-statement texts), split with sqlparser's MySQL dialect so
//! that each statement is classified and judged on its own, with the rows affected of its
//! own result.

use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

use crate::classify::{Classification, SqlDialect, classify};

/// The statements of `sql` with their classification, in order, when there are several;
/// `None` for a single statement (the common case costs a scan of the sanitized text for a
/// `;` inside it, no parse) or a text that does not parse.
pub(crate) fn statements(
    class: &Classification,
    sql: &str,
) -> Option<Vec<(Classification, String)>> {
    let inner = class.sanitized.trim_end().trim_end_matches(';');
    if !class.parsed || !inner.contains(';') {
        return None;
    }
    let parsed = Parser::parse_sql(&MySqlDialect {}, sql).ok()?;
    if parsed.len() < 2 {
        return None;
    }
    Some(
        parsed
            .iter()
            .map(|s| {
                let text = s.to_string();
                (classify(&text, SqlDialect::MySql), text)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hintaudit_core::Operation;

    #[test]
    fn split_only_several() {
        let one = "INSERT INTO t (s) VALUES ('a;b');";
        assert!(statements(&classify(one, SqlDialect::MySql), one).is_none());
        let two = "DELETE FROM t WHERE id = 1; SELECT 'x;y' FROM u";
        let got: Vec<Operation> = statements(&classify(two, SqlDialect::MySql), two)
            .unwrap()
            .iter()
            .map(|(c, _)| c.effect.operation)
            .collect();
        assert_eq!(got, [Operation::Delete, Operation::Select]);
    }
}

//! Transaction control: which statements begin or end a transaction, and which cannot run
//! inside a transaction block at all (the PostgreSQL oracle must not wrap those).

use sqlparser::dialect::Dialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// Transaction control a statement performs, so the audited connection can follow the
/// transaction state of statements it did not open itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxControl {
    /// `BEGIN` / `START TRANSACTION`.
    Begin,
    /// `COMMIT` / `END`.
    Commit,
    /// `ROLLBACK` (the whole transaction).
    Rollback,
    /// `ROLLBACK TO SAVEPOINT`.
    RollbackTo,
    /// `SAVEPOINT`.
    Savepoint,
    /// `RELEASE SAVEPOINT`.
    Release,
}

/// Whether a text holds a PostgreSQL statement that cannot run inside a transaction block,
/// as the reference page of each says: `VACUUM`, `CLUSTER` (without a table), `REINDEX`
/// (`DATABASE`, `SYSTEM`, `CONCURRENTLY`), `CREATE`/`DROP DATABASE`, `CREATE`/`DROP TABLESPACE`,
/// `ALTER DATABASE … SET TABLESPACE`, `ALTER SYSTEM`, `CREATE`/`ALTER`/`DROP SUBSCRIPTION`,
/// `DISCARD ALL`, `COMMIT`/`ROLLBACK PREPARED`, and anything `CONCURRENTLY`. Read from each
/// statement's leading words (and the word `CONCURRENTLY` anywhere), so that a table named
/// `cluster_nodes` or a literal does not count. Over-matching (every `CLUSTER` and `REINDEX`)
/// only keeps the oracle from wrapping statements that write no rows. Used on the text of a
/// statement sqlparser parsed into no more specific form, and on a text it could not parse.
pub(crate) fn cannot_run_in_transaction(sql: &str) -> bool {
    sql.split(';').any(|statement| {
        let words: Vec<String> = statement
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_uppercase)
            .collect();
        let lead: Vec<&str> = words.iter().take(2).map(String::as_str).collect();
        let anywhere = |w: &str| words.iter().any(|x| x == w);
        match lead.as_slice() {
            ["VACUUM" | "CLUSTER" | "REINDEX", ..] => true,
            ["CREATE" | "DROP", "DATABASE" | "TABLESPACE"] => true,
            ["CREATE" | "ALTER" | "DROP", "SUBSCRIPTION"] => true,
            ["ALTER", "SYSTEM"] | ["DISCARD", "ALL"] => true,
            ["COMMIT" | "ROLLBACK", "PREPARED"] => true,
            ["ALTER", "DATABASE"] => anywhere("TABLESPACE"),
            _ => anywhere("CONCURRENTLY"),
        }
    })
}

/// Whether a text holds transaction control of its own: a statement (at the text's start or
/// after a `;`) that begins with `BEGIN`, `START`, `COMMIT`, `END`, `ROLLBACK`, `ABORT`,
/// `SAVEPOINT` or `RELEASE`, as sqlparser's tokenizer reads the text. A PL/pgSQL body
/// (`DO $$ BEGIN … END $$`) is one dollar-quoted string token, not control. When the text
/// cannot be tokenized, any of those words anywhere counts (wrapping a text that commits by
/// itself would end the oracle's transaction under it).
pub(crate) fn controls_transaction(d: &dyn Dialect, sql: &str) -> bool {
    const CONTROL: &[&str] = &[
        "BEGIN",
        "START",
        "COMMIT",
        "END",
        "ROLLBACK",
        "ABORT",
        "SAVEPOINT",
        "RELEASE",
    ];
    let Ok(tokens) = Tokenizer::new(d, sql).tokenize() else {
        let upper = sql.to_uppercase();
        return CONTROL.iter().any(|w| upper.contains(w));
    };
    let mut at_start = true;
    for t in &tokens {
        match t {
            Token::Whitespace(_) => {}
            Token::SemiColon => at_start = true,
            Token::Word(w) if at_start => {
                if CONTROL.iter().any(|c| w.value.eq_ignore_ascii_case(c)) {
                    return true;
                }
                at_start = false;
            }
            _ => at_start = false,
        }
    }
    false
}

//! What the database itself may write behind a statement: its triggers and stored routines,
//! read once per pool from `information_schema` (and again after DDL or `USE`), their bodies
//! cut into statements with sqlparser's MySQL tokenizer and classified with the MySQL dialect
//! ([design: evidence](../../../../docs/design.md#3-evidence)).
//!
//! A body statement the parser cannot read (MySQL's compound statements, `IF … THEN`,
//! `DECLARE` handlers) is found by its leading keyword instead (`DELETE … FROM t`,
//! `UPDATE t`, `INSERT … INTO t`, `REPLACE … INTO t`, `TRUNCATE … t`, `CALL p`), and its
//! evidence says so (`keyword scan`).

use std::collections::HashMap;

use hintaudit_core::{DatabaseKind, Operation, StatementEffect};
use sqlparser::dialect::MySqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};
use sqlx::mysql::MySqlConnection;
use sqlx::{Executor, Row};

use crate::classify::{SqlDialect, classify};

/// `SELECT VERSION(), DATABASE()`: what the server calls itself, and the current database.
const IDENTITY: &str = "SELECT CONVERT(VERSION() USING utf8mb4), CONVERT(DATABASE() USING utf8mb4)";

/// The triggers of the current database: name, table, event, body.
const TRIGGERS: &str = "SELECT CONVERT(TRIGGER_NAME USING utf8mb4), \
     CONVERT(EVENT_OBJECT_TABLE USING utf8mb4), CONVERT(EVENT_MANIPULATION USING utf8mb4), \
     CONVERT(ACTION_STATEMENT USING utf8mb4) \
     FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()";

/// The stored procedures and functions of the current database: name, type, body (NULL
/// when the user may not read it).
const ROUTINES: &str = "SELECT CONVERT(ROUTINE_NAME USING utf8mb4), \
     CONVERT(ROUTINE_TYPE USING utf8mb4), CONVERT(ROUTINE_DEFINITION USING utf8mb4) \
     FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()";

/// The views of the current database: name, definition (NULL or empty when the user may not
/// read it).
const VIEWS: &str = "SELECT CONVERT(TABLE_NAME USING utf8mb4), \
     CONVERT(VIEW_DEFINITION USING utf8mb4) \
     FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE()";

/// What reading a view runs: the functions its definition calls that are not known built-ins
/// (stored functions, expanded like a statement's), and the relations it reads (views among
/// them are expanded in turn). A definition the user may not read, or that does not parse,
/// is `opaque`.
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    pub(crate) functions: Vec<String>,
    pub(crate) reads: Vec<String>,
    pub(crate) opaque: bool,
}

/// One write a trigger or routine body holds.
#[derive(Debug, Clone)]
pub(crate) struct BodyWrite {
    /// What statement analysis says of it (or, after a keyword scan, operation and table).
    pub(crate) effect: StatementEffect,
    /// Whether sqlparser read it (false: found by keyword scan).
    pub(crate) parsed: bool,
    /// For `CALL` in a body: the procedure called (lower-cased).
    pub(crate) calls: Option<String>,
}

/// A trigger: what fires it and what its body writes.
#[derive(Debug, Clone)]
pub(crate) struct Trigger {
    pub(crate) name: String,
    /// The table it is defined on, lower-cased.
    pub(crate) table: String,
    /// `INSERT`, `UPDATE` or `DELETE`.
    pub(crate) event: Operation,
    pub(crate) writes: Vec<BodyWrite>,
}

/// The triggers and routines of one database, and what the server calls itself.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// `mariadb` when `VERSION()` says MariaDB, else `mysql`.
    pub(crate) system: &'static str,
    pub(crate) triggers: Vec<Trigger>,
    /// Procedures and functions by lower-cased name: what their bodies write.
    pub(crate) routines: HashMap<String, (RoutineKind, Vec<BodyWrite>)>,
    /// Views by lower-cased name: what reading them calls.
    pub(crate) views: HashMap<String, View>,
}

/// A stored procedure (`CALL p`) or a stored function (called inside a statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoutineKind {
    Procedure,
    Function,
}

impl RoutineKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RoutineKind::Procedure => "procedure",
            RoutineKind::Function => "function",
        }
    }
}

/// Reads the server's name, and the triggers, routines and views of the connection's
/// database (none when no database is selected): four queries.
pub(crate) async fn load(conn: &mut MySqlConnection) -> Result<Catalog, sqlx::Error> {
    let row = conn.fetch_one(sqlx::raw_sql(IDENTITY)).await?;
    let version: Option<String> = row.try_get(0)?;
    let database: Option<String> = row.try_get(1)?;
    let mut catalog = Catalog {
        system: DatabaseKind::MySql.system_name_of(version.as_deref().unwrap_or("")),
        ..Catalog::default()
    };
    if database.is_none() {
        return Ok(catalog);
    }
    for row in conn.fetch_all(sqlx::raw_sql(TRIGGERS)).await? {
        let get = |i| -> Result<String, sqlx::Error> {
            Ok(row.try_get::<Option<String>, _>(i)?.unwrap_or_default())
        };
        let event = match get(2)?.to_ascii_uppercase().as_str() {
            "INSERT" => Operation::Insert,
            "UPDATE" => Operation::Update,
            "DELETE" => Operation::Delete,
            _ => continue,
        };
        catalog.triggers.push(Trigger {
            name: get(0)?,
            table: get(1)?.to_lowercase(),
            event,
            writes: body_writes(&get(3)?),
        });
    }
    for row in conn.fetch_all(sqlx::raw_sql(ROUTINES)).await? {
        let name: Option<String> = row.try_get(0)?;
        let kind: Option<String> = row.try_get(1)?;
        let body: Option<String> = row.try_get(2)?;
        let kind = match kind.as_deref().map(str::to_ascii_uppercase).as_deref() {
            Some("PROCEDURE") => RoutineKind::Procedure,
            _ => RoutineKind::Function,
        };
        // A body the user may not read is NULL: nothing is known of it.
        let writes = body.as_deref().map(body_writes).unwrap_or_default();
        catalog
            .routines
            .insert(name.unwrap_or_default().to_lowercase(), (kind, writes));
    }
    for row in conn.fetch_all(sqlx::raw_sql(VIEWS)).await? {
        let name: Option<String> = row.try_get(0)?;
        let definition: Option<String> = row.try_get(1)?;
        catalog.views.insert(
            name.unwrap_or_default().to_lowercase(),
            view(definition.as_deref().unwrap_or("")),
        );
    }
    Ok(catalog)
}

/// What reading a view of this definition runs.
fn view(definition: &str) -> View {
    let c = classify(definition, SqlDialect::MySql);
    if !c.parsed || definition.trim().is_empty() {
        return View {
            opaque: true,
            ..View::default()
        };
    }
    View {
        functions: c.effect.opaque_calls.to_vec(),
        reads: c.effect.read_tables.to_vec(),
        opaque: false,
    }
}

/// The leading keywords of a write statement.
fn is_write_keyword(k: Keyword) -> bool {
    matches!(
        k,
        Keyword::DELETE
            | Keyword::UPDATE
            | Keyword::INSERT
            | Keyword::REPLACE
            | Keyword::TRUNCATE
            | Keyword::CALL
    )
}

/// The writes in a trigger or routine body: each `;`-separated piece, from its first write
/// keyword that starts a statement (not `ON DUPLICATE KEY UPDATE`, `FOR UPDATE`,
/// `ON DELETE`), classified by sqlparser, or by keyword scan when it cannot parse.
pub(crate) fn body_writes(body: &str) -> Vec<BodyWrite> {
    let Ok(tokens) = Tokenizer::new(&MySqlDialect {}, body).tokenize() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for piece in tokens.split(|t| matches!(t, Token::SemiColon)) {
        let words: Vec<(usize, Keyword)> = piece
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t {
                Token::Word(w) => Some((i, w.keyword)),
                _ => None,
            })
            .collect();
        let start = words.iter().enumerate().find_map(|(n, (i, k))| {
            let before = n.checked_sub(1).map(|p| words[p].1);
            let nested = matches!(before, Some(Keyword::KEY | Keyword::FOR | Keyword::ON));
            (is_write_keyword(*k) && !nested).then_some(*i)
        });
        let Some(start) = start else { continue };
        let text: String = piece[start..].iter().map(|t| t.to_string()).collect();
        let text = text.trim_end_matches(|c: char| c.is_whitespace());
        // `END IF`, `END` and the like that close the compound statement are not SQL.
        let text = strip_trailing_end(text);
        out.push(classify_piece(text, &piece[start..]));
    }
    out
}

/// Drops a trailing `END`, `END IF`, `END WHILE`… the body's compound statement left on the
/// last piece.
fn strip_trailing_end(text: &str) -> &str {
    let upper = text.to_ascii_uppercase();
    for tail in [" END IF", " END WHILE", " END LOOP", " END CASE", " END"] {
        if upper.ends_with(tail) {
            return text[..text.len() - tail.len()].trim_end();
        }
    }
    text
}

fn classify_piece(text: &str, tokens: &[Token]) -> BodyWrite {
    let c = classify(text, SqlDialect::MySql);
    let calls = |name: Option<String>| name.map(|n| n.rsplit('.').next().unwrap_or(&n).to_owned());
    if c.parsed && c.effect.operation != Operation::Unknown {
        let called = (c.effect.operation == Operation::Call)
            .then(|| calls(first_name_after(tokens, 1)))
            .flatten();
        return BodyWrite {
            effect: c.effect,
            parsed: true,
            calls: called,
        };
    }
    let (op, skip): (Operation, &[Keyword]) = match first_keyword(tokens) {
        Keyword::DELETE => (
            Operation::Delete,
            &[Keyword::LOW_PRIORITY, Keyword::IGNORE, Keyword::FROM],
        ),
        Keyword::UPDATE => (Operation::Update, &[Keyword::LOW_PRIORITY, Keyword::IGNORE]),
        Keyword::INSERT => (
            Operation::Insert,
            &[
                Keyword::LOW_PRIORITY,
                Keyword::DELAYED,
                Keyword::HIGH_PRIORITY,
                Keyword::IGNORE,
                Keyword::INTO,
            ],
        ),
        Keyword::REPLACE => (
            Operation::Upsert,
            &[Keyword::LOW_PRIORITY, Keyword::DELAYED, Keyword::INTO],
        ),
        Keyword::TRUNCATE => (Operation::Truncate, &[Keyword::TABLE]),
        _ => (Operation::Call, &[]),
    };
    let name = first_name_after_skipping(tokens, skip).unwrap_or_default();
    if op == Operation::Call {
        return BodyWrite {
            effect: StatementEffect::new(Operation::Call, vec![]),
            parsed: false,
            calls: calls(Some(name)),
        };
    }
    let mut effect = StatementEffect::new(op, vec![name]);
    // What a scan cannot tell, assume the worst of: an UPDATE or REPLACE overwrites.
    effect.overwrites = op == Operation::Upsert;
    if op == Operation::Update {
        effect.set_columns = vec![String::new()].into();
    }
    BodyWrite {
        effect,
        parsed: false,
        calls: None,
    }
}

fn first_keyword(tokens: &[Token]) -> Keyword {
    tokens
        .iter()
        .find_map(|t| match t {
            Token::Word(w) => Some(w.keyword),
            _ => None,
        })
        .unwrap_or(Keyword::NoKeyword)
}

/// The (possibly qualified) name after the first word, skipping `skip` keywords.
fn first_name_after_skipping(tokens: &[Token], skip: &[Keyword]) -> Option<String> {
    let mut words = tokens.iter().filter_map(|t| match t {
        Token::Word(w) => Some(w),
        _ => None,
    });
    words.next()?;
    words
        // `QUICK` (of `DELETE QUICK`) is no sqlparser keyword.
        .find(|w| !skip.contains(&w.keyword) && !w.value.eq_ignore_ascii_case("quick"))
        .map(|w| w.value.to_lowercase())
}

/// The name `n` words in: `CALL p` → `p`.
fn first_name_after(tokens: &[Token], n: usize) -> Option<String> {
    tokens
        .iter()
        .filter_map(|t| match t {
            Token::Word(w) => Some(w.value.to_lowercase()),
            _ => None,
        })
        .nth(n)
}

/// The procedure a `CALL` text calls, lower-cased and unqualified.
pub(crate) fn called_procedure(sql: &str) -> Option<String> {
    let tokens = Tokenizer::new(&MySqlDialect {}, sql).tokenize().ok()?;
    let tokens: Vec<Token> = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut words = tokens.iter();
    match words.next()? {
        Token::Word(w) if w.keyword == Keyword::CALL => {}
        _ => return None,
    }
    // `CALL db.p(...)`: the last part before `(`.
    let mut name = None;
    for t in words {
        match t {
            Token::Word(w) => name = Some(w.value.to_lowercase()),
            Token::Period => {}
            _ => break,
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per body: the writes found, as `(operation, table, parsed)`.
    #[test]
    fn bodies() {
        type Case = (&'static str, Vec<(Operation, &'static str, bool)>);
        let cases: Vec<Case> = vec![
            (
                "DELETE FROM holds WHERE room = NEW.room",
                vec![(Operation::Delete, "holds", true)],
            ),
            (
                "BEGIN\n  UPDATE appointments SET status = 'confirmed' WHERE id = NEW.appointment_id;\nEND",
                vec![(Operation::Update, "appointments", true)],
            ),
            (
                "BEGIN IF NEW.qty > 0 THEN DELETE FROM `holds` WHERE id = NEW.id; END IF; \
                 INSERT INTO log (x) VALUES (1) ON DUPLICATE KEY UPDATE x = x + 1; END",
                vec![
                    (Operation::Delete, "holds", true),
                    (Operation::Upsert, "log", true),
                ],
            ),
            ("BEGIN SELECT * FROM t FOR UPDATE; END", vec![]),
            ("SET NEW.total = NEW.qty * NEW.price", vec![]),
            (
                "BEGIN DECLARE x INT; DELETE FROM a.t1 WHERE id = x OR (SELECT 1 FROM q WHERE q.a = 'q;'); END",
                vec![(Operation::Delete, "a.t1", true)],
            ),
        ];
        for (body, want) in cases {
            let got: Vec<(Operation, String, bool)> = body_writes(body)
                .into_iter()
                .map(|w| (w.effect.operation, w.effect.tables.join(","), w.parsed))
                .collect();
            let want: Vec<(Operation, String, bool)> = want
                .into_iter()
                .map(|(o, t, p)| (o, t.to_owned(), p))
                .collect();
            assert_eq!(got, want, "{body}");
        }
    }

    #[test]
    fn calls_and_names() {
        assert_eq!(
            called_procedure("CALL shop.purge(1, 'x')").as_deref(),
            Some("purge")
        );
        assert_eq!(called_procedure("call p").as_deref(), Some("p"));
        assert_eq!(called_procedure("SELECT 1"), None);
        let w = body_writes("BEGIN CALL cleanup(NEW.id); END");
        assert_eq!(w[0].calls.as_deref(), Some("cleanup"));
    }
}

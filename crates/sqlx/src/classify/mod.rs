//! Statement classification: what a SQL text does, from sqlparser's AST, with the dialect of
//! the backend (statement analysis, [design: evidence](../../../../docs/design.md#3-evidence)).
//!
//! ```
//! use hintaudit_sqlx::{classify, SqlDialect};
//! use hintaudit_core::Operation;
//! let c = classify("UPDATE posts SET views = views + 1 WHERE id = $1", SqlDialect::Postgres);
//! assert_eq!(c.effect.operation, Operation::Update);
//! assert_eq!(*c.effect.tables, ["posts"]);
//! assert_eq!(*c.effect.non_convergent, [("views".to_owned(), "views + 1".to_owned())]);
//! assert_eq!(&*c.effect.summary, "UPDATE posts");
//! assert_eq!(c.sanitized, "UPDATE posts SET views = views + ? WHERE id = $1");
//! ```

mod converge;
mod functions;
mod names;
mod pragma;
mod proof;
mod sanitize;
mod transaction;
mod walk;

pub use transaction::TxControl;

use parking_lot::Mutex;
use std::num::NonZeroUsize;
use std::sync::Arc;

use hintaudit_core::{Operation, StatementEffect};
use lru::LruCache;
use sqlparser::ast::Statement;
use sqlparser::dialect::{Dialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;

/// The SQL dialect to parse with: one per backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SqlDialect {
    /// SQLite (sqlparser's `SQLiteDialect`).
    Sqlite,
    /// PostgreSQL (sqlparser's `PostgreSqlDialect`).
    Postgres,
    /// MySQL / MariaDB (sqlparser's `MySqlDialect`).
    MySql,
}

impl SqlDialect {
    fn parser_dialect(self) -> &'static dyn Dialect {
        match self {
            SqlDialect::Sqlite => &SQLiteDialect {},
            SqlDialect::Postgres => &PostgreSqlDialect {},
            SqlDialect::MySql => &MySqlDialect {},
        }
    }
}

/// What statement analysis says of one SQL text (which may hold several statements).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Classification {
    /// The statement skeleton for [`hintaudit_core::CallEffects::record_statement`]:
    /// operation, tables written and read (lower-cased), SET columns, upsert overwrite,
    /// non-convergent assignments, opaque calls, DROP, summary. Driver results and
    /// observation flags are left at their defaults.
    pub effect: StatementEffect,
    /// The SQL keyword(s) for `db.operation.name`: `SELECT`, `INSERT`, `CREATE TABLE`.
    pub operation_name: String,
    /// The text with every literal replaced by `?` and comments removed; bind parameters
    /// (`$1`, `?`) are kept. Safe for `db.query.text`.
    pub sanitized: String,
    /// Transaction control, if the text is `BEGIN`, `COMMIT`, `SAVEPOINT`…
    pub tx_control: Option<TxControl>,
    /// PostgreSQL: the statement cannot run inside a transaction block (`VACUUM`,
    /// `CREATE INDEX CONCURRENTLY`, `CREATE DATABASE`), or the text holds several statements
    /// with transaction control; the oracle must not wrap it.
    pub no_transaction_block: bool,
    /// A `DELETE` without `WHERE`: SQLite's truncate optimisation skips the update hook.
    pub delete_without_where: bool,
    /// Whether the text was parsed (false: [`Operation::Unknown`]).
    pub parsed: bool,
    /// Why the text is not proved read-only (`None`: proved). The proof is an allowlist of
    /// statement kinds and built-in functions (see [`Classification::proved_read_only`]).
    pub not_proved: Option<Arc<str>>,
    /// Whether the driver's row count is the write's own: the text is one `INSERT`,
    /// `UPDATE`, `DELETE` or `MERGE` at its top level, so its command tag (PostgreSQL) or OK
    /// packet (MySQL) counts that statement's rows. Not `EXPLAIN ANALYZE DELETE` (the tag
    /// is `EXPLAIN`'s), not a writable CTE, not several statements.
    pub own_row_count: bool,
}

impl Classification {
    /// Whether the text is *proved* read-only: every statement is a query without `INTO`
    /// or nested writes, `EXPLAIN` without `ANALYZE` (in any spelling), `SHOW`, a session or
    /// transaction-control statement, `LOCK` or `COPY … TO STDOUT`, and every function it
    /// calls is a built-in known not to write (no user function, whatever volatility it
    /// declares; no `nextval`/`setval`), with no custom operator and no cast to an unknown
    /// type. Only a proved text may skip the database's own evidence (the PostgreSQL
    /// oracle); a backend must still prove the relations it reads (views) from its catalog.
    /// [design: evidence](../../../../docs/design.md#3-evidence).
    pub fn proved_read_only(&self) -> bool {
        self.not_proved.is_none()
    }
}

/// Classifies one SQL text. Never fails and never panics: an unparseable text is
/// [`Operation::Unknown`] with a sanitized text from the tokenizer (or `?` when even that
/// fails).
pub fn classify(sql: &str, dialect: SqlDialect) -> Classification {
    let d = dialect.parser_dialect();
    let sanitized = sanitize::sanitize(d, sql);
    let statements = match Parser::parse_sql(d, sql) {
        Ok(s) if !s.is_empty() => s,
        _ if dialect == SqlDialect::MySql && analyzed(sql).is_some() => {
            return mariadb_analyze(sql, sanitized);
        }
        // PostgreSQL also spells `ANALYZE` `ANALYSE` (`EXPLAIN ANALYSE DELETE …`), which
        // sqlparser does not read: classified as the text with the word respelled.
        _ if dialect == SqlDialect::Postgres
            && let Some(respelled) = analyse(sql) =>
        {
            let mut c = classify(&respelled, dialect);
            c.sanitized = sanitized;
            return c;
        }
        _ => return unknown(d, sql, sanitized),
    };
    let (w, keywords, tx_controls) = walk_statements(&statements);
    let one = statements.len() == 1;
    let operation_name = if one {
        w.keyword.clone()
    } else {
        keywords.join(";")
    };
    let tx_control = if one { w.tx_control } else { None };
    let no_transaction_block = w.no_transaction_block || (tx_controls > 0 && !one);
    let delete_without_where = w.delete_without_where;
    Classification {
        effect: statement_effect(w, &operation_name),
        operation_name,
        sanitized,
        tx_control,
        no_transaction_block,
        delete_without_where,
        parsed: true,
        not_proved: proof::not_proved(&statements).map(Arc::from),
        own_row_count: matches!(
            statements.as_slice(),
            [Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
                | Statement::Merge(_)]
        ),
    }
}

/// Walks every statement of a text into one [`walk::Walk`] (the strongest operation wins),
/// with each statement's keyword once and how many statements are transaction control.
fn walk_statements(statements: &[Statement]) -> (walk::Walk, Vec<String>, usize) {
    let mut w = walk::Walk::default();
    let mut keywords: Vec<String> = Vec::new();
    let mut tx_controls = 0usize;
    for s in statements {
        let before = w.operation;
        w.operation = None;
        w.statement(s);
        w.nested(s);
        if w.tx_control.is_some() {
            tx_controls += 1;
        }
        let this = w.operation.unwrap_or(Operation::Ddl);
        if !keywords.contains(&w.keyword) {
            keywords.push(w.keyword.clone());
        }
        // Several statements: the strongest operation wins (a write over a read).
        w.operation = Some(match before {
            Some(b) if stronger(b, this) => b,
            _ => this,
        });
    }
    (w, keywords, tx_controls)
}

/// The statement skeleton of a walked text: its operation, the tables it writes, those it
/// only reads (not its CTEs), the opaque functions it calls, and its summary.
fn statement_effect(w: walk::Walk, operation_name: &str) -> StatementEffect {
    let operation = w.operation.unwrap_or(Operation::Unknown);
    let read_tables: Vec<String> = w
        .read_tables
        .iter()
        .filter(|t| !w.cte_names.contains(*t) && !w.tables.contains(*t))
        .cloned()
        .collect();
    let mut opaque: Vec<String> = Vec::new();
    for c in &w.calls {
        let short = c.rsplit('.').next().unwrap_or(c);
        if functions::is_opaque(short) && !opaque.contains(c) {
            opaque.push(c.clone());
        }
    }
    let shown = if w.tables.is_empty() {
        &read_tables
    } else {
        &w.tables
    };
    let summary = summary(operation_name, shown);
    let mut effect = StatementEffect::new(operation, w.tables);
    effect.read_tables = read_tables.into();
    effect.set_columns = w.set_columns.into();
    effect.overwrites = w.overwrites && operation == Operation::Upsert;
    effect.non_convergent = w.non_convergent.into();
    effect.opaque_calls = opaque.into();
    effect.drops = w.drops;
    effect.session_tables = w.session_tables.into();
    effect.summary = summary.into();
    effect
}

/// Whether `op` changes rows one by one (`INSERT`, upsert, `UPDATE`, `DELETE`): the
/// statements whose rows a backend's row-level evidence reports and whose rows affected count.
pub(crate) fn is_dml(op: Operation) -> bool {
    matches!(
        op,
        Operation::Insert | Operation::Upsert | Operation::Update | Operation::Delete
    )
}

fn stronger(a: Operation, b: Operation) -> bool {
    let score = |o: Operation| match o {
        Operation::Unknown => 10,
        o if o.is_write() => 5 + u8::from(matches!(o, Operation::Delete | Operation::Truncate)),
        Operation::Call => 4,
        Operation::SelectForUpdate => 2,
        Operation::Select => 1,
        _ => 0,
    };
    score(a) >= score(b)
}

/// `db.query.summary`: the operation and up to three tables, as OpenTelemetry shapes it.
fn summary(operation_name: &str, tables: &[String]) -> String {
    let mut out = operation_name.to_owned();
    for t in tables.iter().take(3) {
        out.push(' ');
        out.push_str(t);
    }
    out
}

/// The statement MariaDB's `ANALYZE [FORMAT=JSON] <statement>` runs (it executes the
/// statement and reports its plan), when the text is one.
fn analyzed(sql: &str) -> Option<&str> {
    let mut rest = strip_word(sql.trim_start(), "ANALYZE")?.trim_start();
    if rest
        .get(..6)
        .is_some_and(|h| h.eq_ignore_ascii_case("FORMAT"))
    {
        let after = rest[6..].trim_start().strip_prefix('=')?.trim_start();
        rest = after.get(4..)?.trim_start(); // JSON
    }
    let next = rest.split_whitespace().next()?.to_uppercase();
    matches!(
        next.as_str(),
        "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "REPLACE" | "WITH"
    )
    .then_some(rest)
}

/// `sql` with each whole word `ANALYSE` (any case) spelled `ANALYZE`, when it has one.
fn analyse(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let word = |i: usize| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + 7..].chars().next();
        let edge = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        edge(before) && edge(after)
    };
    let at: Vec<usize> = lower
        .match_indices("analyse")
        .map(|(i, _)| i)
        .filter(|i| word(*i))
        .collect();
    if at.is_empty() {
        return None;
    }
    let mut out = sql.to_owned();
    for i in at {
        out.replace_range(i..i + 7, "ANALYZE");
    }
    Some(out)
}

/// `text` without its leading `word` (case-insensitive) and the whitespace after it.
fn strip_word<'t>(text: &'t str, word: &str) -> Option<&'t str> {
    let head = text.get(..word.len())?;
    let rest = &text[word.len()..];
    (head.eq_ignore_ascii_case(word) && rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// MariaDB's `ANALYZE <statement>`: the statement's classification, which it runs, with no
/// row count of its own (the answer is a plan) and no proof.
fn mariadb_analyze(sql: &str, sanitized: String) -> Classification {
    let inner = analyzed(sql).unwrap_or(sql);
    let mut c = classify(inner, SqlDialect::MySql);
    c.operation_name = "ANALYZE".into();
    c.sanitized = sanitized;
    c.own_row_count = false;
    c.not_proved = Some(Arc::from("ANALYZE runs the statement"));
    c.tx_control = None;
    c
}

fn unknown(d: &dyn Dialect, sql: &str, sanitized: String) -> Classification {
    let keyword = sql
        .split_whitespace()
        .next()
        .map(|w| w.to_uppercase())
        .filter(|w| w.len() <= 16 && w.chars().all(|c| c.is_ascii_alphabetic()))
        .unwrap_or_default();
    let no_tx = transaction::cannot_run_in_transaction(sql);
    // sqlparser reads `PRAGMA name = value` with literal values only; of the other forms,
    // those of a setting or a read (`PRAGMA table_info(t)`, `PRAGMA foreign_keys = ON`) are
    // session statements, and any other may write (the fuzzer found `PRAGMA x = 1 …` judged
    // as a session statement).
    let op = if pragma::is_session_text(sql) {
        Operation::Session
    } else {
        Operation::Unknown
    };
    let mut effect = StatementEffect::new(op, Vec::new());
    if !keyword.is_empty() {
        effect.summary = keyword.as_str().into();
    }
    Classification {
        effect,
        operation_name: keyword,
        sanitized,
        tx_control: None,
        no_transaction_block: no_tx || transaction::controls_transaction(d, sql),
        delete_without_where: false,
        parsed: false,
        not_proved: (op != Operation::Session).then(|| Arc::from("the text could not be parsed")),
        own_row_count: false,
    }
}

/// Default number of SQL texts whose classification a pool keeps.
pub const DEFAULT_CLASSIFY_CACHE: usize = 1024;

/// Texts longer than this are classified every time instead of cached (bulk statements with
/// inlined literals would only churn the cache). Bytes.
const MAX_CACHED_SQL: usize = 16 * 1024;

/// Slots of [`Classifier`]'s address-indexed memo of recent texts.
const RECENT_SLOTS: usize = 16;

/// A per-pool LRU cache of classifications, keyed by SQL text, with a memo in front of it
/// indexed by the text's address: a query written as a `&'static str` comes back at the same
/// address, and is found by one comparison of the text instead of a hash of it. The memo
/// always compares the text itself, so an address another text reuses only misses.
#[derive(Debug)]
pub(crate) struct Classifier {
    dialect: SqlDialect,
    cache: Mutex<Cache>,
}

#[derive(Debug)]
struct Cache {
    lru: LruCache<Arc<str>, Arc<Classification>>,
    /// Recent texts, each in slot `address / 8 % 16`.
    recent: [Option<Recent>; RECENT_SLOTS],
}

/// A recent text in the memo: where it was, what it was, its classification.
#[derive(Debug)]
struct Recent {
    address: usize,
    text: Arc<str>,
    class: Arc<Classification>,
}

impl Classifier {
    pub(crate) fn new(dialect: SqlDialect, capacity: usize) -> Self {
        let cap = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Classifier {
            dialect,
            cache: Mutex::new(Cache {
                lru: LruCache::new(cap),
                recent: Default::default(),
            }),
        }
    }

    /// The classification of `sql`, from the cache when it was seen recently.
    pub(crate) fn classify(&self, sql: &str) -> Arc<Classification> {
        if sql.len() > MAX_CACHED_SQL {
            return Arc::new(classify(sql, self.dialect));
        }
        let address = sql.as_ptr() as usize;
        let slot = address / 8 % RECENT_SLOTS;
        {
            let mut cache = self.lock();
            if let Some(r) = &cache.recent[slot]
                && r.address == address
                && *r.text == *sql
            {
                return r.class.clone();
            }
            if let Some((text, class)) = cache.lru.get_key_value(sql) {
                let (text, class) = (text.clone(), class.clone());
                cache.recent[slot] = Some(Recent {
                    address,
                    text,
                    class: class.clone(),
                });
                return class;
            }
        }
        let class = Arc::new(classify(sql, self.dialect));
        let text: Arc<str> = sql.into();
        let mut cache = self.lock();
        cache.recent[slot] = Some(Recent {
            address,
            text: text.clone(),
            class: class.clone(),
        });
        cache.lru.put(text, class.clone());
        class
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Cache> {
        self.cache.lock()
    }
}

#[cfg(test)]
mod tests;

//! Names the classifier reads off a statement: object names (lower-cased, quotes removed)
//! from the AST, and the keyword of a statement from its text.

use sqlparser::ast::{ObjectName, ObjectNamePart, Statement, TableFactor, TableWithJoins};

/// Lower-cased dotted name, quotes removed.
pub(crate) fn object_name(name: &ObjectName) -> String {
    name_parts(name).join(".")
}

/// The parts of a dotted name, lower-cased, quotes removed.
pub(crate) fn name_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.to_lowercase(),
            other => other.to_string().to_lowercase(),
        })
        .collect()
}

/// Whether a statement changes only the session's settings or subscriptions: `SET`,
/// `RESET`, `USE`, `DISCARD`, `LISTEN`, `UNLISTEN`, `DEALLOCATE`.
pub(crate) fn is_session_setting(s: &Statement) -> bool {
    matches!(
        s,
        Statement::Set(_)
            | Statement::Use(_)
            | Statement::Reset(_)
            | Statement::Discard { .. }
            | Statement::LISTEN { .. }
            | Statement::UNLISTEN { .. }
            | Statement::Deallocate { .. }
    )
}

/// Whether a statement only shows something: `SHOW …`, `DESCRIBE t`.
pub(crate) fn is_show(s: &Statement) -> bool {
    matches!(
        s,
        Statement::ShowVariable { .. }
            | Statement::ShowStatus { .. }
            | Statement::ShowVariables { .. }
            | Statement::ShowCreate { .. }
            | Statement::ShowColumns { .. }
            | Statement::ShowDatabases { .. }
            | Statement::ShowSchemas { .. }
            | Statement::ShowTables { .. }
            | Statement::ShowViews { .. }
            | Statement::ShowFunctions { .. }
            | Statement::ShowCollation { .. }
            | Statement::ExplainTable { .. }
    )
}

/// The last part of a dotted name, lower-cased: `public.Posts` → `posts`.
pub(crate) fn last_part(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => i.value.to_lowercase(),
        Some(other) => other.to_string().to_lowercase(),
        None => String::new(),
    }
}

/// The last part of a lower-cased dotted name.
pub(crate) fn last_of(name: &str) -> String {
    name.rsplit('.').next().unwrap_or(name).to_owned()
}

/// The first plain table of a `FROM` or `UPDATE` list.
pub(crate) fn first_relation(tables: &[TableWithJoins]) -> Option<String> {
    tables.iter().find_map(|t| match &t.relation {
        TableFactor::Table {
            name, args: None, ..
        } => Some(object_name(name)),
        _ => None,
    })
}

/// The first word of a statement's text, upper-cased.
pub(crate) fn first_word(text: &str) -> String {
    text.split_whitespace().next().unwrap_or("").to_uppercase()
}

/// The first two words of a statement's text, for `db.operation.name`: `CREATE TRIGGER`.
pub(crate) fn keyword_of(text: &str) -> String {
    let words: Vec<String> = text
        .split_whitespace()
        .take(3)
        .map(|w| w.to_uppercase())
        .collect();
    match words.first().map(String::as_str) {
        Some("CREATE" | "ALTER" | "DROP" | "REFRESH" | "GRANT" | "REVOKE" | "COMMENT") => {
            let mut out = words[..words.len().min(2)].join(" ");
            if words.iter().any(|w| w == "CONCURRENTLY") || text_has(text, " CONCURRENTLY ") {
                out.push_str(" CONCURRENTLY");
            }
            out
        }
        Some(w) => w.to_owned(),
        None => String::new(),
    }
}

fn text_has(text: &str, word: &str) -> bool {
    text.to_uppercase().contains(word)
}

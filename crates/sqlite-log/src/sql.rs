//! The column list of a `CREATE TABLE` statement as SQLite reads it (lang_createtable.html):
//! each column's name, declared type, whether it is stored (not a VIRTUAL generated column) and
//! its DEFAULT when that is a literal; the PRIMARY KEY's columns; WITHOUT ROWID. SQLite's
//! declared types are any words (`UNSIGNED BIG INT`), which general SQL parsers refuse: this
//! reads only what the record layout depends on, and refuses nothing else.

use crate::record::Affinity;

/// A token of SQLite's SQL, as far as a column list needs.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A word or a quoted identifier (`"…"`, `[…]`, `` `…` ``): its text and whether it was
    /// quoted (a quoted word is never a keyword).
    Word(String, bool),
    /// A string literal.
    Str(String),
    /// A numeric literal.
    Num(String),
    /// A blob literal `x'…'`.
    Blob(Vec<u8>),
    /// Any other character.
    Punct(char),
}

fn tokens(sql: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let rest = &chars[i..];
        if c.is_whitespace() {
            i += 1;
        } else if rest.starts_with(&['-', '-']) {
            i += rest.iter().position(|&c| c == '\n').unwrap_or(rest.len());
        } else if rest.starts_with(&['/', '*']) {
            i += rest
                .windows(2)
                .position(|w| w == ['*', '/'])
                .map_or(rest.len(), |p| p + 2);
        } else if matches!(c, 'x' | 'X') && rest.get(1) == Some(&'\'') {
            let (text, n) = quoted(&rest[1..], '\'')?;
            out.push(Token::Blob(hex(&text)?));
            i += 1 + n;
        } else if matches!(c, '"' | '`' | '\'' | '[') {
            let close = if c == '[' { ']' } else { c };
            let (text, n) = quoted(rest, close)?;
            out.push(if c == '\'' {
                Token::Str(text)
            } else {
                Token::Word(text, true)
            });
            i += n;
        } else if c.is_ascii_digit()
            || (c == '.' && rest.get(1).is_some_and(|d| d.is_ascii_digit()))
        {
            let n = number_len(rest);
            out.push(Token::Num(rest[..n].iter().collect()));
            i += n;
        } else if c.is_alphanumeric() || c == '_' || !c.is_ascii() {
            let n = rest
                .iter()
                .position(|&c| !(c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii()))
                .unwrap_or(rest.len());
            out.push(Token::Word(rest[..n].iter().collect(), false));
            i += n;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    Some(out)
}

/// The text of a quoted token starting at `chars[0]` and closed by `close` (doubled: one
/// `close` in the text, except for `]`), and the characters it took.
fn quoted(chars: &[char], close: char) -> Option<(String, usize)> {
    let mut text = String::new();
    let mut i = 1;
    loop {
        let c = *chars.get(i)?;
        if c == close {
            if close != ']' && chars.get(i + 1) == Some(&close) {
                text.push(c);
                i += 2;
                continue;
            }
            return Some((text, i + 1));
        }
        text.push(c);
        i += 1;
    }
}

fn number_len(chars: &[char]) -> usize {
    let mut n = 0;
    let hex = chars.len() > 1 && chars[0] == '0' && matches!(chars[1], 'x' | 'X');
    while let Some(&c) = chars.get(n) {
        let exp_sign = n > 0 && matches!(c, '+' | '-') && matches!(chars[n - 1], 'e' | 'E') && !hex;
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' || exp_sign {
            n += 1;
        } else {
            break;
        }
    }
    n
}

fn hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .chars()
        .map(|c| c.to_digit(16))
        .collect::<Option<_>>()?;
    digits
        .len()
        .is_multiple_of(2)
        .then(|| digits.chunks(2).map(|p| (p[0] * 16 + p[1]) as u8).collect())
}

/// A column's DEFAULT, when it is a literal (an older record without the column reads it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Default {
    /// None given, or NULL.
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    /// An expression or a time (`CURRENT_TIMESTAMP`): not known from the schema.
    Unknown,
}

/// One column as the schema declares it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnDef {
    /// Its name, lower-cased.
    pub name: String,
    /// Its declared type's affinity.
    pub affinity: Affinity,
    /// Its declared type is `INTEGER` exactly (a rowid alias when it is the primary key).
    pub integer: bool,
    /// Stored in the record (not a VIRTUAL generated column).
    pub stored: bool,
    /// Its DEFAULT.
    pub default: Default,
    /// Declared `PRIMARY KEY DESC` on the column itself (then never a rowid alias).
    pub pk_desc: bool,
}

/// What a table's records hold, from its `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableDef {
    /// Its columns, in declaration order.
    pub columns: Vec<ColumnDef>,
    /// The primary key's columns (indexes into `columns`), in key order.
    pub primary_key: Vec<usize>,
    /// WITHOUT ROWID: stored as an index b-tree keyed by the primary key.
    pub without_rowid: bool,
}

const COLUMN_CONSTRAINTS: &[&str] = &[
    "CONSTRAINT",
    "PRIMARY",
    "NOT",
    "NULL",
    "UNIQUE",
    "CHECK",
    "DEFAULT",
    "COLLATE",
    "REFERENCES",
    "GENERATED",
    "AS",
];
const TABLE_CONSTRAINTS: &[&str] = &["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"];

impl Token {
    fn keyword(&self, k: &str) -> bool {
        matches!(self, Token::Word(w, false) if w.eq_ignore_ascii_case(k))
    }

    fn any_keyword(&self, ks: &[&str]) -> bool {
        ks.iter().any(|k| self.keyword(k))
    }

    fn name(&self) -> Option<String> {
        match self {
            Token::Word(w, _) | Token::Str(w) => Some(w.to_lowercase()),
            _ => None,
        }
    }
}

/// The table `sql` creates; `None` when it is no `CREATE TABLE … ( … )` this reader follows
/// (`CREATE TABLE … AS SELECT` stores its SQL rewritten as a column list, so it is one).
pub(crate) fn parse_create_table(sql: &str) -> Option<TableDef> {
    let toks = tokens(sql)?;
    let open = toks.iter().position(|t| *t == Token::Punct('('))?;
    if !toks.first()?.keyword("CREATE") || !toks.iter().take(open).any(|t| t.keyword("TABLE")) {
        return None;
    }
    let (defs, close) = split_defs(&toks, open)?;
    let mut table = TableDef {
        columns: Vec::new(),
        primary_key: Vec::new(),
        without_rowid: false,
    };
    let mut table_pk: Vec<String> = Vec::new();
    for def in defs {
        if def.first()?.any_keyword(TABLE_CONSTRAINTS) {
            if let Some(pk) = table_primary_key(def) {
                table_pk = pk;
            }
        } else {
            let (column, pk) = column(def)?;
            if pk {
                table.primary_key = vec![table.columns.len()];
            }
            table.columns.push(column);
        }
    }
    if !table_pk.is_empty() {
        table.primary_key = table_pk
            .iter()
            .map(|n| table.columns.iter().position(|c| c.name == *n))
            .collect::<Option<_>>()?;
    }
    let options = &toks[close + 1..];
    table.without_rowid = options
        .windows(2)
        .any(|w| w[0].keyword("WITHOUT") && w[1].keyword("ROWID"));
    Some(table)
}

/// The definitions between the parentheses from `open`, split at commas outside parentheses,
/// and the index of the closing parenthesis.
fn split_defs(toks: &[Token], open: usize) -> Option<(Vec<&[Token]>, usize)> {
    let mut depth = 0usize;
    let mut start = open + 1;
    let mut defs = Vec::new();
    for (i, t) in toks.iter().enumerate().skip(open + 1) {
        match t {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') if depth == 0 => {
                defs.push(toks.get(start..i)?);
                return Some((defs.into_iter().filter(|d| !d.is_empty()).collect(), i));
            }
            Token::Punct(')') => depth -= 1,
            Token::Punct(',') if depth == 0 => {
                defs.push(toks.get(start..i)?);
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// A column definition: the column, and whether it declares itself the primary key.
fn column(def: &[Token]) -> Option<(ColumnDef, bool)> {
    let name = def.first()?.name()?;
    let mut declared = String::new();
    let mut i = 1;
    while let Some(t) = def.get(i) {
        match t {
            Token::Word(w, _) if !t.any_keyword(COLUMN_CONSTRAINTS) => {
                if !declared.is_empty() {
                    declared.push(' ');
                }
                declared.push_str(w);
            }
            Token::Punct('(') => {
                let end = i + def[i..].iter().position(|t| *t == Token::Punct(')'))?;
                declared.push_str(&type_args(&def[i..=end]));
                i = end;
            }
            _ => break,
        }
        i += 1;
    }
    let rest = &def[i..];
    let pk = rest
        .windows(2)
        .position(|w| w[0].keyword("PRIMARY") && w[1].keyword("KEY"));
    let column = ColumnDef {
        name,
        affinity: Affinity::of(&declared),
        integer: declared.eq_ignore_ascii_case("INTEGER"),
        stored: !generated(rest) || rest.iter().any(|t| t.keyword("STORED")),
        default: default(rest),
        pk_desc: pk.is_some_and(|p| rest.get(p + 2).is_some_and(|t| t.keyword("DESC"))),
    };
    Some((column, pk.is_some()))
}

fn type_args(toks: &[Token]) -> String {
    toks.iter()
        .map(|t| match t {
            Token::Word(w, _) | Token::Num(w) => w.clone(),
            Token::Punct(c) => c.to_string(),
            Token::Str(s) => format!("'{s}'"),
            Token::Blob(_) => String::new(),
        })
        .collect()
}

/// A generated column: `AS (…)` at depth 0, with or without `GENERATED ALWAYS`.
fn generated(constraints: &[Token]) -> bool {
    constraints
        .windows(2)
        .any(|w| w[0].keyword("AS") && w[1] == Token::Punct('('))
}

fn default(constraints: &[Token]) -> Default {
    let Some(at) = constraints.iter().position(|t| t.keyword("DEFAULT")) else {
        return Default::Null;
    };
    let mut rest = &constraints[at + 1..];
    let negative = match rest.first() {
        Some(Token::Punct('-')) => true,
        Some(Token::Punct('+')) => false,
        _ => return literal(rest.first(), false),
    };
    rest = &rest[1..];
    match rest.first() {
        Some(Token::Num(_)) => literal(rest.first(), negative),
        _ => Default::Unknown,
    }
}

fn literal(t: Option<&Token>, negative: bool) -> Default {
    match t {
        Some(Token::Num(n)) => number(n, negative),
        Some(Token::Str(s)) => Default::Text(s.clone()),
        Some(Token::Blob(b)) => Default::Blob(b.clone()),
        Some(t) if t.keyword("NULL") => Default::Null,
        Some(t) if t.keyword("TRUE") => Default::Int(1),
        Some(t) if t.keyword("FALSE") => Default::Int(0),
        _ => Default::Unknown,
    }
}

fn number(n: &str, negative: bool) -> Default {
    let sign = if negative { -1 } else { 1 };
    let parsed = if let Some(h) = n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok().map(|v| v as i64)
    } else {
        n.parse::<i64>().ok()
    };
    match parsed {
        Some(v) => Default::Int(v.wrapping_mul(sign)),
        None => n
            .parse::<f64>()
            .map_or(Default::Unknown, |f| Default::Real(f * sign as f64)),
    }
}

/// The columns of a table constraint `PRIMARY KEY (a, b DESC, …)`.
fn table_primary_key(def: &[Token]) -> Option<Vec<String>> {
    let at = def
        .windows(2)
        .position(|w| w[0].keyword("PRIMARY") && w[1].keyword("KEY"))?;
    let open = at + 2;
    if def.get(open) != Some(&Token::Punct('(')) {
        return None;
    }
    let close = open + def[open..].iter().position(|t| *t == Token::Punct(')'))?;
    def[open + 1..close]
        .split(|t| *t == Token::Punct(','))
        .map(|col| col.first().and_then(Token::name))
        .collect()
}

#[cfg(test)]
mod tests;

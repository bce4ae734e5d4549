//! `db.query.text` without literals: every string, number, byte or dollar-quoted literal
//! becomes `?`, comments are dropped, bind parameters (`$1`, `?`, `:name`) are kept.

use sqlparser::dialect::Dialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// Most characters kept in a sanitized text; longer texts end with `…`.
const MAX_SANITIZED: usize = 2048;

/// The text of `sql` with literals replaced by `?`. When the tokenizer fails (an
/// unterminated string), the whole text is `?`: never a literal.
pub(crate) fn sanitize(dialect: &dyn Dialect, sql: &str) -> String {
    let tokens = match Tokenizer::new(dialect, sql).tokenize() {
        Ok(t) => t,
        Err(_) => return "?".to_owned(),
    };
    let mut out = String::with_capacity(sql.len().min(MAX_SANITIZED));
    let mut last_space = true;
    for t in tokens {
        let literal = matches!(
            t,
            Token::Number(..)
                | Token::SingleQuotedString(_)
                // MySQL's "..." is a string literal (sqlparser tokenizes it so only where the
                // dialect says so; elsewhere "..." is a quoted identifier, a Word).
                | Token::DoubleQuotedString(_)
                | Token::TripleSingleQuotedString(_)
                | Token::TripleDoubleQuotedString(_)
                | Token::DollarQuotedString(_)
                | Token::SingleQuotedByteStringLiteral(_)
                | Token::DoubleQuotedByteStringLiteral(_)
                | Token::TripleSingleQuotedByteStringLiteral(_)
                | Token::TripleDoubleQuotedByteStringLiteral(_)
                | Token::SingleQuotedRawStringLiteral(_)
                | Token::DoubleQuotedRawStringLiteral(_)
                | Token::TripleSingleQuotedRawStringLiteral(_)
                | Token::TripleDoubleQuotedRawStringLiteral(_)
                | Token::NationalStringLiteral(_)
                | Token::QuoteDelimitedStringLiteral(_)
                | Token::NationalQuoteDelimitedStringLiteral(_)
                | Token::EscapedStringLiteral(_)
                | Token::UnicodeStringLiteral(_)
                | Token::HexStringLiteral(_)
        );
        match t {
            // Comments may hold literals too: all whitespace, comments included, is one space.
            Token::Whitespace(_) => {
                if !last_space {
                    out.push(' ');
                    last_space = true;
                }
            }
            Token::EOF => {}
            _ if literal => {
                out.push('?');
                last_space = false;
            }
            other => {
                out.push_str(&other.to_string());
                last_space = false;
            }
        }
        if out.len() > MAX_SANITIZED {
            let mut cut = MAX_SANITIZED;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
            return out;
        }
    }
    out.trim_end().to_owned()
}

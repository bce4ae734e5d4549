//! Secrets kept out of reports, messages and logs.
//!
//! Three kinds, masked as `***`: the password of every `scheme://user:password@host`; the
//! value of every `NAME=value` environment word of a `--stdio` command (leading words, and
//! the words after `env`); and the value of an option named like a secret
//! (`--password x`, `--api-key=x`). The values of the secret-named ones (a name holding
//! `PASS`, `SECRET`, `TOKEN`, `KEY`, `CRED` or `AUTH`) and URL passwords are also replaced
//! wherever else they appear: in server stderr, tool errors, evidence.

use crate::db::redact;

/// Whether a variable or option name looks like it holds a secret.
pub(crate) fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["PASS", "SECRET", "TOKEN", "KEY", "CRED", "AUTH", "PWD"]
        .iter()
        .any(|w| upper.contains(w))
}

fn env_word(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    let valid = !name.is_empty()
        && name
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
    valid.then_some((name, value))
}

/// The secret values of a run: from the `--stdio` command (or `--url`) and `--database`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// Collects the secrets of a server command line or URL and a database URL.
    pub fn collect(server: &str, database: &str) -> Secrets {
        let mut values = Vec::new();
        for text in [server, database] {
            values.extend(url_passwords(text));
        }
        if let Some(words) = shlex::split(server) {
            let mut it = words.iter().peekable();
            while let Some(w) = it.next() {
                if let Some((name, value)) = env_word(w) {
                    if secret_name(name) {
                        values.push(value.to_owned());
                    }
                } else if let Some(opt) = w.strip_prefix("--").or_else(|| w.strip_prefix('-')) {
                    match opt.split_once('=') {
                        Some((name, value)) if secret_name(name) => values.push(value.to_owned()),
                        None if secret_name(opt) => {
                            if let Some(v) = it.peek() {
                                values.push((*v).clone());
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        values.retain(|v| v.len() >= 3 && v != "***");
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Secrets { values }
    }

    /// A text with URL passwords and every known secret value replaced by `***`.
    pub fn mask(&self, text: &str) -> String {
        let mut out = redact(text);
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), "***");
            }
        }
        out
    }

    /// A `--stdio` command for display: every environment value and secret option masked.
    pub fn mask_command(&self, line: &str) -> String {
        let Some(words) = shlex::split(line) else {
            return self.mask(line);
        };
        let mut shown: Vec<String> = Vec::with_capacity(words.len());
        let mut mask_next = false;
        for w in &words {
            if mask_next {
                shown.push("***".into());
                mask_next = false;
            } else if let Some((name, _)) = env_word(w) {
                shown.push(format!("{name}=***"));
            } else if let Some(opt) = w.strip_prefix("--").or_else(|| w.strip_prefix('-')) {
                match opt.split_once('=') {
                    Some((name, _)) if secret_name(name) => shown.push(format!("--{name}=***")),
                    None if secret_name(opt) => {
                        shown.push(w.clone());
                        mask_next = true;
                    }
                    _ => shown.push(w.clone()),
                }
            } else {
                shown.push(w.clone());
            }
        }
        // Quoted only where a shell needs it to keep a word whole (`***` stays bare).
        let joined: Vec<String> = shown
            .iter()
            .map(|w| {
                if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"\\".contains(c)) {
                    shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned())
                } else {
                    w.clone()
                }
            })
            .collect();
        self.mask(&joined.join(" "))
    }
}

/// The passwords of every `scheme://user:password@host` in a text.
fn url_passwords(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let tail = &rest[i + 3..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '/'))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        if let Some(at) = authority.rfind('@')
            && let Some((_, pw)) = authority[..at].split_once(':')
        {
            out.push(pw.to_owned());
        }
        rest = &tail[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_values_url_passwords_and_secret_options_are_masked() {
        let cmd = "MYSQL_PASSWORD=hunter2 MODE=fast env API_TOKEN=tok123 python s.py \
                   --password pw456 --db-url postgres://app:pgpass@h/db --verbose";
        let s = Secrets::collect(cmd, "mysql://root:rootpw@127.0.0.1/x");
        let shown = s.mask_command(cmd);
        for secret in ["hunter2", "fast", "tok123", "pw456", "pgpass"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("MYSQL_PASSWORD=***") && shown.contains("--verbose"));
        assert!(shown.contains(" env API_TOKEN=*** python"), "{shown}");
        assert!(shown.contains("postgres://app:***@h/db"), "{shown}");
        let stderr = "login failed for pw456; token tok123; mysql rootpw; hunter2";
        assert_eq!(
            s.mask(stderr),
            "login failed for ***; token ***; mysql ***; ***"
        );
        // Not secret-named: masked in the command, left alone elsewhere.
        assert_eq!(s.mask("mode fast"), "mode fast");
    }
}

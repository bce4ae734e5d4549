//! The facts of one call, and the [`Collector`] each evidence source adds to in turn.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::facts::evidence::{Evidence, Wanted, push};
use crate::finding::Confidence;

/// What a call did to the watched environment. Table names and hosts borrow from the
/// [`Effect`](crate::Effect) where they can (`Cow`: look them up with `&str`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts<'e> {
    /// Committed changes to watched tables, DDL, mutating outbound requests outside the
    /// closed world, reported effects.
    pub writes: Vec<Evidence>,
    /// Writes that ran but changed nothing, were rolled back, or failed.
    pub attempts: Vec<Evidence>,
    /// Deletes, overwrites, TRUNCATE, DROP.
    pub destructive: Vec<Evidence>,
    /// Changes that a repeat with the same arguments would make again.
    pub net_changes: Vec<Evidence>,
    /// Watched tables written (normalized names).
    pub written_tables: BTreeSet<Cow<'e, str>>,
    /// Watched tables read or written (normalized names).
    pub touched_tables: BTreeSet<Cow<'e, str>>,
    /// Hosts reached, inside the closed world or not.
    pub hosts: BTreeSet<Cow<'e, str>>,
    /// Requests to destinations outside the closed world, any method (the specification's
    /// reading of openWorldHint).
    pub outside: Vec<Evidence>,
    /// Mutating requests outside the closed world (the directory reading of openWorldHint).
    pub outside_changes: Vec<Evidence>,
    /// Whether any write statement ran at all (even one that changed nothing).
    pub any_write_statement: bool,
}

/// Facts being collected: each evidence source adds its evidence and tables, and only the
/// [`Wanted`] evidence texts are written (the others are recorded with an empty text).
pub(super) struct Collector<'e> {
    /// The facts so far; sources add tables, hosts and flags here directly.
    pub(super) facts: Facts<'e>,
    want: Wanted,
}

impl<'e> Collector<'e> {
    /// No facts yet; `want` says which evidence texts to write.
    pub(super) fn new(want: Wanted) -> Self {
        Collector {
            facts: Facts::default(),
            want,
        }
    }

    /// The facts collected.
    pub(super) fn finish(self) -> Facts<'e> {
        self.facts
    }

    /// Evidence of a write ([`Facts::writes`]).
    pub(super) fn write(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        push(&mut self.facts.writes, self.want.writes, confidence, text);
    }

    /// Evidence of a write attempt that changed nothing ([`Facts::attempts`]).
    pub(super) fn attempt(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        push(
            &mut self.facts.attempts,
            self.want.attempts,
            confidence,
            text,
        );
    }

    /// Evidence of a delete or overwrite ([`Facts::destructive`]).
    pub(super) fn destructive(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        push(
            &mut self.facts.destructive,
            self.want.destructive,
            confidence,
            text,
        );
    }

    /// Evidence of a change a repeat would make again ([`Facts::net_changes`]).
    pub(super) fn net_change(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        push(
            &mut self.facts.net_changes,
            self.want.net_changes,
            confidence,
            text,
        );
    }
}

/// `UPDATE t SET ...` with these SET columns and non-convergent assignments, for the facts'
/// table-driven tests.
#[cfg(test)]
pub(super) fn update_of_t(
    set: &[&str],
    non_convergent: &[(&str, &str)],
) -> crate::effect::StatementEffect {
    let mut s =
        crate::effect::StatementEffect::new(crate::effect::Operation::Update, vec!["t".into()]);
    s.set_columns = set.iter().map(|c| c.to_string()).collect::<Vec<_>>().into();
    s.non_convergent = non_convergent
        .iter()
        .map(|(c, e)| (c.to_string(), e.to_string()))
        .collect::<Vec<_>>()
        .into();
    s
}

/// Facts as lines for table-driven tests, in a fixed order: `writes: <text> (confirmed)`,
/// then attempts, destructive and net changes the same way, then `written: <table>`,
/// `touched: <table>`, `host: <host>` and `any write statement`.
#[cfg(test)]
pub(super) fn lines(f: &Facts<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, evidence) in [
        ("writes", &f.writes),
        ("attempts", &f.attempts),
        ("destructive", &f.destructive),
        ("net_changes", &f.net_changes),
    ] {
        for e in evidence {
            out.push(format!("{kind}: {} ({})", e.text, e.confidence.as_str()));
        }
    }
    for (kind, names) in [
        ("written", &f.written_tables),
        ("touched", &f.touched_tables),
        ("host", &f.hosts),
    ] {
        out.extend(names.iter().map(|n| format!("{kind}: {n}")));
    }
    for (kind, evidence) in [
        ("outside", &f.outside),
        ("outside_changes", &f.outside_changes),
    ] {
        out.extend(evidence.iter().map(|e| format!("{kind}: {}", e.text)));
    }
    if f.any_write_statement {
        out.push("any write statement".to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unwanted texts are not written, but the evidence still counts.
    #[test]
    fn only_wanted_texts_are_written() {
        let want = Wanted {
            writes: true,
            attempts: false,
            destructive: true,
            net_changes: false,
        };
        let mut c = Collector::new(want);
        let text = || "1 row deleted from t".to_owned();
        c.write(Confidence::Confirmed, text);
        c.attempt(Confidence::Confirmed, text);
        c.destructive(Confidence::Likely, text);
        c.net_change(Confidence::Likely, text);
        assert_eq!(
            lines(&c.finish()),
            [
                "writes: 1 row deleted from t (confirmed)",
                "attempts:  (confirmed)",
                "destructive: 1 row deleted from t (likely)",
                "net_changes:  (likely)",
            ]
        );
    }
}

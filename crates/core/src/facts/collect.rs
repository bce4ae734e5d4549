//! The facts of one call, and the [`Collector`] each evidence source adds to in turn.

use std::borrow::Cow;
use std::collections::BTreeSet;

use smallvec::SmallVec;

use crate::facts::evidence::{Evidence, Wanted, push};
use crate::files::FileChange;
use crate::finding::Confidence;
use crate::touched::StateKey;

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

/// A call's facts in outline: how much evidence of each kind, without the evidence, and the
/// state it touched and wrote ([`StateKey`]: tables and watched paths). Enough for the judge to settle a call no rule fires on, to
/// count it for advice and to record it in the history; read with [`Facts::outline`].
/// Reading one allocates nothing for up to four tables of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outline<'e> {
    /// `Facts::writes.len()`.
    pub(crate) writes: usize,
    /// `Facts::attempts.len()`.
    pub(crate) attempts: usize,
    /// `Facts::destructive.len()`.
    pub(crate) destructive: usize,
    /// `Facts::net_changes.len()`.
    pub(crate) net_changes: usize,
    /// `Facts::outside.len()`.
    pub(crate) outside: usize,
    /// `Facts::outside_changes.len()`.
    pub(crate) outside_changes: usize,
    /// `Facts::any_write_statement`.
    pub(crate) any_write_statement: bool,
    /// State written: `Facts::written_tables` and the watched paths changed, in first-seen
    /// order.
    pub(crate) written: Keys<'e>,
    /// State read or written: `Facts::touched_tables` and the watched paths changed, in
    /// first-seen order.
    pub(crate) touched: Keys<'e>,
}

/// State keys, each once, in first-seen order: a call touches a few tables or paths, so a
/// linear search beats a tree, and four fit inline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Keys<'e>(SmallVec<[StateKey<'e>; 4]>);

impl<'e> Keys<'e> {
    fn insert(&mut self, key: StateKey<'e>) {
        if !self.0.contains(&key) {
            self.0.push(key);
        }
    }

    /// The keys.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, StateKey<'e>> {
        self.0.iter()
    }

    /// Whether there is none.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Where the evidence goes: into [`Facts`], with the [`Wanted`] texts (the others are
/// recorded with an empty text), or only counted into an [`Outline`].
enum Sink<'e> {
    Facts(Facts<'e>, Wanted),
    Outline(Outline<'e>),
}

/// Facts being collected: each evidence source adds its evidence, tables and hosts through
/// these methods, whether into [`Facts`] or an [`Outline`].
pub(super) struct Collector<'e>(Sink<'e>);

/// The four kinds of evidence that come with a text the judge may not want.
#[derive(Clone, Copy)]
enum Kind {
    Write,
    Attempt,
    Destructive,
    NetChange,
}

impl<'e> Collector<'e> {
    /// Collects into [`Facts`]; `want` says which evidence texts to write.
    pub(super) fn facts(want: Wanted) -> Self {
        Collector(Sink::Facts(Facts::default(), want))
    }

    /// Collects into an [`Outline`]: evidence is counted, no text written.
    pub(super) fn outline() -> Self {
        Collector(Sink::Outline(Outline::default()))
    }

    /// The facts collected (empty when collecting an outline).
    pub(super) fn finish(self) -> Facts<'e> {
        match self.0 {
            Sink::Facts(f, _) => f,
            Sink::Outline(_) => Facts::default(),
        }
    }

    /// The outline collected (empty when collecting facts).
    pub(super) fn finish_outline(self) -> Outline<'e> {
        match self.0 {
            Sink::Outline(o) => o,
            Sink::Facts(..) => Outline::default(),
        }
    }

    fn evidence(&mut self, kind: Kind, confidence: Confidence, text: impl FnOnce() -> String) {
        match &mut self.0 {
            Sink::Facts(f, want) => {
                let (list, wanted) = match kind {
                    Kind::Write => (&mut f.writes, want.writes),
                    Kind::Attempt => (&mut f.attempts, want.attempts),
                    Kind::Destructive => (&mut f.destructive, want.destructive),
                    Kind::NetChange => (&mut f.net_changes, want.net_changes),
                };
                push(list, wanted, confidence, text);
            }
            Sink::Outline(o) => match kind {
                Kind::Write => o.writes += 1,
                Kind::Attempt => o.attempts += 1,
                Kind::Destructive => o.destructive += 1,
                Kind::NetChange => o.net_changes += 1,
            },
        }
    }

    /// Evidence of a write ([`Facts::writes`]).
    pub(super) fn write(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        self.evidence(Kind::Write, confidence, text);
    }

    /// Evidence of a write attempt that changed nothing ([`Facts::attempts`]).
    pub(super) fn attempt(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        self.evidence(Kind::Attempt, confidence, text);
    }

    /// Evidence of a delete or overwrite ([`Facts::destructive`]).
    pub(super) fn destructive(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        self.evidence(Kind::Destructive, confidence, text);
    }

    /// Evidence of a change a repeat would make again ([`Facts::net_changes`]).
    pub(super) fn net_change(&mut self, confidence: Confidence, text: impl FnOnce() -> String) {
        self.evidence(Kind::NetChange, confidence, text);
    }

    /// A request outside the closed world ([`Facts::outside`]), and with `changes` a
    /// mutating one ([`Facts::outside_changes`]); its text is always written.
    pub(super) fn outside(&mut self, changes: bool, text: impl Fn() -> String) {
        match &mut self.0 {
            Sink::Facts(f, _) => {
                let evidence = || Evidence {
                    text: text(),
                    confidence: Confidence::Confirmed,
                };
                f.outside.push(evidence());
                if changes {
                    f.outside_changes.push(evidence());
                }
            }
            Sink::Outline(o) => {
                o.outside += 1;
                o.outside_changes += usize::from(changes);
            }
        }
    }

    /// A watched table read or written ([`Facts::touched_tables`]).
    pub(super) fn touched(&mut self, table: Cow<'e, str>) {
        match &mut self.0 {
            Sink::Facts(f, _) => {
                f.touched_tables.insert(table);
            }
            Sink::Outline(o) => o.touched.insert(StateKey::Table(table)),
        }
    }

    /// A watched table written ([`Facts::written_tables`]).
    pub(super) fn written(&mut self, table: Cow<'e, str>) {
        match &mut self.0 {
            Sink::Facts(f, _) => {
                f.written_tables.insert(table);
            }
            Sink::Outline(o) => o.written.insert(StateKey::Table(table)),
        }
    }

    /// A watched path changed: state written and touched (an outline's only: [`Facts`] list
    /// file changes as evidence, not as names).
    pub(super) fn file_changed(&mut self, change: &'e FileChange) {
        if let Sink::Outline(o) = &mut self.0 {
            for key in StateKey::of_file_change(change) {
                o.touched.insert(key.clone());
                o.written.insert(key);
            }
        }
    }

    /// Watched tables read or written.
    pub(super) fn touched_all(&mut self, tables: impl IntoIterator<Item = Cow<'e, str>>) {
        tables.into_iter().for_each(|t| self.touched(t));
    }

    /// Watched tables written.
    pub(super) fn written_all(&mut self, tables: impl IntoIterator<Item = Cow<'e, str>>) {
        tables.into_iter().for_each(|t| self.written(t));
    }

    /// A host reached ([`Facts::hosts`]; an outline does not keep hosts).
    pub(super) fn host(&mut self, host: &'e str) {
        if let Sink::Facts(f, _) = &mut self.0 {
            f.hosts.insert(Cow::Borrowed(host));
        }
    }

    /// A write statement ran ([`Facts::any_write_statement`]).
    pub(super) fn write_statement(&mut self) {
        match &mut self.0 {
            Sink::Facts(f, _) => f.any_write_statement = true,
            Sink::Outline(o) => o.any_write_statement = true,
        }
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
        let mut c = Collector::facts(want);
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

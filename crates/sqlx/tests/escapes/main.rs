//! A corpus of read-only escapes, on every backend: texts a tool declared `readOnlyHint:
//! true` runs that really write, each of the kind database MCP servers have shipped and
//! fixed (`EXPLAIN ANALYZE` in every spelling, `COMMIT` inside a read-only wrapper, writable
//! CTEs, `DO` blocks, `SELECT … INTO`, functions that lie about their volatility, views over
//! writing functions, sequences, MariaDB's `ANALYZE <statement>`, stored functions in
//! `SELECT`/`DO`/`SET`, SQLite multi-statement texts, `ATTACH`, `PRAGMA` writes).
//!
//! Each escape runs twice, each time on a fresh database: in observe mode it must really
//! write (its probe moves) and give `read_only_write`; in enforce mode it must be refused,
//! write nothing, and give `enforced` and `read_only_write`, naming the statement the
//! database refused. A held-out set of the same kinds, written after the fix, runs the same
//! way, and statements that do not write (temporary tables, session settings, advisory
//! locks, `FOR UPDATE`, plain views) must stay clean. Servers are required as elsewhere
//! (`HINTAUDIT_REQUIRE_PG`, `HINTAUDIT_REQUIRE_MYSQL`, `HINTAUDIT_REQUIRE_ALL`).
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

#[path = "../support/databases.rs"]
mod databases;
mod mysql;
mod postgres;
mod sqlite;

use std::future::Future;

use hintaudit_core::{
    CallScope, Confidence, DeclaredHints, Effect, Enforcement, Finding, Judge, Mode, Policy, Rule,
    Severity, ToolCall,
};

/// One escape: the text a read-only tool runs, a query whose answer moves when the text
/// writes, and a word the refused statement's summary must hold (the statement the
/// database refused, not `EXPLAIN`).
#[derive(Debug, Clone, Copy)]
pub struct Escape {
    /// The text the tool runs.
    pub sql: &'static str,
    /// A query whose one text answer moves when `sql` writes.
    pub probe: &'static str,
    /// A word the refused statement's summary holds.
    pub names: &'static str,
}

/// An [`Escape`], for the corpus tables.
pub(crate) const fn escape(sql: &'static str, probe: &'static str, names: &'static str) -> Escape {
    Escape { sql, probe, names }
}

/// What one call did: its answer, its effect and the judge's findings.
#[derive(Debug)]
pub struct Outcome {
    /// The call's answer.
    pub result: Result<(), sqlx::Error>,
    /// What the audited pool recorded.
    pub effect: Effect,
    /// The judge's findings for a tool declared `readOnlyHint: true`.
    pub findings: Vec<Finding>,
}

/// A backend under test: a fresh database holding its corpus's set-up, on a one-connection
/// audited pool.
pub(crate) trait Subject: Sized {
    /// The `n`th fresh database, or `None` (the reason printed) when the server is
    /// unreachable and not required.
    async fn fresh(n: usize) -> Option<Self>;
    /// Runs `sql` through the audited pool, as a tool would.
    async fn run(&self, sql: &str) -> Result<(), sqlx::Error>;
    /// The probe's answer as text, or the error's.
    async fn probe(&self, sql: &str) -> String;
    /// Drops the database.
    async fn finish(self);
}

/// Runs every escape of `set` in observe and in enforce mode, each on a fresh database
/// numbered from `first`; what went wrong (`None`: the server is absent, skipped).
pub(crate) async fn escapes<S: Subject>(set: &[Escape], first: usize) -> Option<Vec<String>> {
    let mut wrong = Vec::new();
    for (i, esc) in set.iter().enumerate() {
        for enforce in [false, true] {
            let db = S::fresh(first + 2 * i + usize::from(enforce)).await?;
            let before = db.probe(esc.probe).await;
            let o = judged(enforce, db.run(esc.sql)).await;
            let after = db.probe(esc.probe).await;
            wrong.extend(if enforce {
                enforced_wrong(esc, &before, &after, &o)
            } else {
                observed_wrong(esc, &before, &after, &o)
            });
            db.finish().await;
        }
    }
    Some(wrong)
}

/// Runs each statement of `clean` in observe mode on one fresh database; what was not clean.
pub(crate) async fn cleans<S: Subject>(clean: &[&str]) -> Option<Vec<String>> {
    let db = S::fresh(usize::MAX / 2).await?;
    let mut wrong = Vec::new();
    for sql in clean {
        let o = judged(false, db.run(sql)).await;
        wrong.extend(clean_wrong(sql, &o));
    }
    db.finish().await;
    Some(wrong)
}

/// The three tests of a backend's corpus: `every_escape_is_caught_and_refused`,
/// `held_out_escapes_are_caught_and_refused`, `statements_that_do_not_write_stay_clean`.
#[macro_export]
macro_rules! corpus_tests {
    ($subject:ty) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn every_escape_is_caught_and_refused() {
            if let Some(wrong) = $crate::escapes::<$subject>(CORPUS, 0).await {
                assert!(wrong.is_empty(), "{wrong:#?}");
            }
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn held_out_escapes_are_caught_and_refused() {
            if let Some(wrong) = $crate::escapes::<$subject>(HELD_OUT, 1000).await {
                assert!(wrong.is_empty(), "{wrong:#?}");
            }
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn statements_that_do_not_write_stay_clean() {
            if let Some(wrong) = $crate::cleans::<$subject>(CLEAN).await {
                assert!(wrong.is_empty(), "{wrong:#?}");
            }
        }
    };
}

impl Outcome {
    fn rules(&self) -> Vec<(Rule, Confidence, &str)> {
        self.findings
            .iter()
            .map(|f| (f.rule, f.confidence, f.evidence.as_str()))
            .collect()
    }

    fn has(&self, rule: Rule) -> bool {
        self.findings.iter().any(|f| f.rule == rule)
    }
}

/// Runs `f` as a call of a tool declared `readOnlyHint: true`, in enforce mode or not, and
/// judges it.
pub async fn judged<F>(enforce: bool, f: F) -> Outcome
where
    F: Future<Output = Result<(), sqlx::Error>>,
{
    let hints = DeclaredHints::new(Some(true), None, None, None);
    let mode = if enforce {
        Mode::Enforce
    } else {
        Mode::Observe
    };
    let scope = CallScope::new("read_query").with_enforcement(Enforcement::for_hints(mode, hints));
    let effects = scope.effects_handle();
    let result = scope.run(f).await;
    let effect = effects.snapshot();
    let verdict = Judge::new(Policy::default()).judge(&ToolCall {
        tool: "read_query",
        hints,
        arguments: None,
        effect: &effect,
    });
    Outcome {
        result,
        effect,
        findings: verdict.findings,
    }
}

/// What observe mode must make of an escape, given the probe before and after: the write
/// happened and `read_only_write` was found. `None` when right, else what went wrong.
pub fn observed_wrong(e: &Escape, before: &str, after: &str, o: &Outcome) -> Option<String> {
    if before == after {
        return Some(format!(
            "{}: the probe did not move ({before}): not an escape here ({:?})",
            e.sql, o.result
        ));
    }
    (!o.has(Rule::ReadOnlyWrite)).then(|| {
        format!(
            "{}: wrote ({before} -> {after}) but no read_only_write: {:?}; effect: {}",
            e.sql,
            o.rules(),
            o.effect.summary()
        )
    })
}

/// What enforce mode must make of an escape: refused, nothing written, `enforced` and
/// `read_only_write`, the refusal naming the statement.
pub fn enforced_wrong(e: &Escape, before: &str, after: &str, o: &Outcome) -> Option<String> {
    let named = o.effect.refusals.iter().any(|r| r.what.contains(e.names));
    let ok = o.result.is_err()
        && before == after
        && o.has(Rule::Enforced)
        && o.has(Rule::ReadOnlyWrite)
        && named;
    (!ok).then(|| {
        format!(
            "{}: enforce: result {:?}, probe {before} -> {after}, refusals {:?}, findings {:?}",
            e.sql,
            o.result.as_ref().map_err(|e| e.to_string()),
            o.effect.refusals,
            o.rules()
        )
    })
}

/// What a statement that does not write must give: no finding of a hint rule.
pub fn clean_wrong(sql: &str, o: &Outcome) -> Option<String> {
    let ok = o.result.is_ok()
        && o.findings
            .iter()
            .all(|f| f.rule.severity() == Severity::Info);
    (!ok).then(|| {
        format!(
            "{sql}: not clean: {:?}, {:?}; effect: {}",
            o.result.as_ref().map_err(|e| e.to_string()),
            o.rules(),
            o.effect.summary()
        )
    })
}

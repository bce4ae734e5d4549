//! The verification report: per tool, its hints, status, findings, advice and cases.

use hintaudit_core::{
    ActionMetadata, Advice, DeclaredHints, Finding, OutboundReach, Rule, Severity,
};

use crate::db::SnapshotStats;
use crate::files::FileChange;
use crate::proxy::UnattributedRequest;
use crate::snapshot::TableDiff;
use crate::suggestion::Suggestion;

/// The rules `hintaudit verify` checks, in report order: one JUnit testcase per tool and rule.
pub const VERIFY_RULES: [Rule; 11] = [
    Rule::ReadOnlyWrite,
    Rule::UndeclaredDestructive,
    Rule::IdempotencyBroken,
    Rule::UndeclaredOpenWorld,
    Rule::HintMissing,
    Rule::HintContradiction,
    Rule::HintsChanged,
    Rule::UndeclaredOutcome,
    Rule::UndeclaredDestination,
    Rule::ActionMetadataMissing,
    Rule::ActionMetadataContradiction,
];

/// Whether a rule concerns the draft action metadata: reported only for tools that declare
/// some (JUnit has no testcase of these rules for other tools).
pub fn is_action_rule(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::UndeclaredOutcome
            | Rule::UndeclaredDestination
            | Rule::ActionMetadataMissing
            | Rule::ActionMetadataContradiction
    )
}

/// Whether a rule is judged from calls (as opposed to from tools/list).
pub fn is_behaviour_rule(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::ReadOnlyWrite
            | Rule::UndeclaredDestructive
            | Rule::IdempotencyBroken
            | Rule::UndeclaredOpenWorld
            | Rule::UndeclaredOutcome
            | Rule::UndeclaredDestination
    )
}

/// What became of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    /// Exercised, and no call contradicted its hints.
    Passed,
    /// Exercised, and a call contradicted its hints (see the findings).
    Failed,
    /// No call could show anything: no arguments could be made, or every call failed
    /// without changing the database. Never counted as passed.
    NotExercised(String),
}

impl ToolStatus {
    /// `passed`, `failed` or `not_exercised`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ToolStatus::Passed => "passed",
            ToolStatus::Failed => "failed",
            ToolStatus::NotExercised(_) => "not_exercised",
        }
    }
}

/// One tool call in a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// The tool's error text (one line), when the call failed. A failed call's changes are
    /// still judged: a failed call that wrote is still a write.
    pub error: Option<String>,
    /// What the call changed, per table; empty when nothing changed.
    pub changes: Vec<TableDiff>,
    /// The HTTP requests the recording proxy got while the call ran (method `CONNECT` for
    /// HTTPS), none forwarded; empty when none came or the proxy was not in use
    /// ([`Report::outbound_watched`]). Host and port only, never a path or query.
    pub outbound: Vec<OutboundReach>,
    /// What the call changed in the watched trees (`--watch`), path by path, outside
    /// `ignored_paths`; empty when nothing changed or nothing is watched. Paths relative to
    /// their root, never content.
    pub files: Vec<FileChange>,
}

impl CallRecord {
    /// Whether the call changed anything verify watches: a table, a sequence, a definition
    /// or a file.
    pub fn changed(&self) -> bool {
        !self.changes.is_empty() || !self.files.is_empty()
    }

    /// Whether the call removed or overwrote something: rows deleted or updated, a table
    /// dropped or altered, a file deleted, overwritten, renamed away or replaced.
    pub fn destroyed(&self) -> bool {
        self.changes
            .iter()
            .any(|d| d.removed > 0 || d.changed > 0 || d.dropped || d.altered)
            || self.files.iter().any(|f| f.kind.is_destructive())
    }
}

/// One argument set for a tool, with its calls (two for tools declaring idempotentHint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseReport {
    /// The case name from the cases file, `case N`, or `generated [mode=value ...]`.
    pub label: String,
    /// Whether the arguments came from the cases file.
    pub from_file: bool,
    /// Generated arguments whose values were made up (a placeholder string, a number of
    /// the field's type, a probe SQL statement) rather than taken from the schema or the
    /// database. A case with any is a probe: its writes are evidence, but its harmless
    /// calls never support advice that loosens a hint.
    pub made_up: Vec<String>,
    /// Generated arguments only: each argument and where its value came from (`the
    /// schema's default`, `a value from the database`, `a probe statement …`, `a
    /// placeholder of its type`), by name. Empty for cases from the cases file.
    pub generated: Vec<(String, String)>,
    /// The calls, in order.
    pub calls: Vec<CallRecord>,
}

/// Everything found about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReport {
    /// The tool name.
    pub name: String,
    /// The hints tools/list declared.
    pub hints: DeclaredHints,
    /// The draft action metadata tools/list declared (`_meta` or `annotations`), if any.
    pub action: Option<ActionMetadata>,
    /// The outcome.
    pub status: ToolStatus,
    /// Listing findings (hint_missing, hint_contradiction) and behaviour findings, each
    /// (rule, hint) once, most severe first.
    pub findings: Vec<Finding>,
    /// Hints that could be less cautious, from the calls made.
    pub advice: Vec<Advice>,
    /// The labels of the cases the advice rests on: successful calls whose arguments came
    /// from the cases file, the schema or the database (never made-up values).
    pub advice_basis: Vec<String>,
    /// Notes about the run of this tool: generation limits (`16 of 21 combinations`), a
    /// call that timed out or lost the server.
    pub notes: Vec<String>,
    /// The cases run, in order.
    pub cases: Vec<CaseReport>,
    /// With `--suggest`: the annotations the evidence supports, when they differ from the
    /// declared ones.
    pub suggestion: Option<Suggestion>,
}

/// The result of a verification run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The server, as given (`--stdio` command or `--url`), passwords in URLs removed.
    pub server: String,
    /// The database URL, password removed.
    pub database: String,
    /// Tools in the order they ran.
    pub tools: Vec<ToolReport>,
    /// Snapshot counters.
    pub stats: SnapshotStats,
    /// Wall time of the run, in seconds, server shutdown included.
    pub elapsed_seconds: f64,
    /// Why the run ended early (the report holds what it had), or `None`.
    pub incomplete: Option<String>,
    /// How verify made sure it watches the server's database, or why it could not.
    pub database_check: String,
    /// With `--reset`: the pristine copy the server ran against (password removed).
    pub database_copy: Option<String>,
    /// With `--reset`: how many times the copy was made again between tools (after each
    /// tool that changed it, before the next).
    pub database_resets: u32,
    /// The last lines the server wrote on stderr (at most 20; stdio servers only).
    pub server_stderr: Vec<String>,
    /// Whether the server ran behind verify's recording proxy (a `--stdio` server; a
    /// `--url` server's outbound requests are not seen).
    pub outbound_watched: bool,
    /// Requests the proxy got while no call was in flight (start-up, between calls, after
    /// the last): judged for no tool, listed here.
    pub unattributed_outbound: Vec<UnattributedRequest>,
    /// The watched directories (`--watch`), canonical; empty when none is watched.
    pub watched: Vec<String>,
}

impl Report {
    /// Every finding of every tool.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.tools.iter().flat_map(|t| t.findings.iter())
    }

    /// The tool report for a name.
    pub fn tool(&self, name: &str) -> Option<&ToolReport> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The tools that were not exercised.
    pub fn unexercised(&self) -> impl Iterator<Item = &ToolReport> {
        self.tools
            .iter()
            .filter(|t| matches!(t.status, ToolStatus::NotExercised(_)))
    }

    /// Masks every text of the report with `mask` (secrets out).
    pub(crate) fn mask_with(&mut self, mask: impl Fn(&str) -> String) {
        for s in [
            &mut self.server,
            &mut self.database,
            &mut self.database_check,
        ]
        .into_iter()
        .chain(self.incomplete.as_mut())
        .chain(self.database_copy.as_mut())
        .chain(self.server_stderr.iter_mut())
        {
            *s = mask(s);
        }
        for u in &mut self.unattributed_outbound {
            u.request.host = mask(&u.request.host);
        }
        for t in &mut self.tools {
            if let ToolStatus::NotExercised(why) = &mut t.status {
                *why = mask(why);
            }
            for f in &mut t.findings {
                f.evidence = mask(&f.evidence);
            }
            if let Some(s) = &mut t.suggestion {
                for e in &mut s.evidence {
                    *e = mask(e);
                }
            }
            for n in t.notes.iter_mut().chain(t.advice_basis.iter_mut()) {
                *n = mask(n);
            }
            for c in &mut t.cases {
                c.label = mask(&c.label);
                for call in &mut c.calls {
                    if let Some(e) = &mut call.error {
                        *e = mask(e);
                    }
                    for o in &mut call.outbound {
                        o.host = mask(&o.host);
                    }
                }
            }
        }
    }

    /// Whether any finding is at or above `fail_on`: exit code 1.
    pub fn fails(&self, fail_on: Severity) -> bool {
        self.findings().any(|f| f.severity >= fail_on)
    }

    /// Counts of tools by status: (passed, failed, not exercised).
    pub fn status_counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for t in &self.tools {
            match t.status {
                ToolStatus::Passed => c.0 += 1,
                ToolStatus::Failed => c.1 += 1,
                ToolStatus::NotExercised(_) => c.2 += 1,
            }
        }
        c
    }
}

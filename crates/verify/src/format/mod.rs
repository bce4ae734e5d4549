//! Report formats: a text table for people, JSON for tools, JUnit XML and SARIF 2.1.0 for CI.

mod json;
mod junit;
mod sarif;
mod table;

use hintaudit_core::Severity;

use crate::report::Report;

/// The `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// A text table: one line per tool, then findings and advice.
    #[default]
    Table,
    /// One JSON document (see [`Report`]).
    Json,
    /// JUnit XML: one testsuite per run, one testcase per tool and rule.
    Junit,
    /// SARIF 2.1.0: one result per finding, with the tool as a logical location.
    Sarif,
}

impl Format {
    /// Renders a report in this format. JUnit marks a testcase failed only for findings at
    /// or above `fail_on` (the others are in its `system-out`); SARIF maps severities to
    /// levels (critical: error, warning: warning, info: note).
    pub fn render(self, report: &Report, fail_on: Severity) -> String {
        match self {
            Format::Table => table::render(report),
            Format::Json => json::render(report),
            Format::Junit => junit::render(report, fail_on),
            Format::Sarif => sarif::render(report),
        }
    }
}

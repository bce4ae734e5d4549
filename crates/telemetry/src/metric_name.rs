//! The names of every metric hintaudit exports
//! ([design: telemetry names](../../../docs/design.md#5-telemetry-names)), in one enum.

/// The Prometheus type of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// A monotonic counter (`_total`).
    Counter,
    /// A histogram (`_bucket`, `_sum`, `_count`).
    Histogram,
    /// A gauge.
    Gauge,
}

impl MetricKind {
    /// `counter`, `histogram` or `gauge`, as the `# TYPE` line of the text format spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Histogram => "histogram",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// A metric of [design: telemetry names](../../../docs/design.md#5-telemetry-names).
///
/// Nothing else in the workspace spells a metric name: code, tests, dashboards and alert rules
/// take them from [`MetricName`] (a test keeps dashboards and rules in step with
/// [`MetricName::ALL`]).
///
/// ```
/// use hintaudit_telemetry::{MetricKind, MetricName};
/// assert_eq!(MetricName::HintViolations.as_str(), "hintaudit_hint_violations_total");
/// assert_eq!(MetricName::HintViolations.labels(), &["tool", "rule", "hint", "severity"]);
/// assert_eq!(MetricName::ToolCallDuration.kind(), MetricKind::Histogram);
/// assert_eq!(MetricName::parse("hintaudit_tool_advice"), Some(MetricName::ToolAdvice));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum MetricName {
    /// `hintaudit_tool_calls_total{tool,status}`: finished tool calls; status `ok`,
    /// `tool_error` or `protocol_error`.
    ToolCalls,
    /// `hintaudit_tool_call_duration_seconds{tool}`: histogram of call wall time, seconds.
    ToolCallDuration,
    /// `hintaudit_hint_violations_total{tool,rule,hint,severity}`: findings of tool calls, and
    /// `hints_changed` once per change of a tool's listed hints.
    HintViolations,
    /// `hintaudit_tool_statements_total{tool,operation}`: SQL statements run by tool calls.
    ToolStatements,
    /// `hintaudit_tool_row_changes_total{tool,table,operation}`: committed row changes, rows.
    ToolRowChanges,
    /// `hintaudit_tool_declared_hints{tool,read_only,destructive,idempotent,open_world}`:
    /// gauge 1 for each declared tool's current hints, values `true`, `false` or `unset`.
    ToolDeclaredHints,
    /// `hintaudit_tool_advice{tool,advice}`: gauge 1 while the advice holds, else 0.
    ToolAdvice,
    /// `hintaudit_tool_hints_changed_total{tool}`: times a tool's listed hints changed.
    ToolHintsChanged,
    /// `hintaudit_tool_hints_corrected_total{tool}`: times the layer started serving a tool's
    /// hints corrected, or tightened a correction further (`correct_hints`).
    ToolHintsCorrected,
    /// `hintaudit_unattributed_statements_total{operation}`: statements run outside any call.
    UnattributedStatements,
    /// `hintaudit_audit_errors_total{stage}`: audit failures (the call went on), including
    /// spans the trace exporter dropped (`stage="export"`).
    AuditErrors,
    /// `hintaudit_evidence_incomplete_total{source}`: calls whose evidence lost part of
    /// their interval, once per call and source: `sqlite`, `postgresql`, `mysql` (a
    /// database's log read by the proxy), `files` (`--watch`) or `egress`
    /// (`hintaudit_core::EvidenceSource`). Such calls are disclosed `incomplete`.
    EvidenceIncomplete,
    /// `hintaudit_capture_lag_bytes{backend}`: gauge, bytes of database log `hintaudit
    /// proxy`'s capture has not read yet (PostgreSQL: what its slot makes the server keep);
    /// `backend` is `postgresql` or `mysql`. Exported
    /// by the proxy only ([`MetricName::proxy_only`]).
    CaptureLag,
    /// `hintaudit_capture_commits_total{attribution}`: commits `hintaudit proxy` read from
    /// the database log, by how they were settled: `attributed`, `ambiguous` (calls of
    /// several tools in flight), `unattributed` (no call in flight), `dropped` or `foreign`
    /// (another writer's: not the proxy's upstream). Exported by the proxy only.
    CaptureCommits,
    /// `hintaudit_capture_gaps_total{backend}`: times `hintaudit proxy`'s capture went on
    /// from a later log position than it had read through, so what committed between was
    /// not read (PostgreSQL: its slot was lost, with a database restart or a terminated
    /// session, and a new one made; MySQL: the binary log file to resume from was purged).
    /// Exported by the proxy only.
    CaptureGaps,
    /// `hintaudit_capture_read_bytes_total{backend}`: bytes of database log `hintaudit
    /// proxy`'s capture has read through (PostgreSQL: WAL its slot decoded, the whole
    /// cluster's, which the server decodes once per slot; MySQL: binary log events received).
    /// The decoding cost: every proxy on a database reads all of it. Exported by the proxy
    /// only.
    CaptureReadBytes,
    /// `hintaudit_capture_pending_calls{backend}`: gauge, calls `hintaudit proxy` has
    /// answered whose share of the database log is not judged yet (it is judged once the
    /// capture has read past the call's end, at most `--capture-wait-ms` after the answer).
    /// Exported by the proxy only.
    CapturePendingCalls,
    /// `hintaudit_capture_commit_to_finding_seconds{backend}`: histogram, seconds from a
    /// commit the proxy judged for a call to when that call's findings were recorded: from
    /// the commit's time in the log on PostgreSQL (the database server's clock), from when
    /// the capture read it on MySQL/MariaDB. Exported by the proxy only.
    CaptureFindingLatency,
}

impl MetricName {
    /// Every metric, in the order of
    /// [design: telemetry names](../../../docs/design.md#5-telemetry-names).
    pub const ALL: [MetricName; 18] = [
        MetricName::ToolCalls,
        MetricName::ToolCallDuration,
        MetricName::HintViolations,
        MetricName::ToolStatements,
        MetricName::ToolRowChanges,
        MetricName::ToolDeclaredHints,
        MetricName::ToolAdvice,
        MetricName::ToolHintsChanged,
        MetricName::ToolHintsCorrected,
        MetricName::UnattributedStatements,
        MetricName::AuditErrors,
        MetricName::EvidenceIncomplete,
        MetricName::CaptureLag,
        MetricName::CaptureCommits,
        MetricName::CaptureGaps,
        MetricName::CaptureReadBytes,
        MetricName::CapturePendingCalls,
        MetricName::CaptureFindingLatency,
    ];

    /// Whether only `hintaudit proxy` exports it (the capture's metrics); the
    /// `PrometheusRecorder` of an in-process server does not.
    pub const fn proxy_only(self) -> bool {
        matches!(
            self,
            MetricName::CaptureLag
                | MetricName::CaptureCommits
                | MetricName::CaptureGaps
                | MetricName::CaptureReadBytes
                | MetricName::CapturePendingCalls
                | MetricName::CaptureFindingLatency
        )
    }

    /// The metric name, e.g. `hintaudit_tool_calls_total`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MetricName::ToolCalls => "hintaudit_tool_calls_total",
            MetricName::ToolCallDuration => "hintaudit_tool_call_duration_seconds",
            MetricName::HintViolations => "hintaudit_hint_violations_total",
            MetricName::ToolStatements => "hintaudit_tool_statements_total",
            MetricName::ToolRowChanges => "hintaudit_tool_row_changes_total",
            MetricName::ToolDeclaredHints => "hintaudit_tool_declared_hints",
            MetricName::ToolAdvice => "hintaudit_tool_advice",
            MetricName::ToolHintsChanged => "hintaudit_tool_hints_changed_total",
            MetricName::ToolHintsCorrected => "hintaudit_tool_hints_corrected_total",
            MetricName::UnattributedStatements => "hintaudit_unattributed_statements_total",
            MetricName::AuditErrors => "hintaudit_audit_errors_total",
            MetricName::EvidenceIncomplete => "hintaudit_evidence_incomplete_total",
            MetricName::CaptureLag => "hintaudit_capture_lag_bytes",
            MetricName::CaptureCommits => "hintaudit_capture_commits_total",
            MetricName::CaptureGaps => "hintaudit_capture_gaps_total",
            MetricName::CaptureReadBytes => "hintaudit_capture_read_bytes_total",
            MetricName::CapturePendingCalls => "hintaudit_capture_pending_calls",
            MetricName::CaptureFindingLatency => "hintaudit_capture_commit_to_finding_seconds",
        }
    }

    /// Parses a metric name as [`MetricName::as_str`] spells it.
    pub fn parse(name: &str) -> Option<MetricName> {
        MetricName::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// The `# HELP` text.
    pub fn help(self) -> &'static str {
        match self {
            MetricName::ToolCalls => "MCP tool calls seen by hintaudit, by tool and status.",
            MetricName::ToolCallDuration => "Wall time of MCP tool calls, in seconds.",
            MetricName::HintViolations => {
                "Findings where a tool's behaviour contradicts its declared hints."
            }
            MetricName::ToolStatements => "SQL statements run by tool calls, by operation.",
            MetricName::ToolRowChanges => "Committed row changes made by tool calls, in rows.",
            MetricName::ToolDeclaredHints => {
                "Hints each declared tool serves (1 for the current set; true, false or unset)."
            }
            MetricName::ToolAdvice => {
                "1 while a hint could be less cautious with no contrary evidence, else 0."
            }
            MetricName::ToolHintsChanged => "Times the hints served for a tool changed.",
            MetricName::ToolHintsCorrected => {
                "Times hintaudit started serving a tool's hints corrected to what it was seen doing."
            }
            MetricName::UnattributedStatements => {
                "SQL statements run outside any tool call scope, by operation."
            }
            MetricName::AuditErrors => {
                "Audit failures by stage; the audited call went on. Includes dropped spans."
            }
            MetricName::EvidenceIncomplete => {
                "Tool calls whose evidence lost part of their interval, once per call and source."
            }
            MetricName::CaptureLag => {
                "Bytes of database log the proxy's change capture has not read yet."
            }
            MetricName::CaptureCommits => {
                "Commits the proxy read from the database log, by how they were attributed."
            }
            MetricName::CaptureGaps => {
                "Times the proxy's change capture lost its place and went on without part of the database log."
            }
            MetricName::CaptureReadBytes => {
                "Bytes of database log the proxy's change capture read (and the server decoded for it)."
            }
            MetricName::CapturePendingCalls => {
                "Calls the proxy answered whose share of the database log is not judged yet."
            }
            MetricName::CaptureFindingLatency => {
                "Seconds from a commit in the database log to the findings of the call it was judged for."
            }
        }
    }

    /// The Prometheus type.
    pub fn kind(self) -> MetricKind {
        match self {
            MetricName::ToolCallDuration | MetricName::CaptureFindingLatency => {
                MetricKind::Histogram
            }
            MetricName::ToolDeclaredHints
            | MetricName::ToolAdvice
            | MetricName::CaptureLag
            | MetricName::CapturePendingCalls => MetricKind::Gauge,
            _ => MetricKind::Counter,
        }
    }

    /// The label names, in order.
    pub fn labels(self) -> &'static [&'static str] {
        match self {
            MetricName::ToolCalls => &["tool", "status"],
            MetricName::ToolCallDuration => &["tool"],
            MetricName::HintViolations => &["tool", "rule", "hint", "severity"],
            MetricName::ToolStatements => &["tool", "operation"],
            MetricName::ToolRowChanges => &["tool", "table", "operation"],
            MetricName::ToolDeclaredHints => &[
                "tool",
                "read_only",
                "destructive",
                "idempotent",
                "open_world",
            ],
            MetricName::ToolAdvice => &["tool", "advice"],
            MetricName::ToolHintsChanged | MetricName::ToolHintsCorrected => &["tool"],
            MetricName::UnattributedStatements => &["operation"],
            MetricName::AuditErrors => &["stage"],
            MetricName::EvidenceIncomplete => &["source"],
            MetricName::CaptureLag => &["backend"],
            MetricName::CaptureCommits => &["attribution"],
            MetricName::CaptureGaps
            | MetricName::CaptureReadBytes
            | MetricName::CapturePendingCalls
            | MetricName::CaptureFindingLatency => &["backend"],
        }
    }

    /// The names of the series a scrape shows for it: the name itself, or for the histogram
    /// its `_bucket`, `_sum` and `_count` series.
    pub fn series_names(self) -> Vec<String> {
        match self.kind() {
            MetricKind::Histogram => ["_bucket", "_sum", "_count"]
                .iter()
                .map(|s| format!("{}{s}", self.as_str()))
                .collect(),
            _ => vec![self.as_str().to_owned()],
        }
    }
}

impl std::fmt::Display for MetricName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `tool` label value for calls of tools the server does not declare
/// ([design: telemetry names](../../../docs/design.md#5-telemetry-names)), and for
/// declared tools beyond the recorder's tool cap.
pub const UNKNOWN_TOOL: &str = hintaudit_core::semconv::UNKNOWN_TOOL;
/// The `table` label value for tables beyond the first N seen
/// ([design: telemetry names](../../../docs/design.md#5-telemetry-names)).
pub const OTHER_TABLE: &str = "__other__";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_prefixed_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for m in MetricName::ALL {
            assert!(seen.insert(m.as_str()), "{m} twice");
            assert!(m.as_str().starts_with("hintaudit_"), "{m}");
            assert_eq!(MetricName::parse(m.as_str()), Some(m));
            // Prometheus naming: counters end in _total, nothing else does.
            assert_eq!(
                m.as_str().ends_with("_total"),
                m.kind() == MetricKind::Counter,
                "{m}"
            );
            assert!(!m.help().is_empty());
            assert!(m.labels().iter().all(|l| !l.starts_with("__")));
        }
        assert_eq!(MetricName::parse("hintaudit_nope"), None);
    }

    #[test]
    fn histogram_series_names() {
        assert_eq!(
            MetricName::ToolCallDuration.series_names(),
            vec![
                "hintaudit_tool_call_duration_seconds_bucket",
                "hintaudit_tool_call_duration_seconds_sum",
                "hintaudit_tool_call_duration_seconds_count"
            ]
        );
        assert_eq!(
            MetricName::ToolAdvice.series_names(),
            vec!["hintaudit_tool_advice"]
        );
    }
}

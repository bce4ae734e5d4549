//! The Prometheus recorder: maps audit events onto the metrics of
//! [design: telemetry names](../../../../docs/design.md#5-telemetry-names) and bounds the `tool`
//! label; `families` holds the metric families and the label handles of each tool.

mod families;

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hintaudit_core::{
    Advice, AuditEvent, AuditStage, CallReport, DeclaredHints, EvidenceSource, Finding, Recorder,
    RowOperation, Rule, stats,
};
use prometheus::Registry;

use crate::collector::AuditStatsCollector;
use crate::error::RegisterError;
use crate::labels::TableLabels;
use crate::metric_name::UNKNOWN_TOOL;
use families::{Families, ToolMetrics, ViolationKey, status_index};

/// Default cap on distinct `table` label values; further tables are `__other__`
/// ([design: telemetry names](../../../../docs/design.md#5-telemetry-names)).
pub const DEFAULT_MAX_TABLES: usize = 200;
/// Default cap on declared tools with their own `tool` label value; further tools are
/// `__unknown__`.
pub const DEFAULT_MAX_TOOLS: usize = 1000;
/// Default buckets of `hintaudit_tool_call_duration_seconds`, in seconds.
pub const DEFAULT_DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Debug)]
struct Inner {
    registry: Registry,
    families: Families,
    tools: RwLock<HashMap<Arc<str>, Arc<ToolMetrics>>>,
    unknown: Arc<ToolMetrics>,
    tables: TableLabels,
    max_tools: usize,
    tool_cap_hit: AtomicBool,
}

/// Records audit events as Prometheus metrics
/// ([design: telemetry names](../../../../docs/design.md#5-telemetry-names)). Cheap to clone
/// (an `Arc`); every clone records into the same metrics.
///
/// [`PrometheusRecorder`] implements [`Recorder`]; the rmcp layer calls it at the end of every
/// tools/call ([`AuditEvent::Call`]), for every tool of every tools/list answer
/// ([`AuditEvent::Listing`]), and for every tool `HintAudit::learn_tools` learns at start-up
/// ([`AuditEvent::Declared`]), and, with a fleet's shared history, for findings settled after
/// their call or listing ([`AuditEvent::Settled`]). What each event does:
///
/// | event | metrics |
/// |---|---|
/// | declared | the tool becomes declared, as with [`PrometheusRecorder::declare_tool`]: `hintaudit_tool_declared_hints{tool,…}` is 1 for its hints, and its violation series are created at 0 (below); nothing is counted |
/// | call | `hintaudit_tool_calls_total{tool,status}` +1; `hintaudit_evidence_incomplete_total{source}` +1 per source that lost part of the call's interval (`Effect::completeness`; every source's series exists at 0 from the start); `hintaudit_tool_call_duration_seconds{tool}` observes the wall time; `hintaudit_tool_statements_total{tool,operation}` +1 per statement; `hintaudit_tool_row_changes_total{tool,table,operation}` + committed rows (hook row changes, and PostgreSQL oracle counts of committed transactions); `hintaudit_hint_violations_total{tool,rule,hint,severity}` +1 per finding; for declared tools, `hintaudit_tool_advice{tool,advice}` set to 1 or 0 for each advice, and the declared-hints gauge brought up to date (with the zero series of hints it has not shown before) |
/// | listing | the tool becomes declared; `hintaudit_tool_declared_hints{tool,…}` is 1 for its current hints (the series of its previous hints is removed), and the violation series of these hints exist, at 0 if new; when the hints differ from the previous listing of the tool, `hintaudit_tool_hints_changed_total{tool}` +1, and if the judge reported `hints_changed` for it, `hintaudit_hint_violations_total{rule="hints_changed",…}` +1 |
/// | settled | `hintaudit_hint_violations_total{tool,rule,hint,severity}` +1 per finding (`idempotency_broken` of a repeat the shared history judged, `hints_changed` the fleet saw); nothing else |
/// | corrected | `hintaudit_tool_hints_corrected_total{tool}` +1 (`correct_hints`: the layer started serving the tool's hints corrected, or tightened them further); the series exists at 0 from the tool's declaration, as the hints-changed counter |
///
/// **Zero series.** A counter series that first appears at 1 is invisible to `increase()` and
/// `rate()`, so an alert on the first violation would never fire. Whenever a declared tool's
/// hints are shown (declared, listed, or first called), every
/// `hintaudit_hint_violations_total{tool,rule,hint,severity}` series those hints allow exists
/// from then on, at 0 until a finding counts: for each rule that
/// [applies](hintaudit_core::Rule::applies_to) to the hints (`read_only_write` and
/// `read_only_write_attempt` when `readOnlyHint` is true; `undeclared_destructive` when it is
/// not and `destructiveHint` is false; `idempotency_broken` when it is not and `idempotentHint`
/// is true; `undeclared_open_world` when `openWorldHint` is false; `hints_changed` always),
/// with each hint a finding of the rule names ([`hintaudit_core::Rule::hints`]: the rule's
/// own hint; any of the four for `hints_changed`) and the rule's severity. When hints change,
/// the series the new hints allow appear at 0; no violation series is ever removed. The
/// `__unknown__` tool has no zero series.
///
/// So declare the tools at start-up, before the first scrape: `HintAudit::learn_tools` with
/// the server's own tool list (for `#[tool_router]` servers,
/// `MyServer::tool_router().list_all()`) sends one [`AuditEvent::Declared`] per tool. Otherwise
/// a tool's series appear with its first tools/list or call, and a violation in the very first
/// call of a tool is a series that starts at 1.
///
/// Listing findings `hint_missing` and `hint_contradiction` are not counted as violations: they
/// describe a state, which every tools/list repeats, and the declared-hints gauge shows them
/// (`unset` values). A violation counter that grew with the number of client sessions would
/// say nothing.
///
/// Label values are bounded
/// ([design: telemetry names](../../../../docs/design.md#5-telemetry-names)): `tool` is a declared tool (the first
/// [`DEFAULT_MAX_TOOLS`] declared) or `__unknown__`; `table` is one of the first
/// [`DEFAULT_MAX_TABLES`] tables seen or `__other__`; `operation`, `status`, `rule`, `hint`,
/// `severity` and `advice` come from closed enums. Label handles are cached per tool, so a call
/// costs a read lock, a hash lookup and a few atomic adds.
///
/// ```
/// use hintaudit_core::*;
/// use hintaudit_telemetry::PrometheusRecorder;
/// let recorder = PrometheusRecorder::new();
/// let hints = DeclaredHints { read_only: Some(true), ..Default::default() };
/// recorder.record(&AuditEvent::Listing { tool: "get_slot", hints, findings: &[] });
/// let (effect, verdict) = (Effect::default(), Verdict::default());
/// let report = CallReport {
///     tool: "get_slot", known_tool: true, hints, status: CallStatus::Ok,
///     duration: std::time::Duration::from_millis(3), effect: &effect, verdict: &verdict,
/// };
/// recorder.record(&AuditEvent::Call(&report));
/// let text = hintaudit_telemetry::encode_text(recorder.registry());
/// assert!(text.contains(r#"hintaudit_tool_calls_total{status="ok",tool="get_slot"} 1"#));
/// assert!(text.contains(r#"hintaudit_tool_declared_hints{destructive="unset",idempotent="unset",open_world="unset",read_only="true",tool="get_slot"} 1"#));
/// // No violation yet, but the series a read-only tool can break are there, at 0.
/// assert!(text.contains(r#"hintaudit_hint_violations_total{hint="readOnlyHint",rule="read_only_write",severity="critical",tool="get_slot"} 0"#));
/// assert!(!text.contains(r#"rule="undeclared_destructive""#));
/// ```
#[derive(Debug, Clone)]
pub struct PrometheusRecorder {
    inner: Arc<Inner>,
}

/// Builds a [`PrometheusRecorder`]. Get one with [`PrometheusRecorder::builder`].
#[derive(Debug, Clone)]
pub struct PrometheusRecorderBuilder {
    registry: Option<Registry>,
    max_tables: usize,
    max_tools: usize,
    buckets: Vec<f64>,
}

impl PrometheusRecorderBuilder {
    /// Registers the metrics in `registry` (for example the server's own) instead of a new one.
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// At most `n` distinct `table` label values (default [`DEFAULT_MAX_TABLES`]); row changes
    /// of further tables count under `__other__`.
    pub fn with_max_tables(mut self, n: usize) -> Self {
        self.max_tables = n;
        self
    }

    /// At most `n` declared tools get their own `tool` label value (default
    /// [`DEFAULT_MAX_TOOLS`]); further tools count under `__unknown__`, and reaching the cap
    /// is counted once in `hintaudit_audit_errors_total{stage="record"}`.
    pub fn with_max_tools(mut self, n: usize) -> Self {
        self.max_tools = n;
        self
    }

    /// Histogram buckets of `hintaudit_tool_call_duration_seconds`, in seconds, ascending
    /// (default [`DEFAULT_DURATION_BUCKETS`]).
    pub fn with_duration_buckets(mut self, buckets: impl Into<Vec<f64>>) -> Self {
        self.buckets = buckets.into();
        self
    }

    /// Creates the metrics and registers them, with the collector of the process-wide audit
    /// counters (`hintaudit_unattributed_statements_total`, `hintaudit_audit_errors_total`).
    ///
    /// # Errors
    /// [`RegisterError`] when the registry already holds metrics of the same names (another
    /// recorder registered there), or the buckets are not ascending.
    pub fn build(self) -> Result<PrometheusRecorder, RegisterError> {
        let registry = self.registry.unwrap_or_default();
        let families = Families::new(self.buckets)?;
        families.register(&registry)?;
        registry.register(Box::new(AuditStatsCollector::new()?))?;
        let unknown = Arc::new(ToolMetrics::new(&families, Arc::from(UNKNOWN_TOOL), false));
        Ok(PrometheusRecorder {
            inner: Arc::new(Inner {
                registry,
                families,
                tools: RwLock::default(),
                unknown,
                tables: TableLabels::new(self.max_tables),
                max_tools: self.max_tools,
                tool_cap_hit: AtomicBool::new(false),
            }),
        })
    }
}

impl Default for PrometheusRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl PrometheusRecorder {
    /// A recorder with its own registry and the default limits.
    pub fn new() -> Self {
        // A fresh registry holds nothing the recorder's names could clash with, and the
        // default buckets are ascending, so this cannot fail.
        Self::builder()
            .build()
            .expect("a fresh registry accepts hintaudit's metrics")
    }

    /// A builder, to choose the registry and the label caps.
    pub fn builder() -> PrometheusRecorderBuilder {
        PrometheusRecorderBuilder {
            registry: None,
            max_tables: DEFAULT_MAX_TABLES,
            max_tools: DEFAULT_MAX_TOOLS,
            buckets: DEFAULT_DURATION_BUCKETS.to_vec(),
        }
    }

    /// The registry the metrics live in: serve it with [`crate::metrics_router`] or
    /// [`crate::serve_metrics`].
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Declares a tool with its hints, as a tools/list answer would, without counting a hints
    /// change: its declared-hints gauge and its violation series at 0 (see "Zero series"
    /// above). For servers whose tool list is known up front; [`AuditEvent::Declared`] does
    /// the same. Past the tool cap, nothing is declared.
    pub fn declare_tool(&self, tool: &str, hints: DeclaredHints) {
        if let Some(t) = self.declared(tool) {
            self.update_hints(&t, hints, None);
        }
    }

    /// The cached metrics of a declared tool, declaring it if the cap allows; `None` past the
    /// cap.
    fn declared(&self, tool: &str) -> Option<Arc<ToolMetrics>> {
        let i = &self.inner;
        {
            let tools = i.tools.read();
            if let Some(t) = tools.get(tool) {
                return Some(t.clone());
            }
            // Past the cap, stay on the read lock: no writer contention per call.
            if tools.len() >= i.max_tools {
                drop(tools);
                self.tool_cap_reached();
                return None;
            }
        }
        let mut tools = i.tools.write();
        if let Some(t) = tools.get(tool) {
            return Some(t.clone());
        }
        if tool == UNKNOWN_TOOL {
            return None;
        }
        if tools.len() >= i.max_tools {
            drop(tools);
            self.tool_cap_reached();
            return None;
        }
        let label: Arc<str> = Arc::from(tool);
        let t = Arc::new(ToolMetrics::new(&i.families, label.clone(), true));
        tools.insert(label, t.clone());
        Some(t)
    }

    /// Counts reaching the tool cap once, at stage `record`.
    fn tool_cap_reached(&self) {
        let i = &self.inner;
        if !i.tool_cap_hit.swap(true, Ordering::Relaxed) {
            stats().audit_error(
                AuditStage::Record,
                &format!(
                    "more than {} declared tools: further tools are labelled {UNKNOWN_TOOL}",
                    i.max_tools
                ),
            );
        }
    }

    /// Brings the gauge up to date; for listings (`listing` is the listing's findings), counts
    /// a change of the listed hints.
    fn update_hints(&self, t: &ToolMetrics, hints: DeclaredHints, listing: Option<&[Finding]>) {
        let Some(declared) = &t.declared else {
            return;
        };
        let f = &self.inner.families;
        let mut state = declared.state.lock();
        t.show_hints(f, &mut state, hints);
        let Some(findings) = listing else {
            return;
        };
        if let Some(prev) = state.listed.replace(hints)
            && prev != hints
        {
            declared.changed.inc();
            if let Some(finding) = findings.iter().find(|x| x.rule == Rule::HintsChanged) {
                t.violation(f, violation_key(finding));
            }
        }
    }

    fn record_call(&self, r: &CallReport<'_>) {
        let f = &self.inner.families;
        let declared = if r.known_tool {
            self.declared(r.tool)
        } else {
            None
        };
        let t = declared.as_deref().unwrap_or(&self.inner.unknown);
        t.calls[status_index(r.status)].inc();
        t.duration.observe(r.duration.as_secs_f64());
        for s in &r.effect.statements {
            t.statement(f, s.operation).inc();
        }
        self.record_rows(t, r);
        for source in r.effect.completeness.incomplete_sources() {
            let i = EvidenceSource::ALL.iter().position(|s| *s == source);
            if let Some(c) = i.and_then(|i| f.incomplete.get(i)) {
                c.inc();
            }
        }
        for finding in &r.verdict.findings {
            t.violation(f, violation_key(finding));
        }
        if let Some(declared) = &t.declared {
            for (gauge, a) in declared.advice.iter().zip(Advice::ALL) {
                gauge.set(i64::from(r.verdict.advice.contains(&a)));
            }
            self.update_hints(t, r.hints, None);
        }
    }

    /// Findings settled after their call was recorded (a fleet's shared history): counted on
    /// the violation series as a call's findings are, nothing else.
    fn record_settled(&self, tool: &str, known_tool: bool, findings: &[Finding]) {
        let declared = if known_tool {
            self.declared(tool)
        } else {
            None
        };
        let t = declared.as_deref().unwrap_or(&self.inner.unknown);
        for finding in findings {
            t.violation(&self.inner.families, violation_key(finding));
        }
    }

    /// Committed row changes, summed per (table, operation) before touching counters.
    fn record_rows(&self, t: &ToolMetrics, r: &CallReport<'_>) {
        let e = r.effect;
        if e.row_changes.is_empty() && e.transactions.is_empty() {
            return;
        }
        let mut sums: Vec<RowSum<'_>> = Vec::new();
        for c in e.row_changes.iter().filter(|c| c.committed) {
            push_sum(&mut sums, &c.table, c.operation, 1);
        }
        for tx in e.transactions.iter().filter(|tx| tx.committed) {
            for w in &tx.tables {
                push_sum(&mut sums, &w.table, RowOperation::Insert, w.inserted);
                push_sum(&mut sums, &w.table, RowOperation::Update, w.updated);
                push_sum(&mut sums, &w.table, RowOperation::Delete, w.deleted);
            }
        }
        let f = &self.inner.families;
        for s in sums {
            let label = self.inner.tables.label(s.table);
            t.rows(f, &label, s.operation, s.rows);
        }
    }
}

/// Committed rows of one (table, operation) of a call, summed before touching counters.
#[derive(Debug)]
struct RowSum<'a> {
    table: &'a str,
    operation: RowOperation,
    rows: u64,
}

fn push_sum<'a>(sums: &mut Vec<RowSum<'a>>, table: &'a str, operation: RowOperation, rows: u64) {
    if rows == 0 {
        return;
    }
    match sums
        .iter_mut()
        .find(|s| s.table == table && s.operation == operation)
    {
        Some(sum) => sum.rows += rows,
        None => sums.push(RowSum {
            table,
            operation,
            rows,
        }),
    }
}

/// The violation series a finding counts on.
fn violation_key(finding: &Finding) -> ViolationKey {
    ViolationKey {
        rule: finding.rule,
        hint: finding.hint,
        severity: finding.severity,
    }
}

impl Recorder for PrometheusRecorder {
    fn record(&self, event: &AuditEvent<'_>) {
        match event {
            AuditEvent::Call(report) => self.record_call(report),
            AuditEvent::Listing {
                tool,
                hints,
                findings,
            } => {
                if let Some(t) = self.declared(tool) {
                    self.update_hints(&t, *hints, Some(findings));
                }
            }
            AuditEvent::Declared { tool, hints } => self.declare_tool(tool, *hints),
            AuditEvent::Settled {
                tool,
                known_tool,
                findings,
                ..
            } => self.record_settled(tool, *known_tool, findings),
            AuditEvent::Corrected { tool, .. } => {
                if let Some(t) = self.declared(tool) {
                    t.corrected();
                }
            }
            _ => {}
        }
    }
}

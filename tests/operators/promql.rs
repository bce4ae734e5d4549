//! PromQL, parsed by `promql-parser` (GreptimeTeam's port of Prometheus's grammar): what an
//! expression selects, how it aggregates, and which counters it reads without a rate. Every
//! dashboard and rule expression goes through [`parse`], so each one is proven to parse here,
//! offline; the stack test also runs them against a real Prometheus.

use std::collections::BTreeSet;

use promql_parser::label::{MatchOp, Matchers};
use promql_parser::parser::{self, Expr, LabelModifier, VectorSelector};

/// The functions whose range argument makes a counter or histogram series meaningful.
/// (`histogram_quantile` reads a `rate(..._bucket[...])`, so its buckets pass through `rate`.)
const RANGE_FUNCTIONS: &[&str] = &["rate", "irate", "increase"];

/// The syntax tree of `expr`; panics with the expression and the parser's error.
pub fn parse(expr: &str) -> Expr {
    parser::parse(expr).unwrap_or_else(|e| panic!("PromQL does not parse: {e}\n  {expr}"))
}

/// What one expression reads, from its syntax tree.
#[derive(Debug, Default)]
pub struct Scan {
    /// The metric name of every vector and matrix selector, in order: the name before the
    /// braces, or the value of a `__name__="..."` / `__name__=~"..."` matcher.
    pub metrics: Vec<String>,
    /// The labels of every aggregation's `by (...)` or `without (...)` clause.
    pub grouping: BTreeSet<String>,
    /// Whether some aggregation uses `without`.
    pub without: bool,
    /// Every `label="value"` matcher of every selector.
    pub equal_matchers: BTreeSet<(String, String)>,
    /// Counter and histogram series read outside rate()/irate()/increase(), each with the
    /// function or aggregation directly around it (`None` at the top, `Some("")` in plain
    /// parentheses or as an operand).
    pub bare_counters: Vec<(String, Option<String>)>,
}

/// Parses `expr` (see [`parse`]) and walks it.
pub fn scan(expr: &str) -> Scan {
    let mut out = Scan::default();
    out.walk(&parse(expr), None);
    out
}

/// Whether a series name is a counter or a histogram's series (`_total`, `_bucket`, `_count`,
/// `_sum`): a value that only grows, meaningless until rate() or increase() takes its slope.
pub fn is_counter_series(name: &str) -> bool {
    ["_total", "_bucket", "_count", "_sum"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

impl Scan {
    /// Visits `e`, whose parent is the function or aggregation `around` (`Some("")` for any
    /// other parent, `None` at the top).
    fn walk(&mut self, e: &Expr, around: Option<&str>) {
        match e {
            Expr::VectorSelector(vs) => self.selector(vs, false, around),
            Expr::MatrixSelector(ms) => self.selector(&ms.vs, true, around),
            Expr::Aggregate(a) => {
                if let Some(modifier) = &a.modifier {
                    self.without |= matches!(modifier, LabelModifier::Exclude(_));
                    self.grouping
                        .extend(modifier.labels().labels.iter().cloned());
                }
                let op = a.op.to_string();
                if let Some(param) = &a.param {
                    self.walk(param, Some(&op));
                }
                self.walk(&a.expr, Some(&op));
            }
            Expr::Call(c) => {
                for arg in &c.args.args {
                    self.walk(arg, Some(c.func.name));
                }
            }
            Expr::Binary(b) => {
                self.walk(&b.lhs, Some(""));
                self.walk(&b.rhs, Some(""));
            }
            Expr::Paren(p) => self.walk(&p.expr, Some("")),
            Expr::Unary(u) => self.walk(&u.expr, Some("")),
            Expr::Subquery(s) => self.walk(&s.expr, Some("")),
            Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
        }
    }

    fn selector(&mut self, vs: &VectorSelector, range: bool, around: Option<&str>) {
        let matchers = |m: &Matchers| -> Vec<_> {
            let ors = m.or_matchers.iter().flatten();
            m.matchers.iter().chain(ors).cloned().collect()
        };
        let all = matchers(&vs.matchers);
        let by_matcher = all
            .iter()
            .filter(|m| m.name == "__name__" && matches!(m.op, MatchOp::Equal | MatchOp::Re(_)));
        let names: Vec<String> = vs
            .name
            .iter()
            .cloned()
            .chain(by_matcher.map(|m| m.value.clone()))
            .collect();
        for m in &all {
            if matches!(m.op, MatchOp::Equal) && m.name != "__name__" {
                self.equal_matchers
                    .insert((m.name.clone(), m.value.clone()));
            }
        }
        let meaningful = range && around.is_some_and(|f| RANGE_FUNCTIONS.contains(&f));
        for name in names {
            if is_counter_series(&name) && !meaningful {
                self.bare_counters
                    .push((name.clone(), around.map(str::to_owned)));
            }
            self.metrics.push(name);
        }
    }
}

#[test]
fn the_walk_sees_names_grouping_and_bare_counters() {
    let e = r#"histogram_quantile(0.95, sum by (tool, le) (rate(x_bucket{a="sum(y_total)"}[5m]))) / on (tool) group_left (rule) z"#;
    let s = scan(e);
    assert_eq!(s.metrics, ["x_bucket", "z"]);
    assert_eq!(s.grouping, BTreeSet::from(["tool".into(), "le".into()]));
    assert!(!s.without && s.bare_counters.is_empty(), "{s:?}");
    assert!(
        s.equal_matchers
            .contains(&("a".into(), "sum(y_total)".into()))
    );

    let bare = |e: &str| scan(e).bare_counters;
    let sum = "sum by (tool) (hintaudit_tool_calls_total) or vector(0)";
    assert_eq!(
        bare(sum),
        [("hintaudit_tool_calls_total".into(), Some("sum".into()))]
    );
    assert_eq!(
        bare("(x_total) / 2"),
        [("x_total".into(), Some(String::new()))]
    );
    assert_eq!(bare("x_total"), [("x_total".into(), None)]);
    let summed = "sum(hintaudit_tool_call_duration_seconds_count)";
    assert_eq!(bare(summed)[0].1.as_deref(), Some("sum"));
    // A range function that does not take a counter's slope does not make it meaningful.
    assert_eq!(
        bare("max_over_time(x_sum[5m])")[0].1.as_deref(),
        Some("max_over_time")
    );
    assert!(bare("sum(irate(x_total[1m])) + increase(y_count[1h])").is_empty());
    assert!(bare("tool_status:hintaudit_tool_calls:rate5m > 0").is_empty());

    let named = scan(
        r#"{__name__="a_total", job="j"} + {__name__!="b", job="j"} + count without (pod) (c)"#,
    );
    assert_eq!(named.metrics, ["a_total", "c"]);
    assert!(named.without && named.grouping.contains("pod"));
    assert_eq!(named.bare_counters.len(), 1);
}

#[test]
#[should_panic(expected = "PromQL does not parse")]
fn an_expression_that_does_not_parse_fails_with_the_parser_error() {
    parse("sum by (tool) (rate(x_total[$__rate_interval]))");
}

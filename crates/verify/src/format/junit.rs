//! JUnit XML, written with quick-xml: one testcase per tool and rule of
//! [`VERIFY_RULES`](crate::VERIFY_RULES).

use hintaudit_core::{Finding, Rule, Severity};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::report::{Report, ToolStatus, VERIFY_RULES, is_behaviour_rule};

enum Outcome {
    Pass(Option<String>),
    Fail(String, String),
    Skip(String),
}

fn evidence(findings: &[&Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "[{} {}] {}: {}",
                f.severity.as_str(),
                f.confidence.as_str(),
                f.hint.spec_name(),
                f.evidence
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The run's notes for the suite's `system-out`: the database check, tool notes,
/// suggestions, an early end, the server's stderr.
fn suite_notes(report: &Report) -> String {
    let mut lines = vec![
        format!("server: {}", report.server),
        format!("database: {}", report.database),
        format!("database check: {}", report.database_check),
    ];
    if let Some(copy) = &report.database_copy {
        lines.push(format!(
            "database copy (--reset): {copy}, made again {} times between tools",
            report.database_resets
        ));
    }
    for t in &report.tools {
        lines.extend(t.notes.iter().map(|n| format!("note: {}: {n}", t.name)));
        if let Some(s) = &t.suggestion {
            lines.push(format!("suggestion: {}: {}", t.name, s.rmcp_attribute()));
            lines.extend(s.evidence.iter().map(|e| format!("  because {e}")));
        }
    }
    if let Some(why) = &report.incomplete {
        lines.push(format!("INCOMPLETE: the run ended early: {why}"));
    }
    if !report.server_stderr.is_empty() {
        lines.push(format!(
            "server stderr (last {} lines):",
            report.server_stderr.len()
        ));
        lines.extend(report.server_stderr.iter().map(|l| format!("| {l}")));
    }
    lines.join("\n")
}

pub(super) fn render(report: &Report, fail_on: Severity) -> String {
    let mut cases: Vec<(String, String, Outcome)> = Vec::new();
    for t in &report.tools {
        for rule in VERIFY_RULES {
            let found: Vec<&Finding> = t.findings.iter().filter(|f| f.rule == rule).collect();
            let outcome = match (&t.status, found.is_empty()) {
                (ToolStatus::NotExercised(why), true) if is_behaviour_rule(rule) => {
                    Outcome::Skip(format!("not exercised: {why}"))
                }
                (_, true) if rule == Rule::UndeclaredOpenWorld && !report.outbound_watched => {
                    Outcome::Skip(
                        "outbound HTTP not watched: verify's recording proxy only sees servers \
                         it starts (--stdio)"
                            .to_owned(),
                    )
                }
                (_, true) => Outcome::Pass(None),
                (_, false) if found.iter().any(|f| f.severity >= fail_on) => Outcome::Fail(
                    format!("{} ({})", rule.as_str(), rule.severity().as_str()),
                    evidence(&found),
                ),
                (_, false) => Outcome::Pass(Some(evidence(&found))),
            };
            cases.push((t.name.clone(), rule.as_str().to_owned(), outcome));
        }
    }
    let tests = cases.len().to_string();
    let failures = cases
        .iter()
        .filter(|c| matches!(c.2, Outcome::Fail(..)))
        .count()
        .to_string();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.2, Outcome::Skip(_)))
        .count()
        .to_string();
    let time = format!("{:.3}", report.elapsed_seconds);

    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let attrs = [
        ("tests", tests.as_str()),
        ("failures", failures.as_str()),
        ("errors", "0"),
        ("skipped", skipped.as_str()),
        ("time", time.as_str()),
    ];
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let mut suites = BytesStart::new("testsuites");
    suites.push_attribute(("name", "hintaudit verify"));
    suites.extend_attributes(attrs);
    let _ = w.write_event(Event::Start(suites));
    let mut suite = BytesStart::new("testsuite");
    suite.push_attribute(("name", "hintaudit verify"));
    suite.extend_attributes(attrs);
    let _ = w.write_event(Event::Start(suite));
    for (tool, rule, outcome) in &cases {
        let mut tc = BytesStart::new("testcase");
        tc.push_attribute(("classname", tool.as_str()));
        tc.push_attribute(("name", rule.as_str()));
        tc.push_attribute(("time", "0"));
        let _ = w.write_event(Event::Start(tc));
        match outcome {
            Outcome::Pass(None) => {}
            Outcome::Pass(Some(notes)) => {
                let _ = w.write_event(Event::Start(BytesStart::new("system-out")));
                let _ = w.write_event(Event::Text(BytesText::new(notes)));
                let _ = w.write_event(Event::End(BytesEnd::new("system-out")));
            }
            Outcome::Fail(kind, text) => {
                let mut f = BytesStart::new("failure");
                f.push_attribute(("type", kind.as_str()));
                f.push_attribute(("message", text.lines().next().unwrap_or("")));
                let _ = w.write_event(Event::Start(f));
                let _ = w.write_event(Event::Text(BytesText::new(text)));
                let _ = w.write_event(Event::End(BytesEnd::new("failure")));
            }
            Outcome::Skip(why) => {
                let mut s = BytesStart::new("skipped");
                s.push_attribute(("message", why.as_str()));
                let _ = w.write_event(Event::Empty(s));
            }
        }
        let _ = w.write_event(Event::End(BytesEnd::new("testcase")));
    }
    let _ = w.write_event(Event::Start(BytesStart::new("system-out")));
    let _ = w.write_event(Event::Text(BytesText::new(&suite_notes(report))));
    let _ = w.write_event(Event::End(BytesEnd::new("system-out")));
    let _ = w.write_event(Event::End(BytesEnd::new("testsuite")));
    let _ = w.write_event(Event::End(BytesEnd::new("testsuites")));
    let mut s = String::from_utf8(w.into_inner()).unwrap_or_default();
    s.push('\n');
    s
}

//! JUnit XML, written with quick-xml: one testcase per tool and rule of
//! [`VERIFY_RULES`](crate::VERIFY_RULES).

use hintaudit_core::{Finding, Rule, Severity};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::report::{Report, ToolStatus, VERIFY_RULES, is_action_rule, is_behaviour_rule};

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

/// The document: a testsuite holding one testcase per (tool, rule), then the run's notes.
pub(super) fn render(report: &Report, fail_on: Severity) -> String {
    let cases = cases(report, fail_on);
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let counts = Counts::of(&cases, report);
    for element in ["testsuites", "testsuite"] {
        let _ = w.write_event(Event::Start(counts.open(element)));
    }
    for (tool, rule, outcome) in &cases {
        write_case(&mut w, tool, rule, outcome);
    }
    write_text(&mut w, "system-out", &suite_notes(report));
    for element in ["testsuite", "testsuites"] {
        let _ = w.write_event(Event::End(BytesEnd::new(element)));
    }
    let mut s = String::from_utf8(w.into_inner()).unwrap_or_default();
    s.push('\n');
    s
}

/// One (tool, rule name, outcome) per tool and rule of [`VERIFY_RULES`], in report order;
/// the action-metadata rules only for tools that declare action metadata.
fn cases(report: &Report, fail_on: Severity) -> Vec<(String, String, Outcome)> {
    let mut cases = Vec::new();
    for t in &report.tools {
        let rules = VERIFY_RULES
            .into_iter()
            .filter(|r| t.action.is_some() || !is_action_rule(*r));
        for rule in rules {
            let found: Vec<&Finding> = t.findings.iter().filter(|f| f.rule == rule).collect();
            let outcome = outcome(report, &t.status, rule, &found, fail_on);
            cases.push((t.name.clone(), rule.as_str().to_owned(), outcome));
        }
    }
    cases
}

/// A rule's outcome for a tool: failed by a finding at or above `fail_on`; skipped when
/// nothing could have found it (the tool not exercised, outbound HTTP not watched);
/// passed otherwise, with the lesser findings as notes.
fn outcome(
    report: &Report,
    status: &ToolStatus,
    rule: Rule,
    found: &[&Finding],
    fail_on: Severity,
) -> Outcome {
    match (status, found.is_empty()) {
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
            evidence(found),
        ),
        (_, false) => Outcome::Pass(Some(evidence(found))),
    }
}

/// The counts both `testsuites` and `testsuite` carry.
struct Counts {
    tests: String,
    failures: String,
    skipped: String,
    time: String,
}

impl Counts {
    fn of(cases: &[(String, String, Outcome)], report: &Report) -> Counts {
        let count = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.2)).count().to_string();
        Counts {
            tests: cases.len().to_string(),
            failures: count(|o| matches!(o, Outcome::Fail(..))),
            skipped: count(|o| matches!(o, Outcome::Skip(_))),
            time: format!("{:.3}", report.elapsed_seconds),
        }
    }

    fn open<'a>(&'a self, element: &'a str) -> BytesStart<'a> {
        let mut e = BytesStart::new(element);
        e.push_attribute(("name", "hintaudit verify"));
        e.extend_attributes([
            ("tests", self.tests.as_str()),
            ("failures", self.failures.as_str()),
            ("errors", "0"),
            ("skipped", self.skipped.as_str()),
            ("time", self.time.as_str()),
        ]);
        e
    }
}

fn write_case(w: &mut Writer<Vec<u8>>, tool: &str, rule: &str, outcome: &Outcome) {
    let mut tc = BytesStart::new("testcase");
    tc.push_attribute(("classname", tool));
    tc.push_attribute(("name", rule));
    tc.push_attribute(("time", "0"));
    let _ = w.write_event(Event::Start(tc));
    match outcome {
        Outcome::Pass(None) => {}
        Outcome::Pass(Some(notes)) => write_text(w, "system-out", notes),
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

/// `<element>text</element>`.
fn write_text(w: &mut Writer<Vec<u8>>, element: &str, text: &str) {
    let _ = w.write_event(Event::Start(BytesStart::new(element)));
    let _ = w.write_event(Event::Text(BytesText::new(text)));
    let _ = w.write_event(Event::End(BytesEnd::new(element)));
}

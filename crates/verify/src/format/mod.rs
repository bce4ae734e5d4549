//! Report formats: a text table for people, JSON for tools, JUnit XML and SARIF 2.1.0 for CI.

mod json;
mod junit;
mod sarif;
mod table;

use hintaudit_core::{OutboundReach, Severity};
use serde_json::{Value, json};

use crate::report::Report;

/// The `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// A text table: one line per tool, then findings and advice.
    #[default]
    Table,
    /// One JSON document: the whole report, tool by tool.
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

/// One outbound request as JSON: method, host, port (null when unknown).
fn reach_json(o: &OutboundReach) -> Value {
    json!({"method": o.method, "host": o.host, "port": o.port})
}

/// The outbound section of JSON and SARIF: whether the recording proxy watched the server,
/// every request each tool's calls sent (with the tool), and those no call was in flight for
/// (with the tool whose call came last, null before the first call).
fn outbound_json(report: &Report) -> Value {
    let by_tool: Vec<Value> = report
        .tools
        .iter()
        .flat_map(|t| {
            t.cases
                .iter()
                .flat_map(|c| c.calls.iter())
                .flat_map(|c| c.outbound.iter())
                .map(|o| {
                    let mut v = reach_json(o);
                    v["tool"] = json!(t.name);
                    v
                })
        })
        .collect();
    let unattributed: Vec<Value> = report
        .unattributed_outbound
        .iter()
        .map(|u| {
            let mut v = reach_json(&u.request);
            v["after"] = json!(u.after);
            v
        })
        .collect();
    json!({
        "watched": report.outbound_watched,
        "requests": by_tool,
        "unattributed": unattributed,
    })
}

#[cfg(test)]
#[path = "golden_tests.rs"]
mod golden;

#[cfg(test)]
mod tests {
    use hintaudit_core::{
        Advice, Confidence, DeclaredHints, Finding, Hint, OutboundReach, Rule, Severity,
    };
    use quick_xml::events::Event;

    use super::Format;
    use crate::report::{
        CallRecord, CaseReport, Report, ToolReport, ToolStatus, VERIFY_RULES, is_action_rule,
    };
    use crate::snapshot::TableDiff;

    fn report() -> Report {
        let hints = DeclaredHints {
            read_only: Some(true),
            ..Default::default()
        };
        let case = |changes: Vec<TableDiff>| CaseReport {
            label: "generated".into(),
            from_file: false,
            made_up: vec![],
            generated: vec![("id".into(), "a value from the database".into())],
            calls: vec![CallRecord {
                error: None,
                outbound: if changes.is_empty() {
                    vec![]
                } else {
                    vec![OutboundReach::new("POST", "notify.example", Some(80))]
                },
                changes,
                files: vec![],
            }],
        };
        let diff = TableDiff {
            table: "items".into(),
            changed: 1,
            ..TableDiff::default()
        };
        Report {
            server: "python server.py".into(),
            database: "sqlite://t.db".into(),
            tools: vec![
                ToolReport {
                    name: "view <&> item".into(),
                    hints,
                    action: None,
                    status: ToolStatus::Failed,
                    findings: vec![
                        Finding::new(
                            "view <&> item",
                            Rule::ReadOnlyWrite,
                            Hint::ReadOnly,
                            Confidence::Confirmed,
                            "1 row updated in items",
                        ),
                        Finding::new(
                            "view <&> item",
                            Rule::HintMissing,
                            Hint::OpenWorld,
                            Confidence::Confirmed,
                            "openWorldHint unset; clients assume true",
                        ),
                    ],
                    advice: vec![],
                    advice_basis: vec![],
                    notes: vec![],
                    cases: vec![case(vec![diff])],
                    suggestion: None,
                },
                ToolReport {
                    name: "stats".into(),
                    hints: DeclaredHints::default(),
                    action: None,
                    status: ToolStatus::Passed,
                    findings: vec![],
                    advice: vec![Advice::CouldBeReadOnly],
                    advice_basis: vec!["generated".into()],
                    notes: vec![],
                    cases: vec![case(vec![])],
                    suggestion: None,
                },
                ToolReport {
                    name: "report".into(),
                    hints,
                    action: None,
                    status: ToolStatus::NotExercised("cannot generate \"spec\"".into()),
                    findings: vec![],
                    advice: vec![],
                    advice_basis: vec![],
                    notes: vec!["generated 16 of 32 combinations of mode values (limit 16)".into()],
                    cases: vec![],
                    suggestion: None,
                },
            ],
            stats: Default::default(),
            elapsed_seconds: 1.5,
            incomplete: None,
            database_check: "confirmed: a call of view <&> item changed table items".into(),
            database_copy: None,
            database_resets: 0,
            server_stderr: (1..=20).map(|i| format!("line {i}")).collect(),
            outbound_watched: true,
            unattributed_outbound: vec![crate::UnattributedRequest {
                request: OutboundReach::new("CONNECT", "telemetry.example", Some(443)),
                after: None,
            }],
            watched: vec![],
        }
    }

    #[test]
    fn junit_is_well_formed_with_one_testcase_per_tool_and_rule() {
        let xml = Format::Junit.render(&report(), Severity::Warning);
        let mut reader = quick_xml::Reader::from_str(&xml);
        let (mut cases, mut failures, mut skipped) = (0, 0, 0);
        loop {
            match reader.read_event().expect("well-formed") {
                Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                    "testcase" => cases += 1,
                    "failure" => failures += 1,
                    "skipped" => skipped += 1,
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        // No tool declares action metadata: no testcase of the action rules.
        let rules = VERIFY_RULES.iter().filter(|r| !is_action_rule(**r)).count();
        assert_eq!(cases, 3 * rules);
        assert_eq!(failures, 1, "hint_missing is info, below --fail-on warning");
        assert_eq!(skipped, 4, "the not-exercised tool's call rules");
        let strict = Format::Junit.render(&report(), Severity::Info);
        assert_eq!(strict.matches("<failure").count(), 2);
        // Without the recording proxy (a --url server), no open-world testcase passes.
        let unwatched = Report {
            outbound_watched: false,
            ..report()
        };
        let xml = Format::Junit.render(&unwatched, Severity::Warning);
        assert_eq!(xml.matches("<skipped").count(), 4 + 2, "{xml}");
        assert!(xml.contains("outbound HTTP not watched"), "{xml}");
    }

    #[test]
    fn sarif_json_and_table_carry_the_findings() {
        let sarif: serde_json::Value =
            serde_json::from_str(&Format::Sarif.render(&report(), Severity::Warning)).unwrap();
        assert_eq!(sarif["version"], "2.1.0");
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 3, "two findings and the not-exercised note");
        assert_eq!(results[2]["ruleId"], "not_exercised");
        assert_eq!(
            sarif["runs"][0]["properties"]["server_stderr"][19],
            "line 20"
        );
        assert_eq!(results[0]["ruleId"], "read_only_write");
        assert_eq!(results[0]["level"], "error");
        assert_eq!(results[1]["level"], "note");
        // The schema is the one tests/verify validates real runs against.
        let schema: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../tests/verify/sarif-schema-2.1.0.json"
        ))
        .unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&sarif)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let json: serde_json::Value =
            serde_json::from_str(&Format::Json.render(&report(), Severity::Warning)).unwrap();
        assert_eq!(json["summary"]["not_exercised"], 1);
        assert_eq!(
            json["tools"][0]["cases"][0]["calls"][0]["changes"][0]["changed"],
            1
        );
        assert_eq!(
            json["tools"][1]["advice"][0]["advice"],
            "could_be_read_only"
        );
        assert_eq!(json["server_stderr"].as_array().unwrap().len(), 20);
        // Outbound requests: per call, per tool, and those no call was in flight for.
        assert_eq!(
            json["tools"][0]["cases"][0]["calls"][0]["outbound"][0],
            serde_json::json!({"method": "POST", "host": "notify.example", "port": 80})
        );
        assert_eq!(json["outbound"]["requests"][0]["tool"], "view <&> item");
        assert_eq!(json["outbound"]["unattributed"][0]["method"], "CONNECT");
        assert_eq!(json["outbound"]["watched"], true);
        assert_eq!(
            sarif["runs"][0]["properties"]["outbound"]["unattributed"][0]["host"],
            "telemetry.example"
        );
        assert_eq!(
            json["tools"][2]["notes"][0],
            "generated 16 of 32 combinations of mode values (limit 16)"
        );
        let junit = Format::Junit.render(&report(), Severity::Warning);
        assert!(
            junit.contains("| line 1\n") && junit.contains("| line 20"),
            "{junit}"
        );
        assert!(junit.contains("16 of 32 combinations"), "{junit}");
        let table = Format::Table.render(&report(), Severity::Warning);
        assert!(
            table.contains("  | line 1\n") && table.contains("16 of 32"),
            "{table}"
        );
        assert!(table.contains("not exercised  report"), "{table}");
        assert!(table.contains("advice         stats"), "{table}");
        assert!(
            table.contains("arguments      stats  generated: id from a value from the database"),
            "{table}"
        );
        assert!(
            table.contains("outbound       view <&> item  POST notify.example:80, not forwarded"),
            "{table}"
        );
        assert!(
            table.contains("unattributed: CONNECT telemetry.example:443 (before the first call"),
            "{table}"
        );
    }
}

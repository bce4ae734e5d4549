//! Report formats on a real run: JUnit XML is well-formed with one testcase per tool and
//! rule; SARIF validates against the SARIF 2.1.0 schema; JSON parses; the table lists tools.

use hintaudit_core::Severity;
use hintaudit_verify::{Format, VERIFY_RULES, is_action_rule};
use quick_xml::events::Event;

use crate::python::verify_python_stdio;
use crate::support::*;

#[tokio::test]
async fn junit_sarif_json_and_table_render_a_real_run() {
    let Some(py) = python_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let report = verify_python_stdio(&py, dir.path()).await;
    let tools = report.tools.len();

    // JUnit: well-formed, one testcase per (tool, rule), failures for findings >= warning.
    let xml = Format::Junit.render(&report, Severity::Warning);
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut testcases, mut failures, mut skipped) = (0, 0, 0);
    let mut names = std::collections::BTreeSet::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                "testcase" => {
                    testcases += 1;
                    let attr = |k: &str| {
                        e.try_get_attribute(k)
                            .unwrap()
                            .map(|a| a.value.to_string())
                            .unwrap()
                    };
                    names.insert((attr("classname"), attr("name")));
                }
                "failure" => failures += 1,
                "skipped" => skipped += 1,
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    // No tool of the fixture declares action metadata: no testcase of the action rules.
    let rules = VERIFY_RULES.iter().filter(|r| !is_action_rule(**r)).count();
    assert_eq!(testcases, tools * rules);
    assert_eq!(names.len(), testcases, "one testcase per tool and rule");
    assert_eq!(
        failures, 6,
        "the five planted call findings and hints_changed fail; info findings do not"
    );
    // run_report is not exercised: its four call rules are skipped, never passed.
    assert_eq!(skipped, 4);
    let strict = Format::Junit.render(&report, Severity::Info);
    assert_eq!(strict.matches("<failure").count(), 8); // + hint_missing, hint_contradiction

    // SARIF: valid against the 2.1.0 schema, one result per finding.
    let sarif: serde_json::Value =
        serde_json::from_str(&Format::Sarif.render(&report, Severity::Warning)).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/verify/sarif-schema-2.1.0.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF invalid: {errors:#?}");
    // One result per finding, and a `not_exercised` note per tool no call exercised.
    assert_eq!(
        sarif["runs"][0]["results"].as_array().unwrap().len(),
        report.findings().count() + report.unexercised().count()
    );

    // JSON: parses, and carries the summary and the not-exercised reasons.
    let json: serde_json::Value =
        serde_json::from_str(&Format::Json.render(&report, Severity::Warning)).unwrap();
    assert_eq!(json["summary"]["tools"], tools);
    assert_eq!(json["summary"]["failed"], 5);
    assert_eq!(json["summary"]["not_exercised"], 1);

    let table = Format::Table.render(&report, Severity::Warning);
    assert!(table.contains("view_item") && table.contains("read_only_write"));
}

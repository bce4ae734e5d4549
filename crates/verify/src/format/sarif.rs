//! SARIF 2.1.0, built with serde-sarif's typed model: one result per finding, located at the
//! tool (a logical location of kind `function`).

use hintaudit_core::Severity;
use serde_sarif::sarif;

use crate::report::{Report, VERIFY_RULES};

fn level(s: Severity) -> sarif::ResultLevel {
    match s {
        Severity::Critical => sarif::ResultLevel::Error,
        Severity::Warning => sarif::ResultLevel::Warning,
        Severity::Info => sarif::ResultLevel::Note,
    }
}

fn description(rule: hintaudit_core::Rule) -> &'static str {
    use hintaudit_core::Rule::*;
    match rule {
        ReadOnlyWrite => "A tool declaring readOnlyHint true changed the database.",
        UndeclaredDestructive => {
            "A tool declaring destructiveHint false deleted or overwrote rows."
        }
        IdempotencyBroken => {
            "A tool declaring idempotentHint true changed the database again when repeated with the same arguments."
        }
        HintMissing => "A meaningful hint is unset (or null); clients assume the cautious default.",
        HintContradiction => "readOnlyHint and destructiveHint are both true.",
        HintsChanged => "tools/list served other hints for the tool after it was called.",
        _ => "",
    }
}

pub(super) fn render(report: &Report) -> String {
    let rules: Vec<sarif::ReportingDescriptor> = VERIFY_RULES
        .iter()
        .map(|r| {
            sarif::ReportingDescriptor::builder()
                .id(r.as_str())
                .name(r.as_str())
                .short_description(
                    sarif::MultiformatMessageString::builder()
                        .text(description(*r))
                        .build(),
                )
                .default_configuration(
                    sarif::ReportingConfiguration::builder()
                        .level(serde_json::to_value(level(r.severity())).unwrap_or_default())
                        .build(),
                )
                .build()
        })
        .collect();
    let results: Vec<sarif::Result> = report
        .findings()
        .map(|f| {
            let index = VERIFY_RULES.iter().position(|r| *r == f.rule).unwrap_or(0) as i64;
            let location = sarif::Location::builder()
                .logical_locations(vec![
                    sarif::LogicalLocation::builder()
                        .name(f.tool.as_str())
                        .fully_qualified_name(format!("tools/{}", f.tool))
                        .kind("function")
                        .build(),
                ])
                .build();
            let mut props = std::collections::BTreeMap::new();
            props.insert("hint".to_owned(), serde_json::json!(f.hint.spec_name()));
            props.insert(
                "confidence".to_owned(),
                serde_json::json!(f.confidence.as_str()),
            );
            props.insert(
                "severity".to_owned(),
                serde_json::json!(f.severity.as_str()),
            );
            sarif::Result::builder()
                .rule_id(f.rule.as_str())
                .rule_index(index)
                .level(level(f.severity))
                .message(
                    sarif::Message::builder()
                        .text(format!("{}: {}", f.tool, f.evidence))
                        .build(),
                )
                .locations(vec![location])
                .properties(
                    sarif::PropertyBag::builder()
                        .additional_properties(props)
                        .build(),
                )
                .build()
        })
        .collect();
    let driver = sarif::ToolComponent::builder()
        .name("hintaudit verify")
        .version(env!("CARGO_PKG_VERSION"))
        .rules(rules)
        .build();
    let run = sarif::Run::builder()
        .tool(sarif::Tool::builder().driver(driver).build())
        .results(results)
        .build();
    let doc = sarif::Sarif::builder()
        .schema("https://json.schemastore.org/sarif-2.1.0.json")
        .version(serde_json::json!("2.1.0"))
        .runs(vec![run])
        .build();
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

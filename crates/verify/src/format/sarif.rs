//! SARIF 2.1.0, built with serde-sarif's typed model: one result per finding, located at the
//! tool (a logical location of kind `function`).

use hintaudit_core::Severity;
use serde_sarif::sarif;

use crate::report::{Report, ToolStatus, VERIFY_RULES};
use crate::suggestion::Suggestion;

/// The id of the note for a tool no call exercised (not a rule of the judge).
const NOT_EXERCISED: &str = "not_exercised";

/// A SARIF fix: the suggestion's JSON patch, inserted into the tools/list answer.
fn fix(tool: &str, s: &Suggestion) -> sarif::Fix {
    let patch = serde_json::to_string(&s.json_patch()).unwrap_or_default();
    let replacement = sarif::Replacement::builder()
        .deleted_region(
            sarif::Region::builder()
                .char_offset(0)
                .char_length(0)
                .build(),
        )
        .inserted_content(sarif::ArtifactContent::builder().text(patch).build())
        .build();
    let change = sarif::ArtifactChange::builder()
        .artifact_location(
            sarif::ArtifactLocation::builder()
                .uri("mcp:tools/list")
                .build(),
        )
        .replacements(vec![replacement])
        .build();
    sarif::Fix::builder()
        .description(
            sarif::Message::builder()
                .text(format!(
                    "{tool}: {} (JSON patch over the tools/list answer); because {}",
                    s.rmcp_attribute(),
                    s.evidence.join("; ")
                ))
                .build(),
        )
        .artifact_changes(vec![change])
        .build()
}

fn location(tool: &str) -> sarif::Location {
    sarif::Location::builder()
        .logical_locations(vec![
            sarif::LogicalLocation::builder()
                .name(tool)
                .fully_qualified_name(format!("tools/{tool}"))
                .kind("function")
                .build(),
        ])
        .build()
}

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
    let mut rules: Vec<sarif::ReportingDescriptor> = VERIFY_RULES
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
    rules.push(
        sarif::ReportingDescriptor::builder()
            .id(NOT_EXERCISED)
            .name(NOT_EXERCISED)
            .short_description(
                sarif::MultiformatMessageString::builder()
                    .text("No call exercised the tool: its hints are unchecked, not passed.")
                    .build(),
            )
            .default_configuration(
                sarif::ReportingConfiguration::builder()
                    .level(serde_json::json!("note"))
                    .build(),
            )
            .build(),
    );
    let mut fixed: Vec<&str> = Vec::new();
    let mut results: Vec<sarif::Result> = report
        .findings()
        .map(|f| {
            let index = VERIFY_RULES.iter().position(|r| *r == f.rule).unwrap_or(0) as i64;
            let location = location(&f.tool);
            let fixes = report
                .tool(&f.tool)
                .and_then(|t| t.suggestion.as_ref())
                .filter(|_| !fixed.contains(&f.tool.as_str()))
                .map(|s| vec![fix(&f.tool, s)]);
            if fixes.is_some() {
                fixed.push(f.tool.as_str());
            }
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
            let result = sarif::Result::builder()
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
                );
            match fixes {
                Some(fixes) => result.fixes(fixes).build(),
                None => result.build(),
            }
        })
        .collect();
    for t in &report.tools {
        if let ToolStatus::NotExercised(why) = &t.status {
            results.push(
                sarif::Result::builder()
                    .rule_id(NOT_EXERCISED)
                    .rule_index(VERIFY_RULES.len() as i64)
                    .level(sarif::ResultLevel::Note)
                    .message(
                        sarif::Message::builder()
                            .text(format!("{}: not exercised: {why}", t.name))
                            .build(),
                    )
                    .locations(vec![location(&t.name)])
                    .build(),
            );
        }
        // Suggestions (advice) on tools without a finding to hang them on.
        if let Some(s) = &t.suggestion
            && !fixed.contains(&t.name.as_str())
        {
            results.push(
                sarif::Result::builder()
                    .rule_id("suggested_annotations")
                    .level(sarif::ResultLevel::Note)
                    .message(
                        sarif::Message::builder()
                            .text(format!("{}: {}", t.name, s.rmcp_attribute()))
                            .build(),
                    )
                    .locations(vec![location(&t.name)])
                    .fixes(vec![fix(&t.name, s)])
                    .build(),
            );
        }
    }
    let mut run_props = std::collections::BTreeMap::new();
    run_props.insert("server".to_owned(), serde_json::json!(report.server));
    run_props.insert("database".to_owned(), serde_json::json!(report.database));
    run_props.insert(
        "database_check".to_owned(),
        serde_json::json!(report.database_check),
    );
    run_props.insert(
        "database_copy".to_owned(),
        serde_json::json!(report.database_copy),
    );
    run_props.insert("outbound".to_owned(), super::outbound_json(report));
    run_props.insert(
        "database_resets".to_owned(),
        serde_json::json!(report.database_resets),
    );
    run_props.insert(
        "incomplete".to_owned(),
        serde_json::json!(report.incomplete),
    );
    run_props.insert(
        "server_stderr".to_owned(),
        serde_json::json!(report.server_stderr),
    );
    let notes: Vec<String> = report
        .tools
        .iter()
        .flat_map(|t| t.notes.iter().map(move |n| format!("{}: {n}", t.name)))
        .collect();
    run_props.insert("notes".to_owned(), serde_json::json!(notes));
    let driver = sarif::ToolComponent::builder()
        .name("hintaudit verify")
        .version(env!("CARGO_PKG_VERSION"))
        .rules(rules)
        .build();
    let run = sarif::Run::builder()
        .tool(sarif::Tool::builder().driver(driver).build())
        .results(results)
        .properties(
            sarif::PropertyBag::builder()
                .additional_properties(run_props)
                .build(),
        )
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

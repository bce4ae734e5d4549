//! SARIF 2.1.0, built with serde-sarif's typed model: one result per finding, located at the
//! tool (a logical location of kind `function`).

use hintaudit_core::{Finding, Severity};
use serde_sarif::sarif;

use crate::report::{Report, ToolReport, ToolStatus, VERIFY_RULES};
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
        .description(message(format!(
            "{tool}: {} (JSON patch over the tools/list answer); because {}",
            s.rmcp_attribute(),
            s.evidence.join("; ")
        )))
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
        UndeclaredOutcome => {
            "A tool declaring action metadata outcome benign changed or deleted something."
        }
        UndeclaredDestination => {
            "A tool declaring action metadata inputMetadata.destination internal sent a request outside the closed world."
        }
        ActionMetadataMissing => "Action metadata without outcome or inputMetadata.destination.",
        ActionMetadataContradiction => {
            "Action metadata contradicts the hints (outcome benign with destructiveHint true, or destination external with openWorldHint false)."
        }
        _ => "",
    }
}

/// The document: one run whose driver lists the rules, one result per finding (the first
/// of a tool's findings carries its suggestion as a fix), a note per tool no call
/// exercised, a note per suggestion without a finding, and the run's facts as properties.
pub(super) fn render(report: &Report) -> String {
    let mut fixed: Vec<&str> = Vec::new();
    let mut results: Vec<sarif::Result> = report
        .findings()
        .map(|f| finding_result(report, f, &mut fixed))
        .collect();
    results.extend(report.tools.iter().flat_map(|t| tool_notes(t, &fixed)));
    let driver = sarif::ToolComponent::builder()
        .name("hintaudit verify")
        .version(env!("CARGO_PKG_VERSION"))
        .rules(rules())
        .build();
    let run = sarif::Run::builder()
        .tool(sarif::Tool::builder().driver(driver).build())
        .results(results)
        .properties(
            sarif::PropertyBag::builder()
                .additional_properties(run_properties(report))
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

/// The rules, in [`VERIFY_RULES`] order (results point at them by index), then
/// `not_exercised`.
fn rules() -> Vec<sarif::ReportingDescriptor> {
    let mut rules: Vec<sarif::ReportingDescriptor> = VERIFY_RULES
        .iter()
        .map(|r| {
            let level = serde_json::to_value(level(r.severity())).unwrap_or_default();
            rule(r.as_str(), description(*r), level)
        })
        .collect();
    rules.push(rule(
        NOT_EXERCISED,
        "No call exercised the tool: its hints are unchecked, not passed.",
        serde_json::json!("note"),
    ));
    rules
}

fn rule(id: &str, text: &str, level: serde_json::Value) -> sarif::ReportingDescriptor {
    sarif::ReportingDescriptor::builder()
        .id(id)
        .name(id)
        .short_description(
            sarif::MultiformatMessageString::builder()
                .text(text)
                .build(),
        )
        .default_configuration(
            sarif::ReportingConfiguration::builder()
                .level(level)
                .build(),
        )
        .build()
}

/// A finding's result; the first of its tool's findings (not yet in `fixed`) carries the
/// tool's suggestion as a fix, and puts the tool in `fixed`.
fn finding_result<'r>(
    report: &'r Report,
    f: &'r Finding,
    fixed: &mut Vec<&'r str>,
) -> sarif::Result {
    let index = VERIFY_RULES.iter().position(|r| *r == f.rule).unwrap_or(0) as i64;
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
        .message(message(format!("{}: {}", f.tool, f.evidence)))
        .locations(vec![location(&f.tool)])
        .properties(
            sarif::PropertyBag::builder()
                .additional_properties(props)
                .build(),
        );
    match fixes {
        Some(fixes) => result.fixes(fixes).build(),
        None => result.build(),
    }
}

/// A tool's notes: `not_exercised`, and its suggestion when no finding carried it
/// (advice alone).
fn tool_notes(t: &ToolReport, fixed: &[&str]) -> Vec<sarif::Result> {
    let mut results = Vec::new();
    if let ToolStatus::NotExercised(why) = &t.status {
        results.push(
            sarif::Result::builder()
                .rule_id(NOT_EXERCISED)
                .rule_index(VERIFY_RULES.len() as i64)
                .level(sarif::ResultLevel::Note)
                .message(message(format!("{}: not exercised: {why}", t.name)))
                .locations(vec![location(&t.name)])
                .build(),
        );
    }
    if let Some(s) = &t.suggestion
        && !fixed.contains(&t.name.as_str())
    {
        results.push(
            sarif::Result::builder()
                .rule_id("suggested_annotations")
                .level(sarif::ResultLevel::Note)
                .message(message(format!("{}: {}", t.name, s.rmcp_attribute())))
                .locations(vec![location(&t.name)])
                .fixes(vec![fix(&t.name, s)])
                .build(),
        );
    }
    results
}

fn message(text: String) -> sarif::Message {
    sarif::Message::builder().text(text).build()
}

/// The run's facts: server, database, the database check and copy, outbound requests,
/// an early end, the server's stderr, the tools' notes.
fn run_properties(report: &Report) -> std::collections::BTreeMap<String, serde_json::Value> {
    let notes: Vec<String> = report
        .tools
        .iter()
        .flat_map(|t| t.notes.iter().map(move |n| format!("{}: {n}", t.name)))
        .collect();
    [
        ("server", serde_json::json!(report.server)),
        ("database", serde_json::json!(report.database)),
        ("database_check", serde_json::json!(report.database_check)),
        ("database_copy", serde_json::json!(report.database_copy)),
        ("outbound", super::outbound_json(report)),
        ("database_resets", serde_json::json!(report.database_resets)),
        ("incomplete", serde_json::json!(report.incomplete)),
        ("server_stderr", serde_json::json!(report.server_stderr)),
        ("notes", serde_json::json!(notes)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

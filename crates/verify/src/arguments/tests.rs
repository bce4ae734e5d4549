//! Argument generation from input schemas: values, modes, ids, SQL fields, sources.

use super::*;

#[test]
fn required_fields_defaults_examples_enums() {
    let schema = json!({
        "type": "object",
        "properties": {
            "guest": {"type": "string", "examples": ["Ada"]},
            "nights": {"type": "integer", "default": 2},
            "room": {"type": "string", "enum": ["single"]},
            "email": {"type": "string", "format": "email"},
            "note": {"type": "string"},
            "when": {"anyOf": [{"$ref": "#/$defs/Day"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}
        },
        "required": ["guest", "nights", "room", "email", "when", "tags"],
        "$defs": {"Day": {"type": "string", "format": "date"}}
    });
    let p = plan(&schema).unwrap();
    assert_eq!(
        Value::Object(p.base.clone()),
        json!({"guest": "Ada", "nights": 2, "room": "single",
               "email": "hintaudit@example.com", "when": "2030-01-01", "tags": ["hintaudit"]})
    );
    assert!(p.ids.is_empty() && p.modes.is_empty());
    assert_eq!(p.expand(&Map::new()).sets.len(), 1);
    assert_eq!(p.made_up, ["email", "when", "tags"]);
}

#[test]
fn modes_expand_and_ids_wait_for_the_database() {
    let schema = json!({
        "type": "object",
        "properties": {
            "booking_id": {"type": "integer"},
            "mode": {"type": "string", "enum": ["preview", "apply"]},
            "dry_run": {"type": "boolean"}
        },
        "required": ["booking_id"]
    });
    let p = plan(&schema).unwrap();
    assert_eq!(
        p.ids,
        vec![IdField {
            name: "booking_id".into(),
            ty: "integer".into()
        }]
    );
    let mut ids = Map::new();
    ids.insert("booking_id".into(), typed("7", "integer"));
    let e = p.expand(&ids);
    assert_eq!((e.sets.len(), e.combinations), (4, 4));
    assert_eq!(e.sets[0].label, "generated dry_run=true mode=preview");
    assert_eq!(e.sets[0].arguments["booking_id"], json!(7));
    assert!(e.sets[0].made_up.is_empty(), "nothing made up");
}

#[test]
fn generation_limits_are_counted_and_sql_and_optional_fields_found() {
    let modes: Map<String, Value> = (0..5)
        .map(|i| (format!("m{i}"), json!({"enum": ["a", "b"]})))
        .collect();
    let p = plan(&json!({"type": "object", "properties": modes})).unwrap();
    let e = p.expand(&Map::new());
    assert_eq!((e.sets.len(), e.combinations), (MAX_GENERATED_CASES, 32));
    let p = plan(&json!({"type": "object",
        "properties": {"query": {"type": "string", "description": "SQL to run"}},
        "required": ["query"]}))
    .unwrap();
    assert_eq!(
        (p.sql.clone(), p.made_up.clone()),
        (vec!["query".into()], vec!["query".into()])
    );
    let p = plan(&json!({"type": "object",
        "properties": {"limit": {"type": "integer", "default": 5}, "name": {"type": "string"}}}))
    .unwrap();
    let e = p.expand(&Map::new());
    assert_eq!(e.sets.len(), 2);
    assert_eq!(
        e.sets[1].arguments,
        json!({"limit": 5, "name": "hintaudit"})
    );
    assert_eq!(e.sets[1].made_up, ["name"]);
    assert_eq!(
        e.sets[1].sources,
        [
            ("limit".to_owned(), "the schema's default".to_owned()),
            ("name".to_owned(), "a placeholder of its type".to_owned())
        ]
    );
    assert!(e.sets[0].made_up.is_empty());
    // A SQL field gets the probe even with a default (postgres-mcp's `sql`, default
    // "all"), and counts as made up.
    let p = plan(&json!({"type": "object",
        "properties": {"sql": {"type": "string", "default": "all", "description": "SQL to run"}}}))
    .unwrap();
    assert_eq!(
        (p.sql.clone(), p.made_up.clone()),
        (vec!["sql".into()], vec!["sql".into()])
    );
    let e = p.expand(&Map::new());
    assert_eq!(
        e.sets[1].sources,
        [("sql".to_owned(), PROBE_SOURCE.to_owned())]
    );
}

#[test]
fn unknowable_required_fields_are_reported() {
    let schema = json!({"type": "object", "properties": {"x": {}}, "required": ["x"]});
    assert!(plan(&schema).unwrap_err().contains("\"x\""));
    assert!(plan(&json!({})).is_ok());
}

/// A string with no example, default or enum takes the first value its description quotes;
/// a tool's verb is the first creating or deleting word of its name.
#[test]
fn quoted_values_and_verbs() {
    let schema = json!({
        "type": "object",
        "properties": {
            "branch_type": {"type": "string", "description":
                "Whether to list local branches ('local'), remote branches ('remote') or all"},
            "note": {"type": "string", "description": "Don't quote me, it's 'fine'"}
        },
        "required": ["branch_type", "note"]
    });
    let p = plan(&schema).unwrap();
    assert_eq!(p.base["branch_type"], json!("local"));
    assert_eq!(p.base["note"], json!("fine"));
    assert!(
        p.sources
            .contains(&("branch_type".into(), "a value quoted in the description"))
    );
    assert_eq!(tool_verb("git_create_branch"), Some(ToolVerb::Create));
    assert_eq!(tool_verb("deleteEntities"), Some(ToolVerb::Delete));
    assert_eq!(tool_verb("git_status"), None);
    assert_eq!(name_verb("createNote"), "create");
}

use super::*;
use serde_json::json;

#[test]
fn command_lines_split_like_a_shell() {
    let (env, words) =
        split_command("DATABASE_URL='sqlite:a b.db' RUST_LOG=off bookings --stdio").unwrap();
    assert_eq!(
        env,
        vec![
            ("DATABASE_URL".into(), "sqlite:a b.db".into()),
            ("RUST_LOG".into(), "off".into())
        ]
    );
    assert_eq!(words, ["bookings", "--stdio"]);
    let (env, words) = split_command("python3 server.py --opt=x").unwrap();
    assert!(env.is_empty());
    assert_eq!(words, ["python3", "server.py", "--opt=x"]);
    assert!(split_command("A=1").is_none());
    assert!(split_command("'unclosed").is_none());
    assert!(split_command("").is_none());
}

#[test]
fn listing_is_read_tolerantly() {
    let tool = json!({
        "name": "t",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": null, "destructiveHint": "yes", "idempotentHint": true}
    });
    let info = ToolInfo::from_json(&tool).unwrap();
    assert_eq!(info.hints.read_only, None);
    assert_eq!(info.hints.destructive, None);
    assert_eq!(info.hints.idempotent, Some(true));
    assert_eq!(info.null_hints, vec![Hint::ReadOnly, Hint::Destructive]);
    let bare = ToolInfo::from_json(&json!({"name": "u", "annotations": null})).unwrap();
    assert_eq!(bare.hints, DeclaredHints::default());
    assert!(bare.input_schema.is_object());
    assert!(ToolInfo::from_json(&json!({"annotations": {}})).is_none());
}

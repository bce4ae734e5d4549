//! One row per rewrite of a document: the counts the judgement gives.

use super::*;

/// The counts of `old` → `new`, `None` when they are not both documents or do not compare.
fn change(old: &str, new: &str) -> Option<RecordsChange> {
    Records::of(old.as_bytes())?.change_to(&Records::of(new.as_bytes())?)
}

const MEMORY: &str = r#"{"type":"entity","name":"Alice","entityType":"person","observations":["likes tea"]}
{"type":"entity","name":"Bob","entityType":"person","observations":[]}
{"type":"relation","from":"Alice","to":"Bob","relationType":"knows"}
{"type":"relation","from":"Bob","to":"Alice","relationType":"knows"}
"#;

#[test]
fn rewrites_counted_by_record() {
    let memory = |f: &dyn Fn(&str) -> String| f(MEMORY);
    let rows: Vec<(&str, String, String, Option<&str>, bool)> = vec![
        (
            "an entity added, the file written whole",
            MEMORY.into(),
            format!(
                "{{\"type\":\"entity\",\"name\":\"Carol\",\"entityType\":\"person\",\"observations\":[]}}\n{MEMORY}"
            ),
            Some("1 record added"),
            false,
        ),
        (
            "one relation removed is one removal",
            MEMORY.into(),
            memory(&|m| {
                m.lines()
                    .filter(|l| !l.contains("\"from\":\"Bob\""))
                    .map(|l| format!("{l}\n"))
                    .collect()
            }),
            Some("1 record removed"),
            true,
        ),
        (
            "lines reordered",
            MEMORY.into(),
            memory(&|m| m.lines().rev().map(|l| format!("{l}\n")).collect()),
            Some(""),
            false,
        ),
        (
            "an observation added to a named entity",
            MEMORY.into(),
            MEMORY.replace("[\"likes tea\"]", "[\"likes tea\",\"plays chess\"]"),
            Some("1 record changed (1 item added)"),
            false,
        ),
        (
            "an observation removed",
            MEMORY.into(),
            MEMORY.replace("[\"likes tea\"]", "[]"),
            Some("1 record changed (1 item removed)"),
            true,
        ),
        (
            "an entity added and a relation removed",
            MEMORY.into(),
            format!(
                "{}{{\"type\":\"entity\",\"name\":\"Dan\",\"observations\":[]}}\n",
                MEMORY
                    .lines()
                    .take(3)
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
            ),
            Some("1 record added, 1 removed"),
            true,
        ),
        (
            "a settings field overwritten",
            r#"{"theme": "dark", "size": 12}"#.into(),
            r#"{"size":12,"theme":"light"}"#.into(),
            Some("1 record changed (1 value replaced)"),
            true,
        ),
        (
            "a JSON document reformatted",
            r#"{"a":[1,2],"b":{"c":null}}"#.into(),
            "{\n  \"b\": { \"c\": null },\n  \"a\": [2, 1]\n}\n".into(),
            Some(""),
            false,
        ),
        (
            "records keyed by id, reordered, one value replaced",
            r#"[{"id":1,"t":"a"},{"id":2,"t":"b"}]"#.into(),
            r#"[{"id":2,"t":"b"},{"id":1,"t":"a2"}]"#.into(),
            Some("1 record changed (1 value replaced)"),
            true,
        ),
        (
            "a record without a key extended",
            "{\"a\":1}\n{\"z\":0}\n".into(),
            "{\"z\":0}\n{\"a\":1,\"b\":[2]}\n".into(),
            Some("1 record changed (1 item added)"),
            false,
        ),
        (
            "a key changed: one removed, one added",
            "{\"id\":1,\"t\":\"a\"}\n{\"id\":3}\n".into(),
            "{\"id\":2,\"t\":\"a\"}\n{\"id\":3}\n".into(),
            Some("1 record added, 1 removed"),
            true,
        ),
        (
            "one line is one record when a second line comes",
            "{\"id\":1,\"t\":\"a\"}\n".into(),
            "{\"id\":2}\n{\"t\":\"a\",\"id\":1}\n".into(),
            Some("1 record added"),
            false,
        ),
        (
            "one line left of two",
            "{\"id\":1,\"t\":\"a\"}\n{\"id\":2}\n".into(),
            "{\"id\":2}\n".into(),
            Some("1 record removed"),
            true,
        ),
        (
            "one line rewritten, a member replaced",
            "{\"id\":1,\"t\":\"a\"}\n".into(),
            "{\"id\":1,\"t\":\"b\"}\n".into(),
            Some("1 record changed (1 value replaced)"),
            true,
        ),
        (
            "a duplicated key falls back to the multiset",
            "{\"id\":1,\"t\":\"a\"}\n{\"id\":1,\"t\":\"b\"}\n".into(),
            "{\"id\":1,\"t\":\"b\"}\n{\"id\":1,\"t\":\"a\"}\n{\"id\":1,\"t\":\"c\"}\n".into(),
            Some("1 record added"),
            false,
        ),
        (
            "a member added to a top-level object",
            r#"{"notes":{"a":"x"}}"#.into(),
            r#"{"notes":{"a":"x","b":"y"},"count":1}"#.into(),
            Some("1 record added, 1 changed (1 item added)"),
            false,
        ),
        (
            "a value turned into another type",
            r#"{"a":{"b":[1]}}"#.into(),
            r#"{"a":{"b":{"0":1}}}"#.into(),
            Some("1 record changed (1 value replaced)"),
            true,
        ),
        (
            "emptied",
            "{\"id\":1}\n{\"id\":2}\n".into(),
            "".into(),
            Some("2 records removed"),
            true,
        ),
        (
            "an object against a list",
            r#"{"a":1}"#.into(),
            "[1]".into(),
            None,
            false,
        ),
    ];
    for (what, old, new, want, destructive) in rows {
        let got = change(&old, &new);
        assert_eq!(got.map(|c| c.describe()).as_deref(), want, "{what}");
        if let Some(c) = got {
            assert_eq!(c.is_destructive(), destructive, "{what}");
            assert_eq!(c.is_empty(), want == Some(""), "{what}");
        }
    }
}

#[test]
fn what_is_not_a_document() {
    for text in [
        "hello\n",
        "{\"a\":1}\nnot json\n",
        "{\"a\":1}\n42\n",
        "42",
        "{\"a\":",
    ] {
        assert_eq!(Records::of(text.as_bytes()), None, "{text:?}");
    }
    for text in ["", "  \n", "[]", "{}", "{\"a\":1}\n\n[2]\n"] {
        assert!(Records::of(text.as_bytes()).is_some(), "{text:?}");
    }
}

#[test]
fn counts_said_with_one_noun() {
    let c = RecordsChange {
        added: 2,
        removed: 1,
        changed: 3,
        items_added: 1,
        items_removed: 4,
        replaced: 2,
    };
    assert_eq!(
        c.describe(),
        "2 records added, 1 removed, 3 changed (1 item added, 4 removed, 2 values replaced)"
    );
    assert_eq!(RecordsChange::default().describe(), "");
}

//! `diff_paths` and `file_evidence` with documents judged as records.

use super::*;

fn file(content: &str) -> Node {
    Node {
        kind: NodeKind::File {
            size: content.len() as u64,
            hash: xxhash_rust::xxh3::xxh3_128(content.as_bytes()),
        },
        mode: 0o644,
    }
}

/// A document reformatted is no change; one that lost a record is destructive, and its
/// evidence counts records without naming them.
#[test]
fn documents_judged_by_records_in_a_diff() {
    let contents = [
        (
            "{\"a\":1,\"b\":[1,2]}",
            "{\n  \"b\": [2, 1],\n  \"a\": 1\n}\n",
        ),
        (
            "{\"id\":1,\"who\":\"Alice\"}\n{\"id\":2,\"who\":\"Bob\"}\n",
            "{\"id\":2,\"who\":\"Bob\"}\n",
        ),
    ];
    let paths = [
        (
            "settings.json",
            Some(file(contents[0].0)),
            Some(file(contents[0].1)),
        ),
        (
            "people.jsonl",
            Some(file(contents[1].0)),
            Some(file(contents[1].1)),
        ),
    ];
    let by_hash = |h: u128| {
        contents
            .iter()
            .flat_map(|(o, n)| [*o, *n])
            .find(|c| xxhash_rust::xxh3::xxh3_128(c.as_bytes()) == h)
            .unwrap()
    };
    let d = diff_paths(
        paths.iter().map(|(p, o, n)| (*p, *o, *n)),
        |_, h1, h2| content_change(by_hash(h1).as_bytes(), by_hash(h2).as_bytes()),
        |_| false,
    );
    let removed = RecordsChange {
        removed: 1,
        ..Default::default()
    };
    assert_eq!(
        d.changes,
        [("people.jsonl".to_owned(), ChangeKind::Records(removed))]
    );
    assert!(d.changes[0].1.is_destructive());
    let changes = [
        FileChange {
            path: "people.jsonl".into(),
            kind: ChangeKind::Records(removed),
        },
        FileChange {
            path: "new.txt".into(),
            kind: ChangeKind::Created,
        },
    ];
    let text = file_evidence("snapshot", &changes);
    assert_eq!(
        text,
        "files (snapshot): created new.txt; people.jsonl: 1 record removed"
    );
    assert!(!text.contains("Alice"));
}

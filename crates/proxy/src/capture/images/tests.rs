//! Row images compared, one row per sequence of log events.

use super::*;

/// What the log shows of a row, in a test.
enum Ev {
    /// Inserted with key `.0` as `.1`.
    Insert(u64, &'static str),
    /// Deleted, key `.0`.
    Delete(u64),
    /// Updated from key `.0` to key `.1` as `.3`, the old row logged whole as `.2`; the
    /// image the test wants.
    Update(Option<u64>, u64, Option<&'static str>, &'static str, Want),
}

#[derive(Debug, PartialEq)]
enum Want {
    Unknown,
    Unchanged,
    Changed(&'static [&'static str]),
}

/// `"id=1 qty=3 body=~"` → columns (`~`: left out as unchanged; `@1=…`: an unnamed column).
fn row(h: ValueHasher, text: &str) -> Vec<Column> {
    text.split_whitespace()
        .map(|c| {
            let (name, value) = c.split_once('=').expect("name=value");
            Column {
                name: name.to_owned(),
                value: (value != "~").then(|| h.hash(value.as_bytes())),
            }
        })
        .collect()
}

fn image(want: &Want) -> RowImage {
    match want {
        Want::Unknown => RowImage::Unknown,
        Want::Unchanged => RowImage::Unchanged,
        Want::Changed(cols) => RowImage::Changed(cols.iter().map(|c| c.to_string()).collect()),
    }
}

#[test]
fn updates_compared_with_the_rows_last_image() {
    use Ev::*;
    let cases: Vec<(&str, usize, Vec<Ev>)> = vec![
        (
            "a re-set: changed once, then the same values again",
            8,
            vec![
                Insert(1, "id=1 qty=3 views=0"),
                Update(None, 1, None, "id=1 qty=7 views=0", Want::Changed(&["qty"])),
                Update(None, 1, None, "id=1 qty=7 views=0", Want::Unchanged),
            ],
        ),
        (
            "a counter: changed at every repeat",
            8,
            vec![
                Update(None, 1, None, "id=1 views=5", Want::Unknown),
                Update(None, 1, None, "id=1 views=6", Want::Changed(&["views"])),
                Update(None, 1, None, "id=1 views=7", Want::Changed(&["views"])),
            ],
        ),
        (
            "the old row logged whole (REPLICA IDENTITY FULL, a before image) wins",
            8,
            vec![
                Insert(1, "id=1 qty=1"),
                Update(
                    Some(1),
                    1,
                    Some("id=1 qty=2"),
                    "id=1 qty=2",
                    Want::Unchanged,
                ),
                Update(
                    None,
                    1,
                    Some("id=1 qty=2"),
                    "id=1 qty=4",
                    Want::Changed(&["qty"]),
                ),
            ],
        ),
        (
            "a key that changed: the old key's image, kept under the new key",
            8,
            vec![
                Insert(1, "id=1 qty=1"),
                Update(Some(1), 2, None, "id=2 qty=1", Want::Changed(&["id"])),
                Update(None, 2, None, "id=2 qty=1", Want::Unchanged),
                Update(None, 1, None, "id=1 qty=1", Want::Unknown),
            ],
        ),
        (
            "a row deleted: its image goes",
            8,
            vec![
                Insert(1, "id=1 qty=1"),
                Delete(1),
                Update(None, 1, None, "id=1 qty=1", Want::Unknown),
            ],
        ),
        (
            "a value left out (TOAST): unchanged, and kept from before",
            8,
            vec![
                Insert(1, "id=1 body=long qty=1"),
                Update(None, 1, None, "id=1 body=~ qty=1", Want::Unchanged),
                Update(
                    None,
                    1,
                    None,
                    "id=1 body=long qty=2",
                    Want::Changed(&["qty"]),
                ),
            ],
        ),
        (
            "a value left out that was never read: unknown when it comes",
            8,
            vec![
                Update(
                    None,
                    1,
                    Some("id=1 qty=1 body=~"),
                    "id=1 qty=1 body=~",
                    Want::Unchanged,
                ),
                Update(None, 1, None, "id=1 qty=1 body=other", Want::Unknown),
            ],
        ),
        (
            "a column the last image lacks (ALTER TABLE, a minimal image): unknown",
            8,
            vec![
                Insert(1, "id=1 qty=1"),
                Update(None, 1, None, "id=1 qty=1 note=x", Want::Unknown),
            ],
        ),
        (
            "columns the log does not name: changed, unnamed",
            8,
            vec![Update(
                None,
                1,
                Some("@0=1 @1=2"),
                "@0=1 @1=3",
                Want::Changed(&[]),
            )],
        ),
        (
            "bounded: the least recently read row is forgotten",
            1,
            vec![
                Insert(1, "id=1 qty=1"),
                Insert(2, "id=2 qty=1"),
                Update(None, 1, None, "id=1 qty=1", Want::Unknown),
            ],
        ),
    ];
    for (name, max, events) in cases {
        let h = ValueHasher::with_seed(7);
        let mut images = RowImages::new(h, max);
        let key = |k: u64| [h.hash(&k.to_le_bytes())];
        for (i, ev) in events.iter().enumerate() {
            match ev {
                Insert(k, r) => images.inserted("t", Some(&key(*k)), &row(h, r)),
                Delete(k) => images.deleted("t", Some(&key(*k))),
                Update(old_key, k, old, new, want) => {
                    let old_key = key(old_key.unwrap_or(*k));
                    let old = old.map(|o| row(h, o));
                    let got = images.updated(
                        "t",
                        Some(&old_key),
                        Some(&key(*k)),
                        old.as_deref(),
                        &row(h, new),
                    );
                    assert_eq!(got, image(want), "{name}: event {i}");
                }
            }
        }
    }
}

#[test]
fn rows_of_other_tables_and_tables_without_a_key_are_apart() {
    let h = ValueHasher::with_seed(1);
    let mut images = RowImages::new(h, 8);
    let k = [h.hash(b"1")];
    images.inserted("a", Some(&k), &row(h, "id=1 qty=1"));
    let other = images.updated("b", Some(&k), Some(&k), None, &row(h, "id=1 qty=1"));
    assert_eq!(other, RowImage::Unknown, "another table's row");
    images.inserted("c", None, &row(h, "id=1 qty=1"));
    let keyless = images.updated("c", None, None, None, &row(h, "id=1 qty=1"));
    assert_eq!(keyless, RowImage::Unknown, "no key: nothing kept");
    let same = images.updated("a", Some(&k), Some(&k), None, &row(h, "id=1 qty=1"));
    assert_eq!(same, RowImage::Unchanged);
}

#[test]
fn a_table_is_empty_from_its_truncation_to_its_next_insert() {
    let mut e = EmptyTables::default();
    let steps: [(&str, &str, bool); 6] = [
        ("truncate", "t", false),
        ("truncate", "t", true),
        ("truncate", "u", false),
        ("insert", "t", false),
        ("truncate", "t", false),
        ("truncate", "u", true),
    ];
    for (i, (op, table, want)) in steps.into_iter().enumerate() {
        match op {
            "truncate" => assert_eq!(e.truncated(table), want, "step {i}"),
            _ => e.inserted(table),
        }
    }
}

#[test]
fn past_the_bound_the_least_recently_truncated_table_is_forgotten_not_the_newest() {
    let mut e = EmptyTables::default();
    for i in 0..MAX_TABLES {
        e.truncated(&format!("t{i}"));
    }
    // Truncated again: now the most recent.
    assert!(e.truncated("t0"));
    e.truncated("newest");
    assert!(e.truncated("newest"), "a table seen past the bound is kept");
    assert!(e.truncated("t0"), "recently seen");
    assert!(
        !e.truncated("t1"),
        "the least recently truncated went first"
    );
}

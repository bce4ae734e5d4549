//! The decoder's rules, row by row of test_decoding's output.

use super::*;

#[test]
fn lsns() {
    let rows = [
        ("0/21AA058", Some(0x021A_A058)),
        ("16/B374D848", Some((0x16 << 32) | 0xB374_D848)),
        ("zz", None),
        ("1/", None),
    ];
    for (text, want) in rows {
        assert_eq!(parse_lsn(text), want, "{text}");
        if let Some(lsn) = want {
            assert_eq!(
                format_lsn(lsn),
                text,
                "written back as PostgreSQL writes it"
            );
        }
    }
}

#[test]
fn rows_fold_into_commits() {
    let mut d = Decoder::default();
    let rows = [
        (1, "BEGIN 729"),
        (
            1,
            "table public.\"Items\": INSERT: id[integer]:1 name[text]:'a: DELETE: x'",
        ),
        (
            2,
            "table public.\"Items\": INSERT: id[integer]:2 name[text]:'b'",
        ),
        (3, "table s.notes: UPDATE: id[integer]:1 text[text]:'c'"),
        (3, "table s.notes: DELETE: id[integer]:2"),
        (4, "table public.t: TRUNCATE: (no-flags)"),
        (5, "COMMIT 729"),
    ];
    let mut out = Vec::new();
    for (lsn, data) in rows {
        out.extend(d.row(lsn, data));
    }
    let tables = |c: &Commit| {
        c.tables
            .iter()
            .map(|w| (w.table.clone(), w.inserted, w.updated, w.deleted))
            .collect::<Vec<_>>()
    };
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].lsn, 5);
    assert_eq!(
        tables(&out[0]),
        [("items".into(), 2, 0, 0), ("notes".into(), 0, 1, 1)]
    );
    assert_eq!(out[0].truncated, ["t"]);
    assert_eq!(out[0].writer, None, "no message: no writer");
}

#[test]
fn a_message_names_the_writer() {
    let mut d = Decoder::default();
    let rows = [
        "BEGIN 730",
        "table public.items: UPDATE: id[integer]:1 views[integer]:2",
        "message: transactional: 1 prefix: hintaudit, sz: 44 content:4242 127.0.0.1 51234 17 hintaudit:ab:3",
        "message: transactional: 1 prefix: other, sz: 3 content:1 - - 1 x",
        "COMMIT 730",
        "message: transactional: 0 prefix: hintaudit, sz: 9 content:9 - - 1 y",
    ];
    let out: Vec<Commit> = rows.iter().filter_map(|r| d.row(7, r)).collect();
    assert_eq!(out.len(), 1);
    let writer = out[0].writer.as_ref().expect("named");
    assert_eq!(
        (writer.pid, writer.application_name.as_str()),
        (4242, "hintaudit:ab:3")
    );
    assert_eq!(writer.client.map(|c| c.port()), Some(51234));
}

/// One row per sequence of test_decoding rows (each its own transaction): what the
/// last transaction's updates' images say, and the tables it truncated (removing rows,
/// and already empty). Table `items` has the key `id`; `bare` has none.
#[test]
fn row_images_from_tuples() {
    use RowImage::{Changed, Unchanged};
    let changed = |c: &[&str]| Changed(c.iter().map(|c| c.to_string()).collect());
    type Case = (
        &'static str,
        Vec<&'static str>,
        Vec<RowImage>,
        [&'static [&'static str]; 2],
    );
    let cases: Vec<Case> = vec![
        (
            "a counter: the repeat's new tuple differs from the first's",
            vec![
                "table public.items: UPDATE: id[integer]:1 name[text]:'a b' views[integer]:5",
                "table public.items: UPDATE: id[integer]:1 name[text]:'a b' views[integer]:6",
            ],
            vec![changed(&["views"])],
            [&[], &[]],
        ),
        (
            "a re-set: the same new tuple",
            vec![
                "table public.items: UPDATE: id[integer]:1 name[text]:'it''s' qty[integer]:7",
                "table public.items: UPDATE: id[integer]:1 name[text]:'it''s' qty[integer]:7",
            ],
            vec![Unchanged],
            [&[], &[]],
        ),
        (
            "the first update of a row never read: no image",
            vec!["table public.items: UPDATE: id[integer]:1 qty[integer]:7"],
            vec![],
            [&[], &[]],
        ),
        (
            "REPLICA IDENTITY FULL: the old tuple, even for a row never read",
            vec![
                "table public.bare: UPDATE: old-key: id[integer]:1 qty[integer]:3 new-tuple: id[integer]:1 qty[integer]:7",
            ],
            vec![changed(&["qty"])],
            [&[], &[]],
        ),
        (
            "a key that changed (old-key holds the key only)",
            vec![
                "table public.items: INSERT: id[integer]:1 qty[integer]:7",
                "table public.items: UPDATE: old-key: id[integer]:1 new-tuple: id[integer]:2 qty[integer]:7",
            ],
            vec![changed(&["id"])],
            [&[], &[]],
        ),
        (
            "a table without a key: no image from the last one",
            vec![
                "table public.bare: INSERT: id[integer]:1 qty[integer]:7",
                "table public.bare: UPDATE: id[integer]:1 qty[integer]:7",
            ],
            vec![],
            [&[], &[]],
        ),
        (
            "a TOAST value left out: unchanged",
            vec![
                "table public.items: INSERT: id[integer]:1 body[text]:'long' qty[integer]:1",
                "table public.items: UPDATE: id[integer]:1 body[text]:unchanged-toast-datum qty[integer]:1",
            ],
            vec![Unchanged],
            [&[], &[]],
        ),
        (
            "a repeated TRUNCATE: already empty",
            vec![
                "table public.items: TRUNCATE: (no-flags)",
                "table public.items: TRUNCATE: (no-flags)",
            ],
            vec![],
            [&[], &["items"]],
        ),
        (
            "a TRUNCATE after an insert: rows removed",
            vec![
                "table public.items: TRUNCATE: (no-flags)",
                "table public.items: INSERT: id[integer]:1 qty[integer]:1",
                "table public.items: TRUNCATE: (no-flags)",
            ],
            vec![],
            [&["items"], &[]],
        ),
    ];
    for (name, rows, want, [truncated, empty]) in cases {
        let mut d = Decoder::default();
        d.learn_key("public.items".into(), Some(vec!["id".into()]));
        d.learn_key("public.bare".into(), None);
        let mut last = None;
        for (i, row) in rows.iter().enumerate() {
            d.row(1, "BEGIN 1");
            d.row(2, row);
            last = d.row(3 + i as u64, "COMMIT 1");
        }
        let commit = last.expect("a commit");
        let images: Vec<RowImage> = commit.images.iter().map(|u| u.image.clone()).collect();
        assert_eq!(images, want, "{name}");
        assert_eq!(commit.truncated, truncated, "{name}");
        assert_eq!(commit.truncated_empty, empty, "{name}");
    }
}

#[test]
fn tuples_parse_quoted_names_types_and_values() {
    let (cols, rest) = columns_until_new_tuple(
        "\"Odd\"\"Name\"[character varying]:'a '' new-tuple: b' n[integer[]]:'{1,2}' z[text]:null new-tuple: id[integer]:1",
    );
    let got: Vec<(&str, &str, &str)> = cols.iter().map(|(n, t, v)| (n.as_str(), *t, *v)).collect();
    assert_eq!(
        got,
        [
            ("Odd\"Name", "character varying", "a '' new-tuple: b"),
            ("n", "integer[]", "{1,2}"),
            ("z", "text", "null"),
        ]
    );
    assert_eq!(rest, "new-tuple: id[integer]:1");
    let d = Decoder::default();
    assert_eq!(
        d.unknown_tables(
            [
                "BEGIN 1",
                "table public.items: INSERT: id[integer]:1",
                "table s.\"T\": DELETE: id[integer]:1",
                "table public.items: DELETE: id[integer]:1",
            ]
            .into_iter()
        ),
        ["public.items", "s.\"T\""]
    );
}

#[test]
fn names() {
    for (q, want) in [
        ("public.items", "items"),
        ("public.\"Items\"", "items"),
        ("\"a.b\".\"c\"\"d\"", "c\"d"),
    ] {
        assert_eq!(unqualified(q), want, "{q}");
    }
}

//! Row changes: inserts, updates, deletes, page splits and merges, overflow pages, WITHOUT
//! ROWID tables, triggers' writes.

use super::*;

const NOTES: &str = "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, views INTEGER NOT NULL DEFAULT 0, body TEXT)";

#[test]
fn inserts_updates_and_deletes_are_read_by_rowid_with_their_images() {
    let db = Db::new(NOTES, 0);
    let mut f = db.follower();
    db.tx("INSERT INTO notes(title) VALUES ('a'), ('b'), ('c')");
    db.tx("UPDATE notes SET views = views + 1 WHERE id = 2");
    db.tx("DELETE FROM notes WHERE id = 3");
    // SQLite does not write a page whose cell it would overwrite with the same bytes: an
    // UPDATE to the values held leaves no frame, and no commit, in the log.
    db.tx("UPDATE notes SET title = 'a' WHERE id = 1");
    db.tx("DELETE FROM notes WHERE id = 1; INSERT INTO notes(id, title) VALUES (1, 'a')");
    let got = read(&mut f);
    assert_eq!(got.len(), 4, "{got:#?}");
    let t = table(&got[0], "notes");
    assert_eq!(rowids(&t), (vec![1, 2, 3], vec![], vec![]));
    let names: Vec<&str> = t.inserted[0]
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["id", "title", "views", "body"]);
    assert_eq!(
        t.inserted[0].key,
        t.inserted[0].columns[0]
            .value
            .into_iter()
            .collect::<Vec<_>>(),
        "the key is the rowid alias' value"
    );
    assert_eq!(
        t.inserted[0].columns[2].value, t.inserted[1].columns[2].value,
        "equal values hash alike"
    );
    assert_ne!(
        t.inserted[0].columns[1].value, t.inserted[1].columns[1].value,
        "'a' and 'b' differ"
    );
    let t = table(&got[1], "notes");
    assert_eq!(rowids(&t), (vec![], vec![2], vec![]));
    assert_eq!(
        changed(&t.updated[0]),
        ["views"],
        "views = views + 1 changes views only"
    );
    assert_eq!(rowids(&table(&got[2], "notes")), (vec![], vec![], vec![3]));
    assert!(
        got[3].tables.is_empty(),
        "a row deleted and put back as it was changes no row: {:?}",
        got[3]
    );
    assert_eq!(
        got[3].unchanged,
        ["notes"],
        "but the table's page was written"
    );
    let frames: Vec<u32> = got.iter().map(|c| c.position.frame).collect();
    assert!(
        frames.windows(2).all(|w| w[0] < w[1]),
        "positions grow: {frames:?}"
    );
    assert!(read(&mut f).is_empty(), "nothing read twice");
}

#[test]
fn page_splits_and_merges_are_no_delete_plus_insert() {
    let db = Db::new(NOTES, 0);
    db.tx(&format!(
        "{}INSERT INTO notes(title, body) SELECT 'seed ' || value, printf('%.300c', 'x') FROM s",
        series(200)
    ));
    let mut f = db.follower();
    db.tx(&format!(
        "{}INSERT INTO notes(title, body) SELECT 'new ' || value, printf('%.300c', 'y') FROM s",
        series(500)
    ));
    db.tx("UPDATE notes SET body = printf('%.900c', 'z') WHERE id = 150");
    db.tx("DELETE FROM notes WHERE id BETWEEN 20 AND 600");
    db.tx("DELETE FROM notes");
    let got = read(&mut f);
    assert!(
        got[0].pages_written > 40,
        "the insert split many pages: {}",
        got[0].pages_written
    );
    let t = table(&got[0], "notes");
    assert_eq!(
        rowids(&t),
        ((201..=700).collect(), vec![], vec![]),
        "500 inserts, no row moved counted"
    );
    let t = table(&got[1], "notes");
    assert_eq!(
        rowids(&t),
        (vec![], vec![150], vec![]),
        "a row grown past its page: one update"
    );
    assert_eq!(changed(&t.updated[0]), ["body"]);
    let t = table(&got[2], "notes");
    assert_eq!(
        rowids(&t),
        (vec![], vec![], (20..=600).collect()),
        "pages merged and freed: deletes only"
    );
    let t = table(&got[3], "notes");
    let mut left: Vec<i64> = (1..20).chain(601..=700).collect();
    left.sort();
    assert_eq!(
        rowids(&t),
        (vec![], vec![], left),
        "a cleared table: every row deleted"
    );
}

#[test]
fn rows_on_overflow_pages_are_read_whole() {
    let db = Db::new(NOTES, 0);
    let mut f = db.follower();
    db.tx("INSERT INTO notes(title, body) VALUES ('big', printf('%.20000c', 'a') || 'END')");
    db.tx("UPDATE notes SET body = printf('%.20000c', 'a') || 'FIN' WHERE id = 1");
    db.tx(&format!(
        "{}INSERT INTO notes(title, body) SELECT 'filler', printf('%.3000c', 'f') FROM s",
        series(30)
    ));
    db.tx("UPDATE notes SET views = 1 WHERE id = 1");
    let got = read(&mut f);
    assert_eq!(rowids(&table(&got[0], "notes")), (vec![1], vec![], vec![]));
    let t = table(&got[1], "notes");
    assert_eq!(
        rowids(&t),
        (vec![], vec![1], vec![]),
        "only the overflow pages' tail changed"
    );
    assert_eq!(changed(&t.updated[0]), ["body"]);
    let t = table(&got[2], "notes");
    assert_eq!(
        rowids(&t),
        ((2..=31).collect(), vec![], vec![]),
        "the big row moved by the splits is unchanged"
    );
    let t = table(&got[3], "notes");
    assert_eq!(
        changed(&t.updated[0]),
        ["views"],
        "the body, read along its overflow chain, is as it was"
    );
}

#[test]
fn without_rowid_tables_are_keyed_by_their_primary_key() {
    let db = Db::new(
        "CREATE TABLE kv(ns TEXT, k INTEGER, v TEXT, PRIMARY KEY (ns, k)) WITHOUT ROWID",
        0,
    );
    let mut f = db.follower();
    db.tx(&format!(
        "{}INSERT INTO kv SELECT 'n', value, printf('%.200c', 'v') FROM s",
        series(400)
    ));
    db.tx("UPDATE kv SET v = 'short' WHERE k = 123");
    db.tx("DELETE FROM kv WHERE k > 300");
    db.tx("INSERT INTO kv VALUES ('m', 1, 'x')");
    let got = read(&mut f);
    let t = table(&got[0], "kv");
    assert_eq!(
        (t.inserted.len(), t.updated.len(), t.deleted.len()),
        (400, 0, 0),
        "rows in interior cells too"
    );
    assert!(
        t.inserted
            .iter()
            .all(|r| r.rowid.is_none() && r.key.len() == 2)
    );
    let t = table(&got[1], "kv");
    assert_eq!(
        (t.inserted.len(), t.updated.len(), t.deleted.len()),
        (0, 1, 0)
    );
    assert_eq!(changed(&t.updated[0]), ["v"]);
    let names: Vec<&str> = t.updated[0]
        .new
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["ns", "k", "v"], "declaration order");
    let t = table(&got[2], "kv");
    assert_eq!(
        (t.inserted.len(), t.updated.len(), t.deleted.len()),
        (0, 0, 100)
    );
    let t = table(&got[3], "kv");
    assert_eq!(t.inserted.len(), 1);
}

#[test]
fn a_triggers_writes_are_in_its_statements_commit() {
    let db = Db::new(
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT);
         CREATE TABLE audit(id INTEGER PRIMARY KEY AUTOINCREMENT, note INTEGER, what TEXT);
         CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN INSERT INTO audit(note, what) VALUES (new.id, 'insert'); END;
         CREATE INDEX notes_title ON notes(title);",
        0,
    );
    let mut f = db.follower();
    db.tx("INSERT INTO notes(title) VALUES ('x'), ('y')");
    let got = read(&mut f);
    assert_eq!(got.len(), 1);
    let names: Vec<&str> = got[0].tables.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(
        names,
        ["audit", "notes"],
        "sqlite_sequence, SQLite's own, left out"
    );
    assert_eq!(
        rowids(&table(&got[0], "audit")),
        (vec![1, 2], vec![], vec![])
    );
}

#[test]
fn a_python_server_in_another_process_is_read() {
    let Some(py) = python() else { return };
    let db = Db::new(
        "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, qty REAL)",
        0,
    );
    let mut f = db.follower();
    run_python(
        py,
        &db.path,
        "import sqlite3, sys\n\
         c = sqlite3.connect(sys.argv[1])\n\
         c.execute('INSERT INTO items(name, qty) VALUES (?, ?)', ('a', 1.0))\n\
         c.commit()\n\
         c.execute('INSERT INTO items(id, name, qty) VALUES (1, ?, 2.5) ON CONFLICT(id) DO UPDATE SET qty = excluded.qty', ('a',))\n\
         c.commit()\n",
    );
    let got = read(&mut f);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(rowids(&table(&got[0], "items")), (vec![1], vec![], vec![]));
    let t = table(&got[1], "items");
    assert_eq!(
        rowids(&t),
        (vec![], vec![1], vec![]),
        "an upsert that overwrites is an update"
    );
    assert_eq!(changed(&t.updated[0]), ["qty"]);
}

#[test]
fn the_log_end_is_where_the_commits_made_since_will_be_read() {
    let db = Db::new(NOTES, 0);
    let mut f = db.follower();
    let start = f.log_end().expect("the wal-index reads");
    assert_eq!(
        Some(start),
        f.position(),
        "nothing written since the first read"
    );
    db.tx("INSERT INTO notes(title) VALUES ('a')");
    db.tx("INSERT INTO notes(title) VALUES ('b')");
    let end = f.log_end().expect("the wal-index reads");
    assert!(end.sequence() > start.sequence(), "{start:?} {end:?}");
    let events = f.read().expect("read");
    let Some(Event::Commit { at, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(
        *at, end,
        "the last commit read is at the end the wal-index gave"
    );
    assert_eq!(f.position(), Some(end));
}

//! Schema changes: tables created, altered and dropped as the log goes, named from
//! `sqlite_schema`.

use super::*;

#[test]
fn tables_created_altered_and_dropped_are_followed() {
    let db = Db::new(
        "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a(v) VALUES ('1'), ('2');",
        0,
    );
    let mut f = db.follower();
    db.tx("CREATE TABLE b(id INTEGER PRIMARY KEY, w TEXT); INSERT INTO b(w) VALUES ('x')");
    db.tx("ALTER TABLE a ADD COLUMN n INTEGER DEFAULT 5");
    db.tx("UPDATE a SET v = 'one' WHERE id = 1");
    db.tx("UPDATE a SET n = 5 WHERE id = 2");
    db.tx("ALTER TABLE b RENAME TO c; INSERT INTO c(w) VALUES ('y')");
    db.tx("DROP TABLE a");
    db.tx(&format!(
        "{}INSERT INTO c(w) SELECT printf('%.500c', 'z') FROM s",
        series(100)
    ));
    let got = read(&mut f);
    assert_eq!(got[0].created, ["b"]);
    assert_eq!(rowids(&table(&got[0], "b")), (vec![1], vec![], vec![]));
    assert!(
        got[1].tables.is_empty(),
        "ADD COLUMN rewrites no row: {:?}",
        got[1]
    );
    let t = table(&got[2], "a");
    assert_eq!(
        changed(&t.updated[0]),
        ["v"],
        "the added column reads as its DEFAULT before and after"
    );
    let names: Vec<&str> = t.updated[0]
        .new
        .columns
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["id", "v", "n"]);
    let t = table(&got[3], "a");
    assert_eq!(
        rowids(&t),
        (vec![], vec![2], vec![]),
        "the record was rewritten with n stored"
    );
    assert!(
        changed(&t.updated[0]).is_empty(),
        "n = 5 where it read as its DEFAULT 5: the images are equal"
    );
    assert_eq!(
        rowids(&table(&got[4], "c")),
        (vec![2], vec![], vec![]),
        "renamed, same pages"
    );
    assert_eq!(got[5].dropped, ["a"]);
    assert!(
        got[5].tables.is_empty(),
        "a dropped table's rows are not deletes"
    );
    assert_eq!(
        rowids(&table(&got[6], "c")).0,
        (3..=102).collect::<Vec<i64>>(),
        "pages freed by the drop reused"
    );
}

#[test]
fn vacuum_moves_every_page_and_changes_no_row() {
    let db = Db::new(
        "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b(k TEXT PRIMARY KEY, v) WITHOUT ROWID;",
        0,
    );
    db.tx(&format!(
        "{}INSERT INTO a(v) SELECT printf('%.400c', 'a') FROM s",
        series(300)
    ));
    db.tx(&format!(
        "{}INSERT INTO b SELECT 'k' || value, value FROM s",
        series(300)
    ));
    db.tx("DROP TABLE a");
    let mut f = db.follower();
    db.server.execute_batch("VACUUM").unwrap();
    db.tx("UPDATE b SET v = -1 WHERE k = 'k7'");
    let got = read(&mut f);
    assert_eq!(got.len(), 2);
    let names: Vec<(&str, usize, usize, usize)> = got[0]
        .tables
        .iter()
        .map(|t| {
            (
                t.table.as_str(),
                t.inserted.len(),
                t.updated.len(),
                t.deleted.len(),
            )
        })
        .collect();
    assert!(
        names.is_empty(),
        "VACUUM changes no row, in none of {names:?}"
    );
    assert!(
        got[0].created.is_empty() && got[0].dropped.is_empty(),
        "VACUUM writes the schema anew: the same tables"
    );
    assert!(
        got[0].db_pages < 100,
        "the database shrank: {}",
        got[0].db_pages
    );
    let t = table(&got[1], "b");
    assert_eq!(
        (t.inserted.len(), t.updated.len(), t.deleted.len()),
        (0, 1, 0),
        "the page map is right after VACUUM"
    );
}

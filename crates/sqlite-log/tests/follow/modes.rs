//! Journal modes: a database in rollback-journal mode is waited for, its writes counted as
//! gaps naming `PRAGMA journal_mode=WAL`; a database created in WAL mode after the follower
//! started is read from its first frame.

use super::*;

#[test]
fn writes_in_rollback_mode_are_gaps_naming_the_pragma_then_wal_mode_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let server = Connection::open(&path).unwrap();
    server
        .execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
        .unwrap();
    let mut f = Follower::new(&path, 7).unwrap();
    assert!(f.read().unwrap().is_empty());
    assert!(!f.following(), "rollback mode: waiting");
    server
        .execute_batch("INSERT INTO t(v) VALUES ('lost')")
        .unwrap();
    let events = f.read().unwrap();
    let g = gaps(&events);
    assert_eq!(g, [GapReason::RollbackWrite], "{events:?}");
    assert!(
        g[0].to_string().contains("PRAGMA journal_mode=WAL"),
        "{}",
        g[0]
    );
    server.execute_batch("PRAGMA journal_mode=WAL").unwrap();
    assert!(
        f.read().unwrap().is_empty(),
        "WAL mode, nothing written since"
    );
    assert!(f.following());
    server
        .execute_batch("INSERT INTO t(v) VALUES ('seen')")
        .unwrap();
    let got = read(&mut f);
    assert_eq!(rowids(&table(&got[0], "t")), (vec![2], vec![], vec![]));
}

#[test]
fn a_database_created_in_wal_mode_after_the_follower_started_is_read_from_its_first_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let mut f = Follower::new(&path, 7).unwrap();
    assert!(f.read().unwrap().is_empty(), "no file yet");
    let server = Connection::open(&path).unwrap();
    server
        .execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);
             INSERT INTO t(v) VALUES ('first');",
        )
        .unwrap();
    let got = read(&mut f);
    assert!(f.following());
    assert_eq!(
        got.iter()
            .flat_map(|c| c.created.clone())
            .collect::<Vec<_>>(),
        ["t"]
    );
    let inserted: Vec<i64> = got.iter().flat_map(|c| rowids(&table(c, "t")).0).collect();
    assert_eq!(
        inserted,
        [1],
        "the write before the first snapshot is read, not lost"
    );
}

#[test]
fn a_network_filesystem_or_a_missing_directory_is_refused() {
    let err = Follower::new("/no/such/dir/app.db", 7).expect_err("a missing directory");
    assert!(err.to_string().contains("/no/such/dir"), "{err}");
}

//! Checkpoints, with the server in another process (its locks are another process's): the
//! server's own checkpoints, as often as after every commit, lose no commit; its TRUNCATE and
//! RESTART checkpoints get SQLITE_BUSY while the follower holds a snapshot; its writes are
//! never blocked.

use super::*;

/// (busy, frames in the WAL, frames copied) of the server's `PRAGMA wal_checkpoint(mode)`.
fn checkpoint(server: &mut PyServer, mode: &str) -> (i64, i64, i64) {
    let rows = server.sql(&format!("PRAGMA wal_checkpoint({mode})"));
    let n = |i: usize| rows[0][i].as_i64().expect("a number");
    (n(0), n(1), n(2))
}

fn wal_len(path: &Path) -> u64 {
    std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len())
}

/// A database with table `t`, its server in another process, and a follower after its first
/// read.
fn setup(py: &str, autocheckpoint: u32) -> (Db, PyServer, Follower) {
    let db = Db::new("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", 0);
    let server = PyServer::start(py, &db.path, autocheckpoint);
    let f = db.follower();
    (db, server, f)
}

#[test]
fn the_servers_truncate_checkpoint_gets_busy_while_the_snapshot_is_held() {
    let Some(py) = python() else { return };
    let (db, mut server, mut f) = setup(py, 0);
    server.sql("INSERT INTO t(v) VALUES ('one')");
    assert_eq!(read(&mut f).len(), 1);
    // The follower's snapshot was taken when that commit's frames were not checkpointed.
    server.sql("INSERT INTO t(v) VALUES ('two')");
    let before = wal_len(&db.path);
    for mode in ["TRUNCATE", "RESTART"] {
        let (busy, log, _) = checkpoint(&mut server, mode);
        assert_eq!(
            busy, 1,
            "{mode}: SQLITE_BUSY while the follower holds its snapshot"
        );
        assert!(log > 0, "{mode}: the WAL is kept");
    }
    assert_eq!(wal_len(&db.path), before, "the WAL was not truncated");
    server.sql("INSERT INTO t(v) VALUES ('three')");
    let got = read(&mut f);
    assert_eq!(
        got.len(),
        2,
        "the server's writes were never blocked, and both are read"
    );
    assert_eq!(f.stats().gaps, 0);
    // Once the follower's snapshot saw everything read and checkpointed, the server's
    // TRUNCATE succeeds, and loses nothing: the next generation is read from its first frame.
    let _ = read(&mut f);
    assert_eq!(
        checkpoint(&mut server, "TRUNCATE").0,
        0,
        "nothing unread: the checkpoint may truncate"
    );
    assert_eq!(wal_len(&db.path), 0);
    server.sql("INSERT INTO t(v) VALUES ('four')");
    let got = read(&mut f);
    assert_eq!(rowids(&table(&got[0], "t")), (vec![4], vec![], vec![]));
    assert_eq!(
        f.position().expect("following").generation,
        1,
        "one restart, seen"
    );
}

#[test]
fn a_server_that_checkpoints_after_every_commit_loses_no_commit() {
    let Some(py) = python() else { return };
    let (_db, mut server, mut f) = setup(py, 1);
    let mut seen = Vec::new();
    for i in 1..=60 {
        server.sql(&format!("INSERT INTO t(v) VALUES ('{i}')"));
        if i % 7 == 0 {
            // Sometimes the server goes on alone for a while, sometimes the follower reads
            // twice in a row and its second snapshot sees everything checkpointed: the WAL
            // may then restart.
            for c in read(&mut f).iter().chain(read(&mut f).iter()) {
                seen.extend(rowids(&table(c, "t")).0);
            }
        }
        if i % 11 == 0 {
            checkpoint(&mut server, "TRUNCATE");
        }
    }
    for c in read(&mut f) {
        seen.extend(rowids(&table(&c, "t")).0);
    }
    assert_eq!(
        seen,
        (1..=60).collect::<Vec<i64>>(),
        "every insert, once, in order"
    );
    let p = f.position().expect("following");
    assert!(
        p.generation > 0,
        "the WAL restarted under the follower: {p:?}"
    );
    assert_eq!(f.stats().gaps, 0);
    assert!(f.stats().checkpoints > 0);
}

#[test]
fn the_followers_own_checkpoint_is_passive_and_after_reading() {
    let Some(py) = python() else { return };
    let (db, mut server, mut f) = setup(py, 0);
    server.sql("INSERT INTO t(v) VALUES ('x')");
    let before = wal_len(&db.path);
    assert_eq!(read(&mut f).len(), 1);
    assert_eq!(
        wal_len(&db.path),
        before,
        "a PASSIVE checkpoint neither restarts nor truncates the WAL"
    );
    let (_, log, copied) = checkpoint(&mut server, "PASSIVE");
    assert_eq!(
        log, copied,
        "the follower's checkpoint copied every frame it had read"
    );
}

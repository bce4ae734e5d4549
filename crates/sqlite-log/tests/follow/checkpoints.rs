//! Checkpoints: the server's own, as often as after every commit, lose no commit; its
//! TRUNCATE checkpoint gets SQLITE_BUSY while the follower holds a snapshot; a restart the
//! follower could not have read is a gap.

use super::*;

/// The server's `PRAGMA wal_checkpoint(mode)`: (busy, frames in the WAL, frames copied).
fn checkpoint(db: &Db, mode: &str) -> (i64, i64, i64) {
    db.server
        .query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("checkpoint")
}

fn wal_len(db: &Db) -> u64 {
    std::fs::metadata(db.path.with_extension("db-wal")).map_or(0, |m| m.len())
}

#[test]
fn the_servers_truncate_checkpoint_gets_busy_while_the_snapshot_is_held() {
    let db = Db::new("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", 0);
    let mut f = db.follower();
    db.tx("INSERT INTO t(v) VALUES ('one')");
    assert_eq!(read(&mut f).len(), 1);
    // The follower's snapshot was taken when that commit's frames were not checkpointed.
    db.tx("INSERT INTO t(v) VALUES ('two')");
    let before = wal_len(&db);
    for mode in ["TRUNCATE", "RESTART"] {
        let (busy, log, _) = checkpoint(&db, mode);
        assert_eq!(busy, 1, "{mode}: SQLITE_BUSY while the follower holds its snapshot");
        assert!(log > 0, "{mode}: the WAL is kept");
    }
    assert_eq!(wal_len(&db), before, "the WAL was not truncated");
    db.tx("INSERT INTO t(v) VALUES ('three')");
    let got = read(&mut f);
    assert_eq!(got.len(), 2, "the server's writes were never blocked, and both are read");
    assert_eq!(f.stats().gaps, 0);
}

#[test]
fn a_server_that_checkpoints_after_every_commit_loses_no_commit() {
    let db = Db::new("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", 1);
    let mut f = db.follower();
    let mut seen = Vec::new();
    for i in 1..=60 {
        db.tx(&format!("INSERT INTO t(v) VALUES ('{i}')"));
        if i % 7 == 0 {
            // Sometimes the server goes on alone for a while, sometimes the follower reads
            // right away and its next snapshot sees everything checkpointed: the WAL restarts.
            for c in read(&mut f) {
                seen.extend(rowids(&table(&c, "t")).0);
            }
            let _ = read(&mut f);
        }
        if i % 11 == 0 {
            let (busy, _, _) = checkpoint(&db, "TRUNCATE");
            let _ = busy;
        }
    }
    for c in read(&mut f) {
        seen.extend(rowids(&table(&c, "t")).0);
    }
    assert_eq!(seen, (1..=60).collect::<Vec<i64>>(), "every insert, once, in order");
    let p = f.position().expect("following");
    assert!(p.generation > 0, "the WAL restarted under the follower: {p:?}");
    assert_eq!(f.stats().gaps, 0);
    assert!(f.stats().checkpoints > 0);
}

#[test]
fn the_followers_own_checkpoint_is_passive_and_after_reading() {
    let db = Db::new("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", 0);
    let mut f = db.follower();
    db.tx("INSERT INTO t(v) VALUES ('x')");
    let before = wal_len(&db);
    assert_eq!(read(&mut f).len(), 1);
    assert_eq!(wal_len(&db), before, "a PASSIVE checkpoint neither restarts nor truncates the WAL");
    let (_, log, copied) = checkpoint(&db, "PASSIVE");
    assert_eq!(log, copied, "the follower's checkpoint copied every frame it had read");
}

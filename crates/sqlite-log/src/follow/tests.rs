//! Gaps the follower cannot be led into from outside: a restart while it held no snapshot.

use super::*;

#[test]
fn a_restart_while_no_snapshot_was_held_is_a_gap_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let server = rusqlite::Connection::open(&path).unwrap();
    server
        .execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(id INTEGER PRIMARY KEY, v)")
        .unwrap();
    let mut f = Follower::new(&path, 1).unwrap();
    assert!(f.read().unwrap().is_empty());
    server.execute_batch("INSERT INTO t(v) VALUES (1)").unwrap();
    // The snapshot lost (a connection error, say): two restarts go by unseen.
    let State::Following(live) = &mut f.state else {
        panic!("following")
    };
    live.held.end().unwrap();
    for v in [2, 3] {
        server
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap();
        server
            .execute_batch(&format!("INSERT INTO t(v) VALUES ({v})"))
            .unwrap();
    }
    let events = f.read().unwrap();
    let gaps: Vec<&Gap> = events
        .iter()
        .filter_map(|e| if let Event::Gap(g) = e { Some(g) } else { None })
        .collect();
    assert_eq!(gaps.len(), 1, "{events:?}");
    assert!(
        matches!(gaps[0].reason, GapReason::Restart { .. }),
        "{:?}",
        gaps[0]
    );
    assert!(gaps[0].reason.to_string().contains("restarted"));
    server.execute_batch("INSERT INTO t(v) VALUES (4)").unwrap();
    let events = f.read().unwrap();
    let mut rowids: Vec<Option<i64>> = Vec::new();
    for e in &events {
        let Event::Commit { changes, .. } = e else {
            panic!("{e:?}")
        };
        rowids.extend(
            changes
                .tables
                .iter()
                .flat_map(|t| t.inserted.iter().map(|r| r.rowid)),
        );
    }
    assert_eq!(
        rowids,
        [Some(4)],
        "read on after the gap, from the new snapshot"
    );
}

#[test]
fn a_committed_frame_off_the_checksum_chain_is_a_gap_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let server = rusqlite::Connection::open(&path).unwrap();
    server
        .execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(id INTEGER PRIMARY KEY, v)")
        .unwrap();
    let mut f = Follower::new(&path, 1).unwrap();
    assert!(f.read().unwrap().is_empty());
    let next = f.position().unwrap().frame;
    server
        .execute_batch("INSERT INTO t(v) VALUES (1); INSERT INTO t(v) VALUES (2);")
        .unwrap();
    // Flip one byte of the first new frame's page image in the WAL file (no lock is held on
    // the WAL itself, so this descriptor may be closed).
    let wal = wal_path(&path);
    let page_size = 4096u64;
    let at = 32 + u64::from(next) * (24 + page_size) + 24 + 100;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&wal)
        .unwrap();
    let mut b = [0u8; 1];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut b, at).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &[b[0] ^ 0xff], at).unwrap();
    drop(file);
    let events = f.read().unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    let Event::Gap(g) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(g.reason, GapReason::Corrupt { frame: next + 1 });
    assert!(
        f.read().unwrap().is_empty(),
        "reported once; nothing more read in this generation"
    );
}

#[test]
fn a_follower_can_move_to_a_thread_of_its_own() {
    fn send<T: Send + 'static>() {}
    send::<Follower>();
    send::<Event>();
    send::<FollowError>();
}

#[test]
fn new_salts_after_another_connections_truncate_are_the_next_generation_not_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    // A server that opens a connection per statement, as mcp-server-sqlite does.
    let run = |sql: &str| {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.busy_timeout(std::time::Duration::ZERO).unwrap();
        let first = c.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0));
        match first {
            Ok(rusqlite::types::Value::Integer(n)) => Some(n),
            Ok(_) | Err(rusqlite::Error::QueryReturnedNoRows) => None,
            Err(e) => panic!("{sql}: {e}"),
        }
    };
    run("PRAGMA journal_mode=WAL");
    run("CREATE TABLE t(id INTEGER PRIMARY KEY, v)");
    let mut f = Follower::new(&path, 1).unwrap();
    f.read().unwrap();
    run("INSERT INTO t(v) VALUES (1)");
    assert_eq!(f.read().unwrap().len(), 1);
    assert_eq!(run("PRAGMA wal_checkpoint(TRUNCATE)"), Some(1), "busy");
    // The next snapshot reads the database file only (every frame copied): the WAL may go.
    f.read().unwrap();
    assert_eq!(run("PRAGMA wal_checkpoint(TRUNCATE)"), Some(0), "truncated");
    // A fresh connection writes the first frame: new salts, checkpoint sequence 0.
    run("INSERT INTO t(v) VALUES (2)");
    let end = f
        .log_end()
        .expect("the wal-index names the next generation");
    let events = f.read().unwrap();
    let rowids: Vec<Option<i64>> = events
        .iter()
        .map(|e| match e {
            Event::Commit { changes, .. } => changes.tables[0].inserted[0].rowid,
            Event::Gap(g) => panic!("{g:?}"),
        })
        .collect();
    assert_eq!(rowids, [Some(2)]);
    assert_eq!(
        f.position(),
        Some(end),
        "the end read before is where it read to"
    );
}

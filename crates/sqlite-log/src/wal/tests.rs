//! The WAL header and the checksum chain over WAL files a real SQLite wrote.

use super::*;

/// A WAL file holding `commits` transactions of one insert each, after a table's creation.
fn wal_bytes(commits: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch("PRAGMA page_size=1024; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(v)")
        .unwrap();
    for i in 0..commits {
        db.execute("INSERT INTO t VALUES (?1)", [i as i64]).unwrap();
    }
    std::fs::read(dir.path().join("w.db-wal")).unwrap()
}

#[test]
fn a_real_wal_reads_as_its_commits() {
    let bytes = wal_bytes(3);
    let header = WalHeader::parse(&bytes).expect("a header");
    assert_eq!(header.page_size, 1024);
    let mut chain = Chain::start(header);
    let found = commits(&mut chain, &bytes[WAL_HEADER_SIZE..]);
    assert_eq!(found.len(), 4, "CREATE TABLE and three inserts");
    assert!(found.iter().all(|c| c.db_pages == 2 && !c.pages.is_empty()));
    let frames: Vec<u32> = found.iter().map(|c| c.position.frame).collect();
    assert!(frames.windows(2).all(|w| w[0] < w[1]), "{frames:?}");
    assert_eq!(
        chain.position(),
        found[3].position,
        "the chain ends at the last commit frame"
    );
    assert_eq!(
        chain.next_offset() as usize,
        bytes.len(),
        "every frame read"
    );
    let mut again = chain;
    assert!(commits(&mut again, &[]).is_empty(), "nothing new");
}

#[test]
fn the_chain_stops_at_a_torn_frame_a_flipped_byte_or_other_salts() {
    let bytes = wal_bytes(2);
    let header = WalHeader::parse(&bytes).unwrap();
    let frame = header.frame_size();
    let body = &bytes[WAL_HEADER_SIZE..];
    let all = commits(&mut Chain::start(header), body).len();
    assert_eq!(all, 3);
    let cases: Vec<(&str, Vec<u8>, usize)> = vec![
        ("the last frame torn", body[..body.len() - 10].to_vec(), 2),
        (
            "the last commit frame missing",
            body[..body.len() - frame].to_vec(),
            2,
        ),
        (
            "a byte flipped in the first frame's page",
            {
                let mut b = body.to_vec();
                b[30] ^= 1;
                b
            },
            0,
        ),
        (
            "another salt in the second frame",
            {
                let mut b = body.to_vec();
                b[frame + 8] ^= 1;
                b
            },
            0,
        ),
        (
            "page number 0",
            {
                let mut b = body.to_vec();
                b[..4].copy_from_slice(&[0; 4]);
                b
            },
            0,
        ),
        ("empty", Vec::new(), 0),
    ];
    for (name, b, want) in cases {
        let mut chain = Chain::start(header);
        assert_eq!(commits(&mut chain, &b).len(), want, "{name}");
    }
}

#[test]
fn headers_that_are_no_wal_header_are_errors() {
    let bytes = wal_bytes(0);
    let good = &bytes[..WAL_HEADER_SIZE];
    assert!(WalHeader::parse(good).is_ok());
    let with = |at: usize, v: u8| {
        let mut b = good.to_vec();
        b[at] = v;
        WalHeader::parse(&b)
    };
    assert_eq!(WalHeader::parse(&good[..31]), Err(WalError::Short(31)));
    assert!(matches!(with(0, 0), Err(WalError::Magic(_))));
    assert!(matches!(with(7, 0), Err(WalError::Version(_))));
    assert!(matches!(with(10, 0x03), Err(WalError::PageSize(_))));
    assert_eq!(
        with(20, good[20] ^ 1),
        Err(WalError::Checksum),
        "salt-2 changed, checksum not"
    );
}

#[test]
fn a_resealed_wal_reads_frame_for_frame_after_its_pages_were_edited() {
    let mut bytes = wal_bytes(2);
    let header = WalHeader::parse(&bytes).unwrap();
    let body = WAL_HEADER_SIZE + header.frame_size();
    bytes[body - 10] ^= 0xff;
    assert_eq!(
        commits(&mut Chain::start(header), &bytes[WAL_HEADER_SIZE..]).len(),
        0,
        "edited: off the chain"
    );
    reseal(&mut bytes);
    let header = WalHeader::parse(&bytes).expect("the header still reads");
    assert_eq!(
        commits(&mut Chain::start(header), &bytes[WAL_HEADER_SIZE..]).len(),
        3,
        "resealed: every commit"
    );
    let mut junk = vec![7u8; 100];
    reseal(&mut junk);
    assert_eq!(junk, vec![7u8; 100], "no WAL header: left alone");
}

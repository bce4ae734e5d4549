//! SQLite database files inside watched trees: recognised by their header, judged as rows
//! (by a snapshot of the database, not by this module), their companion files bookkeeping.

/// The first 16 bytes of every SQLite 3 database file (`SQLite format 3\0`).
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Whether `content` (at least its first 16 bytes) starts like a SQLite 3 database.
pub fn is_sqlite(content: &[u8]) -> bool {
    content.starts_with(SQLITE_HEADER)
}

/// The database a companion file belongs to: `notes.db` for `notes.db-wal`,
/// `notes.db-shm` or `notes.db-journal`; `None` for any other path. A companion is
/// bookkeeping of its database (the write-ahead log, its index, the rollback journal):
/// what it holds is judged as the database's rows.
pub fn sqlite_companion(path: &str) -> Option<&str> {
    ["-wal", "-shm", "-journal"]
        .iter()
        .find_map(|suffix| path.strip_suffix(suffix))
        .filter(|main| !main.is_empty() && !main.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databases_by_header_companions_by_name() {
        assert!(is_sqlite(b"SQLite format 3\0\x10\x00"));
        assert!(!is_sqlite(b"SQLite format 3"));
        assert!(!is_sqlite(b"{\"a\":1}"));
        assert_eq!(sqlite_companion("data/notes.db-wal"), Some("data/notes.db"));
        assert_eq!(sqlite_companion("notes.db-shm"), Some("notes.db"));
        assert_eq!(sqlite_companion("notes.db-journal"), Some("notes.db"));
        assert_eq!(sqlite_companion("notes.db"), None);
        assert_eq!(sqlite_companion("data/-wal"), None);
    }
}

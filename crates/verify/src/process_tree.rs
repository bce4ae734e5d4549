//! What a server's process tree holds, as Linux shows it under `/proc` (read with the
//! `procfs` crate, as the proxy's writer identification reads it): the files its processes
//! have open and the local ports of their TCP sockets. The database check
//! ([`crate::verifier`]) traces a SQLite file or a database session to the server with it.
//!
//! Where `/proc` cannot be read, and on systems other than Linux (no `/proc` to read), every
//! function answers `None`: no evidence either way, which the database check reports as such.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use procfs::process::{FDTarget, Process, all_processes};

/// The open files and TCP ports of one process tree at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TreeView {
    /// Paths of the regular files the processes hold open.
    pub files: HashSet<PathBuf>,
    /// Local ports of the TCP sockets (IPv4 and IPv6) they hold.
    pub ports: HashSet<u16>,
}

/// The open files and TCP ports (in `root`'s network namespace) of `root` and every process
/// descended from it; `None` when `/proc` cannot be read or `root` is gone.
#[cfg(target_os = "linux")]
pub(crate) fn tree_view(root: u32) -> Option<TreeView> {
    let root = Process::new(i32::try_from(root).ok()?).ok()?;
    let mut view = TreeView::default();
    let mut sockets = HashSet::new();
    for pid in tree(root.pid)? {
        let Ok(fds) = Process::new(pid).and_then(|p| p.fd()) else {
            continue;
        };
        for fd in fds.flatten() {
            match fd.target {
                FDTarget::Socket(inode) => {
                    sockets.insert(inode);
                }
                FDTarget::Path(path) if path.is_absolute() => {
                    view.files.insert(path);
                }
                _ => {}
            }
        }
    }
    if !sockets.is_empty() {
        let tables = [root.tcp(), root.tcp6()];
        view.ports.extend(
            tables
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| sockets.contains(&e.inode))
                .map(|e| e.local_address.port()),
        );
    }
    Some(view)
}

/// How many processes other than this one hold the SQLite database `main` open (its main
/// file or a journal); `None` when `/proc` cannot be read.
#[cfg(target_os = "linux")]
pub(crate) fn holders(main: &Path) -> Option<usize> {
    let me = std::process::id() as i32;
    let holds = |p: &Process| {
        p.fd().is_ok_and(|fds| {
            fds.flatten().any(|fd| match fd.target {
                FDTarget::Path(t) => sqlite_main(&t) == main,
                _ => false,
            })
        })
    };
    let all = all_processes().ok()?;
    Some(all.flatten().filter(|p| p.pid != me && holds(p)).count())
}

/// `root` and its descendants, from the parent pid of every process; `None` when `/proc`
/// cannot be listed.
#[cfg(target_os = "linux")]
fn tree(root: i32) -> Option<Vec<i32>> {
    let mut children: std::collections::HashMap<i32, Vec<i32>> = Default::default();
    for p in all_processes().ok()?.flatten() {
        if let Ok(stat) = p.stat() {
            children.entry(stat.ppid).or_default().push(stat.pid);
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        out.extend(children.get(&out[i]).into_iter().flatten().copied());
        i += 1;
    }
    Some(out)
}

/// No `/proc` off Linux: no view.
#[cfg(not(target_os = "linux"))]
pub(crate) fn tree_view(_root: u32) -> Option<TreeView> {
    None
}

/// No `/proc` off Linux: nobody is seen holding the file.
#[cfg(not(target_os = "linux"))]
pub(crate) fn holders(_main: &Path) -> Option<usize> {
    None
}

/// The main database file of a SQLite path: `x.db` for `x.db`, `x.db-wal`, `x.db-shm` and
/// `x.db-journal`.
pub(crate) fn sqlite_main(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    for suffix in ["-wal", "-shm", "-journal"] {
        if let Some(main) = text.strip_suffix(suffix) {
            return PathBuf::from(main);
        }
    }
    path.to_path_buf()
}

/// Whether a regular file starts with SQLite's header.
pub(crate) fn is_sqlite_file(path: &Path) -> bool {
    let mut head = [0u8; 16];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_files_map_to_their_database() {
        for (path, main) in [
            ("/t/a.db", "/t/a.db"),
            ("/t/a.db-wal", "/t/a.db"),
            ("/t/a.db-shm", "/t/a.db"),
            ("/t/a.db-journal", "/t/a.db"),
        ] {
            assert_eq!(sqlite_main(Path::new(path)), PathBuf::from(main));
        }
    }

    #[test]
    fn this_process_tree_shows_its_open_file_and_socket() {
        if !Path::new("/proc/self/fd").is_dir() {
            eprintln!("skipped: no /proc");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held.txt");
        let _file = fs::File::create(&path).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let view = tree_view(std::process::id()).expect("/proc is readable");
        assert!(view.files.contains(&path), "{view:?}");
        assert!(view.ports.contains(&port), "{view:?}");
        assert_eq!(tree_view(u32::MAX), None, "no such process");
    }
}

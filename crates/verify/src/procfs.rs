//! What a server's process tree holds, as Linux shows it under `/proc`: the files its
//! processes have open and the local ports of their TCP sockets. The database check
//! ([`crate::verifier`]) traces a SQLite file or a database session to the server with it.
//!
//! On other systems (no `/proc`, or one that is not Linux's) its readers answer `None`
//! without looking: no evidence either way, which the database check reports as such.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The open files and TCP ports of one process tree at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TreeView {
    /// Paths of the regular files the processes hold open.
    pub files: HashSet<PathBuf>,
    /// Local ports of the TCP sockets (IPv4 and IPv6) they hold.
    pub ports: HashSet<u16>,
}

/// The open files and TCP ports of `root` and every process descended from it; `None`
/// when `/proc` cannot be read or `root` is gone.
pub(crate) fn tree_view(root: u32) -> Option<TreeView> {
    let pids = tree(root)?;
    let mut view = TreeView::default();
    let mut sockets = HashSet::new();
    for pid in pids {
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            let text = target.to_string_lossy();
            if let Some(inode) = text
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|s| s.parse::<u64>().ok())
            {
                sockets.insert(inode);
            } else if target.is_absolute() {
                view.files.insert(target);
            }
        }
    }
    if !sockets.is_empty() {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            if let Ok(text) = fs::read_to_string(table) {
                view.ports.extend(local_ports(&text, &sockets));
            }
        }
    }
    Some(view)
}

/// How many processes other than this one hold the SQLite database `main` open (its main
/// file or a journal); `None` when `/proc` cannot be read.
pub(crate) fn holders(main: &Path) -> Option<usize> {
    let me = std::process::id();
    let holds = |pid: u32| {
        fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| sqlite_main(&t) == main))
        })
    };
    Some(pids()?.filter(|&pid| pid != me && holds(pid)).count())
}

/// The ids of the processes `/proc` lists now; `None` on systems other than Linux.
fn pids() -> Option<impl Iterator<Item = u32>> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    Some(
        fs::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok()),
    )
}

/// `root` and its descendants, from the parent pid of every process.
fn tree(root: u32) -> Option<Vec<u32>> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    let mut root_alive = false;
    for pid in pids()? {
        root_alive |= pid == root;
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(ppid) = parent_pid(&stat) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    if !root_alive {
        return None;
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(kids);
        }
        i += 1;
    }
    Some(out)
}

/// The parent pid from a `/proc/<pid>/stat` line: the second field after the command name,
/// which is in parentheses and may hold spaces and parentheses itself.
fn parent_pid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Local ports of the sockets of a `/proc/net/tcp` table whose inode is in `inodes`.
fn local_ports(table: &str, inodes: &HashSet<u64>) -> Vec<u16> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let inode: u64 = cols.get(9)?.parse().ok()?;
            if !inodes.contains(&inode) {
                return None;
            }
            let port = cols.get(1)?.rsplit_once(':')?.1;
            u16::from_str_radix(port, 16).ok()
        })
        .collect()
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
    fn parent_pid_survives_odd_command_names() {
        for (stat, ppid) in [
            ("42 (python3) S 7 42 42 0 -1", Some(7)),
            ("42 (a) b (c) S 9 42 42 0 -1", Some(9)),
            ("42 (x", None),
        ] {
            assert_eq!(parent_pid(stat), ppid, "{stat}");
        }
    }

    #[test]
    fn local_ports_of_the_tree_sockets_only() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                     0: 0100007F:D431 0100007F:1538 01 00000000:00000000 00:00000000 00000000     0        0 1001 1\n   \
                     1: 0100007F:0CEA 0100007F:1538 01 00000000:00000000 00:00000000 00000000     0        0 1002 1\n";
        let ours: HashSet<u64> = [1001].into();
        assert_eq!(local_ports(table, &ours), [0xD431]);
    }

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

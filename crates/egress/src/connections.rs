//! The child's TCP connections that bypass its egress listener: the TCP sockets its process
//! tree holds, read from `/proc` with the procfs crate, less those to loopback (the egress
//! listener, the proxy's own parts, local sidecars) and to the addresses the caller allows
//! (its database). A call during which such a connection was open has incomplete evidence:
//! what went over it was not seen.
//!
//! A snapshot, not a trace: a connection opened and closed between two looks is not seen
//! (keep-alive pools hold theirs open, so looking at a call's end finds most). UDP (QUIC,
//! HTTP/3) and Unix sockets are not looked at.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use procfs::net::TcpState;
use procfs::process::{FDTarget, Process};

/// A TCP connection of the child's process tree that did not go through the egress proxy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DirectConnection {
    /// Where it goes.
    pub remote: SocketAddr,
    /// The process holding it.
    pub pid: u32,
}

/// The TCP connections the process tree of `root` holds now, other than listening sockets
/// and those to loopback or to an address of `allowed` (an `allowed` entry with port 0
/// allows every port of its address), sorted. `None` when `/proc` cannot be read or `root`
/// is gone: nothing can be said either way.
pub fn direct_connections(root: u32, allowed: &[SocketAddr]) -> Option<Vec<DirectConnection>> {
    let root_process = Process::new(i32::try_from(root).ok()?).ok()?;
    let mut table = root_process.tcp().ok()?;
    table.extend(root_process.tcp6().unwrap_or_default());
    let owners = socket_owners(root);
    let allows = |remote: &SocketAddr| {
        allowed.iter().any(|a| {
            a.ip().to_canonical() == remote.ip().to_canonical()
                && (a.port() == 0 || a.port() == remote.port())
        })
    };
    let mut out: Vec<DirectConnection> = table
        .into_iter()
        .filter(|e| e.state != TcpState::Listen && e.inode != 0)
        .filter(|e| {
            let ip = e.remote_address.ip().to_canonical();
            !ip.is_loopback() && !ip.is_unspecified() && !allows(&e.remote_address)
        })
        .filter_map(|e| {
            Some(DirectConnection {
                remote: e.remote_address,
                pid: *owners.get(&e.inode)?,
            })
        })
        .collect();
    out.sort();
    out.dedup();
    Some(out)
}

/// The socket inodes `root`'s process tree holds, each with the process holding it.
fn socket_owners(root: u32) -> HashMap<u64, u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(all) = procfs::process::all_processes() {
        for p in all.flatten() {
            if let Ok(stat) = p.stat() {
                let (Ok(pid), Ok(ppid)) = (u32::try_from(stat.pid), u32::try_from(stat.ppid))
                else {
                    continue;
                };
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut tree = vec![root];
    let mut seen: HashSet<u32> = HashSet::from([root]);
    let mut i = 0;
    while i < tree.len() {
        for kid in children.get(&tree[i]).into_iter().flatten() {
            if seen.insert(*kid) {
                tree.push(*kid);
            }
        }
        i += 1;
    }
    let mut owners = HashMap::new();
    for pid in tree {
        let Ok(fds) = Process::new(pid as i32).and_then(|p| p.fd()) else {
            continue;
        };
        for fd in fds.flatten() {
            if let FDTarget::Socket(inode) = fd.target {
                owners.insert(inode, pid);
            }
        }
    }
    owners
}

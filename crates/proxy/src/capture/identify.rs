//! Whose a commit is ([`Origin`]): a writer matched to this proxy's upstream by its
//! application_name (the `PGAPPNAME` each `--stdio` child gets), else by its client address
//! and port against the TCP sockets of the upstream's processes, read from `/proc` with the
//! procfs crate ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)).
//!
//! A backend (pid, backend start) is one connection, so `/proc` is read at most once per
//! connection: the answer is kept (at most [`KNOWN_MAX`] backends, the least recently seen
//! first out). Where `/proc` cannot show the upstream (another host, no permission) the answer is
//! [`Origin::AnyCall`]: the position rule, never a guess that a write is not ours.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::num::NonZeroUsize;

use lru::LruCache;

use procfs::net::TcpState;
use procfs::process::{FDTarget, Process};

use crate::capture::writer::{Origin, UpstreamHost, Writer, by_application_name};

/// Backends whose origin is kept, at most.
const KNOWN_MAX: NonZeroUsize = NonZeroUsize::new(4096).expect("not zero");

/// Tells this proxy's upstream connections from other writers.
#[derive(Debug)]
pub(crate) struct Identify {
    host: UpstreamHost,
    /// Upstream connection → its child's pid (`--stdio`), as last started; a child found
    /// gone is removed.
    children: Mutex<HashMap<u64, u32>>,
    /// Each backend's origin, as found.
    known: Mutex<LruCache<(u32, i64), Origin>>,
    /// Socket inode → the upstream connection whose child's tree held it, at the last scan.
    sockets: Mutex<HashMap<u64, u64>>,
}

impl Identify {
    pub(crate) fn new(host: UpstreamHost) -> Self {
        Identify {
            host,
            children: Mutex::default(),
            known: Mutex::new(LruCache::new(KNOWN_MAX)),
            sockets: Mutex::default(),
        }
    }

    /// Upstream connection `session` runs in child `pid` (`--stdio`).
    pub(crate) fn child(&self, session: u64, pid: Option<u32>) {
        if let Some(pid) = pid {
            self.children.lock().insert(session, pid);
        }
    }

    /// Whose a commit written by `writer` is; [`Origin::AnyCall`] when no writer is known.
    pub(crate) fn origin(&self, writer: Option<&Writer>) -> Origin {
        let Some(writer) = writer else {
            return Origin::AnyCall;
        };
        if let Some(origin) = by_application_name(&writer.application_name) {
            return origin;
        }
        if let Some(origin) = self.known.lock().get(&writer.backend()) {
            return *origin;
        }
        let origin = self.look_up(writer);
        self.known.lock().put(writer.backend(), origin);
        origin
    }

    fn look_up(&self, writer: &Writer) -> Origin {
        let Some(client) = writer.client else {
            // A Unix socket: no port to match, and no application_name of ours.
            return Origin::AnyCall;
        };
        match &self.host {
            UpstreamHost::Address(ip) if ip.to_canonical() == client.ip().to_canonical() => {
                Origin::AnyCall
            }
            UpstreamHost::Address(_) => Origin::Foreign,
            UpstreamHost::Children => self.child_of(client),
            UpstreamHost::Listening(port) => {
                let roots = listeners(*port);
                if roots.is_empty() {
                    return by_network_namespace(client);
                }
                let parents = parents();
                let ours = roots.iter().any(|root| {
                    tree_sockets(*root, &parents)
                        .is_some_and(|s| s.iter().any(|a| same(*a, client)))
                });
                if ours {
                    Origin::AnyCall
                } else {
                    Origin::Foreign
                }
            }
        }
    }

    /// The child whose process tree holds the socket `client`; [`Origin::Foreign`] when
    /// the children could be read and none does (no socket has that address now, or one
    /// outside their trees does), [`Origin::AnyCall`] when none could be read.
    ///
    /// One read of the children's TCP table gives the socket's inode; the inodes of every
    /// child's tree are kept from the last scan of `/proc` and scanned again only for an
    /// inode they do not hold (a connection opened since). A scan per child and lookup made a
    /// lookup cost the children times the machine's processes, and with many connections
    /// (a pool of ten in each of 16 children) the capture fell behind its log.
    fn child_of(&self, client: SocketAddr) -> Origin {
        let children: Vec<(u64, u32)> =
            self.children.lock().iter().map(|(s, p)| (*s, *p)).collect();
        let Some(table) = children.iter().find_map(|(_, pid)| tcp_table(*pid)) else {
            return Origin::AnyCall;
        };
        // Every live socket with that local endpoint: a port can be bound again towards
        // another peer while a closed connection on it lingers (TIME_WAIT, inode 0), and
        // the table may list that one first.
        let inodes: Vec<u64> = table
            .iter()
            .filter(|e| e.inode != 0 && same(e.local_address, client))
            .map(|e| e.inode)
            .collect();
        if inodes.is_empty() {
            return Origin::Foreign;
        }
        if let Some(session) = inodes
            .iter()
            .find_map(|i| self.sockets.lock().get(i).copied())
        {
            return Origin::Session(session);
        }
        let parents = parents();
        let mut owners = HashMap::new();
        for (session, pid) in children {
            if Process::new(pid as i32).is_err() {
                // The child is gone (its session ended): forget it, so the map stays as
                // small as the sessions alive.
                self.children.lock().remove(&session);
                continue;
            }
            for owned in tree(pid, &parents).into_iter().flat_map(socket_inodes) {
                owners.insert(owned, session);
            }
        }
        let found = inodes.iter().find_map(|i| owners.get(i).copied());
        *self.sockets.lock() = owners;
        found.map_or(Origin::Foreign, Origin::Session)
    }
}

/// The upstream's processes are not visible (a sidecar in a pod that shares its network
/// namespace, not its PID namespace): a writer whose socket is in this network namespace is
/// the pod's, so the upstream's; one that is not is foreign. `/proc` unreadable: not known.
fn by_network_namespace(client: SocketAddr) -> Origin {
    match local_sockets() {
        Some(sockets) if sockets.iter().any(|a| same(*a, client)) => Origin::AnyCall,
        Some(_) => Origin::Foreign,
        None => Origin::AnyCall,
    }
}

/// The local endpoints of every TCP socket in this network namespace.
fn local_sockets() -> Option<Vec<SocketAddr>> {
    let mut table = procfs::net::tcp().ok()?;
    table.extend(procfs::net::tcp6().unwrap_or_default());
    Some(table.into_iter().map(|e| e.local_address).collect())
}

/// The same endpoint, an IPv4 address and its IPv6-mapped form alike.
fn same(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

/// Each process's children, by its pid, from one scan of `/proc`.
type Parents = HashMap<i32, Vec<i32>>;

/// One scan of `/proc`: every process under its parent.
fn parents() -> Parents {
    let mut parents = Parents::new();
    if let Ok(all) = procfs::process::all_processes() {
        for p in all.flatten() {
            if let Ok(stat) = p.stat() {
                parents.entry(stat.ppid).or_default().push(stat.pid);
            }
        }
    }
    parents
}

/// `root` and every process descended from it, in `parents`.
fn tree(root: u32, parents: &Parents) -> Vec<i32> {
    let mut out = vec![root as i32];
    let mut i = 0;
    while i < out.len() {
        out.extend(parents.get(&out[i]).into_iter().flatten().copied());
        i += 1;
    }
    out
}

/// The socket inodes process `pid` holds.
fn socket_inodes(pid: i32) -> HashSet<u64> {
    let Ok(fds) = Process::new(pid).and_then(|p| p.fd()) else {
        return HashSet::new();
    };
    fds.flatten()
        .filter_map(|fd| match fd.target {
            FDTarget::Socket(inode) => Some(inode),
            _ => None,
        })
        .collect()
}

/// The TCP sockets of process `pid`'s network namespace; `None` when it cannot be read.
fn tcp_table(pid: u32) -> Option<Vec<procfs::net::TcpNetEntry>> {
    let process = Process::new(pid as i32).ok()?;
    let mut table = process.tcp().ok()?;
    table.extend(process.tcp6().unwrap_or_default());
    Some(table)
}

/// The local endpoints of the TCP sockets held by `root`'s process tree (in its network
/// namespace), its descendants found in `parents`; `None` when `root` cannot be read.
fn tree_sockets(root: u32, parents: &Parents) -> Option<Vec<SocketAddr>> {
    let table = tcp_table(root)?;
    let inodes: HashSet<u64> = tree(root, parents)
        .into_iter()
        .flat_map(socket_inodes)
        .collect();
    Some(
        table
            .into_iter()
            .filter(|e| inodes.contains(&e.inode))
            .map(|e| e.local_address)
            .collect(),
    )
}

/// The processes holding a socket that listens on TCP `port` (in this network namespace).
fn listeners(port: u16) -> Vec<u32> {
    let mut table = procfs::net::tcp().unwrap_or_default();
    table.extend(procfs::net::tcp6().unwrap_or_default());
    let listening: HashSet<u64> = table
        .into_iter()
        .filter(|e| e.state == TcpState::Listen && e.local_address.port() == port)
        .map(|e| e.inode)
        .collect();
    if listening.is_empty() {
        return Vec::new();
    }
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten()
        .filter(|p| !socket_inodes(p.pid).is_disjoint(&listening))
        .map(|p| p.pid as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback listener and a client connected to it (kept open while held): the
    /// listener's port and the client's local endpoint.
    fn connected() -> (
        (std::net::TcpListener, std::net::TcpStream),
        u16,
        SocketAddr,
    ) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let local = client.local_addr().expect("local");
        ((listener, client), port, local)
    }

    #[test]
    fn this_process_is_found_by_its_own_socket() {
        let (_sockets, port, local) = connected();
        let me = std::process::id();
        assert!(
            listeners(port).contains(&me),
            "the listener is this process's"
        );
        let sockets = tree_sockets(me, &parents()).expect("/proc readable");
        assert!(
            sockets.iter().any(|a| same(*a, local)),
            "{local} in {sockets:?}"
        );

        let identify = Identify::new(UpstreamHost::Children);
        identify.child(7, Some(me));
        let writer = |client| Writer {
            pid: 1,
            backend_start: 1,
            client,
            application_name: String::new(),
        };
        assert_eq!(
            identify.origin(Some(&writer(Some(local)))),
            Origin::Session(7)
        );
        // A connection opened after the inodes were kept is found by a new scan.
        let (_later, _, later) = connected();
        let opened_later = Writer {
            pid: 4,
            ..writer(Some(later))
        };
        assert_eq!(identify.origin(Some(&opened_later)), Origin::Session(7));
        let elsewhere: SocketAddr = "10.255.255.1:1".parse().expect("addr");
        let other = Writer {
            pid: 2,
            ..writer(Some(elsewhere))
        };
        assert_eq!(identify.origin(Some(&other)), Origin::Foreign);
        assert_eq!(
            identify.origin(Some(&writer(None))),
            Origin::Session(7),
            "kept per backend"
        );
        let unix = Writer {
            pid: 3,
            ..writer(None)
        };
        assert_eq!(identify.origin(Some(&unix)), Origin::AnyCall);
        assert_eq!(identify.origin(None), Origin::AnyCall);

        let listening = Identify::new(UpstreamHost::Listening(port));
        assert_eq!(
            listening.origin(Some(&writer(Some(local)))),
            Origin::AnyCall
        );
        assert_eq!(listening.origin(Some(&other)), Origin::Foreign);
    }

    /// A port bound again towards another peer while closed connections from it linger
    /// (TIME_WAIT, no inode): the live socket is still found, wherever the table lists it.
    #[tokio::test]
    async fn a_closed_connection_on_a_port_does_not_hide_the_live_one() {
        let bound = |port: u16| {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.set_reuseaddr(true).expect("SO_REUSEADDR");
            socket
                .bind(SocketAddr::from(([127, 0, 0, 1], port)))
                .expect("bind");
            socket
        };
        let mut port = 0;
        for _ in 0..4 {
            let peer = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let socket = bound(port);
            let ours = socket
                .connect(peer.local_addr().expect("addr"))
                .await
                .expect("connect");
            port = ours.local_addr().expect("local").port();
            let (theirs, _) = peer.accept().expect("accept");
            // This end closes first, so it is the one left in TIME_WAIT.
            drop(ours);
            drop(theirs);
        }
        let target = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let live = bound(port)
            .connect(target.local_addr().expect("addr"))
            .await
            .expect("connect again from the same port");
        let local = live.local_addr().expect("local");
        let table = tcp_table(std::process::id()).expect("/proc readable");
        let lingering = table
            .iter()
            .filter(|e| e.inode == 0 && same(e.local_address, local))
            .count();
        assert!(lingering > 0, "no closed connection left on {local}");

        let identify = Identify::new(UpstreamHost::Children);
        identify.child(7, Some(std::process::id()));
        let writer = Writer {
            pid: 1,
            backend_start: 1,
            client: Some(local),
            application_name: String::new(),
        };
        assert_eq!(identify.origin(Some(&writer)), Origin::Session(7));
    }

    #[test]
    fn a_socket_of_this_network_namespace_is_the_pods() {
        let (_sockets, _, local) = connected();
        assert_eq!(by_network_namespace(local), Origin::AnyCall);
        let elsewhere: SocketAddr = "10.255.255.1:1".parse().expect("addr");
        assert_eq!(by_network_namespace(elsewhere), Origin::Foreign);
    }

    #[test]
    fn an_address_names_the_upstream() {
        let pod = Identify::new(UpstreamHost::Address("10.1.2.3".parse().expect("ip")));
        let rows = [
            (Some("10.1.2.3:40000"), "", Origin::AnyCall),
            (Some("[::ffff:10.1.2.3]:40001"), "", Origin::AnyCall),
            (Some("10.1.2.4:40000"), "", Origin::Foreign),
            (None, "", Origin::AnyCall),
            (
                Some("10.1.2.3:40002"),
                "hintaudit:000000000000:1",
                Origin::Foreign,
            ),
        ];
        for (i, (client, name, want)) in rows.into_iter().enumerate() {
            let writer = Writer {
                pid: i as u32,
                backend_start: 1,
                client: client.map(|c| c.parse().expect("addr")),
                application_name: name.into(),
            };
            assert_eq!(pod.origin(Some(&writer)), want, "{client:?} {name}");
        }
    }
}

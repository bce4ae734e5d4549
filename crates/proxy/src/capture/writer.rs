//! Who wrote a commit ([design: the proxy's evidence](../../../../docs/design.md#the-proxys-evidence)):
//! the writer the database names inside the transaction (PostgreSQL: the message the
//! `hintaudit.note_writer()` trigger emits; MySQL/MariaDB: the row the `hintaudit_writer_*`
//! triggers write in `hintaudit.writers`), and whose it is for this proxy ([`Origin`]).
//!
//! Pure: parsing and the names the proxy gives its children. Reading `/proc` to match a
//! writer's client port to a process is identify.rs's.

use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The prefix of the logical decoding messages the writer trigger emits.
pub const MESSAGE_PREFIX: &str = "hintaudit";

/// The backend that wrote a commit, as the trigger's message gives it on PostgreSQL
/// (`PID ADDR PORT BACKEND_START_US APPLICATION_NAME`, `-` for a missing address or port),
/// or the trigger's row on MySQL/MariaDB ([`Writer::mysql`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Writer {
    /// The backend's process id on the database server (MySQL/MariaDB: its thread id,
    /// `CONNECTION_ID()`).
    pub pid: u32,
    /// When the backend started, microseconds since the Unix epoch: with `pid`, names one
    /// connection for good (a pid is reused). MySQL/MariaDB: a number the trigger draws once
    /// per session (`UUID_SHORT()`), for the same purpose.
    pub backend_start: i64,
    /// The client's address and port as the server sees them; `None` over a Unix socket.
    pub client: Option<SocketAddr>,
    /// The connection's `application_name`.
    pub application_name: String,
}

impl Writer {
    /// Parses a message's content; `None` when it is not the trigger's.
    pub fn parse(content: &str) -> Option<Writer> {
        let mut words = content.splitn(5, ' ');
        let pid = words.next()?.parse().ok()?;
        let addr = words.next()?;
        let port = words.next()?;
        let backend_start = words.next()?.parse().ok()?;
        let application_name = words.next().unwrap_or_default().to_owned();
        let client = match (addr.parse::<IpAddr>(), port.parse::<u16>()) {
            (Ok(ip), Ok(port)) => Some(SocketAddr::new(ip, port)),
            _ => None,
        };
        Some(Writer {
            pid,
            backend_start,
            client,
            application_name,
        })
    }

    /// The writer a MySQL/MariaDB trigger row names: connection `thread`, the number its
    /// session drew (`session`), and `host`, the `HOST` column of
    /// `information_schema.PROCESSLIST` (`ADDR:PORT` over TCP, `[ADDR]:PORT` or `ADDR:PORT`
    /// for IPv6, `localhost` with no port over a Unix socket: then no client). With name
    /// resolution on (`skip_name_resolve` off) the server names the client's host instead of
    /// its address: `localhost:PORT` is read as 127.0.0.1, any other name gives no client.
    pub fn mysql(thread: u64, session: u64, host: &str) -> Writer {
        let client = host.rsplit_once(':').and_then(|(ip, port)| {
            let ip = ip.trim_start_matches('[').trim_end_matches(']');
            let ip = if ip.eq_ignore_ascii_case("localhost") {
                IpAddr::from([127, 0, 0, 1])
            } else {
                ip.parse().ok()?
            };
            Some(SocketAddr::new(ip, port.parse().ok()?))
        });
        Writer {
            pid: u32::try_from(thread).unwrap_or(u32::MAX),
            backend_start: session as i64,
            client,
            application_name: String::new(),
        }
    }

    /// The connection this writer is: the same for every commit of one backend.
    pub fn backend(&self) -> (u32, i64) {
        (self.pid, self.backend_start)
    }
}

/// Whose a commit is, for this proxy: which of its calls may have made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// One of the proxy's upstream connections (a `--stdio` child, by its application_name
    /// or its sockets) wrote it: only that connection's calls are candidates.
    Session(u64),
    /// The proxy's upstream wrote it but which connection is not known (`--upstream`), or the
    /// writer is not known at all (no trigger on the table, a Unix-socket client with
    /// another application_name): every call in flight is a candidate, by position.
    AnyCall,
    /// Another writer (another proxy's server, a replica of it, a job): no call of this
    /// proxy is a candidate.
    Foreign,
}

/// How the proxy tells its upstream's own database connections from others'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum UpstreamHost {
    /// `--stdio`: the children the proxy starts, each with an application_name of its own
    /// (`PGAPPNAME`) and, when a server sets its own, the TCP sockets of the child's process
    /// tree.
    #[default]
    Children,
    /// `--upstream` whose process is visible (this host, or a shared PID namespace): the
    /// processes that hold the listening socket on this TCP port, and their descendants.
    Listening(u16),
    /// `--upstream-addr`: every connection from this address (a pod's own IP) is the
    /// upstream's.
    Address(IpAddr),
}

/// The `application_name` prefix of this process's children: `hintaudit:<nonce>`, the
/// nonce different for every proxy process (two proxies on one host or on two replicas
/// name their children apart).
pub fn children_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mixed = nanos ^ (u64::from(std::process::id()) << 40) ^ 0x9E37_79B9_7F4A_7C15;
        format!("hintaudit:{:012x}", mixed & 0xFFFF_FFFF_FFFF)
    })
}

/// Whether children get [`child_application_name`]: once a PostgreSQL capture has
/// installed the writer trigger.
static NAMING: AtomicBool = AtomicBool::new(false);

/// Children started from now on get an application_name of their own (`PGAPPNAME`).
pub(crate) fn enable_child_names() {
    NAMING.store(true, Ordering::Relaxed);
}

/// The environment variable and value that name connection `session`'s child, once
/// [`enable_child_names`] was called: `("PGAPPNAME", child_application_name(session))`.
pub(crate) fn child_env(session: u64) -> Option<(&'static str, String)> {
    NAMING
        .load(Ordering::Relaxed)
        .then(|| ("PGAPPNAME", child_application_name(session)))
}

/// The application_name of upstream connection `session`'s child (at most 34 bytes: well
/// under PostgreSQL's 63).
pub fn child_application_name(session: u64) -> String {
    format!("{}:{session}", children_tag())
}

/// What an application_name says: `Some(Session)` for one of this process's children,
/// `Some(Foreign)` for another proxy's child, `None` when it is no child's.
pub fn by_application_name(name: &str) -> Option<Origin> {
    let rest = name.strip_prefix("hintaudit:")?;
    let (nonce, session) = rest.rsplit_once(':')?;
    let session: u64 = session.parse().ok()?;
    if children_tag().strip_prefix("hintaudit:") == Some(nonce) {
        Some(Origin::Session(session))
    } else {
        Some(Origin::Foreign)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_parse() {
        let rows = [
            (
                "4242 127.0.0.1 51234 1733330000123456 hintaudit:abc:3",
                Some((4242, Some("127.0.0.1:51234"), "hintaudit:abc:3")),
            ),
            (
                "7 ::1 6000 1 my app name",
                Some((7, Some("[::1]:6000"), "my app name")),
            ),
            ("8 - - 1 ", Some((8, None, ""))),
            ("8 - - 1", Some((8, None, ""))),
            ("x 1.2.3.4 5 1 a", None),
            ("", None),
        ];
        for (content, want) in rows {
            let got = Writer::parse(content);
            let got = got.as_ref().map(|w| {
                (
                    w.pid,
                    w.client.map(|c| c.to_string()),
                    w.application_name.as_str(),
                )
            });
            let want = want.map(|(p, c, a)| (p, c.map(str::to_owned), a));
            assert_eq!(got, want, "{content}");
        }
    }

    #[test]
    fn mysql_hosts() {
        let rows = [
            ("127.0.0.1:55746", Some("127.0.0.1:55746")),
            ("::1:40000", Some("[::1]:40000")),
            ("[::1]:40001", Some("[::1]:40001")),
            ("localhost:40002", Some("127.0.0.1:40002")),
            ("app.example:40003", None),
            ("localhost", None),
            ("", None),
        ];
        for (host, want) in rows {
            let w = Writer::mysql(11, 7, host);
            assert_eq!(w.client.map(|c| c.to_string()).as_deref(), want, "{host}");
            assert_eq!(w.backend(), (11, 7));
        }
    }

    #[test]
    fn application_names() {
        let ours = child_application_name(12);
        assert!(ours.len() <= 63);
        let rows = [
            (ours.as_str(), Some(Origin::Session(12))),
            ("hintaudit:000000000000:12", Some(Origin::Foreign)),
            ("hintaudit-proxy", None),
            ("psql", None),
            ("", None),
        ];
        for (name, want) in rows {
            assert_eq!(by_application_name(name), want, "{name}");
        }
    }
}

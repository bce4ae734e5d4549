//! [`ClosedWorld`]: the hosts a tool declaring `openWorldHint: false` may reach.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

/// Which reading of `openWorldHint: false` raises `undeclared_open_world`; findings name
/// what the other reading says too.
///
/// The MCP specification's reading: the tool does not interact with an "open world" of
/// external entities, so any request outside the closed world contradicts it. The reading of
/// some tool directories: the tool changes no state in an outside system, so only a mutating
/// request (POST, PUT, PATCH, DELETE, …) outside the closed world contradicts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpenWorldReading {
    /// The specification's reading (default): any interaction with an outside entity.
    #[default]
    Interaction,
    /// The directory reading: a change of state in an outside system.
    StateChange,
}

impl OpenWorldReading {
    /// `interaction` or `state_change`: the configuration value.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenWorldReading::Interaction => "interaction",
            OpenWorldReading::StateChange => "state_change",
        }
    }

    /// The reading named by [`OpenWorldReading::as_str`], if any.
    pub fn parse(name: &str) -> Option<Self> {
        [OpenWorldReading::Interaction, OpenWorldReading::StateChange]
            .into_iter()
            .find(|r| r.as_str() == name)
    }
}

/// One entry of a closed-world or outside list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Matcher {
    /// An exact host name or address, lower-cased.
    Host(String),
    /// A domain suffix, lower-cased, with its leading dot: matches the domain and below it.
    Suffix(String),
    /// An address block.
    Cidr(IpNet),
}

/// An entry: what it matches, and the port it is confined to (any port when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    matcher: Matcher,
    port: Option<u16>,
}

/// A closed-world entry that does not parse: its text and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad closed-world entry {entry:?}: {reason}")]
#[non_exhaustive]
pub struct ClosedWorldError {
    /// The entry as given.
    pub entry: String,
    /// Why it is rejected.
    pub reason: String,
}

impl Entry {
    /// Parses `host`, `host:port`, `.suffix`, `.suffix:port`, `a.b.c.d/n`, `[v6]:port`,
    /// `v6/n`.
    fn parse(text: &str) -> Result<Entry, ClosedWorldError> {
        let bad = |reason: &str| ClosedWorldError {
            entry: text.to_owned(),
            reason: reason.to_owned(),
        };
        let t = text.trim().to_lowercase();
        if t.is_empty() {
            return Err(bad("empty"));
        }
        if t.contains('/') {
            let net: IpNet = t
                .parse()
                .map_err(|_| bad("not a CIDR block (address/prefix length)"))?;
            return Ok(Entry {
                matcher: Matcher::Cidr(net.trunc()),
                port: None,
            });
        }
        // A bare IPv6 address has colons and no port.
        if let Ok(ip) = t.trim_matches(['[', ']']).parse::<IpAddr>()
            && (t.starts_with('[') == t.ends_with(']'))
        {
            return Ok(Entry {
                matcher: Matcher::Cidr(IpNet::from(ip)),
                port: None,
            });
        }
        let (host, port) = match t.rsplit_once(':') {
            Some((h, p)) => {
                let port = p
                    .parse::<u16>()
                    .map_err(|_| bad("port is not a number 0-65535"))?;
                (h.trim_matches(['[', ']']).to_owned(), Some(port))
            }
            None => (t.clone(), None),
        };
        if host.is_empty() || host == "." {
            return Err(bad("no host"));
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(Entry {
                matcher: Matcher::Cidr(IpNet::from(ip)),
                port,
            });
        }
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
        if !host.chars().all(valid) {
            return Err(bad("not a host name, domain suffix or CIDR block"));
        }
        let matcher = if host.starts_with('.') {
            Matcher::Suffix(host)
        } else {
            Matcher::Host(host)
        };
        Ok(Entry { matcher, port })
    }

    fn matches(&self, host: &str, ip: Option<IpAddr>, port: Option<u16>) -> bool {
        if self.port.is_some() && self.port != port {
            return false;
        }
        match &self.matcher {
            Matcher::Host(h) => h == host,
            Matcher::Suffix(s) => host.ends_with(s.as_str()) || host == &s[1..],
            Matcher::Cidr(net) => ip.is_some_and(|ip| net.contains(&ip)),
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.matcher {
            Matcher::Host(h) | Matcher::Suffix(h) => f.write_str(h)?,
            Matcher::Cidr(n) if n.prefix_len() == n.max_prefix_len() => write!(f, "{}", n.addr())?,
            Matcher::Cidr(n) => write!(f, "{n}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

/// The closed world: the hosts a tool declaring `openWorldHint: false` may reach.
///
/// It holds exact hosts, domain suffixes (`.internal`) and CIDR blocks
/// (`10.0.0.0/8`), each optionally with a port (`db.internal:5432`, `127.0.0.1:8080`). A list of
/// *outside* entries, of the same forms, wins over the closed ones: it lets a test or the demo
/// stand a loopback server in for an outside service. By default the closed world is
/// loopback: `localhost`, `127.0.0.0/8` and `::1`; the hosts of the audited databases are
/// added by whoever knows them ([`ClosedWorld::with_host`]).
///
/// ```
/// use hintaudit_core::ClosedWorld;
/// let world = ClosedWorld::default()
///     .with_entry(".internal").unwrap()
///     .with_entry("10.0.0.0/8").unwrap()
///     .with_outside("127.0.0.1:9999").unwrap();
/// assert!(world.contains("localhost", Some(80)));
/// assert!(world.contains("db.internal", None));
/// assert!(world.contains("10.1.2.3", Some(443)));
/// assert!(!world.contains("api.example.com", Some(443)));
/// assert!(!world.contains("127.0.0.1", Some(9999))); // configured as outside
/// assert!(world.contains("127.0.0.1", Some(8080)));
/// assert!(ClosedWorld::default().with_entry("10.0.0.0/33").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedWorld {
    closed: Vec<Entry>,
    outside: Vec<Entry>,
}

/// The default closed-world entries: loopback.
pub const DEFAULT_CLOSED_WORLD: &[&str] = &["localhost", "127.0.0.0/8", "::1"];

impl Default for ClosedWorld {
    /// Loopback: [`DEFAULT_CLOSED_WORLD`]; nothing configured as outside.
    fn default() -> Self {
        let closed = DEFAULT_CLOSED_WORLD
            .iter()
            .filter_map(|e| Entry::parse(e).ok())
            .collect();
        ClosedWorld {
            closed,
            outside: Vec::new(),
        }
    }
}

impl ClosedWorld {
    /// An empty closed world: every host is outside.
    pub fn empty() -> Self {
        ClosedWorld {
            closed: Vec::new(),
            outside: Vec::new(),
        }
    }

    /// Adds a closed-world entry: a host, `.suffix`, CIDR block, each optionally `:port`.
    ///
    /// # Errors
    /// [`ClosedWorldError`] when the entry is none of these.
    pub fn with_entry(mut self, entry: &str) -> Result<Self, ClosedWorldError> {
        self.closed.push(Entry::parse(entry)?);
        Ok(self)
    }

    /// Adds an entry that is outside even when a closed entry matches it (same forms as
    /// [`ClosedWorld::with_entry`]).
    ///
    /// # Errors
    /// [`ClosedWorldError`] when the entry does not parse.
    pub fn with_outside(mut self, entry: &str) -> Result<Self, ClosedWorldError> {
        self.outside.push(Entry::parse(entry)?);
        Ok(self)
    }

    /// Adds a host known to be inside, such as an audited database's host; a host that does
    /// not parse as an entry is ignored (it could not match anything either).
    pub fn with_host(self, host: &str) -> Self {
        match Entry::parse(host) {
            Ok(e) => {
                let mut w = self;
                w.closed.push(e);
                w
            }
            Err(_) => self,
        }
    }

    /// Adds the host of a database URL (`postgres://user@db.internal:5432/app`,
    /// `mysql://…`), on any port: the audited databases belong to the closed world. A URL
    /// without a host (`sqlite:…`, a Unix socket) adds nothing.
    pub fn with_database_url(self, url: &str) -> Self {
        let Some((_, rest)) = url.split_once("://") else {
            return self;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = match hostport.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => hostport.split(':').next().unwrap_or(""),
        };
        if host.is_empty() {
            return self;
        }
        self.with_host(host)
    }

    /// Whether `host` (a name or an address, `[…]` around IPv6 allowed) at `port` (`None`:
    /// unknown) is inside the closed world. Names are not resolved: a CIDR block matches
    /// addresses only.
    pub fn contains(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.trim_matches(['[', ']']).to_lowercase();
        let host = host.trim_end_matches('.');
        let ip = host.parse::<IpAddr>().ok();
        if self.outside.iter().any(|e| e.matches(host, ip, port)) {
            return false;
        }
        self.closed.iter().any(|e| e.matches(host, ip, port))
    }

    /// The closed entries, as text (`127.0.0.0/8`, `.internal`, `db:5432`).
    pub fn entries(&self) -> impl Iterator<Item = String> + '_ {
        self.closed.iter().map(|e| e.to_string())
    }

    /// The outside entries, as text.
    pub fn outside_entries(&self) -> impl Iterator<Item = String> + '_ {
        self.outside.iter().map(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per (entry, host, port): whether the host is inside.
    #[test]
    fn entries_match() {
        for (entry, host, port, inside) in [
            ("api.internal", "api.internal", Some(443), true),
            ("api.internal", "API.Internal.", None, true),
            ("api.internal", "x.api.internal", None, false),
            (".internal", "x.api.internal", None, true),
            (".internal", "internal", None, true),
            (".internal", "notinternal", None, false),
            ("10.0.0.0/8", "10.200.1.1", None, true),
            ("10.0.0.0/8", "11.0.0.1", None, false),
            ("10.0.0.0/8", "ten.example", None, false),
            ("fd00::/8", "[fd00::1]", Some(80), true),
            ("db:5432", "db", Some(5432), true),
            ("db:5432", "db", Some(5433), false),
            ("db:5432", "db", None, false),
            ("[::1]:8080", "::1", Some(8080), true),
            ("192.168.1.9", "192.168.1.9", Some(1), true),
        ] {
            let w = ClosedWorld::empty().with_entry(entry).expect(entry);
            assert_eq!(w.contains(host, port), inside, "{entry} vs {host}:{port:?}");
        }
    }

    /// One row per database URL: the host it adds, if any.
    #[test]
    fn database_urls_add_their_host() {
        for (url, host) in [
            (
                "postgres://postgres@db.internal:5432/test",
                Some("db.internal"),
            ),
            ("mysql://root:pw@10.1.2.3:3306", Some("10.1.2.3")),
            ("postgres://[fd00::5]:5432/x", Some("fd00::5")),
            ("postgresql://pg/app?sslmode=require", Some("pg")),
            ("sqlite:bookings.db", None),
            ("sqlite:///tmp/x.db?mode=rwc", None),
        ] {
            let w = ClosedWorld::empty().with_database_url(url);
            assert_eq!(w.entries().next().as_deref(), host, "{url}");
        }
    }

    #[test]
    fn bad_entries_are_refused() {
        for bad in [
            "",
            "10.0.0.0/33",
            "300.1.1.1/8",
            "host:port",
            "a b",
            "host:70000",
            ".",
        ] {
            let e = ClosedWorld::empty().with_entry(bad).unwrap_err();
            assert_eq!(e.entry, bad);
        }
    }

    #[test]
    fn default_is_loopback_and_outside_wins() {
        let w = ClosedWorld::default();
        for host in ["localhost", "127.0.0.1", "127.8.8.8", "::1", "[::1]"] {
            assert!(w.contains(host, Some(80)), "{host}");
        }
        assert!(!w.contains("example.com", None));
        let w = w.with_outside("127.0.0.1:9").unwrap();
        assert!(!w.contains("127.0.0.1", Some(9)));
        assert!(w.contains("127.0.0.1", Some(10)));
        assert_eq!(
            w.entries().collect::<Vec<_>>(),
            ["localhost", "127.0.0.0/8", "::1"]
        );
        assert_eq!(w.outside_entries().collect::<Vec<_>>(), ["127.0.0.1:9"]);
    }
}

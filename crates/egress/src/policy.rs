//! Where a request goes: the forwarding policy as a value (what is forwarded, routes, allowed
//! hosts), parsed once from the options and consulted per request. No I/O.

use http::uri::{Authority, Scheme, Uri};

use crate::error::EgressError;

/// What the egress proxy forwards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Forwarding {
    /// `hintaudit verify`: only requests to routed hosts and to allowed hosts
    /// (`--egress-allow`); every other request is answered `502` and recorded as not
    /// forwarded. verify calls tools that delete: no real API is reached unless named.
    #[default]
    Listed,
    /// `hintaudit proxy --egress`: every request to its real destination (routes still
    /// apply), as production needs.
    All,
}

/// A host, and the port it is matched on (`None`: any port).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPort {
    host: String,
    port: Option<u16>,
}

impl HostPort {
    /// `host` or `host:port` (IPv6 in brackets); lower-cased; no credentials.
    fn parse(text: &str) -> Option<HostPort> {
        if text.contains('@') {
            return None;
        }
        let text = text.trim();
        let a: Authority = text.parse().ok()?;
        let after_host = text.rsplit_once(']').map_or(text, |(_, rest)| rest);
        if after_host.contains(':') && a.port_u16().is_none() {
            return None;
        }
        Some(HostPort {
            host: a.host().trim_matches(['[', ']']).to_ascii_lowercase(),
            port: a.port_u16(),
        })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        self.host == host && self.port.is_none_or(|p| p == port)
    }
}

/// Where a request is sent: a scheme and an authority (the path and query are the request's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) scheme: Scheme,
    pub(crate) authority: Authority,
}

/// `HOST=URL`: HOST's requests go to URL, Host header and path unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Route {
    from: HostPort,
    to: Target,
}

impl Route {
    fn parse(text: &str) -> Result<Route, EgressError> {
        let fail = |why: &str| EgressError::Route {
            route: text.to_owned(),
            why: why.to_owned(),
        };
        let (host, url) = text
            .split_once('=')
            .ok_or_else(|| fail("expected HOST=URL (`api.notion.com=https://127.0.0.1:8443`)"))?;
        let from = HostPort::parse(host).ok_or_else(|| fail("HOST is not a host"))?;
        let uri: Uri = url.trim().parse().map_err(|_| fail("URL does not parse"))?;
        let scheme = match uri.scheme_str() {
            Some("http") => Scheme::HTTP,
            Some("https") => Scheme::HTTPS,
            _ => return Err(fail("the URL's scheme must be http:// or https://")),
        };
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| fail("the URL names no host"))?;
        if authority.as_str().contains('@') {
            return Err(fail("the URL may not carry credentials"));
        }
        if uri.query().is_some() || !matches!(uri.path(), "" | "/") {
            return Err(fail(
                "the URL takes no path or query: the request's own are kept",
            ));
        }
        Ok(Route {
            from,
            to: Target { scheme, authority },
        })
    }
}

/// The forwarding policy: what is forwarded, where routed hosts go, which hosts are allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ForwardPolicy {
    forwarding: Forwarding,
    routes: Vec<Route>,
    allowed: Vec<HostPort>,
}

impl ForwardPolicy {
    /// Parses the routes (`HOST=URL`) and the allowed hosts (`HOST` or `HOST:PORT`).
    ///
    /// # Errors
    /// [`EgressError::Route`] or [`EgressError::Allow`] for the first one that does not parse.
    pub(crate) fn new(
        forwarding: Forwarding,
        routes: &[String],
        allowed: &[String],
    ) -> Result<ForwardPolicy, EgressError> {
        Ok(ForwardPolicy {
            forwarding,
            routes: routes
                .iter()
                .map(|r| Route::parse(r))
                .collect::<Result<_, _>>()?,
            allowed: allowed
                .iter()
                .map(|h| HostPort::parse(h).ok_or_else(|| EgressError::Allow { host: h.clone() }))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Where a request to `host` (lower-case) at `port` by `scheme` goes: its route's target,
    /// else its own destination when forwarded, else `None` (refused: `502`).
    pub(crate) fn target(&self, scheme: &Scheme, host: &str, port: u16) -> Option<Target> {
        if let Some(r) = self.routes.iter().find(|r| r.from.matches(host, port)) {
            return Some(r.to.clone());
        }
        let forwarded = match self.forwarding {
            Forwarding::All => true,
            Forwarding::Listed => self.allowed.iter().any(|a| a.matches(host, port)),
        };
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        if !forwarded {
            return None;
        }
        Some(Target {
            scheme: scheme.clone(),
            authority: authority.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per (forwarding, request): where it goes (`None`: refused).
    #[test]
    fn targets() {
        let routes = [
            "api.notion.com=https://localhost:8443".to_owned(),
            "Hooks.Example:8080=http://127.0.0.1:9000/".to_owned(),
        ];
        let allowed = ["cdn.example".to_owned(), "[::2]:443".to_owned()];
        let listed = ForwardPolicy::new(Forwarding::Listed, &routes, &allowed).unwrap();
        let all = ForwardPolicy::new(Forwarding::All, &routes, &[]).unwrap();
        let https = Scheme::HTTPS;
        let http = Scheme::HTTP;
        for (policy, scheme, host, port, want) in [
            (
                &listed,
                &https,
                "api.notion.com",
                443,
                Some("https://localhost:8443"),
            ),
            (
                &listed,
                &http,
                "api.notion.com",
                80,
                Some("https://localhost:8443"),
            ),
            (
                &listed,
                &http,
                "hooks.example",
                8080,
                Some("http://127.0.0.1:9000"),
            ),
            (&listed, &http, "hooks.example", 80, None),
            (
                &listed,
                &https,
                "cdn.example",
                443,
                Some("https://cdn.example:443"),
            ),
            (&listed, &https, "::2", 443, Some("https://[::2]:443")),
            (&listed, &https, "::2", 8443, None),
            (&listed, &https, "api.github.com", 443, None),
            (
                &all,
                &https,
                "api.github.com",
                443,
                Some("https://api.github.com:443"),
            ),
            (
                &all,
                &http,
                "api.notion.com",
                80,
                Some("https://localhost:8443"),
            ),
        ] {
            let got = policy
                .target(scheme, host, port)
                .map(|t| format!("{}://{}", t.scheme, t.authority));
            assert_eq!(got.as_deref(), want, "{scheme}://{host}:{port}");
        }
    }

    /// One row per bad route or allowed host: refused, naming it.
    #[test]
    fn bad_routes_and_hosts_are_refused() {
        for route in [
            "api.notion.com",
            "=https://x",
            "api.notion.com=ftp://x",
            "api.notion.com=https://u:p@x",
            "api.notion.com=https://x/v1",
            "api.notion.com=https://x/?a=1",
            "api.notion.com=/relative",
        ] {
            let err = ForwardPolicy::new(Forwarding::Listed, &[route.to_owned()], &[]).unwrap_err();
            assert!(matches!(err, EgressError::Route { .. }), "{route}: {err}");
            assert!(err.to_string().contains(route), "{err}");
        }
        for host in ["", "a b", "u@x", "x:notaport"] {
            let err = ForwardPolicy::new(Forwarding::Listed, &[], &[host.to_owned()]).unwrap_err();
            assert!(matches!(err, EgressError::Allow { .. }), "{host}: {err}");
        }
    }
}

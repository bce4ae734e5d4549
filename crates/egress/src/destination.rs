//! Where a request is bound, as the client addressed it: the host and port recorded and
//! matched against routes, never a route's target.

use http::uri::{Authority, Scheme};
use http::{HeaderValue, Request, header};

/// Where a request is bound, as the client addressed it: a tunnel's `CONNECT` authority (with
/// `https` when its TLS was terminated), an absolute-form target, or the `Host` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Destination {
    pub(crate) scheme: Scheme,
    /// Lower-case, IPv6 without brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Destination {
    /// From an authority, with `scheme`'s default port when it names none.
    pub(crate) fn new(scheme: Scheme, authority: &Authority) -> Destination {
        let default = if scheme == Scheme::HTTPS { 443 } else { 80 };
        Destination {
            host: authority
                .host()
                .trim_matches(['[', ']'])
                .to_ascii_lowercase(),
            port: authority.port_u16().unwrap_or(default),
            scheme,
        }
    }

    /// The destination of a request sent to the proxy itself (not in a tunnel): its
    /// absolute-form target (`http://` or `https://`: older axios sends HTTPS so, in plain
    /// text), else its `Host` header as `http`.
    pub(crate) fn of_request<B>(req: &Request<B>) -> Option<Destination> {
        let uri = req.uri();
        if let Some(authority) = uri.authority() {
            let scheme = match uri.scheme_str() {
                Some("https") => Scheme::HTTPS,
                Some("http") => Scheme::HTTP,
                _ => return None,
            };
            return Some(Destination::new(scheme, authority));
        }
        let host: Authority = req
            .headers()
            .get(header::HOST)?
            .to_str()
            .ok()?
            .parse()
            .ok()?;
        Some(Destination::new(Scheme::HTTP, &host))
    }

    /// `host` or `host:port` (the port left out when it is the scheme's default): the `Host`
    /// header of a request that came without one.
    pub(crate) fn host_header(&self) -> Option<HeaderValue> {
        let default = if self.scheme == Scheme::HTTPS {
            443
        } else {
            80
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let text = if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        };
        HeaderValue::from_str(&text).ok()
    }
}

#[cfg(test)]
mod tests;

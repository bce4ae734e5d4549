//! The environment a child is started with so that its HTTP clients go through its egress
//! listener and trust the test CA.

use std::process::Command;

use crate::files::CaFiles;

/// The proxy variables set for the child, both cases (curl reads only the lower-case
/// `http_proxy`; Go and Python read either).
pub const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// Removed from the child's environment: a host listed there would bypass the proxy.
pub const NO_PROXY_VARIABLES: [&str; 2] = ["NO_PROXY", "no_proxy"];

/// The variables a child gets ([`crate::EgressListener::environment`]):
///
/// - [`PROXY_VARIABLES`] = `http://127.0.0.1:PORT`, its listener; [`NO_PROXY_VARIABLES`]
///   removed;
/// - `NODE_USE_ENV_PROXY=1`: Node's `fetch` and `http` honour the proxy variables (Node 22.21
///   and 24.5 onwards; older Node ignores it);
/// - `NODE_EXTRA_CA_CERTS` = `ca.pem`, the test CA alone (added to Node's own roots);
/// - `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE` = `bundle.pem`, the system roots
///   and the test CA (OpenSSL, Go, Python's `ssl`, requests, httpx, curl: each replaces its
///   root store with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildEnvironment {
    set: Vec<(&'static str, String)>,
}

impl ChildEnvironment {
    pub(crate) fn new(proxy_url: &str, files: &CaFiles) -> Self {
        let mut set: Vec<(&'static str, String)> = PROXY_VARIABLES
            .iter()
            .map(|name| (*name, proxy_url.to_owned()))
            .collect();
        let bundle = files.bundle().display().to_string();
        set.push(("NODE_USE_ENV_PROXY", "1".to_owned()));
        set.push(("NODE_EXTRA_CA_CERTS", files.ca().display().to_string()));
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"] {
            set.push((name, bundle.clone()));
        }
        ChildEnvironment { set }
    }

    /// The variables set, `(name, value)`.
    pub fn set(&self) -> &[(&'static str, String)] {
        &self.set
    }

    /// The variables removed.
    pub fn removed(&self) -> &'static [&'static str] {
        &NO_PROXY_VARIABLES
    }

    /// Sets and removes the variables on `command` (a `tokio::process::Command`: pass
    /// `command.as_std_mut()`).
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        for name in self.removed() {
            command.env_remove(name);
        }
        for (name, value) in &self.set {
            command.env(name, value);
        }
        command
    }
}

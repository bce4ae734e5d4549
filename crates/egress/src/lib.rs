#![doc = include_str!("../README.md")]
#![cfg_attr(test, allow(clippy::too_many_lines))]

/// Reading a request's GraphQL operation from its body on the way through.
mod body;
/// The run's test CA and the leaf certificates it signs.
mod ca;
/// The child's TCP connections that bypass its egress listener.
mod connections;
/// What every connection of a listener shares.
mod context;
/// Where a request is bound, as the client addressed it.
mod destination;
/// The environment a child is started with.
mod environment;
/// What can go wrong building the proxy or starting a listener.
mod error;
/// One request through the proxy: recorded, forwarded or refused.
mod exchange;
/// The CA files a child reads.
mod files;
/// The GraphQL operation a request carries.
mod graphql;
/// Which call a request is: the calls in flight when it arrived.
mod ledger;
/// One listener per child: plain requests, tunnels, TLS termination.
mod listener;
/// Where a request goes: forwarding, routes, allowed hosts.
mod policy;
/// A stream whose first bytes are read again.
mod prefixed;
/// The connections to where requests go, TLS verified.
mod upstream;

pub use connections::{DirectConnection, direct_connections};
pub use environment::{ChildEnvironment, NO_PROXY_VARIABLES, PROXY_VARIABLES};
pub use error::EgressError;
pub use files::CaFiles;
pub use ledger::{AmbiguousRequest, CallToken, EgressGap, EgressShare, UnattributedRequest};
pub use listener::EgressListener;
pub use policy::Forwarding;

use std::path::PathBuf;
use std::sync::Arc;

use ca::TestCa;
use policy::ForwardPolicy;
use upstream::Upstream;

/// The default [`EgressBuilder::with_body_limit`]: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// What every listener of a run shares.
pub(crate) struct Shared {
    ca: TestCa,
    files: CaFiles,
    upstream: Upstream,
    policy: ForwardPolicy,
    body_limit: usize,
}

/// The egress proxy of a run: its test CA, the CA files children read, the forwarding policy
/// and the upstream connections. Start one [`EgressListener`] per child with
/// [`Egress::listen`]. Cheap to clone.
#[derive(Clone)]
pub struct Egress {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("ca_files", &self.shared.files)
            .finish_non_exhaustive()
    }
}

impl Egress {
    /// A builder forwarding as `forwarding` says.
    pub fn builder(forwarding: Forwarding) -> EgressBuilder {
        EgressBuilder {
            forwarding,
            routes: Vec::new(),
            allowed: Vec::new(),
            extra_ca: None,
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// A new listener on `127.0.0.1` for one child.
    ///
    /// # Errors
    /// [`EgressError::Io`] when no port can be bound.
    pub async fn listen(&self) -> Result<EgressListener, EgressError> {
        Ok(EgressListener::bind(self.shared.clone()).await?)
    }

    /// The test CA's certificate, PEM. Its key never leaves memory.
    pub fn ca_pem(&self) -> &str {
        self.shared.ca.cert_pem()
    }

    /// The CA files children read.
    pub fn ca_files(&self) -> &CaFiles {
        &self.shared.files
    }
}

/// Builds an [`Egress`]: `with_*` setters, then [`EgressBuilder::build`].
#[derive(Debug, Clone)]
pub struct EgressBuilder {
    forwarding: Forwarding,
    routes: Vec<String>,
    allowed: Vec<String>,
    extra_ca: Option<PathBuf>,
    body_limit: usize,
}

impl EgressBuilder {
    /// Sends `HOST`'s requests to `URL` (`HOST=URL`, as `--egress-route`), with the `Host`
    /// header and the path unchanged: `api.notion.com=https://127.0.0.1:8443`. `HOST:PORT`
    /// routes that port only. Checked by [`EgressBuilder::build`].
    pub fn with_route(mut self, route: impl Into<String>) -> Self {
        self.routes.push(route.into());
        self
    }

    /// Forwards requests to `host` (or `host:port`) to their real destination under
    /// [`Forwarding::Listed`], as `--egress-allow`.
    pub fn with_allow(mut self, host: impl Into<String>) -> Self {
        self.allowed.push(host.into());
        self
    }

    /// Trusts the CA certificates of a PEM file for `https://` upstreams, besides the system
    /// roots, as `--egress-ca`.
    pub fn with_extra_ca(mut self, path: impl Into<PathBuf>) -> Self {
        self.extra_ca = Some(path.into());
        self
    }

    /// How many bytes of a request body are read for its GraphQL operation (default
    /// [`DEFAULT_BODY_LIMIT`]); a longer body is forwarded as it comes, its operation unknown.
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Makes the test CA, writes the CA files (the system roots found, then the CA) and
    /// builds the upstream client (the system roots and the extra CA).
    ///
    /// # Errors
    /// [`EgressError`]: a route or allowed host that does not parse, an extra CA file that
    /// cannot be read or holds no certificate, the CA files that cannot be written.
    pub fn build(self) -> Result<Egress, EgressError> {
        let policy = ForwardPolicy::new(self.forwarding, &self.routes, &self.allowed)?;
        let extra = match &self.extra_ca {
            Some(path) => upstream::extra_roots(path)?,
            None => Vec::new(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let found = rustls_native_certs::load_native_certs();
        if let Some(e) = found.errors.first() {
            tracing::warn!(target: "hintaudit::egress", "egress: some system roots could not be read ({} errors; the first: {e})", found.errors.len());
        }
        let ca = TestCa::new(provider.clone())?;
        let files = CaFiles::write(ca.cert_pem(), &found.certs)?;
        let upstream = Upstream::new(provider, &found.certs, &extra, self.extra_ca.as_deref())?;
        Ok(Egress {
            shared: Arc::new(Shared {
                ca,
                files,
                upstream,
                policy,
                body_limit: self.body_limit,
            }),
        })
    }
}

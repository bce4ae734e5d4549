//! What can go wrong building the egress proxy or starting a listener. Requests never fail
//! because of the audit: a request the proxy cannot forward is answered `502` and recorded.

use std::path::PathBuf;

/// Why the egress proxy could not be built, or a listener could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EgressError {
    /// A route is not `HOST=URL` with an `http://` or `https://` URL naming no path, query or
    /// credentials.
    #[error("--egress-route {route}: {why}")]
    Route {
        /// The route as given.
        route: String,
        /// What is wrong with it.
        why: String,
    },
    /// An allowed host is not a host name or address, optionally with a port.
    #[error("--egress-allow {host}: not a host (`api.example.com` or `api.example.com:443`)")]
    Allow {
        /// The host as given.
        host: String,
    },
    /// The extra CA file could not be read, or holds no PEM certificate.
    #[error("--egress-ca {}: {why}", path.display())]
    ExtraCa {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The test CA or a certificate could not be made (rcgen).
    #[error("the egress proxy's test CA: {0}")]
    Certificate(#[from] rcgen::Error),
    /// TLS could not be set up (rustls refused a configuration).
    #[error("the egress proxy's TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The CA files for the child could not be written, or the listener could not be bound.
    #[error("the egress proxy: {0}")]
    Io(#[from] std::io::Error),
}

//! The connections the egress proxy opens to where requests go: hyper's client over
//! hyper-rustls, HTTP/1.1, TLS verified against the system roots and the extra CA file
//! (`--egress-ca`). Upstream TLS is never left unverified.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::error::EgressError;

/// Any error a body can carry.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body of every request and answer the proxy handles.
pub(crate) type Body = BoxBody<Bytes, BoxError>;

/// How long connecting to an upstream may take before the request is answered `502`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The certificates of the extra CA file, PEM.
///
/// # Errors
/// [`EgressError::ExtraCa`] when it cannot be read or holds no certificate.
pub(crate) fn extra_roots(path: &Path) -> Result<Vec<CertificateDer<'static>>, EgressError> {
    let fail = |why: String| EgressError::ExtraCa {
        path: path.to_owned(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| fail(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(e.to_string()))?;
    if certs.is_empty() {
        return Err(fail("no PEM certificate in it".to_owned()));
    }
    Ok(certs)
}

/// The client that sends requests on.
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    client: Client<HttpsConnector<HttpConnector>, Body>,
}

impl Upstream {
    /// A client trusting `roots` (the system's) and `extra` (`--egress-ca`).
    ///
    /// # Errors
    /// [`EgressError::ExtraCa`] for an extra certificate rustls cannot use;
    /// [`EgressError::Tls`] when rustls refuses the configuration.
    pub(crate) fn new(
        provider: Arc<CryptoProvider>,
        roots: &[CertificateDer<'static>],
        extra: &[CertificateDer<'static>],
        extra_path: Option<&Path>,
    ) -> Result<Upstream, EgressError> {
        let mut store = RootCertStore::empty();
        // A system root rustls cannot parse is skipped, as every TLS library does.
        store.add_parsable_certificates(roots.iter().cloned());
        for cert in extra {
            store.add(cert.clone()).map_err(|e| EgressError::ExtraCa {
                path: extra_path.unwrap_or(Path::new("")).to_owned(),
                why: e.to_string(),
            })?;
        }
        let tls = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(store)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Ok(Upstream {
            client: Client::builder(TokioExecutor::new()).build(connector),
        })
    }

    /// Sends `request` (an absolute URI) and returns the answer's head with its body to
    /// stream.
    pub(crate) async fn send(
        &self,
        request: Request<Body>,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        self.client.request(request).await
    }
}

//! The test CA made for the run (rcgen, ECDSA P-256), and a leaf certificate per host it
//! signs, cached. The CA's key and every leaf's key live in memory only: nothing writes them
//! anywhere, and they die with the process. Only the CA's certificate is handed out (the
//! child's CA files, [`crate::CaFiles`]).

use parking_lot::Mutex;
use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lru::LruCache;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::EgressError;

/// Leaf certificates kept, at most (least recently used dropped first).
const LEAVES_MAX: usize = 1024;
/// How long a leaf certificate is used before a new one is made; each is valid 90 days.
const LEAF_REUSE: Duration = Duration::from_secs(30 * 86_400);

/// The run's certificate authority and the leaf certificates it signed.
pub(crate) struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    provider: Arc<CryptoProvider>,
    leaves: Mutex<LruCache<String, (Arc<ServerConfig>, Instant)>>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

/// `now` moved by `days` (negative: back).
fn days_from_now(days: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc() + time::Duration::days(days)
}

impl TestCa {
    /// A new CA: `CN=hintaudit egress test CA`, may sign leaf certificates only
    /// (`pathLenConstraint` 0), valid from a day ago for ten years.
    ///
    /// # Errors
    /// [`EgressError::Certificate`] when rcgen cannot make the key or the certificate.
    pub(crate) fn new(provider: Arc<CryptoProvider>) -> Result<TestCa, EgressError> {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, "hintaudit egress test CA");
        name.push(DnType::OrganizationName, "hintaudit (made for one run)");
        params.distinguished_name = name;
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = days_from_now(-1);
        params.not_after = days_from_now(3650);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(TestCa {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
            provider,
            leaves: Mutex::new(LruCache::new(
                NonZeroUsize::new(LEAVES_MAX).expect("non-zero"),
            )),
        })
    }

    /// The CA's certificate, PEM (never its key).
    pub(crate) fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The TLS server configuration presenting a certificate for `host` (a name or an IP
    /// address), signed by this CA: made once per host and reused for 30 days.
    ///
    /// # Errors
    /// [`EgressError`] when the certificate or the configuration cannot be made (a host rcgen
    /// refuses as a DNS name).
    pub(crate) fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, EgressError> {
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        let mut leaves = self.leaves.lock();
        if let Some((config, made)) = leaves.get(&host)
            && made.elapsed() < LEAF_REUSE
        {
            return Ok(config.clone());
        }
        let config = Arc::new(self.leaf(&host)?);
        leaves.put(host, (config.clone(), Instant::now()));
        Ok(config)
    }

    /// A leaf certificate for `host` and the server configuration presenting it: HTTP/1.1
    /// offered by ALPN, TLS 1.2 and 1.3.
    fn leaf(&self, host: &str) -> Result<ServerConfig, EgressError> {
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(host.to_owned().try_into()?),
        }];
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, host);
        params.distinguished_name = name;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.not_before = days_from_now(-1);
        params.not_after = days_from_now(90);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn leaves_are_cached_per_host_and_the_key_is_never_shown() {
        let ca = TestCa::new(provider()).unwrap();
        assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(!format!("{ca:?}").contains("PRIVATE"));
        let a = ca.server_config("API.Example.com").unwrap();
        let b = ca.server_config("api.example.com").unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one leaf per host");
        let c = ca.server_config("127.0.0.1").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(a.alpn_protocols, [b"http/1.1".to_vec()]);
        assert!(
            ca.server_config("é.example").is_err(),
            "not IA5: no DNS name"
        );
    }
}

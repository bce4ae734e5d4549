//! The CA files a child reads: `ca.pem`, the test CA's certificate alone (Node's
//! `NODE_EXTRA_CA_CERTS` adds it to Node's own roots), and `bundle.pem`, the system roots with
//! the test CA after them (`SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE` and `CURL_CA_BUNDLE` replace
//! the root store, so the child's other TLS connections, its database's, still verify). In a
//! private temporary directory, removed when the [`CaFiles`] is dropped. Certificates only:
//! no key is ever written.

use std::io::Write;
use std::path::{Path, PathBuf};

use rustls_pki_types::CertificateDer;
use tempfile::TempDir;

/// The CA files of a run.
#[derive(Debug)]
pub struct CaFiles {
    dir: TempDir,
    ca: PathBuf,
    bundle: PathBuf,
    roots: usize,
}

impl CaFiles {
    /// Writes `ca.pem` (`ca_pem`) and `bundle.pem` (`roots`, then `ca_pem`) in a new private
    /// temporary directory.
    ///
    /// # Errors
    /// The directory or a file cannot be written.
    pub(crate) fn write(
        ca_pem: &str,
        roots: &[CertificateDer<'static>],
    ) -> std::io::Result<CaFiles> {
        let dir = tempfile::Builder::new()
            .prefix("hintaudit-egress-")
            .tempdir()?;
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, ca_pem)?;
        let bundle = dir.path().join("bundle.pem");
        let mut file = std::fs::File::create(&bundle)?;
        for root in roots {
            let block = pem::Pem::new("CERTIFICATE", root.as_ref().to_vec());
            file.write_all(pem::encode(&block).as_bytes())?;
        }
        file.write_all(ca_pem.as_bytes())?;
        file.sync_all()?;
        Ok(CaFiles {
            dir,
            ca,
            bundle,
            roots: roots.len(),
        })
    }

    /// `ca.pem`: the test CA's certificate alone.
    pub fn ca(&self) -> &Path {
        &self.ca
    }

    /// `bundle.pem`: the system roots, then the test CA's certificate.
    pub fn bundle(&self) -> &Path {
        &self.bundle
    }

    /// How many system roots the bundle holds (0 where none were found).
    pub fn system_roots(&self) -> usize {
        self.roots
    }

    /// The directory holding both.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

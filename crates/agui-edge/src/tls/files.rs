//! TLS files read and checked: the gateway's own certificate and key
//! (`[tls]`, `--tls-cert`/`--tls-key`), and the helpers the gateway's
//! agent-side TLS reads its CA bundles and client certificates with.
//! Each file is bounded, each certificate parsed and valid at the time of
//! reading, and errors name the setting, never the file's content.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The most bytes one TLS file may hold.
pub const MAX_TLS_FILE_BYTES: u64 = 1 << 20;

/// The gateway's own certificate chain and key, served to clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// What errors call the two files: the file's keys or the flags.
    pub names: [&'static str; 2],
}

/// The names of `[tls]`'s files in errors.
pub const TLS_FILE_KEYS: [&str; 2] = ["tls.cert", "tls.key"];
/// The same from the command line.
pub const TLS_FLAGS: [&str; 2] = ["--tls-cert", "--tls-key"];

impl ServeTls {
    /// Reads and checks the pair at `now`: a chain that parses and is
    /// valid, a key rustls can sign with, and a key that is the first
    /// certificate's (a mismatch would fail every handshake, not the start).
    pub fn load(&self, now: SystemTime) -> Result<Arc<CertifiedKey>, TlsFileError> {
        let [cert_name, key_name] = self.names;
        let pem = read_bounded(cert_name, &self.cert)?;
        check_certificates(cert_name, &self.cert, &pem, now)?;
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                TlsFileError::at(cert_name, &self.cert, "a PEM block that does not read")
            })?;
        let key = read_bounded(key_name, &self.key)?;
        let key = PrivateKeyDer::from_pem_slice(&key).map_err(|_| {
            TlsFileError::at(
                key_name,
                &self.key,
                "no PKCS#8, RSA or EC private key in PEM",
            )
        })?;
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let signing = provider.key_provider.load_private_key(key).map_err(|e| {
            TlsFileError::at(key_name, &self.key, &format!("not a usable key: {e}"))
        })?;
        let certified = CertifiedKey::new(chain, signing);
        certified.keys_match().map_err(|_| {
            TlsFileError::at(
                key_name,
                &self.key,
                "not the key of the certificate's public key",
            )
        })?;
        Ok(Arc::new(certified))
    }

    pub fn files(&self) -> impl Iterator<Item = &Path> {
        [self.cert.as_path(), self.key.as_path()].into_iter()
    }
}

/// What files looked like when they were read (length and modification
/// time each), to see that they changed without reading them again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileStamp(Vec<Option<(u64, SystemTime)>>);

impl FileStamp {
    pub fn of<'a>(files: impl Iterator<Item = &'a Path>) -> FileStamp {
        let stamp = |path: &Path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.len(), meta.modified().ok()?))
        };
        FileStamp(files.map(stamp).collect())
    }
}

/// What is wrong with a TLS file. The message names the key, never the
/// file's content.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {path}: {message}")]
pub struct TlsFileError {
    pub key: &'static str,
    pub path: String,
    pub message: String,
}

impl TlsFileError {
    /// `message` about the file at `path`, which the setting `key` names.
    pub fn at(key: &'static str, path: &Path, message: &str) -> TlsFileError {
        TlsFileError {
            key,
            path: path.display().to_string(),
            message: message.to_owned(),
        }
    }
}

/// The file's bytes, bounded by [`MAX_TLS_FILE_BYTES`].
pub fn read_bounded(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsFileError> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| TlsFileError::at(key, path, &e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TLS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| TlsFileError::at(key, path, &e.to_string()))?;
    if bytes.len() as u64 > MAX_TLS_FILE_BYTES {
        return Err(TlsFileError::at(key, path, "larger than 1 MiB"));
    }
    Ok(bytes)
}

/// Every certificate in `pem` parses and is valid at `now`; there is one.
pub fn check_certificates(
    key: &'static str,
    path: &Path,
    pem: &[u8],
    now: SystemTime,
) -> Result<(), TlsFileError> {
    let now = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let mut count = 0;
    for der in CertificateDer::pem_slice_iter(pem) {
        let der = der.map_err(|_| TlsFileError::at(key, path, "a PEM block that does not read"))?;
        let (_, certificate) = x509_parser::parse_x509_certificate(der.as_ref())
            .map_err(|_| TlsFileError::at(key, path, "a certificate that does not parse"))?;
        let validity = certificate.validity();
        if validity.not_after.timestamp() < now {
            let message = format!("a certificate expired on {}", validity.not_after);
            return Err(TlsFileError::at(key, path, &message));
        }
        if validity.not_before.timestamp() > now {
            let message = format!("a certificate is not valid before {}", validity.not_before);
            return Err(TlsFileError::at(key, path, &message));
        }
        count += 1;
    }
    if count == 0 {
        return Err(TlsFileError::at(key, path, "no certificate in PEM"));
    }
    Ok(())
}

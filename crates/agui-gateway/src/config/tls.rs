//! TLS files: the gateway's own certificate and key at the edge (`[tls]`,
//! `--tls-cert`/`--tls-key`), and, towards agents, the CA bundle that verifies an agent's certificate
//! (the agent's own `[agents.NAME.tls] ca_file`, else the global
//! `[upstream_tls] ca_file`; the system's roots are trusted as well), and
//! the client certificate shown to an agent that wants mutual TLS.
//!
//! The files are read and checked when the configuration is (so
//! `check-config` and the start refuse what would fail every call: no
//! certificate in a bundle, a key that is not one, a certificate past its
//! validity), and again by `upstream::tls` when they change on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use std::ops::Range;

use rustls_pki_types::pem::PemObject;
use toml::Spanned;

use super::ConfigError;
use super::schema::{FileServeTls, FileTls, FileUpstreamTls};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The most bytes one TLS file may hold.
pub const MAX_TLS_FILE_BYTES: u64 = 1 << 20;

/// One agent's TLS settings, as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    pub ca_file: Option<PathBuf>,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

impl UpstreamTls {
    /// The files, in the order they are read.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        [&self.ca_file, &self.client_cert, &self.client_key]
            .into_iter()
            .flatten()
            .map(PathBuf::as_path)
    }
}

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
        let pem = read_file(cert_name, &self.cert)?;
        certificates(cert_name, &self.cert, &pem, now)?;
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| file_error(cert_name, &self.cert, "a PEM block that does not read"))?;
        let key = read_file(key_name, &self.key)?;
        let key = PrivateKeyDer::from_pem_slice(&key).map_err(|_| {
            file_error(
                key_name,
                &self.key,
                "no PKCS#8, RSA or EC private key in PEM",
            )
        })?;
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let signing = provider
            .key_provider
            .load_private_key(key)
            .map_err(|e| file_error(key_name, &self.key, &format!("not a usable key: {e}")))?;
        let certified = CertifiedKey::new(chain, signing);
        certified.keys_match().map_err(|_| {
            file_error(
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

/// The material, read and checked.
#[derive(Clone)]
pub struct TlsMaterial {
    /// Extra roots (PEM, one or more certificates).
    pub roots: Option<Vec<u8>>,
    /// The client certificate chain then its key, in one PEM (what
    /// reqwest's `Identity::from_pem` takes).
    pub identity: Option<Vec<u8>>,
}

/// What is wrong with a TLS file. The message names the key, never the
/// file's content.
#[derive(Debug, thiserror::Error)]
pub enum TlsFileError {
    #[error("{key}: {path}: {message}")]
    File {
        key: &'static str,
        path: String,
        message: String,
    },
    #[error("client_cert and client_key go together: {0} is missing")]
    Half(&'static str),
}

impl UpstreamTls {
    /// Reads and checks the files at `now`.
    pub fn read(&self, now: SystemTime) -> Result<TlsMaterial, TlsFileError> {
        let roots = match &self.ca_file {
            Some(path) => {
                let pem = read_file("ca_file", path)?;
                certificates("ca_file", path, &pem, now)?;
                Some(pem)
            }
            None => None,
        };
        let identity = match (&self.client_cert, &self.client_key) {
            (None, None) => None,
            (Some(_), None) => return Err(TlsFileError::Half("client_key")),
            (None, Some(_)) => return Err(TlsFileError::Half("client_cert")),
            (Some(cert_path), Some(key_path)) => {
                let mut pem = read_file("client_cert", cert_path)?;
                certificates("client_cert", cert_path, &pem, now)?;
                let key = read_file("client_key", key_path)?;
                if PrivateKeyDer::from_pem_slice(&key).is_err() {
                    return Err(file_error(
                        "client_key",
                        key_path,
                        "no PKCS#8, RSA or EC private key in PEM",
                    ));
                }
                if !pem.ends_with(b"\n") {
                    pem.push(b'\n');
                }
                pem.extend_from_slice(&key);
                Some(pem)
            }
        };
        Ok(TlsMaterial { roots, identity })
    }
}

fn file_error(key: &'static str, path: &Path, message: &str) -> TlsFileError {
    TlsFileError::File {
        key,
        path: path.display().to_string(),
        message: message.to_owned(),
    }
}

/// The file's bytes, bounded.
fn read_file(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsFileError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| file_error(key, path, &e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TLS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| file_error(key, path, &e.to_string()))?;
    if bytes.len() as u64 > MAX_TLS_FILE_BYTES {
        return Err(file_error(key, path, "larger than 1 MiB"));
    }
    Ok(bytes)
}

/// Every certificate in `pem` parses and is valid at `now`; there is one.
fn certificates(
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
        let der = der.map_err(|_| file_error(key, path, "a PEM block that does not read"))?;
        let (_, certificate) = x509_parser::parse_x509_certificate(der.as_ref())
            .map_err(|_| file_error(key, path, "a certificate that does not parse"))?;
        let validity = certificate.validity();
        if validity.not_after.timestamp() < now {
            let message = format!("a certificate expired on {}", validity.not_after);
            return Err(file_error(key, path, &message));
        }
        if validity.not_before.timestamp() > now {
            let message = format!("a certificate is not valid before {}", validity.not_before);
            return Err(file_error(key, path, &message));
        }
        count += 1;
    }
    if count == 0 {
        return Err(file_error(key, path, "no certificate in PEM"));
    }
    Ok(())
}

/// An agent's TLS from the file: its own table over the global one; the
/// files read and checked now, an error at the table's line.
pub(super) fn from_file(
    name: &str,
    agent: Option<&Spanned<FileTls>>,
    global: Option<&Spanned<FileUpstreamTls>>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<UpstreamTls, ConfigError> {
    let path = |text: &Option<String>| text.as_deref().map(PathBuf::from);
    let mut tls = UpstreamTls {
        ca_file: global.and_then(|g| path(&g.get_ref().ca_file)),
        ..UpstreamTls::default()
    };
    let mut span = global.map(Spanned::span);
    if let Some(own) = agent {
        let own_tls = own.get_ref();
        if own_tls.ca_file.is_some() {
            tls.ca_file = path(&own_tls.ca_file);
        }
        tls.client_cert = path(&own_tls.client_cert);
        tls.client_key = path(&own_tls.client_key);
        span = Some(own.span());
    }
    if let Some(span) = span {
        let table = if agent.is_some() {
            format!("agents.{name}.tls")
        } else {
            "upstream_tls".to_owned()
        };
        tls.read(SystemTime::now())
            .map_err(|err| at(span, format!("{table}.{err}")))?;
    }
    Ok(tls)
}

/// `[tls]`: both files or neither, read and checked now.
pub(super) fn serve_from_file(
    table: Option<&Spanned<FileServeTls>>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<Option<ServeTls>, ConfigError> {
    let Some(table) = table else {
        return Ok(None);
    };
    let tls = ServeTls {
        cert: PathBuf::from(&table.get_ref().cert),
        key: PathBuf::from(&table.get_ref().key),
        names: TLS_FILE_KEYS,
    };
    tls.load(SystemTime::now())
        .map_err(|err| at(table.span(), err.to_string()))?;
    Ok(Some(tls))
}

//! The TLS files towards agents: the CA bundle that verifies an agent's
//! certificate (the agent's own `[agents.NAME.tls] ca_file`, else the
//! global `[upstream_tls] ca_file`; the system's roots are trusted as
//! well), and the client certificate shown to an agent that wants mutual
//! TLS.
//!
//! The files are read and checked when the configuration is (so
//! `check-config` and the start refuse what would fail every call: no
//! certificate in a bundle, a key that is not one, a certificate past its
//! validity), and again by `upstream::tls` when they change on disk.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agui_edge::tls::{TlsFileError, check_certificates, read_bounded};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use toml::Spanned;

use super::ConfigError;
use super::schema::{FileTls, FileUpstreamTls};

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

/// The material, read and checked.
#[derive(Clone)]
pub struct TlsMaterial {
    /// Extra roots (PEM, one or more certificates).
    pub roots: Option<Vec<u8>>,
    /// The client certificate chain then its key, in one PEM (what
    /// reqwest's `Identity::from_pem` takes).
    pub identity: Option<Vec<u8>>,
}

/// What is wrong with an agent's TLS files.
#[derive(Debug, thiserror::Error)]
pub enum AgentTlsError {
    #[error(transparent)]
    File(#[from] TlsFileError),
    #[error("client_cert and client_key go together: {0} is missing")]
    Half(&'static str),
}

impl UpstreamTls {
    /// Reads and checks the files at `now`.
    pub fn read(&self, now: SystemTime) -> Result<TlsMaterial, AgentTlsError> {
        let roots = match &self.ca_file {
            Some(path) => {
                let pem = read_bounded("ca_file", path)?;
                check_certificates("ca_file", path, &pem, now)?;
                Some(pem)
            }
            None => None,
        };
        let identity = match (&self.client_cert, &self.client_key) {
            (None, None) => None,
            (Some(_), None) => return Err(AgentTlsError::Half("client_key")),
            (None, Some(_)) => return Err(AgentTlsError::Half("client_cert")),
            (Some(cert_path), Some(key_path)) => {
                let mut pem = read_bounded("client_cert", cert_path)?;
                check_certificates("client_cert", cert_path, &pem, now)?;
                let key = read_bounded("client_key", key_path)?;
                if PrivateKeyDer::from_pem_slice(&key).is_err() {
                    return Err(TlsFileError::at(
                        "client_key",
                        key_path,
                        "no PKCS#8, RSA or EC private key in PEM",
                    )
                    .into());
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

//! An agent's HTTP clients as its TLS settings make them, and their
//! reload: the CA bundle (added to the system's roots) and the client
//! certificate come from files an operator rotates in place (a renewed
//! certificate, a Kubernetes Secret update), so the files are checked every
//! `CHECK_EVERY` and the clients rebuilt when they changed. A file that no
//! longer reads keeps the clients that worked, with one warning per change.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use agui_edge::tls::FileStamp;

use crate::config::{AgentConfig, AgentTlsError, TlsMaterial, UpstreamTls};

/// How often an agent's TLS files are looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);

/// An agent's two clients: for passthrough and cards (reqwest's per-read
/// timeout bounds them), and for converted streams, whose relay keeps its
/// own idle timer.
#[derive(Clone)]
pub struct Clients {
    pub client: reqwest::Client,
    pub stream_client: reqwest::Client,
    /// For a `grpcs://` agent: the same trust and client certificate, as
    /// the rustls configuration its gRPC connections are made with.
    pub grpc_tls: Option<Arc<rustls::ClientConfig>>,
}

/// Why an agent's clients could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("agents.{agent}.tls.{source}")]
    Files {
        agent: String,
        source: AgentTlsError,
    },
    #[error("agents.{agent}: {message}")]
    Build { agent: String, message: String },
}

/// The clients for `config`, with its TLS files as they are now.
pub fn build(config: &AgentConfig) -> Result<Clients, ClientError> {
    let material = config
        .tls
        .read(SystemTime::now())
        .map_err(|source| ClientError::Files {
            agent: config.name.clone(),
            source,
        })?;
    let build_error = |message: String| ClientError::Build {
        agent: config.name.clone(),
        message,
    };
    let mut clients = with(config, &material).map_err(|err| build_error(err.to_string()))?;
    if config.upstream.scheme() == "grpcs" {
        clients.grpc_tls = Some(grpc_tls(&material).map_err(build_error)?);
    }
    Ok(clients)
}

/// The rustls configuration of a `grpcs://` agent's connections: the
/// platform's roots and the `ca_file`'s, the client certificate if any,
/// ALPN `h2` (gRPC is HTTP/2 only).
fn grpc_tls(material: &TlsMaterial) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let extra = match &material.roots {
        Some(pem) => CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| format!("tls.ca_file: {err}"))?,
        None => Vec::new(),
    };
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())
            .map_err(|err| format!("the trusted roots: {err}"))?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| err.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut config = match &material.identity {
        Some(pem) => {
            let chain = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| format!("tls.client_cert: {err}"))?;
            let key = PrivateKeyDer::from_pem_slice(pem)
                .map_err(|err| format!("tls.client_key: {err}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|err| format!("tls.client_cert: {err}"))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

fn with(config: &AgentConfig, material: &TlsMaterial) -> Result<Clients, reqwest::Error> {
    let roots = match &material.roots {
        Some(pem) => Some(reqwest::Certificate::from_pem_bundle(pem)?),
        None => None,
    };
    let identity = match &material.identity {
        Some(pem) => Some(reqwest::Identity::from_pem(pem)?),
        None => None,
    };
    let builder = || {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none());
        if let Some(roots) = &roots {
            builder = builder.tls_certs_merge(roots.iter().cloned());
        }
        if let Some(identity) = &identity {
            builder = builder.identity(identity.clone());
        }
        builder
    };
    // A per-read timeout (reset by every chunk, also bounds the wait for
    // headers); never a total deadline, which would cut streams.
    Ok(Clients {
        client: builder().read_timeout(config.idle_timeout).build()?,
        stream_client: builder().build()?,
        grpc_tls: None,
    })
}

/// Whether a failed call's cause is the agent's certificate, which the
/// gateway does not trust (wrong or missing `ca_file`, an expired or
/// misissued certificate): worth saying, as it is a configuration matter,
/// not an agent that is down. Read from the error chain (rustls's
/// `InvalidCertificate`, whatever wraps it).
pub fn untrusted_certificate(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    // Bounded: error chains are short, and a cycle would not end.
    for _ in 0..16 {
        let Some(current) = cause else {
            return false;
        };
        if format!("{current:?}").contains("InvalidCertificate") {
            return true;
        }
        cause = current.source();
    }
    false
}

/// What the files looked like when the clients were built.
pub type Stamp = FileStamp;

/// The stamp of an agent's TLS files.
pub fn stamp_of(tls: &UpstreamTls) -> Stamp {
    FileStamp::of(tls.files())
}

/// The clients in use and the stamp they were built from.
pub struct Reloadable {
    current: Mutex<(Arc<Clients>, Stamp)>,
}

impl Reloadable {
    pub fn new(clients: Clients, stamp: Stamp) -> Reloadable {
        Reloadable {
            current: Mutex::new((Arc::new(clients), stamp)),
        }
    }

    pub fn get(&self) -> Arc<Clients> {
        match self.current.lock() {
            Ok(current) => current.0.clone(),
            Err(poisoned) => poisoned.into_inner().0.clone(),
        }
    }

    /// Rebuilds the clients when the files changed since; true when it
    /// did. A change that does not build is warned about once and kept
    /// out (the old clients stay).
    pub fn reload(&self, config: &AgentConfig) -> bool {
        let stamp = stamp_of(&config.tls);
        let unchanged = self
            .current
            .lock()
            .map_or(true, |current| current.1 == stamp);
        if unchanged {
            return false;
        }
        // Built before the lock is taken: a request asking for the clients
        // meanwhile gets the ones in use, without waiting on file reads.
        let built = build(config);
        let Ok(mut current) = self.current.lock() else {
            return false;
        };
        current.1 = stamp;
        match built {
            Ok(clients) => {
                current.0 = Arc::new(clients);
                tracing::info!(agent = config.name, "TLS files changed: clients rebuilt");
                true
            }
            Err(err) => {
                tracing::warn!(
                    agent = config.name,
                    "TLS files changed but do not load ({err}): the previous ones stay"
                );
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca_pem(name: &str) -> String {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().expect("a key");
        params.self_signed(&key).expect("a certificate").pem()
    }

    #[test]
    fn clients_are_rebuilt_when_the_files_change_and_kept_when_they_break() {
        let dir =
            std::env::temp_dir().join(format!("agui-gateway-tls-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, ca_pem("first")).expect("written");
        let mut config =
            AgentConfig::new("a", url::Url::parse("https://127.0.0.1:9/").expect("a URL"));
        config.tls.ca_file = Some(ca.clone());
        let clients = Reloadable::new(build(&config).expect("clients"), stamp_of(&config.tls));
        assert!(!clients.reload(&config), "nothing changed");
        // A rotated bundle (longer: the stamp sees it even within the
        // file system's time resolution).
        std::fs::write(&ca, format!("{}{}", ca_pem("second"), ca_pem("third"))).expect("written");
        let before = clients.get();
        assert!(clients.reload(&config));
        assert!(!Arc::ptr_eq(&before, &clients.get()));
        // A broken one: the clients that worked stay, and it is not tried
        // again until it changes.
        std::fs::write(&ca, "not a certificate").expect("written");
        let before = clients.get();
        assert!(!clients.reload(&config));
        assert!(Arc::ptr_eq(&before, &clients.get()));
        assert!(!clients.reload(&config));
        std::fs::remove_dir_all(&dir).ok();
    }
}

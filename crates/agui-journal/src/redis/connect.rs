//! How the journal reaches Redis: `redis://`, or `rediss://` (TLS) trusting
//! the system's roots and a CA bundle on top, with a client certificate for
//! mutual TLS; the ACL user from the URL, its password from the URL or
//! from a file (so that the secret is in neither a flag nor the
//! environment). One node, or a Redis Cluster through its seeds.

use base64::Engine as _;
use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::{
    Client, ClientTlsConfig, ConnectionInfo, IntoConnectionInfo, RedisError, TlsCertificates,
};
use url::Url;

/// What the access files held when they were read (PEM, and the password).
#[derive(Clone, Default)]
pub struct RedisAccess {
    /// Roots trusted on top of the system's, PEM.
    pub roots: Option<Vec<u8>>,
    /// The client certificate chain and its key, PEM each.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// The ACL user's password, over the URL's.
    pub password: Option<String>,
}

impl std::fmt::Debug for RedisAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key or the password.
        f.debug_struct("RedisAccess")
            .field("roots", &self.roots.is_some())
            .field("identity", &self.identity.is_some())
            .field("password", &self.password.is_some())
            .finish()
    }
}

/// What reaching any node of the journal's Redis takes, prepared once per
/// reading of the access files: the password, and for `rediss://` the TLS
/// material (the system's roots read from disk once, not per connection).
pub(super) struct Reach {
    password: Option<String>,
    certificates: Option<TlsCertificates>,
}

impl Reach {
    pub(super) fn new(access: &RedisAccess, tls: bool) -> Reach {
        Reach {
            password: access.password.clone(),
            certificates: tls.then(|| certificates(access)),
        }
    }

    /// What reaching the node at `url` takes: its address, the user, and
    /// the password over the URL's.
    fn info(&self, url: &Url) -> Result<ConnectionInfo, RedisError> {
        let mut info = url.as_str().into_connection_info()?;
        if let Some(password) = &self.password {
            let settings = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(settings);
        }
        Ok(info)
    }

    /// The client for one node, at `url`.
    pub(super) fn client(&self, url: &Url) -> Result<Client, RedisError> {
        let info = self.info(url)?;
        match (&self.certificates, url.scheme()) {
            (Some(certificates), "rediss") => Client::build_with_tls(info, certificates.clone()),
            _ => Client::open(info),
        }
    }

    /// The client for the cluster `seeds` belong to: it learns the
    /// cluster's slots from them, and follows redirects and failovers.
    pub(super) fn cluster(&self, seeds: &[Url]) -> Result<ClusterClient, RedisError> {
        let infos = seeds
            .iter()
            .map(|url| self.info(url))
            .collect::<Result<Vec<_>, _>>()?;
        let mut builder = ClusterClientBuilder::new(infos)
            .connection_timeout(CONNECT_TIMEOUT)
            .response_timeout(RESPONSE_TIMEOUT)
            .retries(3);
        if let Some(certificates) = &self.certificates {
            builder = builder.certs(certificates.clone());
        }
        builder.build()
    }
}

/// What TLS trusts and shows (for `rediss://`).
fn certificates(access: &RedisAccess) -> TlsCertificates {
    // Without a bundle the client trusts the system's roots by itself.
    let root_cert = access.roots.as_deref().map(with_system_roots);
    let client_tls = access
        .identity
        .as_ref()
        .map(|(client_cert, client_key)| ClientTlsConfig {
            client_cert: client_cert.clone(),
            client_key: client_key.clone(),
        });
    TlsCertificates {
        client_tls,
        root_cert,
    }
}

/// How long reaching a node may take, and a reply.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
pub(super) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// The system's roots as PEM, then `extra`: the client takes one bundle,
/// which replaces the system's roots.
fn with_system_roots(extra: &[u8]) -> Vec<u8> {
    let system = rustls_native_certs::load_native_certs();
    let mut pem = Vec::with_capacity(system.certs.len() * 2048 + extra.len());
    let engine = base64::engine::general_purpose::STANDARD;
    // Only roots the TLS library takes: one it refuses would refuse them all.
    let mut taken = rustls::RootCertStore::empty();
    for cert in system
        .certs
        .iter()
        .filter(|c| taken.add((*c).clone()).is_ok())
    {
        pem.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
        for line in engine.encode(cert.as_ref()).as_bytes().chunks(64) {
            pem.extend_from_slice(line);
            pem.push(b'\n');
        }
        pem.extend_from_slice(b"-----END CERTIFICATE-----\n");
    }
    pem.extend_from_slice(extra);
    pem
}

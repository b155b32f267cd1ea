//! TLS at the edge: rustls with ALPN `h2` then `http/1.1`, serving the
//! certificate of `[tls]` (or `--tls-cert`/`--tls-key`). The files are
//! looked at every `CHECK_EVERY` and the pair reloaded when they changed
//! (a renewed certificate, a Kubernetes Secret update): new handshakes get
//! the new pair, open connections keep theirs. A pair that no longer loads
//! is warned about once per change and the one that worked stays; it is
//! tried again at every look, so one that becomes valid is taken.

mod files;

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use rustls::ServerConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

pub use files::{
    FileStamp, MAX_TLS_FILE_BYTES, ServeTls, TLS_FILE_KEYS, TLS_FLAGS, TlsFileError,
    check_certificates, read_bounded,
};

/// How often the certificate files are looked at (two `stat` calls).
pub const CHECK_EVERY: Duration = Duration::from_secs(2);

/// ALPN, in the server's order of preference.
const ALPN_H2: &[u8] = b"h2";
const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The protocol a connection agreed on: by ALPN over TLS, by the preface
/// (or its absence) in clear text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgreedProtocol {
    Http2,
    Http1,
}

impl AgreedProtocol {
    /// What ALPN chose; a client that offered none speaks HTTP/1.1.
    pub fn of_alpn(alpn: Option<&[u8]>) -> AgreedProtocol {
        if alpn == Some(ALPN_H2) {
            AgreedProtocol::Http2
        } else {
            AgreedProtocol::Http1
        }
    }
}

/// The acceptor and the pair it serves.
pub struct EdgeTls {
    acceptor: TlsAcceptor,
    pair: Arc<Pair>,
}

/// The pair in use, the files' stamp when it was read, and where they are.
#[derive(Debug)]
struct Pair {
    files: ServeTls,
    current: RwLock<(Arc<CertifiedKey>, FileStamp)>,
    /// The stamp of files that did not load, warned about once.
    warned: Mutex<Option<FileStamp>>,
}

impl ResolvesServerCert for Pair {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match self.current.read() {
            Ok(current) => Some(current.0.clone()),
            Err(poisoned) => Some(poisoned.into_inner().0.clone()),
        }
    }
}

impl EdgeTls {
    /// Reads the pair (the configuration has checked it once already; it
    /// may have changed since).
    pub fn new(files: &ServeTls) -> Result<EdgeTls, TlsFileError> {
        let stamp = FileStamp::of(files.files());
        let key = files.load(SystemTime::now())?;
        let pair = Arc::new(Pair {
            files: files.clone(),
            current: RwLock::new((key, stamp)),
            warned: Mutex::new(None),
        });
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        // The provider's defaults (TLS 1.3 and 1.2) cannot fail to build;
        // a failure here would be a rustls bug, reported as a file error
        // rather than a panic.
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsFileError::at(files.names[0], &files.cert, &e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(pair.clone());
        config.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()];
        Ok(EdgeTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            pair,
        })
    }

    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// Reloads the pair when its files changed; true when it did. A pair
    /// that does not load is tried again at every look (a certificate not
    /// valid yet becomes valid, a key written after its certificate
    /// arrives), and warned about once per change of the files.
    pub fn reload(&self) -> bool {
        let pair = &self.pair;
        let stamp = FileStamp::of(pair.files.files());
        let unchanged = pair
            .current
            .read()
            .map_or(true, |current| current.1 == stamp);
        if unchanged {
            return false;
        }
        match pair.files.load(SystemTime::now()) {
            Ok(key) => {
                let Ok(mut current) = pair.current.write() else {
                    return false;
                };
                *current = (key, stamp);
                tracing::info!("TLS certificate files changed: new handshakes use the new pair");
                true
            }
            Err(err) => {
                let Ok(mut warned) = pair.warned.lock() else {
                    return false;
                };
                if warned.as_ref() != Some(&stamp) {
                    tracing::warn!(
                        "TLS certificate files changed but do not load ({err}): the previous pair stays"
                    );
                    *warned = Some(stamp);
                }
                false
            }
        }
    }

    /// Looks at the files every `CHECK_EVERY` until `stop`.
    pub fn spawn_watch(self: Arc<Self>, stop: CancellationToken) {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(CHECK_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = every.tick() => {}
                }
                // File reads block: off the runtime's worker threads.
                let tls = self.clone();
                let _ = tokio::task::spawn_blocking(move || tls.reload()).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(dir: &std::path::Path, name: &str) -> ServeTls {
        let key = rcgen::KeyPair::generate().expect("a key");
        let params = rcgen::CertificateParams::new(vec![name.to_owned()]).expect("params");
        let cert = params.self_signed(&key).expect("a certificate");
        let files = ServeTls {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
            names: TLS_FLAGS,
        };
        std::fs::write(&files.cert, cert.pem()).expect("written");
        std::fs::write(&files.key, key.serialize_pem()).expect("written");
        files
    }

    fn served(tls: &EdgeTls) -> Arc<CertifiedKey> {
        tls.pair.current.read().expect("not poisoned").0.clone()
    }

    #[test]
    fn the_pair_is_reloaded_when_its_files_change_and_kept_when_they_break() {
        let dir =
            std::env::temp_dir().join(format!("agui-gateway-edge-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        let files = pair(&dir, "first.example");
        let tls = EdgeTls::new(&files).expect("loads");
        assert!(!tls.reload(), "nothing changed");
        let before = served(&tls);
        // Another name: a longer certificate, which the stamp sees even
        // within the file system's time resolution.
        pair(&dir, "a-second-and-longer-name.example");
        assert!(tls.reload());
        assert!(!Arc::ptr_eq(&before, &served(&tls)));
        // A key of another pair: refused, the working pair stays; tried
        // again at the next look, and taken once the files make a pair.
        let other = rcgen::KeyPair::generate().expect("a key");
        std::fs::write(&files.key, other.serialize_pem()).expect("written");
        let before = served(&tls);
        assert!(!tls.reload());
        assert!(Arc::ptr_eq(&before, &served(&tls)));
        assert!(!tls.reload());
        pair(&dir, "a-third-name.example");
        assert!(tls.reload());
        assert!(!Arc::ptr_eq(&before, &served(&tls)));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused_with_its_name() {
        let dir =
            std::env::temp_dir().join(format!("agui-gateway-edge-tls-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        let files = pair(&dir, "one.example");
        let other = rcgen::KeyPair::generate().expect("a key");
        std::fs::write(&files.key, other.serialize_pem()).expect("written");
        let err = EdgeTls::new(&files).err().expect("refused").to_string();
        assert!(err.starts_with("--tls-key: "), "{err}");
        assert!(err.contains("not the key of the certificate"), "{err}");
        std::fs::write(&files.key, "not a key").expect("written");
        let err = EdgeTls::new(&files).err().expect("refused").to_string();
        assert!(err.contains("no PKCS#8, RSA or EC private key"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }
}

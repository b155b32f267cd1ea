//! The connections of a `grpcs://` agent: TCP, then TLS with the agent's
//! rustls configuration as it is at each connect (`ClientTls`), so a
//! rotated CA bundle or client certificate takes effect on the next
//! connection.

use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Where a `grpcs://` agent's TLS configuration comes from: asked at each
/// connect, so its owner may rebuild it (rotated files) between two.
pub trait ClientTls: Send + Sync {
    /// The configuration to connect with now (ALPN `h2`); `None` when
    /// there is none for gRPC, and the connection is not made.
    fn client_config(&self) -> Option<Arc<rustls::ClientConfig>>;
}

/// Why a TLS connection to an agent was not made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("the agent's address {0:?} has no host and port")]
    Address(String),
    #[error("the agent's TLS settings are not built for gRPC")]
    NoTls,
    #[error("connecting to the agent timed out")]
    Timeout,
    #[error("connecting to the agent: {0}")]
    Io(#[from] std::io::Error),
}

/// A connection to the agent, as hyper takes it.
type Connection = TokioIo<TlsStream<TcpStream>>;

type Connecting = futures::future::BoxFuture<'static, Result<Connection, ConnectError>>;

/// A connector for tonic's channel: `uri` is the endpoint's.
pub fn connector(
    tls: Arc<dyn ClientTls>,
    timeout: Duration,
) -> impl tower::Service<Uri, Response = Connection, Error = ConnectError, Future = Connecting> + Clone
{
    tower::service_fn(move |uri: Uri| {
        let tls = tls.clone();
        let connect = async move {
            let host = uri
                .host()
                .ok_or_else(|| ConnectError::Address(uri.to_string()))?;
            let port = uri.port_u16().unwrap_or(443);
            let config = tls.client_config().ok_or(ConnectError::NoTls)?;
            // `[::1]` in a URI is `::1` to a certificate.
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let name = ServerName::try_from(bare.to_owned())
                .map_err(|_| ConnectError::Address(uri.to_string()))?;
            let tcp = TcpStream::connect((bare, port)).await?;
            tcp.set_nodelay(true)?;
            let stream = TlsConnector::from(config).connect(name, tcp).await?;
            Ok(TokioIo::new(stream))
        };
        Box::pin(async move {
            tokio::time::timeout(timeout, connect)
                .await
                .unwrap_or(Err(ConnectError::Timeout))
        }) as Connecting
    })
}

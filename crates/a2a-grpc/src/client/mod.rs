//! An agent's gRPC service, called as the JSON-RPC agent it stands for.
//! A caller writes every call as JSON-RPC and reads every answer as
//! JSON-RPC; for an agent that speaks gRPC, `GrpcAgent::execute` stands
//! where the HTTP request would be sent: it reads the JSON-RPC call into
//! the typed request of the agent's service (`requests`), calls it, and
//! answers as the agent would have over JSON-RPC (a stream of `data:`
//! frames, or one JSON body; the typed answers written as 1.0's JSON by
//! `json`, errors as the JSON-RPC errors `status` reads them as). So
//! conversion, resume, healing, cancel, listing and the journal work
//! unchanged on a gRPC agent.

mod answer;
mod connect;
mod execute;

pub use answer::{BrokenStream, JsonRpcAnswer, JsonRpcBody};
pub use connect::{ClientTls, ConnectError};

use std::sync::Arc;
use std::time::Duration;

use http::uri::PathAndQuery;
use http::{HeaderMap, HeaderName, header};
use tonic::client::Grpc;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Channel, Endpoint};
use tonic_prost::ProstCodec;
use url::Url;

use crate::{v03, v10};

/// Which A2A service an agent's gRPC interface is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// `a2a.v1.A2AService`.
    V03,
    /// `lf.a2a.v1.A2AService`.
    V10,
}

impl Service {
    fn path(self, method: &'static str) -> PathAndQuery {
        let service = match self {
            Service::V03 => v03::SERVICE,
            Service::V10 => v10::SERVICE,
        };
        // Both parts are this crate's constants: always a valid path.
        PathAndQuery::try_from(format!("/{service}/{method}"))
            .unwrap_or_else(|_| PathAndQuery::from_static("/"))
    }

    /// The `a2a-version` metadata a client of this service sends.
    fn version(self) -> &'static str {
        match self {
            Service::V03 => "0.3",
            Service::V10 => "1.0",
        }
    }
}

/// An agent's gRPC address that is not one.
#[derive(Debug, thiserror::Error)]
#[error("the agent's gRPC address {0:?} is not one")]
pub struct AddressError(String);

/// An agent reached over gRPC.
#[derive(Clone)]
pub struct GrpcAgent {
    pub(crate) channel: Channel,
    service: Service,
    /// The largest message read from the agent (the caller's
    /// `max_event_bytes`).
    pub(crate) max_message_bytes: usize,
}

/// The channel could not take the call (no connection): a status that
/// carries its cause, as the transport's own do.
fn not_connected(err: tonic::transport::Error) -> tonic::Status {
    tonic::Status::from_error(Box::new(err))
}

/// A status the transport made (a reset, a closed connection), not one
/// the agent sent: those carry their cause.
fn is_cut(status: &tonic::Status) -> bool {
    std::error::Error::source(status).is_some()
}

/// Bytes an agent may send on one stream ahead of the gateway's reading:
/// at 100-byte messages, 16 KiB holds 160 of them, and a stream of tokens
/// over a 50 ms round trip still gets 320 KB/s.
const STREAM_WINDOW: u32 = 16 * 1024;

/// Bytes ahead on the whole connection: h2's budget for small frames held
/// is half of it (8 MiB), what about 150 streams of full windows of
/// 60-byte messages cost.
const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// The headers that are HTTP's, not the call's: never gRPC metadata.
const NOT_METADATA: [HeaderName; 8] = [
    header::HOST,
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::ACCEPT,
    header::ACCEPT_ENCODING,
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
];

impl GrpcAgent {
    /// A channel to `url` (`host:port`, or with an `http`, `https`,
    /// `grpc` or `grpcs` scheme), connected on first use; over TLS
    /// (`https`, `grpcs`) with the configuration `tls` gives at each
    /// connect.
    pub fn new(
        url: &Url,
        service: Service,
        (connect_timeout, max_message_bytes): (Duration, usize),
        tls: Arc<dyn ClientTls>,
    ) -> Result<GrpcAgent, AddressError> {
        let scheme = match url.scheme() {
            "http" | "grpc" => "http",
            "https" | "grpcs" => "https",
            other => return Err(AddressError(other.to_owned())),
        };
        let host = url
            .host_str()
            .ok_or_else(|| AddressError(url.to_string()))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| AddressError(url.to_string()))?;
        let endpoint = Endpoint::from_shared(format!("{scheme}://{host}:{port}"))
            .map_err(|_| AddressError(url.to_string()))?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20))
            // h2 ends a whole connection (GOAWAY ENHANCE_YOUR_CALM) once the
            // small DATA frames it holds unread cost more than half its
            // connection window: an agent streaming tokens as one small
            // message each, to clients slower than it (or a gateway busy
            // with others), did that to every run on the connection. Small
            // stream windows and a large connection window keep what any
            // one stream can hold back well under that budget (measured in
            // BENCHMARKS.md: 50 streams of 2,000 back-to-back messages).
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW);
        let channel = match scheme {
            "https" => {
                endpoint.connect_with_connector_lazy(connect::connector(tls, connect_timeout))
            }
            _ => endpoint.connect_lazy(),
        };
        Ok(GrpcAgent {
            channel,
            service,
            max_message_bytes,
        })
    }

    pub fn service(&self) -> Service {
        self.service
    }

    fn grpc(&self) -> Grpc<Channel> {
        Grpc::new(self.channel.clone()).max_decoding_message_size(self.max_message_bytes)
    }

    /// The call's metadata: the request's headers that are the call's
    /// (credentials, extensions, trace context, configured headers), and
    /// the service's version.
    fn metadata(&self, headers: &HeaderMap) -> MetadataMap {
        let mut metadata = MetadataMap::new();
        for (name, value) in headers {
            if NOT_METADATA.contains(name) || name.as_str().starts_with("grpc-") {
                continue;
            }
            let Ok(key) = MetadataKey::from_bytes(name.as_str().as_bytes()) else {
                continue;
            };
            let Ok(value) = MetadataValue::try_from(value.as_bytes()) else {
                continue;
            };
            metadata.append(key, value);
        }
        metadata.insert(
            "a2a-version",
            MetadataValue::from_static(self.service.version()),
        );
        // 0.3 agents read extensions under the older name.
        if self.service == Service::V03
            && let Some(extensions) = headers.get("a2a-extensions")
            && let Ok(value) = MetadataValue::try_from(extensions.as_bytes())
        {
            metadata.insert("x-a2a-extensions", value);
        }
        metadata
    }

    fn request<T>(
        &self,
        message: T,
        headers: &HeaderMap,
        deadline: Option<Duration>,
    ) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        *request.metadata_mut() = self.metadata(headers);
        if let Some(deadline) = deadline {
            request.set_timeout(deadline);
        }
        request
    }

    async fn unary<Q, A>(
        &self,
        request: tonic::Request<Q>,
        method: &'static str,
    ) -> Result<A, tonic::Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.grpc();
        grpc.ready().await.map_err(not_connected)?;
        let response = grpc
            .unary(
                request,
                self.service.path(method),
                ProstCodec::<Q, A>::default(),
            )
            .await?;
        Ok(response.into_inner())
    }
}

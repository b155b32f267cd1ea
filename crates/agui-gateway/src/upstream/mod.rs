//! One upstream A2A agent (`Agent`: its configuration, its HTTP clients,
//! the converted stream's call) and everything about calling it: its card
//! (`card`), the bodies the gateway writes (`rpc`), where a request goes
//! (`target`), which headers go (`forwarding`), how each call is built
//! (`outbound`), the lean connection of converted streams (`lean`), its
//! clients as its TLS files make them (`tls`), the answers it reads for
//! its own use, bounded (`answer`), its client when it is reached over
//! gRPC (`grpc_agent`).

pub mod answer;
mod card;
pub mod credentials;
pub mod direct;
pub mod grpc_agent;
pub mod headers;
pub mod outbound;
mod rpc;
pub mod target;
pub mod tls;

pub use card::{CARD_ELEMENTS, CardError, CardInfo, CardStatus, UNTRUSTED_CARD, card_endpoint};
pub use rpc::{
    A2UI_MEDIA_TYPE, OutgoingMessage, OutgoingPart, TaskCall, list_tasks_request,
    streaming_request, task_request,
};

use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use bytes::Bytes;
use futures::{Stream, TryStreamExt};

use self::direct::DirectError;
use crate::config::{AgentConfig, Limits};
use crate::signing::{Policy, TrustedKeys};
use crate::upstream::headers::via_entry;

pub struct Agent {
    pub config: AgentConfig,
    /// The configured headers, checked once: they replace client headers
    /// of the same name on every call (`headers::upstream_headers`).
    pub configured_headers: Vec<(HeaderName, HeaderValue)>,
    /// This gateway's `Via` entry.
    pub via: String,
    /// Its HTTP clients, rebuilt when its TLS files change.
    clients: Arc<tls::Reloadable>,
    /// For an agent reached over gRPC (a `grpc://` or `grpcs://`
    /// upstream): every call goes there instead.
    pub grpc: Option<a2a_grpc::GrpcAgent>,
    /// The tokens the gateway gets to call it (`[agents.NAME.auth]`).
    pub credentials: Option<credentials::Credentials>,
    /// The keys its card may be signed with, when its policy checks them.
    card_keys: Option<Arc<TrustedKeys>>,
    card_timeout: Duration,
    max_card_bytes: usize,
    card: RwLock<Option<Arc<CardInfo>>>,
    /// The last card refresh's outcome, for `/readyz`.
    status: RwLock<CardStatus>,
    /// A card naming a foreign endpoint is logged once, not on every refresh.
    warned_foreign: AtomicBool,
    /// One card fetch at a time, background refresh included.
    fetching: tokio::sync::Mutex<()>,
    last_attempt: Mutex<Option<Instant>>,
}

/// A converted stream's upstream answer, however it was read.
pub struct StreamResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: UpstreamBody,
    /// reqwest's bodies come one chunk at a time from a task of their
    /// own: batching them takes scheduler turns (`relay::batch`). A lean
    /// body hands over everything read in one poll.
    pub handed_one_by_one: bool,
}

/// The body of a converted stream's upstream answer.
pub type UpstreamBody = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// Reading an upstream body failed.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("{0}")]
    Reqwest(reqwest::Error),
    #[error("{0}")]
    Direct(DirectError),
    #[error("{0}")]
    Grpc(a2a_grpc::BrokenStream),
}

impl BodyError {
    pub fn is_timeout(&self) -> bool {
        match self {
            BodyError::Reqwest(err) => err.is_timeout(),
            // A lean body has no read timer: the relay's idle timer is it.
            // Nor has a gRPC stream.
            BodyError::Direct(_) | BodyError::Grpc(_) => false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("{0}")]
    Request(reqwest::Error),
    #[error("{0}")]
    Direct(DirectError),
    #[error("no response headers within {} s", .0.as_secs())]
    NoResponse(Duration),
    /// Not called: no token, or a card that must verify and does not.
    #[error("{}", .0.message)]
    Refused(outbound::Refusal),
    /// A gRPC agent's call not made (no connection, a failed handshake).
    #[error("{0}")]
    Grpc(tonic::Status),
}

impl UpstreamError {
    /// No connection was made (refused, unresolvable, or not in time).
    pub fn is_connect(&self) -> bool {
        match self {
            UpstreamError::Request(err) => err.is_connect(),
            UpstreamError::Direct(err) => err.is_connect(),
            UpstreamError::Grpc(_) => true,
            UpstreamError::NoResponse(_) | UpstreamError::Refused(_) => false,
        }
    }

    /// A timer ran out (a connection's, or the wait for response headers).
    pub fn is_timeout(&self) -> bool {
        match self {
            UpstreamError::Request(err) => err.is_timeout(),
            UpstreamError::Direct(err) => err.is_connect_timeout(),
            UpstreamError::NoResponse(_) => true,
            UpstreamError::Grpc(status) => status.code() == tonic::Code::DeadlineExceeded,
            UpstreamError::Refused(_) => false,
        }
    }
}

impl Agent {
    pub fn new(
        config: AgentConfig,
        gateway_id: &str,
        limits: &Limits,
        card_keys: Option<Arc<TrustedKeys>>,
    ) -> Result<Agent, tls::ClientError> {
        let stamp = tls::stamp_of(&config.tls);
        let clients = Arc::new(tls::Reloadable::new(tls::build(&config)?, stamp));
        // The configuration check refuses invalid headers; none is dropped
        // silently here for want of a path to report it.
        let configured_headers = config
            .headers
            .iter()
            .filter_map(|(name, value)| {
                Some((
                    HeaderName::from_bytes(name.as_bytes()).ok()?,
                    HeaderValue::from_str(value).ok()?,
                ))
            })
            .collect();
        let grpc = grpc_agent::client(&config, limits, &clients)?;
        Ok(Agent {
            grpc,
            configured_headers,
            via: via_entry(gateway_id),
            credentials: config
                .auth
                .clone()
                .map(|auth| credentials::Credentials::new(auth, limits.card_timeout)),
            card_keys: card_keys.filter(|_| config.card_signatures != Policy::Off),
            config,
            clients,
            card_timeout: limits.card_timeout,
            max_card_bytes: limits.max_card_bytes,
            card: RwLock::new(None),
            status: RwLock::new(CardStatus::Unknown),
            warned_foreign: AtomicBool::new(false),
            fetching: tokio::sync::Mutex::new(()),
            last_attempt: Mutex::new(None),
        })
    }

    /// Sends a request whose answer will be relayed as a converted stream:
    /// the wait for its headers is bounded by the idle timeout here, the
    /// body by the relay's own idle timer. Plain-HTTP agents get a
    /// connection of the relay's own (`lean`); HTTPS ones go through
    /// reqwest.
    /// A 401 to a call carrying the gateway's token is sent once more with
    /// a new one (`renewal`).
    pub async fn send_stream(
        &self,
        request: reqwest::RequestBuilder,
        renewal: Option<&outbound::Renewal>,
    ) -> Result<StreamResponse, UpstreamError> {
        let (client, request) = request.build_split();
        let request = request.map_err(UpstreamError::Request)?;
        let spare = renewal.and_then(|_| request.try_clone());
        let response = self.send_stream_once(&client, request).await?;
        if response.status == reqwest::StatusCode::UNAUTHORIZED
            && let (Some(renewal), Some(spare)) = (renewal, spare)
            && let Some(again) = renewal.retried(self, spare, &response.headers).await
        {
            return self.send_stream_once(&client, again).await;
        }
        Ok(response)
    }

    async fn send_stream_once(
        &self,
        client: &reqwest::Client,
        request: reqwest::Request,
    ) -> Result<StreamResponse, UpstreamError> {
        let idle = self.config.idle_timeout;
        if let Some(grpc) = &self.grpc {
            let body = request
                .body()
                .and_then(reqwest::Body::as_bytes)
                .unwrap_or_default();
            let answer = grpc.execute(body, request.headers(), Some(idle)).await;
            if let a2a_grpc::JsonRpcBody::Unreachable(cause) = answer.body {
                return Err(UpstreamError::Grpc(cause));
            }
            return Ok(StreamResponse {
                status: StatusCode::OK,
                headers: answer.headers.clone(),
                body: Box::pin(answer.into_stream().map_err(BodyError::Grpc)),
                handed_one_by_one: false,
            });
        }
        let send = async {
            if direct::serves(&request) {
                let response = direct::send(&request, self.config.connect_timeout)
                    .await
                    .map_err(UpstreamError::Direct)?;
                return Ok(StreamResponse {
                    status: response.status,
                    headers: response.headers,
                    body: Box::pin(response.body.map_err(BodyError::Direct)),
                    handed_one_by_one: false,
                });
            }
            let response = client
                .execute(request)
                .await
                .map_err(UpstreamError::Request)?;
            Ok(StreamResponse {
                status: response.status(),
                headers: response.headers().clone(),
                body: Box::pin(response.bytes_stream().map_err(BodyError::Reqwest)),
                handed_one_by_one: true,
            })
        };
        match tokio::time::timeout(idle, send).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamError::NoResponse(idle)),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// For passthrough and cards: reqwest's per-read timeout bounds them.
    pub fn client(&self) -> reqwest::Client {
        self.clients.get().client.clone()
    }

    /// For converted streams, whose relay keeps its own idle timer: no
    /// per-read timer on every chunk (see `send_stream`).
    pub fn stream_client(&self) -> reqwest::Client {
        self.clients.get().stream_client.clone()
    }

    /// Rebuilds the clients when the agent's TLS files changed.
    pub fn reload_tls(&self) -> bool {
        self.clients.reload(&self.config)
    }

    /// Looks at the agent's TLS files every `tls::CHECK_EVERY` until
    /// `stop`, and rebuilds its clients when they changed. Nothing to do
    /// for an agent without TLS files.
    pub fn spawn_tls_watch(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        if self.config.tls.files().next().is_none() {
            return;
        }
        let agent = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(tls::CHECK_EVERY) => {}
                }
                // Reading files blocks: off the async workers.
                let watched = agent.clone();
                let _ = tokio::task::spawn_blocking(move || watched.reload_tls()).await;
            }
        });
    }
}

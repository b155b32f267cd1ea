//! One upstream A2A agent (`Agent`: its configuration, its HTTP clients,
//! its card) and everything about calling it:
//! - `card`: discovery, bounded in time and size, and what `/readyz` says;
//!   `capabilities`: the AG-UI capabilities read from it;
//! - `route`: how it is reached (binding, address, dialect, mode), chosen
//!   from the card's interfaces;
//! - `call`: what the gateway asks of it (`Call`) and the layers every
//!   call shares (headers, token renewal, deadline, span);
//! - `binding`: each binding's requests (JSON-RPC, HTTP+JSON, gRPC);
//! - `run`: a run's call, streamed or polled; `poll`: a run of an agent
//!   that does not stream, its task read until it ends;
//! - `rpc`: the A2A bodies the gateway writes; `outbound`: what a call
//!   carries from its request; `target`, `headers`: where a client's
//!   request goes and with which headers;
//! - `direct`: the lean connection of converted streams; `tls`: its
//!   clients as its TLS files make them; `answer`: the answers it reads
//!   for its own use, bounded; `grpc_agent`: its gRPC channel when its
//!   configuration names one.

pub mod answer;
pub mod binding;
pub mod call;
pub mod capabilities;
mod card;
pub mod credentials;
pub mod direct;
pub mod grpc_agent;
pub mod headers;
pub mod outbound;
pub mod poll;
pub mod route;
mod rpc;
pub mod run;
pub mod target;
pub mod tls;

pub use card::{CARD_ELEMENTS, CardError, CardInfo, CardStatus, UNTRUSTED_CARD};
pub use rpc::{A2UI_MEDIA_TYPE, Call, OutgoingMessage, OutgoingPart, TaskCall};

use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use bytes::Bytes;
use futures::Stream;

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
    /// For an agent whose configuration names gRPC (a `grpc://` or
    /// `grpcs://` upstream): every call goes there, a client's own too.
    pub grpc: Option<a2a_grpc::GrpcAgent>,
    /// The largest message read from a gRPC agent (`max_event_bytes`),
    /// for the channels its card's interfaces open.
    max_event_bytes: usize,
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
    /// The agent refused the call's credentials (HTTP 401, gRPC
    /// `UNAUTHENTICATED`): what renews a token.
    pub unauthenticated: bool,
    /// The agent asks to be called again later (HTTP 5xx, 408, 429; gRPC
    /// `UNAVAILABLE`, `RESOURCE_EXHAUSTED`, `DEADLINE_EXCEEDED`,
    /// `ABORTED`): what a polled read tries again.
    pub busy: bool,
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
    /// An answer read whole (a polled send's) broke off, or passed its
    /// bounds.
    #[error("the agent's answer could not be read within its bounds")]
    Unreadable,
}

impl UpstreamError {
    /// No connection was made (refused, unresolvable, or not in time).
    pub fn is_connect(&self) -> bool {
        match self {
            UpstreamError::Request(err) => err.is_connect(),
            UpstreamError::Direct(err) => err.is_connect(),
            UpstreamError::Grpc(_) => true,
            UpstreamError::NoResponse(_)
            | UpstreamError::Refused(_)
            | UpstreamError::Unreadable => false,
        }
    }

    /// A timer ran out (a connection's, or the wait for response headers).
    pub fn is_timeout(&self) -> bool {
        match self {
            UpstreamError::Request(err) => err.is_timeout(),
            UpstreamError::Direct(err) => err.is_connect_timeout(),
            UpstreamError::NoResponse(_) => true,
            UpstreamError::Grpc(status) => status.code() == tonic::Code::DeadlineExceeded,
            UpstreamError::Refused(_) | UpstreamError::Unreadable => false,
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
            max_event_bytes: limits.max_event_bytes,
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

//! One upstream A2A agent: its HTTP clients, what its card says, and the
//! JSON-RPC bodies of the calls the gateway writes itself (how those calls
//! are sent is `outbound`'s business).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use serde_json::{Value, json};
use url::Url;

use crate::config::{A2aVersion, AgentConfig, Limits};
use crate::forwarding::{background_headers, via_entry};
use crate::lean::{self, LeanError};
use crate::target::base_url;

/// What the gateway learned from the agent card.
#[derive(Debug, Clone)]
pub struct CardInfo {
    pub card: Value,
    /// Where JSON-RPC calls the gateway builds go.
    pub jsonrpc_url: Url,
    /// The dialect those calls use (never `Auto`).
    pub version: A2aVersion,
    pub fetched: Instant,
}

pub struct Agent {
    pub config: AgentConfig,
    /// The configured headers, checked once: they replace client headers
    /// of the same name on every call (`forwarding::upstream_headers`).
    pub configured_headers: Vec<(HeaderName, HeaderValue)>,
    /// This gateway's `Via` entry.
    pub via: String,
    /// For passthrough and cards: reqwest's per-read timeout bounds them.
    pub client: reqwest::Client,
    /// For converted streams, whose relay keeps its own idle timer: no
    /// per-read timer on every chunk (see `send_stream`).
    pub stream_client: reqwest::Client,
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

/// While no card was ever read, requests try again at most this often.
const CARD_RETRY_GAP: Duration = Duration::from_secs(2);

/// What `/readyz` reports for an agent, without calling it.
#[derive(Debug, Clone, Default)]
pub enum CardStatus {
    /// No refresh has finished yet.
    #[default]
    Unknown,
    Ready,
    /// The reason, worded for clients: no upstream address in it.
    Failing(&'static str),
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
    Lean(LeanError),
}

impl BodyError {
    pub fn is_timeout(&self) -> bool {
        match self {
            BodyError::Reqwest(err) => err.is_timeout(),
            // A lean body has no read timer: the relay's idle timer is it.
            BodyError::Lean(_) => false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("{0}")]
    Request(reqwest::Error),
    #[error("{0}")]
    Lean(LeanError),
    #[error("no response headers within {} s", .0.as_secs())]
    NoResponse(Duration),
}

impl UpstreamError {
    /// No connection was made (refused, unresolvable, or not in time).
    pub fn is_connect(&self) -> bool {
        match self {
            UpstreamError::Request(err) => err.is_connect(),
            UpstreamError::Lean(err) => err.is_connect(),
            UpstreamError::NoResponse(_) => false,
        }
    }

    /// A timer ran out (a connection's, or the wait for response headers).
    pub fn is_timeout(&self) -> bool {
        match self {
            UpstreamError::Request(err) => err.is_timeout(),
            UpstreamError::Lean(err) => err.is_connect_timeout(),
            UpstreamError::NoResponse(_) => true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CardError {
    #[error("the agent card request failed")]
    Request(#[from] reqwest::Error),
    #[error("the agent card is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the upstream serves no agent card")]
    NotFound,
}

impl CardError {
    fn reason(&self) -> &'static str {
        match self {
            CardError::Request(err) if err.is_timeout() => "the agent card request timed out",
            CardError::Request(err) if err.is_connect() => "the upstream could not be connected to",
            CardError::Request(_) => "the agent card request failed",
            CardError::TooLarge(_) => "the agent card is too large",
            CardError::NotFound => "the upstream serves no agent card",
        }
    }
}

impl Agent {
    pub fn new(
        config: AgentConfig,
        gateway_id: &str,
        limits: &Limits,
    ) -> Result<Agent, reqwest::Error> {
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(config.connect_timeout)
                .tcp_nodelay(true)
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
        };
        // A per-read timeout (reset by every chunk, also bounds the wait for
        // headers); never a total deadline, which would cut streams.
        let client = builder().read_timeout(config.idle_timeout).build()?;
        let stream_client = builder().build()?;
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
        Ok(Agent {
            configured_headers,
            via: via_entry(gateway_id),
            config,
            client,
            stream_client,
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
    pub async fn send_stream(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<StreamResponse, UpstreamError> {
        let idle = self.config.idle_timeout;
        let (client, request) = request.build_split();
        let request = request.map_err(UpstreamError::Request)?;
        let send = async {
            if lean::serves(&request) {
                let response = lean::send(&request, self.config.connect_timeout)
                    .await
                    .map_err(UpstreamError::Lean)?;
                return Ok(StreamResponse {
                    status: response.status,
                    headers: response.headers,
                    body: Box::pin(response.body.map_err(BodyError::Lean)),
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

    pub fn card(&self) -> Option<Arc<CardInfo>> {
        self.card.read().ok().and_then(|c| c.clone())
    }

    pub fn card_status(&self) -> CardStatus {
        self.status
            .read()
            .map(|s| s.clone())
            .unwrap_or(CardStatus::Unknown)
    }

    /// The card as the background refresh keeps it, stale or not: requests
    /// never wait on an upstream's card once one was read. Until then a
    /// request waits for the fetch in flight, or makes one, unless the last
    /// one failed less than 2 s ago.
    pub async fn current_card(&self) -> Option<Arc<CardInfo>> {
        if let Some(card) = self.card() {
            return Some(card);
        }
        let _turn = self.fetching.lock().await;
        if let Some(card) = self.card() {
            return Some(card);
        }
        let failed_recently = matches!(self.card_status(), CardStatus::Failing(_))
            && self
                .last_attempt
                .lock()
                .ok()
                .and_then(|last| *last)
                .is_some_and(|at| at.elapsed() < CARD_RETRY_GAP);
        if failed_recently {
            return None;
        }
        self.fetch_and_record().await.ok()
    }

    /// Reads the card from `agent-card.json`, falling back to the 0.2-era
    /// `agent.json`, under the upstream's path and then at its origin. One
    /// fetch at a time: requests that need the card wait for it.
    pub async fn refresh_card(&self) -> Result<Arc<CardInfo>, CardError> {
        let _turn = self.fetching.lock().await;
        self.fetch_and_record().await
    }

    async fn fetch_and_record(&self) -> Result<Arc<CardInfo>, CardError> {
        let result = self.fetch_card().await;
        if let Ok(mut last) = self.last_attempt.lock() {
            *last = Some(Instant::now());
        }
        let status = match &result {
            Ok(_) => CardStatus::Ready,
            Err(err) => CardStatus::Failing(err.reason()),
        };
        if let Ok(mut slot) = self.status.write() {
            *slot = status;
        }
        result
    }

    async fn fetch_card(&self) -> Result<Arc<CardInfo>, CardError> {
        let headers = background_headers(&self.configured_headers, &self.via);
        for url in self.card_urls() {
            let request = self.client.get(url).headers(headers.clone());
            let Some((card, _)) = self.read_card(request).await? else {
                continue;
            };
            let info = Arc::new(self.card_info(card));
            if let Ok(mut slot) = self.card.write() {
                *slot = Some(info.clone());
            }
            return Ok(info);
        }
        Err(CardError::NotFound)
    }

    /// Sends a card request, bounded in time and size; `None` when the
    /// answer is not a card (an error status, not a JSON object).
    pub async fn read_card(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Option<(Value, reqwest::header::HeaderMap)>, CardError> {
        let mut response = request.timeout(self.card_timeout).send().await?;
        if !response.status().is_success() {
            return Ok(None);
        }
        let limit = self.max_card_bytes;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(CardError::TooLarge(limit));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if body.len() + chunk.len() > limit {
                return Err(CardError::TooLarge(limit));
            }
            body.extend_from_slice(&chunk);
        }
        let headers = response.headers().clone();
        Ok(serde_json::from_slice::<Value>(&body)
            .ok()
            .filter(Value::is_object)
            .map(|card| (card, headers)))
    }

    fn card_urls(&self) -> Vec<Url> {
        let base = base_url(&self.config.upstream);
        let mut urls = Vec::new();
        for path in [".well-known/agent-card.json", ".well-known/agent.json"] {
            if let Ok(url) = base.join(path) {
                urls.push(url);
            }
            if let Ok(url) = base.join(&format!("/{path}"))
                && !urls.contains(&url)
            {
                urls.push(url);
            }
        }
        urls
    }

    fn card_info(&self, card: Value) -> CardInfo {
        let (version, url) = card_endpoint(&card, self.config.a2a_version);
        let url = url.filter(|url| self.may_call(url));
        CardInfo {
            jsonrpc_url: url.unwrap_or_else(|| self.config.upstream.clone()),
            version,
            card,
            fetched: Instant::now(),
        }
    }

    /// Whether the gateway may send calls where a card points: only to the
    /// configured upstream's origin or an `allowed_origins` one. A card is
    /// the upstream's word, and the upstream's credentials go with the call.
    fn may_call(&self, url: &Url) -> bool {
        let origin = url.origin();
        if origin == self.config.upstream.origin() || self.config.allowed_origins.contains(&origin)
        {
            return true;
        }
        if !self.warned_foreign.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                agent = self.name(),
                card_url = %url,
                "the agent card names an endpoint on another origin; it is ignored (add the origin to allowed_origins to use it)"
            );
        }
        false
    }

    /// Where and how to send a call the gateway builds itself.
    pub async fn endpoint(&self) -> (Url, A2aVersion) {
        match self.current_card().await {
            Some(card) => (card.jsonrpc_url.clone(), card.version),
            None => {
                let version = match self.config.a2a_version {
                    A2aVersion::V10 => A2aVersion::V10,
                    _ => A2aVersion::V03,
                };
                (self.config.upstream.clone(), version)
            }
        }
    }

    /// Refreshes the card until the token is cancelled: every
    /// `card_refresh` while it works, sooner (1 s, doubling to 30 s) while
    /// it fails, so `/readyz` follows the upstream without calling it.
    pub fn spawn_card_refresh(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let agent = self.clone();
        let every = agent.config.card_refresh.max(Duration::from_secs(1));
        tokio::spawn(async move {
            let mut retry = Duration::from_secs(1);
            loop {
                let wait = match agent.refresh_card().await {
                    Ok(_) => {
                        retry = Duration::from_secs(1);
                        every
                    }
                    Err(err) => {
                        tracing::warn!(agent = agent.name(), "agent card: {err:?}");
                        let wait = retry.min(every);
                        retry = (retry * 2).min(Duration::from_secs(30));
                        wait
                    }
                };
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        });
    }
}

/// The JSON-RPC endpoint and dialect a card declares. 1.0 cards list
/// `supportedInterfaces`; 0.3 cards have `url` (+ `additionalInterfaces`);
/// hybrid cards have both. The newest declared JSON-RPC version wins unless
/// the configuration pins one.
pub fn card_endpoint(card: &Value, wanted: A2aVersion) -> (A2aVersion, Option<Url>) {
    let mut v10 = None;
    let mut v03 = None;
    for iface in card["supportedInterfaces"].as_array().into_iter().flatten() {
        let binding = iface["protocolBinding"].as_str().unwrap_or("");
        let url = iface["url"].as_str().and_then(|u| Url::parse(u).ok());
        if !binding.eq_ignore_ascii_case("JSONRPC") || url.is_none() {
            continue;
        }
        let version = iface["protocolVersion"].as_str().unwrap_or("1.0");
        if version.starts_with("0.") {
            v03 = v03.or(url);
        } else {
            v10 = v10.or(url);
        }
    }
    let transport = card["preferredTransport"].as_str().unwrap_or("JSONRPC");
    if v03.is_none() && transport.eq_ignore_ascii_case("JSONRPC") {
        v03 = card["url"].as_str().and_then(|u| Url::parse(u).ok());
    }
    for iface in card["additionalInterfaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if v03.is_none()
            && iface["transport"]
                .as_str()
                .is_some_and(|t| t.eq_ignore_ascii_case("JSONRPC"))
        {
            v03 = iface["url"].as_str().and_then(|u| Url::parse(u).ok());
        }
    }
    match (wanted, v10, v03) {
        (A2aVersion::V03, _, url) => (A2aVersion::V03, url),
        (A2aVersion::V10, url, _) => (A2aVersion::V10, url),
        (A2aVersion::Auto, Some(url), _) => (A2aVersion::V10, Some(url)),
        (A2aVersion::Auto, None, url) => (A2aVersion::V03, url),
    }
}

/// A user message the gateway sends upstream, in no dialect yet.
#[derive(Debug, Clone, Default)]
pub struct OutgoingMessage {
    pub message_id: String,
    pub parts: Vec<OutgoingPart>,
    pub context_id: Option<String>,
    pub task_id: Option<String>,
    pub metadata: Option<serde_json::Map<String, Value>>,
    pub extensions: Vec<String>,
    /// The request's own metadata (`params.metadata`), beside the message.
    pub request_metadata: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone)]
pub enum OutgoingPart {
    Text(String),
    FileUri {
        uri: String,
        media_type: Option<String>,
        name: Option<String>,
    },
    FileBytes {
        bytes: String,
        media_type: Option<String>,
        name: Option<String>,
    },
    Data(Value),
    /// A data part with part metadata that says what it is (a tool result,
    /// the answer to an interrupt).
    Marked {
        data: Value,
        metadata: serde_json::Map<String, Value>,
    },
    /// An A2UI client message (a user action): a data part marked with the
    /// A2UI media type, in part metadata as the A2UI extension says.
    Ui(Value),
}

/// The media type A2UI parts carry.
pub const A2UI_MEDIA_TYPE: &str = "application/json+a2ui";

impl OutgoingPart {
    fn to_json(&self, version: A2aVersion) -> Value {
        let v10 = version == A2aVersion::V10;
        let mut part = match self {
            OutgoingPart::Text(text) if v10 => json!({ "text": text }),
            OutgoingPart::Text(text) => json!({ "kind": "text", "text": text }),
            OutgoingPart::FileUri { uri, .. } if v10 => json!({ "url": uri }),
            OutgoingPart::FileUri { uri, .. } => json!({ "kind": "file", "file": { "uri": uri } }),
            OutgoingPart::FileBytes { bytes, .. } if v10 => json!({ "raw": bytes }),
            OutgoingPart::FileBytes { bytes, .. } => {
                json!({ "kind": "file", "file": { "bytes": bytes } })
            }
            OutgoingPart::Data(data) if v10 => json!({ "data": data }),
            OutgoingPart::Data(data) => json!({ "kind": "data", "data": data }),
            OutgoingPart::Marked { data, metadata } if v10 => {
                json!({ "data": data, "metadata": metadata })
            }
            OutgoingPart::Marked { data, metadata } => {
                json!({ "kind": "data", "data": data, "metadata": metadata })
            }
            OutgoingPart::Ui(data) if v10 => {
                json!({ "data": data, "mediaType": A2UI_MEDIA_TYPE, "metadata": { "mimeType": A2UI_MEDIA_TYPE } })
            }
            OutgoingPart::Ui(data) => {
                json!({ "kind": "data", "data": data, "metadata": { "mimeType": A2UI_MEDIA_TYPE } })
            }
        };
        if let OutgoingPart::FileUri {
            media_type, name, ..
        }
        | OutgoingPart::FileBytes {
            media_type, name, ..
        } = self
        {
            let (target, media_key, name_key) = if v10 {
                (&mut part, "mediaType", "filename")
            } else {
                (&mut part["file"], "mimeType", "name")
            };
            if let Some(media_type) = media_type {
                target[media_key] = json!(media_type);
            }
            if let Some(name) = name {
                target[name_key] = json!(name);
            }
        }
        part
    }
}

/// The JSON-RPC body of a streaming send in the upstream's dialect, and
/// whether it needs the `A2A-Version: 1.0` header.
pub fn streaming_request(
    version: A2aVersion,
    message: &OutgoingMessage,
    rpc_id: &str,
) -> (Value, bool) {
    let v10 = version == A2aVersion::V10;
    let parts: Vec<Value> = message.parts.iter().map(|p| p.to_json(version)).collect();
    let mut msg = if v10 {
        json!({ "role": "ROLE_USER", "messageId": message.message_id, "parts": parts })
    } else {
        json!({ "kind": "message", "role": "user", "messageId": message.message_id, "parts": parts })
    };
    if let Some(context) = &message.context_id {
        msg["contextId"] = json!(context);
    }
    if let Some(task) = &message.task_id {
        msg["taskId"] = json!(task);
    }
    if let Some(metadata) = &message.metadata {
        msg["metadata"] = Value::Object(metadata.clone());
    }
    if !message.extensions.is_empty() {
        msg["extensions"] = json!(message.extensions);
    }
    let method = if v10 {
        "SendStreamingMessage"
    } else {
        "message/stream"
    };
    let mut params = json!({ "message": msg });
    if let Some(metadata) = &message.request_metadata {
        params["metadata"] = Value::Object(metadata.clone());
    }
    (
        json!({ "jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params }),
        v10,
    )
}

/// A call about one task that the gateway makes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskCall {
    /// The client went away, or cancelled an interrupt.
    Cancel,
    /// Its events again, after the upstream stream broke.
    Subscribe,
    /// The task as stored: what a re-attached stream missed, or how it
    /// ended.
    Get,
}

impl TaskCall {
    fn method(self, v10: bool) -> &'static str {
        match (self, v10) {
            (TaskCall::Cancel, true) => "CancelTask",
            (TaskCall::Cancel, false) => "tasks/cancel",
            (TaskCall::Subscribe, true) => "SubscribeToTask",
            (TaskCall::Subscribe, false) => "tasks/resubscribe",
            (TaskCall::Get, true) => "GetTask",
            (TaskCall::Get, false) => "tasks/get",
        }
    }
}

/// The JSON-RPC body of a call about one task, in the upstream's dialect.
pub fn task_request(
    version: A2aVersion,
    call: TaskCall,
    task_id: &str,
    rpc_id: &str,
) -> (Value, bool) {
    let v10 = version == A2aVersion::V10;
    let method = call.method(v10);
    (
        json!({ "jsonrpc": "2.0", "id": rpc_id, "method": method, "params": { "id": task_id } }),
        v10,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_cards_prefer_1_0_unless_pinned() {
        let card = json!({
            "url": "http://a/", "protocolVersion": "0.3",
            "supportedInterfaces": [
                { "url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" },
                { "url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3" },
                { "url": "http://a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0" }]
        });
        assert_eq!(card_endpoint(&card, A2aVersion::Auto).0, A2aVersion::V10);
        assert_eq!(card_endpoint(&card, A2aVersion::V03).0, A2aVersion::V03);
        let old = json!({ "url": "http://b/rpc", "protocolVersion": "0.3.0" });
        let (version, url) = card_endpoint(&old, A2aVersion::Auto);
        assert_eq!(
            (version, url.unwrap().as_str()),
            (A2aVersion::V03, "http://b/rpc")
        );
    }

    #[test]
    fn messages_are_written_in_each_dialect() {
        let message = OutgoingMessage {
            message_id: "m".into(),
            parts: vec![
                OutgoingPart::Text("hi".into()),
                OutgoingPart::FileUri {
                    uri: "https://x/a.png".into(),
                    media_type: Some("image/png".into()),
                    name: None,
                },
            ],
            context_id: Some("c".into()),
            ..OutgoingMessage::default()
        };
        let (v03, header) = streaming_request(A2aVersion::V03, &message, "1");
        assert!(!header);
        assert_eq!(v03["method"], "message/stream");
        assert_eq!(
            v03["params"]["message"]["parts"][1],
            json!({ "kind": "file", "file": { "uri": "https://x/a.png", "mimeType": "image/png" } })
        );
        let (v10, header) = streaming_request(A2aVersion::V10, &message, "1");
        assert!(header);
        assert_eq!(v10["params"]["message"]["role"], "ROLE_USER");
        assert_eq!(
            v10["params"]["message"]["parts"][1],
            json!({ "url": "https://x/a.png", "mediaType": "image/png" })
        );
    }
}

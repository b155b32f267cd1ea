//! One upstream A2A agent: its HTTP clients, what its card says, and the
//! JSON-RPC bodies of the calls the gateway writes itself (how those calls
//! are sent is `outbound`'s business).

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use url::Url;

use crate::config::{A2aVersion, AgentConfig};

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
    /// For passthrough and cards: reqwest's per-read timeout bounds them.
    pub client: reqwest::Client,
    /// For converted streams, whose relay keeps its own idle timer: no
    /// per-read timer on every chunk (see `send_stream`).
    pub stream_client: reqwest::Client,
    card: RwLock<Option<Arc<CardInfo>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("{0}")]
    Request(reqwest::Error),
    #[error("no response headers within {} s", .0.as_secs())]
    NoResponse(Duration),
}

#[derive(Debug, thiserror::Error)]
pub enum CardError {
    #[error("upstream card request failed: {0}")]
    Request(#[from] reqwest::Error),
    #[error("upstream served no agent card (tried {0})")]
    NotFound(String),
}

impl Agent {
    pub fn new(config: AgentConfig) -> Result<Agent, reqwest::Error> {
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
        Ok(Agent {
            config,
            client,
            stream_client,
            card: RwLock::new(None),
        })
    }

    /// Sends a request whose answer will be relayed as a converted stream:
    /// the wait for its headers is bounded by the idle timeout here, the
    /// body by the relay's own idle timer.
    pub async fn send_stream(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, UpstreamError> {
        let idle = self.config.idle_timeout;
        match tokio::time::timeout(idle, request.send()).await {
            Ok(result) => result.map_err(UpstreamError::Request),
            Err(_) => Err(UpstreamError::NoResponse(idle)),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Adds the headers configured for this agent (an API key, say): every
    /// call to the agent, card discovery included, gets them from here,
    /// after any headers taken from the client.
    pub fn with_configured_headers(
        &self,
        mut request: reqwest::RequestBuilder,
    ) -> reqwest::RequestBuilder {
        for (name, value) in &self.config.headers {
            request = request.header(name, value);
        }
        request
    }

    pub fn card(&self) -> Option<Arc<CardInfo>> {
        self.card.read().ok().and_then(|c| c.clone())
    }

    /// The card if fresh, else a new fetch; on failure the last one known.
    pub async fn current_card(&self) -> Option<Arc<CardInfo>> {
        match self.card() {
            Some(card) if card.fetched.elapsed() < self.config.card_refresh => Some(card),
            stale => self.refresh_card().await.ok().or(stale),
        }
    }

    /// Reads the card from `agent-card.json`, falling back to the 0.2-era
    /// `agent.json`, under the upstream's path and then at its origin.
    pub async fn refresh_card(&self) -> Result<Arc<CardInfo>, CardError> {
        let mut tried = Vec::new();
        for url in self.card_urls() {
            tried.push(url.to_string());
            let request = self.with_configured_headers(self.client.get(url.clone()));
            let response = request.send().await?;
            if !response.status().is_success() {
                continue;
            }
            let Ok(card) = response.json::<Value>().await else {
                continue;
            };
            if !card.is_object() {
                continue;
            }
            let info = Arc::new(self.card_info(card));
            if let Ok(mut slot) = self.card.write() {
                *slot = Some(info.clone());
            }
            return Ok(info);
        }
        Err(CardError::NotFound(tried.join(", ")))
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
        CardInfo {
            jsonrpc_url: url.unwrap_or_else(|| self.config.upstream.clone()),
            version,
            card,
            fetched: Instant::now(),
        }
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

    /// Refreshes the card periodically until the token is cancelled.
    pub fn spawn_card_refresh(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let agent = self.clone();
        let every = agent.config.card_refresh.max(Duration::from_secs(1));
        tokio::spawn(async move {
            loop {
                if let Err(err) = agent.refresh_card().await {
                    tracing::warn!(agent = agent.name(), "agent card: {err}");
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                }
            }
        });
    }
}

static DRAWS: AtomicU64 = AtomicU64::new(0);

/// A random 64-bit value for ids that must not collide across runs (JSON-RPC
/// ids, message ids, minted AG-UI ids): the standard library's per-process
/// keyed hasher (OS-seeded) over a counter, so no extra dependency.
pub fn random_u64() -> u64 {
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u64(DRAWS.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

/// The upstream URL as a base for joining relative paths (ends in `/`).
pub fn base_url(upstream: &Url) -> Url {
    let mut base = upstream.clone();
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.set_query(None);
    base
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
    (
        json!({ "jsonrpc": "2.0", "id": rpc_id, "method": method, "params": { "message": msg } }),
        v10,
    )
}

/// The JSON-RPC body that cancels a task, in the upstream's dialect.
pub fn cancel_request(version: A2aVersion, task_id: &str, rpc_id: &str) -> (Value, bool) {
    let v10 = version == A2aVersion::V10;
    let method = if v10 { "CancelTask" } else { "tasks/cancel" };
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

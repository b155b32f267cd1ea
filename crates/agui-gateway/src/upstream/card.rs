//! The agent's card: discovery (bounded in time and size), the dialect and
//! the endpoint it names (on an origin the gateway may call), the cache the
//! background refresh keeps, and what `/readyz` reports.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use url::Url;

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};

use super::answer::{Answer, Growing, Unread};
use super::capabilities::Fronted;
use super::credentials::{Refused, TokenError};
use super::headers::background_headers;
use super::target::base_url;
use super::{Agent, StreamResponse};
use a2a_grpc::{AddressError, GrpcAgent};

use super::route::{self, Interface, Route};
use crate::config::{Binding, Secret};
use crate::signing::{Policy, Verdict};

/// The JSON elements a card may hold: hundreds of skills with their
/// examples are a few thousand.
pub const CARD_ELEMENTS: usize = 1 << 15;

/// What the gateway learned from the agent card.
#[derive(Debug, Clone)]
pub struct CardInfo {
    pub card: Value,
    /// How the calls the gateway makes itself reach the agent.
    pub route: Route,
    pub fetched: Instant,
    /// Its signatures' worth, when the agent's policy checks them.
    pub signature: Option<Verdict>,
    /// The AG-UI capabilities it gives, derived once (`capabilities`).
    capabilities: OnceLock<Value>,
}

impl CardInfo {
    /// The agent's AG-UI `AgentCapabilities`, derived from this card the
    /// first time they are asked for (what the gateway adds, `fronted`,
    /// does not change while it runs).
    pub fn capabilities(&self, fronted: Fronted) -> &Value {
        self.capabilities
            .get_or_init(|| super::capabilities::derive(&self.card, fronted))
    }
}

/// Why an agent under `card_signatures = "require"` is not called.
pub const UNTRUSTED_CARD: &str = "the agent card's signature does not verify with a trusted key";

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

#[derive(Debug, thiserror::Error)]
pub enum CardError {
    #[error("the agent card request failed")]
    Request(#[from] reqwest::Error),
    #[error("the agent card is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the upstream serves no agent card")]
    NotFound,
    #[error("the gateway is reading as many agent answers as it may")]
    NoRoom,
    /// The answer broke off, or did not come whole in time.
    #[error("the agent card's answer broke off")]
    Broken,
    /// A gRPC agent's card call failed (its status message, for the log).
    #[error("the agent card call failed: {0}")]
    Grpc(String),
}

impl CardError {
    fn reason(&self) -> &'static str {
        match self {
            CardError::Request(err) if super::tls::untrusted_certificate(err) => {
                "the upstream's TLS certificate is not trusted"
            }
            CardError::Request(err) if err.is_timeout() => "the agent card request timed out",
            CardError::Request(err) if err.is_connect() => "the upstream could not be connected to",
            CardError::Request(_) => "the agent card request failed",
            CardError::TooLarge(_) => "the agent card is too large",
            CardError::NotFound => "the upstream serves no agent card",
            CardError::NoRoom => "the gateway is reading as many agent answers as it may",
            CardError::Broken => "the agent card's answer broke off",
            CardError::Grpc(_) => "the agent's gRPC card call failed",
        }
    }
}

impl Agent {
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
            Ok(info)
                if self.config.card_signatures == Policy::Require
                    && !matches!(info.signature, Some(Verdict::Verified(_))) =>
            {
                CardStatus::Failing(UNTRUSTED_CARD)
            }
            Ok(_) => CardStatus::Ready,
            Err(err) => CardStatus::Failing(err.reason()),
        };
        if let Ok(mut slot) = self.status.write() {
            *slot = status;
        }
        result
    }

    async fn fetch_card(&self) -> Result<Arc<CardInfo>, CardError> {
        let mut headers = background_headers(&self.configured_headers, &self.via);
        // A card is public by the protocol, but an agent behind an OAuth2
        // resource server may guard it too: the gateway's own token goes
        // along when it has one. Its token URL may be the card's, so the
        // first fetch may go without.
        let authorized = match self.own_token().await {
            Some(token) => {
                headers.insert(reqwest::header::AUTHORIZATION, token);
                true
            }
            None => false,
        };
        if let Some(grpc) = &self.grpc {
            // A gRPC agent's card is a call of its service (there may be no
            // HTTP server at all).
            let card = grpc
                .card(&headers, Some(self.card_timeout))
                .await
                .map_err(|status| CardError::Grpc(status.message().to_owned()))?;
            let info = Arc::new(self.card_info(card));
            if let Ok(mut slot) = self.card.write() {
                *slot = Some(info.clone());
            }
            return Ok(info);
        }
        for url in self.card_urls() {
            let request = self.client().get(url).headers(headers.clone());
            let Some((card, _)) = self.read_card(request).await? else {
                continue;
            };
            let info = Arc::new(self.card_info(card));
            if let Ok(mut slot) = self.card.write() {
                *slot = Some(info.clone());
            }
            let usable = self.config.card_signatures != Policy::Require
                || matches!(info.signature, Some(Verdict::Verified(_)));
            if !authorized && usable {
                // Now that the card may name the token URL: whether the
                // gateway can get a token is known before a run needs one
                // (not from a card that must verify and does not).
                let _ = self.own_token().await;
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
        let response = request.timeout(self.card_timeout).send().await?;
        if !response.status().is_success() {
            return Ok(None);
        }
        let headers = response.headers().clone();
        let body = self.read_body(response).await?;
        // A card of 1 MiB of small numbers would be ~16 MB of `Value`s.
        Ok(super::answer::parse(&body, CARD_ELEMENTS)
            .filter(Value::is_object)
            .map(|card| (card, headers)))
    }

    /// How long a card request may take.
    pub fn card_timeout(&self) -> Duration {
        self.card_timeout
    }

    /// A card answer's body, within `max_card_bytes` and the budget of
    /// answers read at once (`answer::Growing`, checked as it arrives).
    pub async fn read_body(&self, response: reqwest::Response) -> Result<Answer, CardError> {
        if response
            .content_length()
            .is_some_and(|n| n > self.max_card_bytes as u64)
        {
            return Err(CardError::TooLarge(self.max_card_bytes));
        }
        self.read_chunks(response.bytes_stream().map_err(CardError::Request))
            .await
    }

    /// The same of an answer made by `Agent::pass`, within the card's
    /// timeout too.
    pub async fn read_answer(&self, response: StreamResponse) -> Result<Answer, CardError> {
        let read = self.read_chunks(response.body.map_err(|_| CardError::Broken));
        tokio::time::timeout(self.card_timeout, read)
            .await
            .unwrap_or(Err(CardError::Broken))
    }

    async fn read_chunks(
        &self,
        body: impl Stream<Item = Result<Bytes, CardError>>,
    ) -> Result<Answer, CardError> {
        let limit = self.max_card_bytes;
        let mut body = std::pin::pin!(body);
        let mut grown = Growing::default();
        while let Some(chunk) = body.next().await {
            grown
                .extend(&chunk?, limit)
                .map_err(|unread| match unread {
                    Unread::TooLarge => CardError::TooLarge(limit),
                    Unread::NoRoom => CardError::NoRoom,
                })?;
        }
        Ok(grown.done())
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

    fn card_info(&self, mut card: Value) -> CardInfo {
        // First: a card whose signature covers only its 1.0 fields is
        // narrowed to them before anything is read from it.
        let signature = self.verify_card(&mut card);
        let interface = route::choose(Some(&card), &self.config, |url| self.may_call(url));
        let route = match self.channel_for(&interface) {
            Ok(grpc) => Route {
                interface,
                mode: route::mode(Some(&card), &self.config),
                grpc,
            },
            Err(err) => {
                // Not a likely case (an address `route` let through that
                // tonic refuses): the configured upstream, in the card's
                // mode still.
                tracing::warn!(agent = self.name(), "the card's gRPC interface: {err}");
                Route {
                    mode: route::mode(Some(&card), &self.config),
                    ..self.configured_route()
                }
            }
        };
        CardInfo {
            route,
            signature,
            card,
            fetched: Instant::now(),
            capabilities: OnceLock::new(),
        }
    }

    /// The gRPC channel of an interface: the configured one for the
    /// configured address, the last card's for the same interface (a
    /// refresh keeps its connections), else a new one.
    fn channel_for(&self, interface: &Interface) -> Result<Option<GrpcAgent>, AddressError> {
        if interface.binding != Binding::Grpc {
            return Ok(None);
        }
        if let Some(grpc) = &self.grpc
            && interface.url == route::choose(None, &self.config, |_| true).url
        {
            return Ok(Some(grpc.clone()));
        }
        if let Some(card) = self.card()
            && card.route.interface == *interface
            && let Some(grpc) = &card.route.grpc
        {
            return Ok(Some(grpc.clone()));
        }
        let tls: Arc<dyn a2a_grpc::ClientTls> = self.clients.clone();
        GrpcAgent::new(
            &interface.url,
            route::service(interface.version),
            (self.config.connect_timeout, self.max_event_bytes),
            tls,
        )
        .map(Some)
    }

    /// How the agent is reached without its card: the configured upstream,
    /// in the configured binding.
    pub fn configured_route(&self) -> Route {
        Route {
            interface: route::choose(None, &self.config, |_| true),
            mode: route::mode(None, &self.config),
            grpc: self.grpc.clone(),
        }
    }

    /// Where a client's own gRPC call to the agent goes: the configured
    /// gRPC address, else the card's chosen gRPC interface; `None` for an
    /// agent not reached over gRPC.
    pub fn grpc_channel(&self) -> Option<GrpcAgent> {
        self.grpc
            .clone()
            .or_else(|| self.card()?.route.grpc.clone())
    }

    /// How the calls the gateway makes itself reach the agent now: as its
    /// card says, else as configured.
    pub async fn route(&self) -> Route {
        match self.current_card().await {
            Some(card) => card.route.clone(),
            None => self.configured_route(),
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

    /// What `card`'s signatures are worth, when the agent's policy checks
    /// them (`TrustedKeys::verify`: `card` may be narrowed to what they
    /// cover).
    pub fn verify_card(&self, card: &mut Value) -> Option<Verdict> {
        Some(self.card_keys.as_ref()?.verify(card))
    }

    /// The signature verdict of the card in use, when checked.
    pub fn card_signature(&self) -> Option<Verdict> {
        self.card()?.signature.clone()
    }

    /// Why the agent may not be called because of its card: under
    /// `require`, a card whose signatures do not verify (or no card).
    pub async fn untrusted(&self) -> Option<&'static str> {
        if self.config.card_signatures != Policy::Require {
            return None;
        }
        let verified = self
            .current_card()
            .await
            .is_some_and(|card| matches!(card.signature, Some(Verdict::Verified(_))));
        (!verified).then_some(UNTRUSTED_CARD)
    }

    /// `Authorization` with the gateway's own token for this agent, when
    /// it has credentials that need no caller; a failure is kept for
    /// `/readyz` (`Credentials::failing`) and logged.
    async fn own_token(&self) -> Option<reqwest::header::HeaderValue> {
        let credentials = self.credentials.as_ref()?;
        match credentials
            .own_token(&self.client(), self.card_token_url().as_ref())
            .await?
        {
            Ok(token) => super::outbound::bearer_value(&token),
            Err(err) => {
                tracing::warn!(agent = self.name(), "no token for the agent: {err}");
                None
            }
        }
    }

    /// The token for a call of a request (`subject`: its caller's, for an
    /// exchange); `None` for an agent without credentials.
    pub async fn token(&self, subject: Option<&str>) -> Option<Result<Secret, TokenError>> {
        let credentials = self.credentials.as_ref()?;
        let card_url = self.card_token_url_now().await;
        Some(
            credentials
                .token(&self.client(), subject, card_url.as_ref())
                .await,
        )
    }

    /// After the agent's 401 to a call with `refused`: the token to send
    /// it again with, if the token was its likely cause
    /// (`Credentials::renewed`).
    pub async fn renewed_token(
        &self,
        subject: Option<&str>,
        refused: &Refused<'_>,
    ) -> Option<Secret> {
        let credentials = self.credentials.as_ref()?;
        let card_url = self.card_token_url_now().await;
        credentials
            .renewed(&self.client(), subject, card_url.as_ref(), refused)
            .await
    }

    /// `card_token_url`, waiting for the card's first fetch when the
    /// configuration names no token URL (a request right after the start
    /// would otherwise find no card yet). Not for the card's own fetch,
    /// which holds the turn this waits for.
    async fn card_token_url_now(&self) -> Option<Url> {
        let configured = self.credentials.as_ref().is_some_and(|c| c.has_token_url());
        if !configured && self.card().is_none() {
            let _ = self.current_card().await;
        }
        self.card_token_url()
    }

    /// The OAuth2 client-credentials `tokenUrl` the card declares (1.0
    /// `oauth2SecurityScheme.flows`, 0.3 `flows`), only on an
    /// `allowed_origins` origin: where the gateway's client secret would
    /// go, so the operator says where that may be.
    pub fn card_token_url(&self) -> Option<Url> {
        let card = self.card()?;
        let schemes = card.card.get("securitySchemes")?.as_object()?;
        schemes.values().find_map(|scheme| {
            let flows = scheme
                .pointer("/oauth2SecurityScheme/flows")
                .or_else(|| scheme.get("flows"))?;
            let url = Url::parse(flows.pointer("/clientCredentials/tokenUrl")?.as_str()?).ok()?;
            // Only where the operator said a card may send the gateway
            // (`allowed_origins`): the client secret goes with the request,
            // and the agent's own origin is the agent's to choose.
            let allowed = self.config.allowed_origins.contains(&url.origin());
            (matches!(url.scheme(), "http" | "https") && allowed).then_some(url)
        })
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::{AgentConfig, Limits, Mode};

    /// A refresh that reads another card chooses again (`card_info` is
    /// what every fetch stores).
    #[test]
    fn each_card_read_chooses_the_route_again() {
        let config = AgentConfig::new("a", Url::parse("http://a.example/").unwrap());
        let agent = Agent::new(config, "gw", &Limits::default(), None).unwrap();
        let before = agent.card_info(
            json!({ "url": "http://a.example/", "protocolVersion": "0.3",
            "capabilities": { "streaming": true } }),
        );
        assert_eq!(
            (before.route.binding(), before.route.mode),
            (Binding::JsonRpc, Mode::Stream)
        );
        let after = agent.card_info(json!({ "capabilities": { "streaming": false },
            "supportedInterfaces": [{ "url": "http://a.example/rest",
                "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0" }] }));
        assert_eq!(
            (
                after.route.binding(),
                after.route.mode,
                after.route.url().as_str()
            ),
            (Binding::HttpJson, Mode::Poll, "http://a.example/rest")
        );
    }
}

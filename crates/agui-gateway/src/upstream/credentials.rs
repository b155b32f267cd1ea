//! The tokens the gateway sends an agent (`UpstreamAuth`): fetched from
//! the token endpoint with the client-credentials grant, or exchanged for
//! the caller's (RFC 8693), and cached.
//!
//! - Cached per agent (per caller's token for an exchange) until shortly
//!   before they expire (a tenth of their life, at most a minute).
//! - One fetch at a time per cache entry: concurrent calls wait for it and
//!   share its token, so 50 runs starting together make one request.
//! - A token the agent refused (401) is dropped, once, so the next call
//!   fetches a new one; a second refusal of a fresh token is the agent's.
//! - Bounded: `MAX_TOKENS` entries, the least recently used going.
//! - Never shown: a token and the client secret are `Secret`s; errors name
//!   the endpoint's answer (its status, its OAuth2 `error` code), never
//!   what was sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;
use url::Url;

use crate::config::{ClientAuth, OAuthClient, Secret, UpstreamAuth};
use crate::obs::metrics::TokenCounters;

/// Cache entries at most (a token exchange has one per caller).
pub const MAX_TOKENS: usize = 10_000;
/// The most bytes a token endpoint's answer may hold.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// A token whose answer says nothing of its life is kept this long.
const UNSTATED_LIFE: Duration = Duration::from_secs(60);
/// Refreshed at most this long before it expires.
const MAX_MARGIN: Duration = Duration::from_secs(60);
/// A token is kept at most this long, whatever its answer says.
const MAX_LIFE: Duration = Duration::from_secs(24 * 3600);
/// A failed token request is the answer this long.
const FAILURE_GAP: Duration = Duration::from_secs(2);
/// The longest access token taken (each exchanged one is cached).
const MAX_TOKEN_BYTES: usize = 8 * 1024;

const GRANT_CLIENT_CREDENTIALS: &str = "client_credentials";
const GRANT_TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const TYPE_ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// Why no token could be had. The messages hold nothing that was sent.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TokenError {
    #[error("no token URL: the configuration names none and the agent's card offers none")]
    NoTokenUrl,
    #[error("no caller token to exchange: the caller is not authenticated with a JWT")]
    NoSubject,
    #[error("the token endpoint could not be reached ({0})")]
    Unreachable(String),
    #[error("the token endpoint refused the request: HTTP {status}{}", error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default())]
    Refused { status: u16, error: Option<String> },
    #[error("the token endpoint's answer is not a token ({0})")]
    Malformed(&'static str),
}

/// A token and when to stop using it.
#[derive(Clone)]
struct Held {
    token: Secret,
    refresh_at: Instant,
}

/// One cache entry: its token, or its last failure, behind the lock one
/// fetch holds.
#[derive(Default)]
struct Entry {
    held: Option<Held>,
    /// A failed fetch, shared for `FAILURE_GAP` with the calls that waited
    /// for it and those that come right after (50 runs against an endpoint
    /// that times out wait for one timeout, not fifty).
    failed: Option<(Instant, TokenError)>,
}

type Slot = Arc<tokio::sync::Mutex<Entry>>;

/// Whose token: the gateway's own, or one exchanged for a caller's token
/// (by its digest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Own,
    Exchanged([u8; 32]),
}

#[derive(Default)]
struct Cache {
    /// Each entry and when it was last used (`tick`).
    slots: HashMap<Key, (Slot, u64)>,
    tick: u64,
}

/// An agent's token source.
pub struct Credentials {
    auth: UpstreamAuth,
    /// The most a token request may take, in all.
    timeout: Duration,
    cache: Mutex<Cache>,
    /// Token requests made, by outcome (`Metrics::token_counters`), once
    /// the metrics exist.
    counters: OnceLock<TokenCounters>,
    /// The last token request's failure, for `/readyz`; `None` after a
    /// success.
    failing: Mutex<Option<TokenError>>,
}

impl Credentials {
    /// `timeout` bounds each token request, in all (an endpoint that
    /// answers a byte at a time would hold every run of the agent).
    pub fn new(auth: UpstreamAuth, timeout: Duration) -> Credentials {
        Credentials {
            auth,
            timeout,
            cache: Mutex::new(Cache::default()),
            counters: OnceLock::new(),
            failing: Mutex::new(None),
        }
    }

    /// Whether the configuration names the token endpoint (else it is the
    /// card's).
    pub fn has_token_url(&self) -> bool {
        self.auth.client().token_url.is_some()
    }

    /// Where token requests are counted.
    pub fn count_into(&self, counters: TokenCounters) {
        let _ = self.counters.set(counters);
    }

    /// The last token request's failure, if the last one failed.
    pub fn failing(&self) -> Option<TokenError> {
        self.failing.lock().ok().and_then(|f| f.clone())
    }

    /// The gateway's own token, when it has one to get without a caller:
    /// client credentials, or the actor token of an exchange. For the
    /// calls the gateway makes on its own (the card) and to know early
    /// that the token endpoint answers (`/readyz`).
    pub async fn own_token(
        &self,
        http: &reqwest::Client,
        card_token_url: Option<&Url>,
    ) -> Option<Result<Secret, TokenError>> {
        let client = match &self.auth {
            UpstreamAuth::ClientCredentials(client)
            | UpstreamAuth::TokenExchange {
                client,
                actor: true,
            } => client,
            UpstreamAuth::TokenExchange { actor: false, .. } => return None,
        };
        let url = client.token_url.as_ref().or(card_token_url)?;
        Some(
            self.cached(Key::Own, || self.client_credentials(http, client, url))
                .await,
        )
    }

    /// The token for a call: the gateway's own, or, for a token exchange,
    /// the one for `subject` (the caller's verified token). `card_token_url`
    /// is the token URL the agent's card names, already checked against the
    /// allowed origins; the configured one wins.
    /// `http` calls the token endpoint (the agent's client: its roots, no
    /// redirects, its timeouts).
    pub async fn token(
        &self,
        http: &reqwest::Client,
        subject: Option<&str>,
        card_token_url: Option<&Url>,
    ) -> Result<Secret, TokenError> {
        let client = self.auth.client();
        let url = client
            .token_url
            .as_ref()
            .or(card_token_url)
            .ok_or(TokenError::NoTokenUrl)?;
        match &self.auth {
            UpstreamAuth::ClientCredentials(client) => {
                self.cached(Key::Own, || self.client_credentials(http, client, url))
                    .await
            }
            UpstreamAuth::TokenExchange { client, actor } => {
                let subject = subject.ok_or(TokenError::NoSubject)?;
                let key = Key::Exchanged(Sha256::digest(subject.as_bytes()).into());
                self.cached(key, || async {
                    let actor = match actor {
                        true => Some(
                            self.cached(Key::Own, || self.client_credentials(http, client, url))
                                .await?,
                        ),
                        false => None,
                    };
                    self.exchange(http, client, url, subject, actor.as_ref())
                        .await
                })
                .await
            }
        }
    }

    /// The agent refused `token` (401): it is not used again. Only that
    /// token goes: a newer one another call fetched meanwhile stays.
    pub async fn refused(&self, subject: Option<&str>, token: &Secret) {
        let key = match (&self.auth, subject) {
            (UpstreamAuth::TokenExchange { .. }, Some(subject)) => {
                Key::Exchanged(Sha256::digest(subject.as_bytes()).into())
            }
            _ => Key::Own,
        };
        let slot = self.slot(key);
        let mut entry = slot.lock().await;
        if entry.held.as_ref().is_some_and(|h| &h.token == token) {
            entry.held = None;
        }
    }

    fn slot(&self, key: Key) -> Slot {
        let Ok(mut cache) = self.cache.lock() else {
            return Slot::default();
        };
        cache.tick += 1;
        let tick = cache.tick;
        if let Some((slot, used)) = cache.slots.get_mut(&key) {
            *used = tick;
            return slot.clone();
        }
        if cache.slots.len() >= MAX_TOKENS {
            // Only when full: the least recently used goes.
            let oldest = cache
                .slots
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| *key);
            if let Some(oldest) = oldest {
                cache.slots.remove(&oldest);
            }
        }
        let slot = Slot::default();
        cache.slots.insert(key, (slot.clone(), tick));
        slot
    }

    /// The entry's token while it is fresh, else `fetch`'s (one fetch at a
    /// time per entry; a failure is shared for `FAILURE_GAP`).
    async fn cached<F, Fut>(&self, key: Key, fetch: F) -> Result<Secret, TokenError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(Secret, Option<Duration>), TokenError>>,
    {
        let slot = self.slot(key);
        let mut entry = slot.lock().await;
        let now = Instant::now();
        if let Some(fresh) = entry.held.as_ref().filter(|h| now < h.refresh_at) {
            return Ok(fresh.token.clone());
        }
        if let Some((at, err)) = &entry.failed
            && now.duration_since(*at) < FAILURE_GAP
        {
            return Err(err.clone());
        }
        match fetch().await {
            Ok((token, life)) => {
                // An endpoint's `expires_in` is its word: a year would
                // overflow nothing, but a day is long enough to keep one.
                let life = life.unwrap_or(UNSTATED_LIFE).min(MAX_LIFE);
                let margin = (life / 10).min(MAX_MARGIN);
                entry.held = Some(Held {
                    token: token.clone(),
                    refresh_at: Instant::now() + life.saturating_sub(margin),
                });
                entry.failed = None;
                Ok(token)
            }
            Err(err) => {
                entry.failed = Some((Instant::now(), err.clone()));
                Err(err)
            }
        }
    }

    async fn client_credentials(
        &self,
        http: &reqwest::Client,
        client: &OAuthClient,
        url: &Url,
    ) -> Result<(Secret, Option<Duration>), TokenError> {
        let mut form = vec![("grant_type", GRANT_CLIENT_CREDENTIALS.to_owned())];
        target(client, &mut form);
        self.request(http, client, url, form).await
    }

    async fn exchange(
        &self,
        http: &reqwest::Client,
        client: &OAuthClient,
        url: &Url,
        subject: &str,
        actor: Option<&Secret>,
    ) -> Result<(Secret, Option<Duration>), TokenError> {
        let mut form = vec![
            ("grant_type", GRANT_TOKEN_EXCHANGE.to_owned()),
            ("subject_token", subject.to_owned()),
            ("subject_token_type", TYPE_ACCESS_TOKEN.to_owned()),
            ("requested_token_type", TYPE_ACCESS_TOKEN.to_owned()),
        ];
        if let Some(actor) = actor {
            form.push(("actor_token", actor.expose().to_owned()));
            form.push(("actor_token_type", TYPE_ACCESS_TOKEN.to_owned()));
        }
        target(client, &mut form);
        self.request(http, client, url, form).await
    }

    /// One POST to the token endpoint, the client authenticated as
    /// configured; the answer's `access_token` and `expires_in`.
    async fn request(
        &self,
        http: &reqwest::Client,
        client: &OAuthClient,
        url: &Url,
        form: Vec<(&'static str, String)>,
    ) -> Result<(Secret, Option<Duration>), TokenError> {
        let grant = form.first().map(|(_, g)| g.clone());
        let result = self.post(http, client, url, form).await;
        if let Some(counters) = self.counters.get() {
            match result {
                Ok(_) => counters.ok.inc(),
                Err(_) => counters.failed.inc(),
            }
        }
        // What `/readyz` shows is the agent's state, not one caller's: an
        // exchange refused for its subject token (400 invalid_grant) is
        // that caller's; an unreachable endpoint or a refused client is
        // everyone's.
        let everyone = |err: &TokenError| match err {
            TokenError::Refused { status, .. } => {
                *status == 401 || grant.as_deref() == Some(GRANT_CLIENT_CREDENTIALS)
            }
            _ => true,
        };
        if let Ok(mut failing) = self.failing.lock() {
            match &result {
                Ok(_) => *failing = None,
                Err(err) if everyone(err) => *failing = Some(err.clone()),
                Err(_) => {}
            }
        }
        result
    }

    async fn post(
        &self,
        http: &reqwest::Client,
        client: &OAuthClient,
        url: &Url,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<(Secret, Option<Duration>), TokenError> {
        let mut request = http.post(url.clone());
        match client.client_auth {
            ClientAuth::Basic => {
                // RFC 6749 §2.3.1: each part form-encoded, then Basic.
                let pair = format!(
                    "{}:{}",
                    encoded(&client.client_id),
                    encoded(client.client_secret.expose())
                );
                let basic = base64::engine::general_purpose::STANDARD.encode(pair);
                if let Ok(mut value) =
                    reqwest::header::HeaderValue::from_str(&format!("Basic {basic}"))
                {
                    value.set_sensitive(true);
                    request = request.header(reqwest::header::AUTHORIZATION, value);
                }
            }
            ClientAuth::Post => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", client.client_secret.expose().to_owned()));
            }
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let response = request
            .timeout(self.timeout)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|err| TokenError::Unreachable(reason(&err)))?;
        let status = response.status();
        let answer = bounded_body(response).await?;
        let json: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
        if !status.is_success() {
            // The OAuth2 error code is a short ASCII word; nothing else of
            // the answer is repeated.
            let error = json
                .get("error")
                .and_then(Value::as_str)
                .filter(|e| e.len() <= 64 && e.bytes().all(|b| b.is_ascii_graphic()))
                .map(str::to_owned);
            return Err(TokenError::Refused {
                status: status.as_u16(),
                error,
            });
        }
        let token = json
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| {
                !t.is_empty()
                    && t.len() <= MAX_TOKEN_BYTES
                    && axum::http::HeaderValue::from_str(t).is_ok()
            })
            .ok_or(TokenError::Malformed("no usable access_token"))?;
        let life = json
            .get("expires_in")
            .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
            .map(Duration::from_secs);
        Ok((Secret::new(token), life))
    }
}

/// The scopes, audience and resource the client asks for.
fn target(client: &OAuthClient, form: &mut Vec<(&'static str, String)>) {
    if !client.scopes.is_empty() {
        form.push(("scope", client.scopes.join(" ")));
    }
    if let Some(audience) = &client.audience {
        form.push(("audience", audience.clone()));
    }
    if let Some(resource) = &client.resource {
        form.push(("resource", resource.clone()));
    }
}

fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// What kind of failure, without the URL (it may carry a secret in its
/// query) or anything sent.
fn reason(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "timed out".to_owned()
    } else if err.is_connect() {
        "no connection".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

async fn bounded_body(response: reqwest::Response) -> Result<Vec<u8>, TokenError> {
    use futures::StreamExt;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| TokenError::Unreachable(reason(&err)))?;
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(TokenError::Malformed("the answer is larger than 64 KiB"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    use axum::Router;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::routing::post;

    /// A token endpoint: client `gw` / `s3cret` (Basic), tokens `tok-N`
    /// living `life` seconds; an exchange answers `ex-<subject>-N`.
    async fn endpoint(life: u64) -> (Url, Arc<AtomicU64>) {
        let count = Arc::new(AtomicU64::new(0));
        let answer = move |State(count): State<Arc<AtomicU64>>,
                           headers: HeaderMap,
                           body: String| async move {
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            let basic = base64::engine::general_purpose::STANDARD.encode("gw:s3cret");
            if headers.get("authorization").and_then(|v| v.to_str().ok())
                != Some(&format!("Basic {basic}"))
            {
                return (StatusCode::UNAUTHORIZED, r#"{"error":"invalid_client"}"#).into_response();
            }
            let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
                .into_owned()
                .collect();
            let token = match form.get("grant_type").map(String::as_str) {
                Some(GRANT_CLIENT_CREDENTIALS) => format!("tok-{n}"),
                Some(GRANT_TOKEN_EXCHANGE) => format!("ex-{}-{n}", form["subject_token"]),
                _ => {
                    return (
                        StatusCode::BAD_REQUEST,
                        r#"{"error":"unsupported_grant_type"}"#,
                    )
                        .into_response();
                }
            };
            let response: Response = axum::Json(serde_json::json!({
                "access_token": token, "token_type": "Bearer", "expires_in": life
            }))
            .into_response();
            response
        };
        let app = Router::new()
            .route("/token", post(answer))
            .with_state(count.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (
            Url::parse(&format!("http://{addr}/token")).expect("url"),
            count,
        )
    }

    const TIMEOUT: Duration = Duration::from_secs(5);

    fn http() -> reqwest::Client {
        reqwest::Client::new()
    }

    fn client(url: &Url, secret: &str) -> OAuthClient {
        OAuthClient {
            token_url: Some(url.clone()),
            client_id: "gw".to_owned(),
            client_secret: Secret::new(secret),
            client_auth: ClientAuth::Basic,
            scopes: vec!["a2a.invoke".to_owned()],
            audience: None,
            resource: Some("https://agent.test/".to_owned()),
        }
    }

    #[tokio::test]
    async fn fifty_concurrent_calls_make_one_request_until_the_token_nears_expiry() {
        let (url, count) = endpoint(1).await;
        let credentials = Arc::new(Credentials::new(
            UpstreamAuth::ClientCredentials(client(&url, "s3cret")),
            TIMEOUT,
        ));
        let shared = http();
        let calls = (0..50).map(|_| {
            let credentials = credentials.clone();
            let http = shared.clone();
            tokio::spawn(async move { credentials.token(&http, None, None).await })
        });
        let tokens: Vec<String> = futures::future::join_all(calls)
            .await
            .into_iter()
            .map(|t| t.expect("joined").expect("a token").expose().to_owned())
            .collect();
        assert!(tokens.iter().all(|t| t == "tok-1"), "{tokens:?}");
        assert_eq!(count.load(Ordering::SeqCst), 1);
        // Refreshed a tenth of its life (1 s) before it ends.
        tokio::time::sleep(Duration::from_millis(950)).await;
        let again = credentials
            .token(&http(), None, None)
            .await
            .expect("a token");
        assert_eq!(again.expose(), "tok-2");
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_refused_token_is_fetched_again_once() {
        let (url, count) = endpoint(3600).await;
        let credentials = Credentials::new(
            UpstreamAuth::ClientCredentials(client(&url, "s3cret")),
            TIMEOUT,
        );
        let first = credentials
            .token(&http(), None, None)
            .await
            .expect("a token");
        credentials.refused(None, &first).await;
        let second = credentials
            .token(&http(), None, None)
            .await
            .expect("a token");
        assert_eq!(second.expose(), "tok-2");
        // A late refusal of the old token leaves the new one.
        credentials.refused(None, &first).await;
        assert_eq!(
            credentials
                .token(&http(), None, None)
                .await
                .expect("a token")
                .expose(),
            "tok-2"
        );
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_exchange_is_per_caller_and_errors_show_no_secret() {
        let (url, _) = endpoint(3600).await;
        let credentials = Credentials::new(
            UpstreamAuth::TokenExchange {
                client: client(&url, "s3cret"),
                actor: false,
            },
            TIMEOUT,
        );
        let alice = credentials
            .token(&http(), Some("alice-jwt"), None)
            .await
            .expect("a token");
        let bob = credentials
            .token(&http(), Some("bob-jwt"), None)
            .await
            .expect("a token");
        let alice_again = credentials
            .token(&http(), Some("alice-jwt"), None)
            .await
            .expect("a token");
        assert_eq!(
            (alice.expose(), bob.expose()),
            ("ex-alice-jwt-1", "ex-bob-jwt-2")
        );
        assert_eq!(alice_again, alice);
        assert!(matches!(
            credentials.token(&http(), None, None).await,
            Err(TokenError::NoSubject)
        ));

        let wrong = Credentials::new(
            UpstreamAuth::ClientCredentials(client(&url, "not-the-secret")),
            TIMEOUT,
        );
        let err = wrong.token(&http(), None, None).await.expect_err("refused");
        let shown = format!("{err} {err:?}");
        assert_eq!(
            err.to_string(),
            "the token endpoint refused the request: HTTP 401 (invalid_client)"
        );
        assert!(!shown.contains("not-the-secret"), "{shown}");
        assert_eq!(
            format!("{:?}", client(&url, "not-the-secret").client_secret),
            "***"
        );

        let nowhere = Url::parse("http://127.0.0.1:9/token").expect("url");
        let unreachable = Credentials::new(
            UpstreamAuth::ClientCredentials(client(&nowhere, "s3cret")),
            TIMEOUT,
        );
        let err = unreachable
            .token(&http(), None, None)
            .await
            .expect_err("unreachable");
        assert!(matches!(err, TokenError::Unreachable(_)), "{err}");
    }

    #[tokio::test]
    async fn an_endless_life_is_capped_and_a_failure_is_shared_for_a_moment() {
        // An `expires_in` past any clock: kept a day, no overflow.
        let (url, count) = endpoint(u64::MAX).await;
        let credentials = Credentials::new(
            UpstreamAuth::ClientCredentials(client(&url, "s3cret")),
            TIMEOUT,
        );
        assert!(credentials.token(&http(), None, None).await.is_ok());
        assert!(credentials.token(&http(), None, None).await.is_ok());
        assert_eq!(count.load(Ordering::SeqCst), 1);
        // Ten calls right after a refusal: one request.
        let (url, count) = endpoint(60).await;
        let wrong = Credentials::new(
            UpstreamAuth::ClientCredentials(client(&url, "wrong")),
            TIMEOUT,
        );
        for _ in 0..10 {
            assert!(wrong.token(&http(), None, None).await.is_err());
        }
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert!(matches!(
            wrong.failing(),
            Some(TokenError::Refused { status: 401, .. })
        ));
    }
}

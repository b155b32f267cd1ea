//! The tokens the gateway sends an agent (`UpstreamAuth`): fetched from
//! the token endpoint with the client-credentials grant, or exchanged for
//! the caller's (RFC 8693), and cached.
//!
//! - Cached per agent (per caller's token for an exchange) until shortly
//!   before they expire (a tenth of their life, at most a minute).
//! - One fetch at a time per cache entry: concurrent calls wait for it and
//!   share its token, so 50 runs starting together make one request.
//! - A 401 renews a token only when the token is its likely cause
//!   (`Refused`): the agent's challenge says `error="invalid_token"` (RFC
//!   6750 §3.1), or the token is `STALE_AFTER` old. And at most once per
//!   entry in `RENEWAL_GAP`, shared: a call refused while another renews,
//!   or just after, takes the renewed token (or the 401), never fetches.
//!   A client that finds a path of the agent answering 401 cannot make the
//!   gateway ask the identity provider for anything.
//! - Bounded: `MAX_TOKENS` entries, the least recently used going.
//! - Never shown: a token and the client secret are `Secret`s; errors name
//!   the endpoint's answer (its status, its OAuth2 `error` code), never
//!   what was sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;
use url::Url;

use crate::config::{OAuthClient, Secret, UpstreamAuth};
use crate::obs::metrics::TokenCounters;

mod challenge;
mod endpoint;

pub use challenge::says_invalid_token;

/// Cache entries at most (a token exchange has one per caller).
pub const MAX_TOKENS: usize = 10_000;
/// A token whose answer says nothing of its life is kept this long.
const UNSTATED_LIFE: Duration = Duration::from_secs(60);
/// Refreshed at most this long before it expires.
const MAX_MARGIN: Duration = Duration::from_secs(60);
/// A token is kept at most this long, whatever its answer says.
const MAX_LIFE: Duration = Duration::from_secs(24 * 3600);
/// A failed token request is the answer this long.
const FAILURE_GAP: Duration = Duration::from_secs(2);
/// A token this old may be renewed after any 401; a younger one only
/// when the agent says it is the token (`invalid_token`): a path of the
/// agent that refuses every caller says nothing of a new token.
const STALE_AFTER: Duration = Duration::from_secs(30);
/// At most one renewal after a 401 per entry in this time.
const RENEWAL_GAP: Duration = Duration::from_secs(5);

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
    fetched_at: Instant,
    refresh_at: Instant,
}

/// A token the agent answered 401 to, and whether its challenge named
/// the token (`error="invalid_token"`).
pub struct Refused<'a> {
    pub token: &'a Secret,
    pub invalid_token: bool,
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
    /// When a 401 last renewed the token.
    renewed_at: Option<Instant>,
}

impl Entry {
    /// The token for a call the agent refused with `refused`, while one
    /// is held: the held one when it is another (renewed meanwhile), or
    /// the refused one itself when the 401 stands; `None` when a new one
    /// is to be fetched. The refused one is kept until it is: a renewal
    /// that fails leaves the token that other calls may still use.
    fn after_refusal(&mut self, refused: &Refused<'_>, now: Instant) -> Option<Secret> {
        let held = self.held.as_ref()?;
        let renewed_lately = self
            .renewed_at
            .is_some_and(|at| now.duration_since(at) < RENEWAL_GAP);
        let stale = now.duration_since(held.fetched_at) >= STALE_AFTER;
        if held.token != *refused.token || renewed_lately || !(refused.invalid_token || stale) {
            return Some(held.token.clone());
        }
        self.renewed_at = Some(now);
        None
    }
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
        Some(self.own(http, client, url).await)
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
        self.lookup(http, subject, card_token_url, None).await
    }

    /// After the agent answered 401 to a call carrying `refused` (for
    /// `subject`): the token to send the call again with, or `None` when
    /// the 401 stands (the token is not its likely cause, or was renewed
    /// within `RENEWAL_GAP`, or no other token can be had).
    pub async fn renewed(
        &self,
        http: &reqwest::Client,
        subject: Option<&str>,
        card_token_url: Option<&Url>,
        refused: &Refused<'_>,
    ) -> Option<Secret> {
        let token = self
            .lookup(http, subject, card_token_url, Some(refused))
            .await
            .ok()?;
        // The refused token itself: the 401 stands.
        (token != *refused.token).then_some(token)
    }

    /// `token`, or, with `refused`, what `renewed` sends again with (the
    /// refused token itself when the 401 stands).
    async fn lookup(
        &self,
        http: &reqwest::Client,
        subject: Option<&str>,
        card_token_url: Option<&Url>,
        refused: Option<&Refused<'_>>,
    ) -> Result<Secret, TokenError> {
        let client = self.auth.client();
        let url = client
            .token_url
            .as_ref()
            .or(card_token_url)
            .ok_or(TokenError::NoTokenUrl)?;
        match &self.auth {
            UpstreamAuth::ClientCredentials(client) => {
                self.cached(Key::Own, refused, || {
                    self.client_credentials(http, client, url)
                })
                .await
            }
            UpstreamAuth::TokenExchange { client, actor } => {
                let subject = subject.ok_or(TokenError::NoSubject)?;
                let key = Key::Exchanged(Sha256::digest(subject.as_bytes()).into());
                self.cached(key, refused, || async {
                    let actor = match actor {
                        true => Some(self.own(http, client, url).await?),
                        false => None,
                    };
                    self.exchange(http, client, url, subject, actor.as_ref())
                        .await
                })
                .await
            }
        }
    }

    /// The gateway's own client-credentials token (an exchange's actor).
    async fn own(
        &self,
        http: &reqwest::Client,
        client: &OAuthClient,
        url: &Url,
    ) -> Result<Secret, TokenError> {
        self.cached(Key::Own, None, || {
            self.client_credentials(http, client, url)
        })
        .await
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
    /// time per entry; a failure is shared for `FAILURE_GAP`). With
    /// `refused`, a fresh token is renewed only as `Entry::after_refusal`
    /// says, under the entry's lock.
    async fn cached<F, Fut>(
        &self,
        key: Key,
        refused: Option<&Refused<'_>>,
        fetch: F,
    ) -> Result<Secret, TokenError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(Secret, Option<Duration>), TokenError>>,
    {
        let slot = self.slot(key);
        let mut entry = slot.lock().await;
        let now = Instant::now();
        if entry.held.as_ref().is_some_and(|h| now < h.refresh_at) {
            let fresh = match refused {
                None => entry.held.as_ref().map(|h| h.token.clone()),
                Some(refused) => entry.after_refusal(refused, now),
            };
            if let Some(token) = fresh {
                return Ok(token);
            }
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
                let fetched_at = Instant::now();
                entry.held = Some(Held {
                    token: token.clone(),
                    fetched_at,
                    refresh_at: fetched_at + life.saturating_sub(margin),
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
        endpoint::target(client, &mut form);
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
        endpoint::target(client, &mut form);
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
        let result = endpoint::post(http, client, url, form, self.timeout).await;
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
}

#[cfg(test)]
mod tests;

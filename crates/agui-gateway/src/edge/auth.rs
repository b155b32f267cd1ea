//! Who is calling: static API keys, kept only as SHA-256 digests, and JWT
//! bearer tokens checked against a JWKS document, a PEM public key or an
//! HMAC secret (issuer, audience, expiry, clock skew). Which agents a
//! caller may use is `Allow`'s business, applied by the edge.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName, header};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;

use crate::config::{Allow, AuthConfig, JwtConfig, JwtKey, Limits};

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The name of the API key it presented.
    Key(String),
    /// The `sub` of its JWT.
    Subject(String),
}

impl Principal {
    pub fn may_call(&self, allow: &[Allow]) -> bool {
        allow.iter().any(|entry| match (entry, self) {
            (Allow::Anyone, _) => true,
            (Allow::Key(a), Principal::Key(b)) | (Allow::Subject(a), Principal::Subject(b)) => {
                a == b
            }
            _ => false,
        })
    }

    /// The rate limiter's key: one bucket per key or subject.
    pub fn bucket(&self) -> String {
        match self {
            Principal::Key(name) => format!("key:{name}"),
            Principal::Subject(sub) => format!("sub:{sub}"),
        }
    }
}

/// Why a request is not authenticated; the messages go to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("this gateway needs a credential: Authorization: Bearer <token or key>, or X-API-Key")]
    Missing,
    #[error("the API key is not known")]
    UnknownKey,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the token is issued in the future (iat)")]
    IssuedInFuture,
    #[error("the token is for another audience")]
    Audience,
    #[error("the token is from another issuer")]
    Issuer,
    #[error("the token's signature or form is not valid")]
    BadToken,
    #[error("the token's signing key is not known")]
    UnknownSigningKey,
    #[error("the token's key is not for verifying signatures (its use or key_ops)")]
    KeyNotForSigning,
    #[error("the token's signing keys could not be fetched")]
    KeysUnavailable,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    #[error("auth: cannot read API keys from {0}: {1}")]
    KeysFile(String, std::io::Error),
    #[error("auth: API key entry {0} is not NAME:KEY or NAME:sha256:HEX")]
    KeyEntry(usize),
    #[error("auth: {0} is not set in the environment")]
    MissingEnv(String),
    #[error("auth: no API keys in {0}")]
    NoKeys(String),
    #[error("auth.jwt: {0}")]
    Jwt(String),
}

/// The header carrying an API key when not sent as a bearer token.
const API_KEY_HEADER: &str = "x-api-key";

pub struct Authenticator {
    /// SHA-256 of each key, to its name: the keys themselves are not kept.
    keys: HashMap<[u8; 32], String>,
    jwt: Option<Jwt>,
}

impl Authenticator {
    /// `None` when authentication is off.
    pub fn load(
        config: &AuthConfig,
        limits: &Limits,
    ) -> Result<Option<Authenticator>, AuthSetupError> {
        if !config.is_on() {
            return Ok(None);
        }
        let mut keys = HashMap::new();
        if let Some(path) = &config.api_keys_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| AuthSetupError::KeysFile(path.display().to_string(), e))?;
            read_keys(&text, &mut keys)?;
            if keys.is_empty() {
                return Err(AuthSetupError::NoKeys(path.display().to_string()));
            }
        }
        if let Some(name) = &config.api_keys_env {
            let text = std::env::var(name).map_err(|_| AuthSetupError::MissingEnv(name.clone()))?;
            read_keys(&text.replace(',', "\n"), &mut keys)?;
        }
        let jwt = match &config.jwt {
            Some(jwt) => Some(Jwt::new(jwt, limits)?),
            None => None,
        };
        Ok(Some(Authenticator { keys, jwt }))
    }

    /// Checks the request's credential; on success, the principal and the
    /// headers that carry gateway-only credentials (never sent upstream):
    /// the one that authenticated, and `X-API-Key` whenever keys are in use.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Principal, Vec<HeaderName>), AuthError> {
        let (principal, used) = self.principal(headers).await?;
        let mut strip: Vec<HeaderName> = used.into_iter().collect();
        if !self.keys.is_empty() {
            strip.push(HeaderName::from_static(API_KEY_HEADER));
        }
        Ok((principal, strip))
    }

    async fn principal(
        &self,
        headers: &HeaderMap,
    ) -> Result<(Principal, Option<HeaderName>), AuthError> {
        if let Some(token) = bearer_token(headers) {
            if let Some(jwt) = &self.jwt
                && token.split('.').count() == 3
            {
                // The user's own token: the forwarding policy decides
                // whether the agent sees it.
                return jwt
                    .verify(token)
                    .await
                    .map(|sub| (Principal::Subject(sub), None));
            }
            return self
                .key(token)
                .map(|name| (Principal::Key(name), Some(header::AUTHORIZATION)));
        }
        if let Some(key) = headers.get(API_KEY_HEADER).and_then(|v| v.to_str().ok()) {
            return self.key(key.trim()).map(|name| {
                (
                    Principal::Key(name),
                    Some(HeaderName::from_static(API_KEY_HEADER)),
                )
            });
        }
        Err(AuthError::Missing)
    }

    fn key(&self, key: &str) -> Result<String, AuthError> {
        self.keys
            .get(&digest(key))
            .cloned()
            .ok_or(AuthError::UnknownKey)
    }

    /// Fetches the JWKS once at start, so a first request does not wait.
    pub async fn warm_up(&self) {
        if let Some(Jwt {
            source: KeySource::Jwks(jwks),
            ..
        }) = &self.jwt
            && let Err(err) = jwks.refresh().await
        {
            tracing::warn!("auth: fetching the JWKS failed: {err}");
        }
    }
}

/// The token of an `Authorization: Bearer …` header (the scheme in any
/// case): what the gate authenticates, and what an agent's token exchange
/// trades.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// `NAME:KEY` or `NAME:sha256:HEX` lines; `#` starts a comment.
fn read_keys(text: &str, keys: &mut HashMap<[u8; 32], String>) -> Result<(), AuthSetupError> {
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, key) = line
            .split_once(':')
            .filter(|(n, k)| !n.is_empty() && !k.is_empty())
            .ok_or(AuthSetupError::KeyEntry(index + 1))?;
        let hash = match key.strip_prefix("sha256:") {
            Some(hex) => parse_hex(hex).ok_or(AuthSetupError::KeyEntry(index + 1))?,
            None => digest(key),
        };
        keys.insert(hash, name.to_owned());
    }
    Ok(())
}

fn parse_hex(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

struct Jwt {
    validation: Validation,
    source: KeySource,
}

enum KeySource {
    Static(DecodingKey),
    Jwks(Jwks),
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    /// Seconds since the epoch; a fraction is allowed (RFC 7519 NumericDate).
    iat: Option<f64>,
}

impl Jwt {
    fn new(config: &JwtConfig, limits: &Limits) -> Result<Jwt, AuthSetupError> {
        let algorithms = config
            .algorithms
            .iter()
            .map(|name| {
                Algorithm::from_str(name)
                    .map_err(|_| AuthSetupError::Jwt(format!("unknown algorithm {name:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let Some(first) = algorithms.first() else {
            return Err(AuthSetupError::Jwt("no algorithms".to_owned()));
        };
        let mut validation = Validation::new(*first);
        validation.algorithms = algorithms;
        validation.leeway = config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.required_spec_claims = ["exp", "sub"].map(str::to_owned).into();
        match &config.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                validation.required_spec_claims.insert("aud".to_owned());
            }
            None => validation.validate_aud = false,
        }
        if let Some(issuer) = &config.issuer {
            validation.set_issuer(&[issuer]);
            validation.required_spec_claims.insert("iss".to_owned());
        }
        let source = match &config.key {
            JwtKey::Jwks(url) => KeySource::Jwks(Jwks::new(url.clone(), limits)?),
            JwtKey::PublicKeyFile(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    AuthSetupError::Jwt(format!("cannot read {}: {e}", path.display()))
                })?;
                let key = DecodingKey::from_rsa_pem(&pem)
                    .or_else(|_| DecodingKey::from_ec_pem(&pem))
                    .or_else(|_| DecodingKey::from_ed_pem(&pem))
                    .map_err(|_| {
                        AuthSetupError::Jwt(format!(
                            "{} is not an RSA, EC or Ed25519 public key in PEM",
                            path.display()
                        ))
                    })?;
                KeySource::Static(key)
            }
            JwtKey::SecretEnv(name) => {
                let secret =
                    std::env::var(name).map_err(|_| AuthSetupError::MissingEnv(name.clone()))?;
                KeySource::Static(DecodingKey::from_secret(secret.as_bytes()))
            }
        };
        Ok(Jwt { validation, source })
    }

    /// The token's subject, once its signature and claims hold.
    async fn verify(&self, token: &str) -> Result<String, AuthError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::BadToken)?;
        // The configured list says what is acceptable; the check itself is
        // for the token's one algorithm (the library demands that every
        // listed algorithm suit the key, and one key has one family).
        if !self.validation.algorithms.contains(&header.alg) {
            return Err(AuthError::BadToken);
        }
        let mut validation = self.validation.clone();
        validation.algorithms = vec![header.alg];
        let key = match &self.source {
            KeySource::Static(key) => key.clone(),
            KeySource::Jwks(jwks) => jwks.key(header.kid.as_deref(), header.alg).await?,
        };
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|err| {
            use jsonwebtoken::errors::ErrorKind;
            match err.kind() {
                ErrorKind::ExpiredSignature => AuthError::Expired,
                ErrorKind::ImmatureSignature => AuthError::NotYetValid,
                ErrorKind::InvalidAudience => AuthError::Audience,
                ErrorKind::InvalidIssuer => AuthError::Issuer,
                _ => AuthError::BadToken,
            }
        })?;
        // The library does not look at `iat`: a token issued in the future
        // (beyond the clock skew allowed) was minted by a clock or a key
        // that cannot be trusted.
        if let Some(issued) = data.claims.iat
            && issued > now_secs() + self.validation.leeway as f64
        {
            return Err(AuthError::IssuedInFuture);
        }
        data.claims
            .sub
            .filter(|s| !s.is_empty())
            .ok_or(AuthError::BadToken)
    }
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Whether a JWKS key may verify signatures: RFC 7517 `use` (when given)
/// is `sig`, and `key_ops` (when given) includes `verify`. A key published
/// for encryption verifies nothing, whatever its `kid`.
fn is_signing_key(jwk: &jsonwebtoken::jwk::Jwk) -> bool {
    use jsonwebtoken::jwk::{KeyOperations, PublicKeyUse};
    let use_ok = jwk
        .common
        .public_key_use
        .as_ref()
        .is_none_or(|usage| matches!(usage, PublicKeyUse::Signature));
    let ops_ok = jwk
        .common
        .key_operations
        .as_ref()
        .is_none_or(|ops| ops.iter().any(|op| matches!(op, KeyOperations::Verify)));
    use_ok && ops_ok
}

/// A JWKS document, fetched within the card limits and cached; an unknown
/// `kid` refetches it, at most once per `REFETCH_GAP`, so a flood of forged
/// key ids cannot turn into a flood of fetches.
struct Jwks {
    url: Url,
    client: reqwest::Client,
    max_bytes: usize,
    keys: RwLock<Option<(Instant, JwkSet)>>,
    last_fetch: Mutex<Option<Instant>>,
}

const REFETCH_GAP: Duration = Duration::from_secs(10);
const JWKS_MAX_AGE: Duration = Duration::from_secs(300);

impl Jwks {
    fn new(url: Url, limits: &Limits) -> Result<Jwks, AuthSetupError> {
        let client = reqwest::Client::builder()
            .timeout(limits.card_timeout)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| AuthSetupError::Jwt(format!("HTTP client: {e}")))?;
        Ok(Jwks {
            url,
            client,
            max_bytes: limits.max_card_bytes,
            keys: RwLock::new(None),
            last_fetch: Mutex::new(None),
        })
    }

    /// The key for `kid` (and the token's algorithm). Keys past their age
    /// are still used while one request refreshes the set: an identity
    /// provider that is briefly away does not lock every user out.
    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, AuthError> {
        let found = match self.lookup(kid, alg) {
            (Some(found), false) => return found,
            (found, _) => found,
        };
        if self.may_refetch() {
            match self.refresh().await {
                Ok(()) => {
                    if let (Some(found), _) = self.lookup(kid, alg) {
                        return found;
                    }
                }
                Err(err) => tracing::warn!("auth: fetching the JWKS failed: {err}"),
            }
        }
        match found {
            Some(found) => found,
            None if self.is_empty() => Err(AuthError::KeysUnavailable),
            None => Err(AuthError::UnknownSigningKey),
        }
    }

    fn is_empty(&self) -> bool {
        self.keys.read().map_or(true, |k| k.is_none())
    }

    /// The key for `kid` from the cached set (a set of one needs no `kid`),
    /// if its declared algorithm (when it declares one) is the token's; and
    /// whether the set is due for a refresh.
    fn lookup(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> (Option<Result<DecodingKey, AuthError>>, bool) {
        let Ok(guard) = self.keys.read() else {
            return (None, true);
        };
        let Some((fetched, set)) = guard.as_ref() else {
            return (None, true);
        };
        let stale = fetched.elapsed() > JWKS_MAX_AGE;
        // A signing key first: a set may publish an encryption key under
        // the same `kid`.
        let named = |jwk: &&jsonwebtoken::jwk::Jwk| match kid {
            Some(kid) => jwk.common.key_id.as_deref() == Some(kid),
            None => set.keys.len() == 1,
        };
        let jwk = set
            .keys
            .iter()
            .filter(named)
            .find(|jwk| is_signing_key(jwk))
            .or_else(|| set.keys.iter().find(named));
        let found = jwk.map(|jwk| {
            if !is_signing_key(jwk) {
                return Err(AuthError::KeyNotForSigning);
            }
            let declared = jwk
                .common
                .key_algorithm
                .and_then(|a| Algorithm::from_str(&a.to_string()).ok());
            if declared.is_some_and(|declared| declared != alg) {
                return Err(AuthError::BadToken);
            }
            DecodingKey::from_jwk(jwk).map_err(|_| AuthError::UnknownSigningKey)
        });
        (found, stale)
    }

    fn may_refetch(&self) -> bool {
        let Ok(mut last) = self.last_fetch.lock() else {
            return false;
        };
        match *last {
            Some(at) if at.elapsed() < REFETCH_GAP => false,
            _ => {
                *last = Some(Instant::now());
                true
            }
        }
    }

    async fn refresh(&self) -> Result<(), String> {
        let mut response = self
            .client
            .get(self.url.clone())
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("{e:?}"))? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(format!("larger than {} bytes", self.max_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        let set: JwkSet = serde_json::from_slice(&body).map_err(|e| format!("not a JWKS: {e}"))?;
        if let Ok(mut keys) = self.keys.write() {
            *keys = Some((Instant::now(), set));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_plain_or_hashed_and_kept_hashed() {
        let mut keys = HashMap::new();
        let hashed = format!("sha256:{}", "00".repeat(32));
        read_keys(
            &format!("# comment\nweb:s3cret:with:colons\n\nops:{hashed}\n"),
            &mut keys,
        )
        .unwrap();
        assert_eq!(
            keys.get(&digest("s3cret:with:colons")).map(String::as_str),
            Some("web")
        );
        assert_eq!(keys.get(&[0u8; 32]).map(String::as_str), Some("ops"));
        assert!(keys.values().all(|name| name == "web" || name == "ops"));
        assert!(matches!(
            read_keys("nokey\n", &mut keys),
            Err(AuthSetupError::KeyEntry(1))
        ));
        assert!(matches!(
            read_keys("a:sha256:zz\n", &mut keys),
            Err(AuthSetupError::KeyEntry(1))
        ));
    }

    #[test]
    fn allow_lists_match_by_kind() {
        let key = Principal::Key("web".into());
        let sub = Principal::Subject("web".into());
        let allow = [Allow::Key("web".into())];
        assert!(key.may_call(&allow));
        assert!(!sub.may_call(&allow));
        assert!(sub.may_call(&[Allow::Anyone]));
        assert!(!key.may_call(&[]));
    }
}

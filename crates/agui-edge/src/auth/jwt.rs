//! JWT bearer tokens: checked against a JWKS document, a PEM public key
//! or an HMAC secret (issuer, audience, expiry, clock skew).

use std::str::FromStr;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use url::Url;

use super::{AuthError, AuthSetupError, FetchLimits, JwtConfig, JwtKey};

pub(super) struct Jwt {
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
    pub(super) fn new(config: &JwtConfig, limits: FetchLimits) -> Result<Jwt, AuthSetupError> {
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

    /// Fetches the JWKS, if the keys come from one.
    pub(super) async fn warm_up(&self) {
        if let KeySource::Jwks(jwks) = &self.source
            && let Err(err) = jwks.refresh().await
        {
            tracing::warn!("auth: fetching the JWKS failed: {err}");
        }
    }

    /// The token's subject, once its signature and claims hold.
    pub(super) async fn verify(&self, token: &str) -> Result<String, AuthError> {
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

/// A JWKS document, fetched within its `FetchLimits` and cached; an unknown
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
    fn new(url: Url, limits: FetchLimits) -> Result<Jwks, AuthSetupError> {
        let client = reqwest::Client::builder()
            .timeout(limits.timeout)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| AuthSetupError::Jwt(format!("HTTP client: {e}")))?;
        Ok(Jwks {
            url,
            client,
            max_bytes: limits.max_bytes,
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

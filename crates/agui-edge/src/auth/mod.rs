//! Who is calling: static API keys, kept only as SHA-256 digests, and JWT
//! bearer tokens (`jwt.rs`). Which agents a caller may use is `Allow`'s
//! business, applied by the gateway where the agent is known.

mod jwt;
mod settings;

use std::collections::HashMap;

use axum::http::{HeaderMap, HeaderName, header};
use sha2::{Digest, Sha256};

use jwt::Jwt;
pub use settings::{Allow, AuthConfig, FetchLimits, JwtConfig, JwtKey};

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
        limits: FetchLimits,
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
        if let Some(jwt) = &self.jwt {
            jwt.warm_up().await;
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

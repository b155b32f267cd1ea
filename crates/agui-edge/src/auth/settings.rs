//! What authentication is configured with (`[auth]` and its flags, an
//! agent's `allow`); the gateway's configuration reads them.

use std::path::PathBuf;
use std::time::Duration;

use url::Url;

/// Who may call an agent, once authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Any authenticated caller (`*`).
    Anyone,
    /// The API key of this name (`key:NAME`).
    Key(String),
    /// JWTs with this subject (`sub:SUBJECT`).
    Subject(String),
}

impl Allow {
    pub fn parse(text: &str) -> Option<Allow> {
        match text.split_once(':') {
            _ if text == "*" => Some(Allow::Anyone),
            Some(("key", name)) if !name.is_empty() => Some(Allow::Key(name.to_owned())),
            Some(("sub", subject)) if !subject.is_empty() => {
                Some(Allow::Subject(subject.to_owned()))
            }
            _ => None,
        }
    }
}

/// Where API keys come from: never the configuration file itself.
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    /// A file of `name:key` or `name:sha256:HEX` lines (a mounted Secret).
    pub api_keys_file: Option<PathBuf>,
    /// An environment variable with the same entries, comma-separated.
    pub api_keys_env: Option<String>,
    pub jwt: Option<JwtConfig>,
}

impl AuthConfig {
    pub fn is_on(&self) -> bool {
        self.api_keys_file.is_some() || self.api_keys_env.is_some() || self.jwt.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct JwtConfig {
    pub key: JwtKey,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    pub leeway: Duration,
    /// Accepted algorithms (by their JOSE names).
    pub algorithms: Vec<String>,
}

impl JwtConfig {
    /// A JWT check with `key` and the defaults: 30 s of clock skew, HS256
    /// for a shared secret, RS256 / ES256 / EdDSA for public keys.
    pub fn for_key(key: JwtKey) -> JwtConfig {
        let algorithms = match key {
            JwtKey::SecretEnv(_) => vec!["HS256".to_owned()],
            _ => ["RS256", "ES256", "EdDSA"].map(str::to_owned).to_vec(),
        };
        JwtConfig {
            key,
            issuer: None,
            audience: None,
            leeway: Duration::from_secs(30),
            algorithms,
        }
    }
}

#[derive(Debug, Clone)]
pub enum JwtKey {
    /// Keys from a JWKS document, refetched for an unknown `kid`.
    Jwks(Url),
    /// One PEM public key (RSA, EC or Ed25519) from a file.
    PublicKeyFile(PathBuf),
    /// An HMAC secret from an environment variable.
    SecretEnv(String),
}

/// Bounds on one JWKS fetch: the gateway gives the ones of an agent card
/// (`card_timeout`, `max_card_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct FetchLimits {
    /// The whole fetch.
    pub timeout: Duration,
    /// The document's size.
    pub max_bytes: usize,
}

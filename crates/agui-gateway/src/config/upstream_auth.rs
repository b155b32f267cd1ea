//! Who the gateway is towards an agent (`[agents.NAME.auth]`): an OAuth2
//! client that gets tokens with the client-credentials grant, or that
//! exchanges the caller's verified token for one meant for the agent (RFC
//! 8693). The static `headers` stay as they were, for agents that take a
//! fixed key.

use std::fmt;
use std::ops::Range;

use toml::Spanned;
use url::Url;

use super::ConfigError;
use super::schema::FileUpstreamAuth;

/// A value that must not be shown: `Debug` and `Display` write `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How the client authenticates at the token endpoint (RFC 6749 §2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `Authorization: Basic` (the default every server supports).
    Basic,
    /// `client_id` and `client_secret` in the form.
    Post,
}

/// The gateway as an OAuth2 client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// None: the token URL the agent's card names (an OAuth2 flow's
    /// `tokenUrl`), if its origin is allowed.
    pub token_url: Option<Url>,
    pub client_id: String,
    pub client_secret: Secret,
    pub client_auth: ClientAuth,
    pub scopes: Vec<String>,
    /// RFC 8693 `audience` (a logical name the server knows the agent by).
    pub audience: Option<String>,
    /// RFC 8707 `resource` (the agent's URI).
    pub resource: Option<String>,
}

/// What the gateway sends the agent as its credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamAuth {
    /// One token for every call, the gateway's own.
    ClientCredentials(OAuthClient),
    /// A token per caller: the caller's verified token exchanged for one
    /// whose audience is the agent; with `actor`, the gateway's own
    /// client-credentials token goes along as the actor token.
    TokenExchange { client: OAuthClient, actor: bool },
}

impl UpstreamAuth {
    pub fn client(&self) -> &OAuthClient {
        match self {
            UpstreamAuth::ClientCredentials(client)
            | UpstreamAuth::TokenExchange { client, .. } => client,
        }
    }
}

/// `[agents.NAME.auth]` as read; errors at the table's line.
pub(super) fn from_file(
    name: &str,
    auth: &Spanned<FileUpstreamAuth>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<UpstreamAuth, ConfigError> {
    let table = auth.get_ref();
    let fail = |message: String| at(auth.span(), format!("agents.{name}.auth: {message}"));
    let token_url = match &table.token_url {
        None => None,
        Some(text) => {
            let url = Url::parse(text).map_err(|e| fail(format!("token_url: {e}")))?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(fail("token_url: an http:// or https:// URL".to_owned()));
            }
            Some(url)
        }
    };
    let client_id = table
        .client_id
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| fail("client_id is required".to_owned()))?;
    let client_secret = table
        .client_secret
        .clone()
        .filter(|secret| !secret.is_empty())
        .map(Secret::new)
        .ok_or_else(|| {
            fail("client_secret is required (as \"${VARIABLE}\" or \"${file:PATH}\")".to_owned())
        })?;
    let client_auth = match table.client_auth.as_deref() {
        None | Some("basic") => ClientAuth::Basic,
        Some("post") => ClientAuth::Post,
        Some(other) => return Err(fail(format!("client_auth: {other:?} is not basic or post"))),
    };
    let client = OAuthClient {
        token_url,
        client_id,
        client_secret,
        client_auth,
        scopes: table.scopes.clone().unwrap_or_default(),
        audience: table.audience.clone(),
        resource: table.resource.clone(),
    };
    match table.kind.as_str() {
        "oauth2_client_credentials" => {
            if table.actor.is_some() {
                return Err(fail("actor is for token_exchange".to_owned()));
            }
            Ok(UpstreamAuth::ClientCredentials(client))
        }
        // The caller's token goes to the token endpoint: never to one a
        // card names, which could be the agent's own.
        "token_exchange" if client.token_url.is_none() => Err(fail(
            "token_exchange needs token_url (a card's is not used: the caller's token would go where the agent says)"
                .to_owned(),
        )),
        "token_exchange" => Ok(UpstreamAuth::TokenExchange {
            client,
            actor: table.actor.unwrap_or(false),
        }),
        other => Err(fail(format!(
            "type: {other:?} is not oauth2_client_credentials or token_exchange"
        ))),
    }
}

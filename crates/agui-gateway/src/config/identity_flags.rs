//! The flags of the gateway's identity towards agents: the `--upstream`
//! agent's OAuth2 client (`[agents.NAME.auth]`), and the card-signing keys
//! (`[card_signing]`, for any configuration).

use std::path::PathBuf;

use clap::Args;
use url::Url;

use super::{ClientAuth, Config, OAuthClient, Secret, UpstreamAuth};
use crate::signing::Policy;

#[derive(Clone, Args)]
pub struct IdentityArgs {
    /// The --upstream agent is called with an OAuth2 token the gateway gets as this client (client credentials; see --upstream-token-exchange).
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_CLIENT_ID",
        conflicts_with = "config"
    )]
    pub upstream_client_id: Option<String>,
    /// The client's secret (better from the variable than on the command line).
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_CLIENT_SECRET",
        hide_env_values = true,
        requires = "upstream_client_id"
    )]
    pub upstream_client_secret: Option<String>,
    /// The token endpoint [default: the agent card's OAuth2 tokenUrl, on an allowed origin].
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_TOKEN_URL",
        requires = "upstream_client_id"
    )]
    pub upstream_token_url: Option<Url>,
    /// Scopes to ask for, comma-separated.
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_SCOPES",
        value_delimiter = ',',
        requires = "upstream_client_id"
    )]
    pub upstream_scopes: Option<Vec<String>>,
    /// RFC 8707 resource: the agent's URI, the token's audience.
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_RESOURCE",
        requires = "upstream_client_id"
    )]
    pub upstream_resource: Option<String>,
    /// The audience parameter some servers want instead of (or with) the resource.
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_AUDIENCE",
        requires = "upstream_client_id"
    )]
    pub upstream_audience: Option<String>,
    /// Exchange each caller's verified JWT for the agent's token (RFC 8693) instead of client credentials; needs --jwks-url.
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_TOKEN_EXCHANGE",
        requires = "upstream_client_id"
    )]
    pub upstream_token_exchange: bool,
    /// What to do with the --upstream agent's card signatures: off, verify or require (needs --card-trusted-keys).
    #[arg(long, env = "AGUI_GATEWAY_CARD_SIGNATURES", conflicts_with = "config")]
    pub card_signatures: Option<String>,
    /// A JWKS file of the keys agents' cards may be signed with ([card_signing] trusted_keys).
    #[arg(long, env = "AGUI_GATEWAY_CARD_TRUSTED_KEYS")]
    pub card_trusted_keys: Option<PathBuf>,
    /// A PEM private key the gateway signs the cards it serves with ([card_signing] signing_key).
    #[arg(long, env = "AGUI_GATEWAY_CARD_SIGNING_KEY")]
    pub card_signing_key: Option<PathBuf>,
    /// The signing key's algorithm [default: ES256].
    #[arg(
        long,
        env = "AGUI_GATEWAY_CARD_SIGNING_ALG",
        requires = "card_signing_key"
    )]
    pub card_signing_alg: Option<String>,
}

/// The client secret is not shown.
impl std::fmt::Debug for IdentityArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityArgs")
            .field("upstream_client_id", &self.upstream_client_id)
            .field(
                "upstream_client_secret",
                &self.upstream_client_secret.as_ref().map(|_| "***"),
            )
            .field("upstream_token_url", &self.upstream_token_url)
            .field("upstream_token_exchange", &self.upstream_token_exchange)
            .field("card_signatures", &self.card_signatures)
            .finish_non_exhaustive()
    }
}

impl IdentityArgs {
    /// The flags over `config`; the `--upstream` agent's only with one.
    /// The error names the flag.
    pub fn apply(self, config: &mut Config) -> Result<(), String> {
        let invalid = |message: String| message;
        if let Some(path) = self.card_trusted_keys {
            config.card_signing.trusted_keys = Some(path);
        }
        if let Some(path) = self.card_signing_key {
            config.card_signing.signing_key = Some(path);
        }
        if let Some(alg) = self.card_signing_alg {
            config.card_signing.signing_alg = alg;
        }
        config
            .card_signing
            .load()
            .map_err(|err| invalid(format!("--card-trusted-keys / --card-signing-key: {err}")))?;
        if config.card_signing.signing_key.is_some() && config.public_url.is_none() {
            return Err(invalid(
                "--card-signing-key needs --public-url: a signed card must name the gateway's own address, not one a request chose"
                    .to_owned(),
            ));
        }
        let single = config.agents.len() == 1;
        if let Some(text) = self.card_signatures {
            let policy = Policy::parse(&text).ok_or_else(|| {
                invalid(format!(
                    "--card-signatures {text:?}: expected off, verify or require"
                ))
            })?;
            if policy != Policy::Off && config.card_signing.trusted_keys.is_none() {
                return Err(invalid(format!(
                    "--card-signatures {text}: checking signatures needs --card-trusted-keys"
                )));
            }
            if let (true, Some(agent)) = (single, config.agents.first_mut()) {
                if policy != Policy::Off && matches!(agent.upstream.scheme(), "grpc" | "grpcs") {
                    return Err(invalid(format!(
                        "--card-signatures {text}: a gRPC agent's card signatures are not checked; use off"
                    )));
                }
                agent.card_signatures = policy;
            }
        }
        let Some(client_id) = self.upstream_client_id.filter(|id| !id.is_empty()) else {
            return Ok(());
        };
        let secret = self
            .upstream_client_secret
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                invalid(
                    "--upstream-client-id needs --upstream-client-secret (or AGUI_GATEWAY_UPSTREAM_CLIENT_SECRET)"
                        .to_owned(),
                )
            })?;
        if let Some(url) = &self.upstream_token_url
            && !matches!(url.scheme(), "http" | "https")
        {
            return Err(invalid(format!(
                "--upstream-token-url {url}: an http:// or https:// URL"
            )));
        }
        if self.upstream_token_exchange && self.upstream_token_url.is_none() {
            return Err(invalid(
                "--upstream-token-exchange needs --upstream-token-url: a card's is not used for the caller's token"
                    .to_owned(),
            ));
        }
        if self.upstream_token_exchange && config.auth.jwt.is_none() {
            return Err(invalid(
                "--upstream-token-exchange needs --jwks-url: the caller's verified JWT is what is exchanged"
                    .to_owned(),
            ));
        }
        let client = OAuthClient {
            token_url: self.upstream_token_url,
            client_id,
            client_secret: Secret::new(secret),
            client_auth: ClientAuth::Basic,
            scopes: self.upstream_scopes.unwrap_or_default(),
            audience: self.upstream_audience,
            resource: self.upstream_resource,
        };
        let auth = match self.upstream_token_exchange {
            true => UpstreamAuth::TokenExchange {
                client,
                actor: false,
            },
            false => UpstreamAuth::ClientCredentials(client),
        };
        if let (true, Some(agent)) = (single, config.agents.first_mut()) {
            agent.auth = Some(auth);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, UpstreamAuth};
    use crate::signing::Policy;

    /// The flags after `--upstream http://127.0.0.1:9/`.
    fn config(args: &[&str]) -> Result<Config, String> {
        let upstream = ["--upstream", "http://127.0.0.1:9/"];
        let all: Vec<&str> = upstream.iter().chain(args).copied().collect();
        crate::config::flags::from_args(&all)
    }

    #[test]
    fn the_upstream_agents_client_comes_from_flags() {
        let config = config(&[
            "--upstream-client-id",
            "gw",
            "--upstream-client-secret",
            "s3cret",
            "--upstream-token-url",
            "http://127.0.0.1:9/token",
            "--upstream-scopes",
            "a,b",
            "--upstream-resource",
            "https://agent.test/",
        ])
        .unwrap();
        let Some(UpstreamAuth::ClientCredentials(client)) = &config.agents[0].auth else {
            panic!("client credentials: {:?}", config.agents[0].auth);
        };
        assert_eq!(client.client_id, "gw");
        assert_eq!(client.client_secret.expose(), "s3cret");
        assert_eq!(client.scopes, ["a", "b"]);
        assert_eq!(client.resource.as_deref(), Some("https://agent.test/"));
        // Shown nowhere, not even in the configuration's debug form.
        assert!(!format!("{config:?}").contains("s3cret"));
    }

    #[test]
    fn what_cannot_work_is_refused_with_the_flags_name() {
        let err = config(&["--upstream-client-id", "gw"]).unwrap_err();
        assert!(err.contains("--upstream-client-secret"), "{err}");
        let err = config(&[
            "--upstream-client-id",
            "gw",
            "--upstream-client-secret",
            "s",
            "--upstream-token-exchange",
            "--upstream-token-url",
            "http://127.0.0.1:9/token",
        ])
        .unwrap_err();
        assert!(
            err.contains("--upstream-token-exchange needs --jwks-url"),
            "{err}"
        );
        let err = config(&["--card-signatures", "verify"]).unwrap_err();
        assert!(err.contains("needs --card-trusted-keys"), "{err}");
        let err = config(&["--card-signatures", "maybe"]).unwrap_err();
        assert!(err.contains("expected off, verify or require"), "{err}");
        let err = config(&["--card-trusted-keys", "/nonexistent/keys.json"]).unwrap_err();
        assert!(err.contains("card_signing.trusted_keys"), "{err}");
        let off = config(&["--card-signatures", "off"]).unwrap();
        assert_eq!(off.agents[0].card_signatures, Policy::Off);
    }
}

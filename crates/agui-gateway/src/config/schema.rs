//! What the TOML file may hold, as serde reads it: every table refuses
//! unknown keys, and the values that need a line in an error are spanned.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) listen: Option<Spanned<String>>,
    pub(super) admin_listen: Option<Spanned<String>>,
    pub(super) public_url: Option<Spanned<String>>,
    pub(super) default_agent: Option<Spanned<String>>,
    pub(super) gateway_id: Option<Spanned<String>>,
    pub(super) trusted_proxies: Option<Spanned<Vec<String>>>,
    pub(super) keepalive_secs: Option<Spanned<u64>>,
    pub(super) shutdown_grace_secs: Option<u64>,
    pub(super) drain_delay_secs: Option<u64>,
    pub(super) journal: Option<Spanned<String>>,
    pub(super) journal_tls: Option<Spanned<FileTls>>,
    pub(super) journal_password_file: Option<Spanned<String>>,
    pub(super) detach_grace_secs: Option<u64>,
    pub(super) inspector: Option<bool>,
    pub(super) copilotkit_path: Option<Spanned<String>>,
    pub(super) otlp_endpoint: Option<Spanned<String>>,
    pub(super) tls: Option<Spanned<FileServeTls>>,
    pub(super) upstream_tls: Option<Spanned<FileUpstreamTls>>,
    pub(super) card_signing: Option<Spanned<FileCardSigning>>,
    #[serde(default)]
    pub(super) limits: FileLimits,
    #[serde(default)]
    pub(super) cors: Cors,
    #[serde(default)]
    pub(super) auth: FileAuth,
    pub(super) rate_limit: Option<Spanned<FileRateLimit>>,
    #[serde(default)]
    pub(super) agents: BTreeMap<String, FileAgent>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    pub(super) max_event_bytes: Option<Spanned<usize>>,
    pub(super) max_request_bytes: Option<Spanned<usize>>,
    pub(super) max_streams: Option<Spanned<usize>>,
    pub(super) max_connections: Option<Spanned<usize>>,
    pub(super) header_read_timeout_secs: Option<Spanned<u64>>,
    pub(super) request_body_timeout_secs: Option<Spanned<u64>>,
    pub(super) write_timeout_secs: Option<Spanned<u64>>,
    pub(super) card_timeout_secs: Option<Spanned<u64>>,
    pub(super) max_card_bytes: Option<Spanned<usize>>,
    pub(super) journal_max_runs: Option<Spanned<usize>>,
    pub(super) journal_max_run_bytes: Option<Spanned<usize>>,
    pub(super) journal_max_bytes: Option<Spanned<usize>>,
    pub(super) journal_ttl_secs: Option<Spanned<u64>>,
    pub(super) journal_thread_ttl_secs: Option<Spanned<u64>>,
    pub(super) token_budget: Option<Spanned<u64>>,
    pub(super) token_budget_window_secs: Option<Spanned<u64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Cors {
    #[serde(default)]
    pub(super) allow_origins: Vec<Spanned<String>>,
    pub(super) allow_credentials: Option<Spanned<bool>>,
    pub(super) max_age_secs: Option<u64>,
    pub(super) expose_headers: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAuth {
    pub(super) api_keys_file: Option<String>,
    pub(super) api_keys_env: Option<String>,
    pub(super) jwt: Option<Spanned<FileJwt>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileJwt {
    pub(super) jwks_url: Option<String>,
    pub(super) public_key_file: Option<String>,
    pub(super) secret_env: Option<String>,
    pub(super) issuer: Option<String>,
    pub(super) audience: Option<String>,
    pub(super) leeway_secs: Option<u64>,
    pub(super) algorithms: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileRateLimit {
    pub(super) per_second: u32,
    pub(super) burst: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAgent {
    pub(super) upstream: Spanned<String>,
    pub(super) a2a_version: Option<Spanned<String>>,
    pub(super) binding: Option<Spanned<String>>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) format: Option<Spanned<String>>,
    /// The older name of `format`.
    pub(super) output: Option<Spanned<String>>,
    pub(super) headers: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    pub(super) headers_env: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    pub(super) forward_client_headers: Option<Spanned<Vec<String>>>,
    pub(super) allowed_origins: Option<Spanned<Vec<String>>>,
    pub(super) allow: Option<Spanned<Vec<String>>>,
    pub(super) connect_timeout_secs: Option<Spanned<u64>>,
    pub(super) idle_timeout_secs: Option<Spanned<u64>>,
    pub(super) card_refresh_secs: Option<Spanned<u64>>,
    pub(super) cancel_on_disconnect: Option<bool>,
    pub(super) interrupts: Option<bool>,
    pub(super) tls: Option<Spanned<FileTls>>,
    pub(super) auth: Option<Spanned<FileUpstreamAuth>>,
    pub(super) card_signatures: Option<Spanned<String>>,
}

/// `[card_signing]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCardSigning {
    pub(super) trusted_keys: Option<String>,
    pub(super) signing_key: Option<String>,
    pub(super) signing_alg: Option<String>,
    pub(super) signing_kid: Option<String>,
}

/// `[agents.NAME.auth]`: how the gateway is known to the agent. Its
/// `Debug` leaves the secret out.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileUpstreamAuth {
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) token_url: Option<String>,
    pub(super) client_id: Option<String>,
    pub(super) client_secret: Option<String>,
    pub(super) client_auth: Option<String>,
    pub(super) scopes: Option<Vec<String>>,
    pub(super) audience: Option<String>,
    pub(super) resource: Option<String>,
    pub(super) actor: Option<bool>,
}

impl std::fmt::Debug for FileUpstreamAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileUpstreamAuth")
            .field("kind", &self.kind)
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .finish_non_exhaustive()
    }
}

/// `[tls]`: the gateway's own certificate and key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileServeTls {
    pub(super) cert: String,
    pub(super) key: String,
}

/// `[upstream_tls]`: what every agent's TLS starts from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileUpstreamTls {
    pub(super) ca_file: Option<String>,
}

/// `[agents.NAME.tls]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTls {
    pub(super) ca_file: Option<String>,
    pub(super) client_cert: Option<String>,
    pub(super) client_key: Option<String>,
}

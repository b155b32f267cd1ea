//! Configuration: one agent from flags, or several from a TOML file
//! (`file.rs` reads it; every error names its line).
//!
//! ```toml
//! listen = "0.0.0.0:8080"
//! admin_listen = "0.0.0.0:9090"               # /healthz, /readyz, /metrics only
//! public_url = "https://agents.example.com"   # optional; else from the request
//! default_agent = "assistant"                 # serves the un-prefixed routes
//! gateway_id = "agui-gateway-eu1"             # its Via entry (default: random)
//! trusted_proxies = ["10.0.0.0/8"]            # whose X-Forwarded-* count
//! keepalive_secs = 15
//! shutdown_grace_secs = 10
//! drain_delay_secs = 0                        # still serve this long after SIGTERM
//! journal = "memory"                          # "off", or "redis://host/0"
//! detach_grace_secs = 60                      # a run without client goes on
//!
//! [tls]                                       # HTTPS on `listen`, HTTP/2 by ALPN; reloaded on change
//! cert = "/etc/agui-gateway/tls/server.pem"   # the chain, leaf first
//! key = "/etc/agui-gateway/tls/server.key"
//!
//! [limits]
//! max_event_bytes = 16777216
//! max_request_bytes = 4194304
//! max_streams = 10000
//! max_connections = 8192
//! header_read_timeout_secs = 10
//! request_body_timeout_secs = 30
//! write_timeout_secs = 60
//! card_timeout_secs = 10
//! max_card_bytes = 1048576
//! journal_max_runs = 10000
//! journal_max_run_bytes = 1048576
//! journal_max_bytes = 67108864
//! journal_ttl_secs = 300
//! journal_thread_ttl_secs = 604800
//! token_budget = 0                            # tokens per caller and window; 0: off
//! token_budget_window_secs = 86400
//!
//! [cors]                                      # browser access; off without origins
//! allow_origins = ["https://app.example.com", "https://*.example.com", "http://localhost:*"]
//! allow_credentials = false                   # cookies / HTTP auth from pages; never with "*"
//! max_age_secs = 600                          # how long a browser may cache a preflight
//! expose_headers = ["retry-after"]            # answer headers a page may read
//!
//! [auth]                                      # see docs/security.md
//! api_keys_file = "/run/secrets/agui-gateway/api-keys"
//! [auth.jwt]
//! jwks_url = "https://idp.example.com/.well-known/jwks.json"
//! issuer = "https://idp.example.com/"
//! audience = "agui-gateway"
//!
//! [rate_limit]
//! per_second = 10
//! burst = 20
//!
//! [upstream_tls]                              # what every agent's TLS starts from (upstream_tls.rs)
//! ca_file = "/etc/agui-gateway/agents-ca.pem"
//!
//! [agents.assistant]
//! upstream = "http://127.0.0.1:9999/"
//! a2a_version = "auto"          # "0.3" or "1.0" to skip card detection
//! binding = "auto"              # or "jsonrpc", "http+json", "grpc": else the card's first
//! mode = "auto"                 # or "stream", "poll": else the card's capabilities.streaming
//! format = "agui"               # or "hector" (`output` is the older name)
//! headers = { "X-Trace-Tenant" = "eu" }
//! headers_env = { "X-API-KEY" = "ASSISTANT_API_KEY" }   # value from the environment
//! forward_client_headers = ["authorization", "*"]
//! allowed_origins = []          # other origins its card may send calls to
//! allow = ["*"]                 # who may call it: "key:NAME", "sub:SUBJECT"
//! connect_timeout_secs = 5
//! idle_timeout_secs = 300
//! card_refresh_secs = 300
//! cancel_on_disconnect = false
//! interrupts = false
//!
//! [agents.assistant.tls]                      # upstream_tls.rs
//! ca_file = "/etc/agui-gateway/assistant-ca.pem"
//! client_cert = "/etc/agui-gateway/tls/client.pem"
//! client_key = "/etc/agui-gateway/tls/client.key"
//!
//! [agents.assistant.auth]                     # upstream_auth.rs
//! type = "oauth2_client_credentials"          # or "token_exchange"
//! token_url = "https://idp.example.com/token" # else the card's OAuth2 tokenUrl
//! client_id = "agui-gateway"
//! client_secret = "${ASSISTANT_CLIENT_SECRET}"
//! scopes = ["a2a.invoke"]
//! resource = "https://assistant.internal/"
//! ```

mod card_signing;
pub mod env;
mod file;
pub mod flags;
pub mod forward_policy;
mod identity_flags;
pub mod journal_access;
mod limits;
pub mod reach;
pub mod reload;
mod schema;
mod upstream_auth;
mod upstream_tls;

use std::net::SocketAddr;
use std::time::Duration;

use a2a_agui::OutputFormat;
use agui_edge::auth::{Allow, AuthConfig};
use agui_edge::cors::CorsConfig;
use agui_edge::ratelimit::RateLimit;
use agui_edge::tls::ServeTls;
use url::{Origin, Url};

pub use agui_journal::{Backend, JournalConfig, JournalLimits};
pub use card_signing::{CardKeys, CardSigning};
pub use env::Environment;
pub use forward_policy::{ForwardPolicy, TrustedProxies};
pub use reach::{Binding, Mode, Reach};
pub use upstream_auth::{ClientAuth, OAuthClient, Secret, UpstreamAuth};
pub use upstream_tls::{AgentTlsError, TlsMaterial, UpstreamTls};

/// Each stream holds two sockets; the open-file limit is usually the bound.
pub const DEFAULT_MAX_STREAMS: usize = 10_000;

/// A converted stream holds its client connection and an upstream one, so
/// twice this (16,384 descriptors) stays under the usual 20,000 limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = 8_192;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}:{line}: {message}")]
    At {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: String, message: String },
    /// A value set or referenced through the environment.
    #[error("environment variable {variable}: {message}")]
    Env { variable: String, message: String },
}

/// Which A2A dialect to speak to an upstream when the gateway builds the
/// request itself (the seed's body, the AG-UI endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aVersion {
    /// From the agent card.
    Auto,
    V03,
    V10,
}

impl A2aVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            A2aVersion::Auto => "auto",
            A2aVersion::V03 => "0.3",
            A2aVersion::V10 => "1.0",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub name: String,
    pub upstream: Url,
    pub a2a_version: A2aVersion,
    /// The binding and mode the configuration pins (`binding`, `mode`).
    pub reach: Reach,
    /// What converted streams are written in unless the request asks.
    pub format: OutputFormat,
    pub headers: Vec<(String, String)>,
    /// Headers whose values come from environment variables (header name,
    /// variable name): secrets stay out of the file, in a Secret's env.
    pub headers_env: Vec<(String, String)>,
    /// What of the client's headers go to this agent.
    pub forward: ForwardPolicy,
    /// Origins besides the upstream's own that its card may direct calls to.
    pub allowed_origins: Vec<Origin>,
    /// Who may call this agent when authentication is on.
    pub allow: Vec<Allow>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    pub card_refresh: Duration,
    pub cancel_on_disconnect: bool,
    pub interrupts: bool,
    /// The CA bundle and client certificate for calls to this agent.
    pub tls: UpstreamTls,
    /// The credential the gateway gets for itself (or for its caller) to
    /// call this agent.
    pub auth: Option<UpstreamAuth>,
    /// What to do with the signatures on its card.
    pub card_signatures: crate::signing::Policy,
}

impl AgentConfig {
    pub fn new(name: impl Into<String>, upstream: Url) -> AgentConfig {
        AgentConfig {
            name: name.into(),
            upstream,
            a2a_version: A2aVersion::Auto,
            reach: Reach::default(),
            format: OutputFormat::Agui,
            headers: Vec::new(),
            headers_env: Vec::new(),
            forward: ForwardPolicy::default(),
            allowed_origins: Vec::new(),
            allow: vec![Allow::Anyone],
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(300),
            card_refresh: Duration::from_secs(300),
            cancel_on_disconnect: false,
            interrupts: false,
            tls: UpstreamTls::default(),
            auth: None,
            card_signatures: crate::signing::Policy::Off,
        }
    }
}

/// Bounds on what one client, or all of them, can make the gateway hold.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_event_bytes: usize,
    pub max_request_bytes: usize,
    /// Streams (converted or passed through) open at once; past it, 503.
    pub max_streams: usize,
    /// Client connections open at once; past it, a 503 and the connection
    /// is closed.
    pub max_connections: usize,
    /// From accept, or from the end of the previous response on a kept-alive
    /// connection, until the whole request head has arrived.
    pub header_read_timeout: Duration,
    /// Until the whole request body has arrived.
    pub request_body_timeout: Duration,
    /// How long a write to a client may stay blocked (a client that stopped
    /// reading) before the connection is dropped.
    pub write_timeout: Duration,
    /// Total time for one agent card (or JWKS) fetch.
    pub card_timeout: Duration,
    /// The largest agent card (or JWKS) read.
    pub max_card_bytes: usize,
    /// Tokens (input plus output) a caller's runs may spend per window;
    /// 0: no budget.
    pub token_budget: u64,
    /// The budget's fixed window.
    pub token_budget_window: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_event_bytes: a2a_agui::DEFAULT_MAX_EVENT_BYTES,
            max_request_bytes: 4 << 20,
            max_streams: DEFAULT_MAX_STREAMS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: Duration::from_secs(10),
            request_body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(60),
            card_timeout: Duration::from_secs(10),
            max_card_bytes: 1 << 20,
            token_budget: 0,
            token_budget_window: Duration::from_secs(86_400),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// A second listener for `/healthz`, `/readyz` and `/metrics`; when
    /// set, the main listener no longer serves the last two.
    pub admin_listen: Option<SocketAddr>,
    /// TLS on `listen` (HTTP/2 and HTTP/1.1 by ALPN); without it, clear
    /// HTTP/1.1 and HTTP/2 by prior knowledge.
    pub tls: Option<ServeTls>,
    pub public_url: Option<Url>,
    pub default_agent: Option<String>,
    pub agents: Vec<AgentConfig>,
    /// This gateway's name in `Via` headers, by which it sees loops.
    pub gateway_id: String,
    pub trusted_proxies: TrustedProxies,
    pub keepalive: Duration,
    pub shutdown_grace: Duration,
    /// After SIGTERM, how long requests are still taken (endpoints take a
    /// moment to drop the pod); then an idle gateway exits at once.
    pub drain_delay: Duration,
    pub limits: Limits,
    pub journal: JournalConfig,
    pub cors: CorsConfig,
    pub auth: AuthConfig,
    pub rate_limit: Option<RateLimit>,
    /// Serve the inspector (`/inspect`).
    pub inspector: bool,
    /// Where the CopilotKit runtime protocol is served (`None`: not).
    pub copilotkit_path: Option<String>,
    /// Where OpenTelemetry spans go (OTLP/HTTP), if anywhere.
    pub otlp_endpoint: Option<Url>,
    /// Card signatures: the keys trusted for agents' cards, the gateway's.
    pub card_signing: CardSigning,
}

/// Where the CopilotKit runtime protocol is served unless configured.
pub const DEFAULT_COPILOTKIT_PATH: &str = "/copilotkit";

/// A base path for the CopilotKit runtime protocol: `""` turns it off;
/// else `/` and plain segments, not one of the gateway's own routes.
pub fn copilotkit_path(text: &str) -> Result<Option<String>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let plain = |segment: &str| {
        !segment.is_empty()
            && segment != "."
            && segment != ".."
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
    };
    let Some(rest) = text.strip_prefix('/') else {
        return Err("must start with /".to_owned());
    };
    if !rest.split('/').all(plain) {
        return Err(
            "must be / and plain path segments (letters, digits, - _ . ~), with no trailing /"
                .to_owned(),
        );
    }
    let first = rest.split('/').next().unwrap_or_default();
    if [
        "agui",
        "v1",
        "inspect",
        "healthz",
        "readyz",
        "metrics",
        ".well-known",
    ]
    .contains(&first)
    {
        return Err(format!("/{first} is one of the gateway's own routes"));
    }
    Ok(Some(text.to_owned()))
}

/// The one source of the top level's defaults: the file, the flags and
/// the environment start from it.
impl Default for Config {
    fn default() -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            admin_listen: None,
            tls: None,
            public_url: None,
            default_agent: None,
            agents: Vec::new(),
            gateway_id: random_gateway_id(),
            trusted_proxies: TrustedProxies::loopback(),
            keepalive: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(10),
            drain_delay: Duration::ZERO,
            limits: Limits::default(),
            journal: JournalConfig::default(),
            cors: CorsConfig::default(),
            auth: AuthConfig::default(),
            rate_limit: None,
            inspector: false,
            copilotkit_path: Some(DEFAULT_COPILOTKIT_PATH.to_owned()),
            otlp_endpoint: None,
            card_signing: CardSigning::default(),
        }
    }
}

impl Config {
    /// One agent, the default one, on `listen`.
    pub fn single(listen: SocketAddr, agent: AgentConfig) -> Config {
        Config {
            listen,
            default_agent: Some(agent.name.clone()),
            agents: vec![agent],
            ..Config::default()
        }
    }

    /// The file at `path` with what the process's environment sets.
    pub fn load(path: &str) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
            path: path.to_owned(),
            message: format!("cannot read: {e}"),
        })?;
        file::parse(path, &text, &Environment::of_process())
    }

    /// A configuration from `AGUI_GATEWAY__…` variables alone, when any
    /// is set.
    pub fn from_environment() -> Option<Result<Config, ConfigError>> {
        let env = Environment::of_process();
        env.sets_keys()
            .then(|| file::parse("(environment)", "", &env))
    }

    /// Parses and checks a TOML configuration; every error names its line
    /// (the process's environment is not read: tests).
    pub fn parse(path: &str, text: &str) -> Result<Config, ConfigError> {
        file::parse(path, text, &Environment::from_pairs([]))
    }

    /// `parse` with a given environment.
    pub fn parse_with(path: &str, text: &str, env: &Environment) -> Result<Config, ConfigError> {
        file::parse(path, text, env)
    }
}

/// Agent names appear in paths, URLs and log lines: a plain token only.
pub fn is_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && name != "."
        && name != ".."
}

/// A per-process id: replicas each see their own loops; give them one
/// shared `gateway_id` to see loops through each other too.
pub fn random_gateway_id() -> String {
    format!("agui-gateway-{:08x}", crate::random::random_u64() >> 32)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let config = Config::parse(
            "gw.toml",
            "listen = \"127.0.0.1:9000\"\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\noutput = \"hector\"\nheaders = { \"X-API-KEY\" = \"k\" }\n",
        )
        .unwrap();
        assert_eq!(config.listen.port(), 9000);
        assert_eq!(config.default_agent.as_deref(), Some("a"));
        assert_eq!(config.agents[0].format, OutputFormat::Hector);
        assert_eq!(
            config.agents[0].headers,
            vec![("X-API-KEY".to_owned(), "k".to_owned())]
        );
    }

    #[test]
    fn errors_name_their_line() {
        let err = Config::parse(
            "gw.toml",
            "[agents.a]\nupstream = \"http://x/\"\n\noutput = \"xml\"\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "gw.toml:4: agents.a.output: expected agui or hector"
        );
        let err = Config::parse(
            "gw.toml",
            "listen = \"x\"\n[agents.a]\nupstream = \"http://x/\"\n",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("gw.toml:1: listen:"), "{err}");
        let err = Config::parse(
            "gw.toml",
            "[agents.a]\nupstream = \"http://x/\"\nbogus = 1\n",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("gw.toml:3:"), "{err}");
        let err = Config::parse("gw.toml", "[agents.a]\nupstream = \"ftp://x/\"\n").unwrap_err();
        assert!(err.to_string().starts_with("gw.toml:2:"), "{err}");
    }

    #[test]
    fn binding_and_mode_pin_how_an_agent_is_reached() {
        let parse = |lines: &str| {
            Config::parse(
                "gw.toml",
                &format!("[agents.a]\nupstream = \"http://x/\"\n{lines}"),
            )
        };
        let pinned = parse("binding = \"HTTP+JSON\"\nmode = \"poll\"\n").unwrap();
        assert_eq!(
            pinned.agents[0].reach,
            Reach {
                binding: Some(Binding::HttpJson),
                mode: Some(Mode::Poll)
            }
        );
        let auto = parse("binding = \"auto\"\nmode = \"auto\"\n").unwrap();
        assert_eq!(auto.agents[0].reach, Reach::default());
    }

    #[test]
    fn format_has_output_as_an_older_name() {
        let agent = |lines: &str| format!("[agents.a]\nupstream = \"http://x/\"\n{lines}");
        let parse = |lines: &str| Config::parse("gw.toml", &agent(lines));
        for key in ["format", "output"] {
            let config = parse(&format!("{key} = \"hector\"\n")).unwrap();
            assert_eq!(config.agents[0].format, OutputFormat::Hector, "{key}");
        }
        assert_eq!(parse("").unwrap().agents[0].format, OutputFormat::Agui);
        let err = parse("format = \"xml\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "gw.toml:3: agents.a.format: expected agui or hector"
        );
        let err = parse("format = \"agui\"\noutput = \"hector\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "gw.toml:4: agents.a: format and output (its older name) are both given"
        );
    }

    #[test]
    fn edge_settings_parse_and_mistakes_name_their_line() {
        let config = Config::parse(
            "gw.toml",
            "admin_listen = \"127.0.0.1:9091\"\ngateway_id = \"gw-1\"\ntrusted_proxies = [\"10.0.0.0/8\", \"192.0.2.1\"]\n[limits]\nmax_connections = 7\nheader_read_timeout_secs = 3\n[auth]\napi_keys_env = \"KEYS\"\n[auth.jwt]\njwks_url = \"http://127.0.0.1:1/jwks\"\naudience = \"gw\"\n[rate_limit]\nper_second = 5\n[agents.a]\nupstream = \"http://x/\"\nallow = [\"key:web\", \"sub:alice\"]\nallowed_origins = [\"https://cdn.example.com\"]\nforward_client_headers = [\"cookie\"]\n",
        )
        .unwrap();
        assert_eq!(config.gateway_id, "gw-1");
        assert_eq!(config.limits.max_connections, 7);
        assert_eq!(config.limits.header_read_timeout, Duration::from_secs(3));
        assert!(
            config
                .trusted_proxies
                .contains("192.0.2.1".parse().unwrap())
        );
        assert!(
            !config
                .trusted_proxies
                .contains("127.0.0.1".parse().unwrap())
        );
        assert!(config.auth.is_on());
        assert_eq!(
            config.rate_limit,
            Some(RateLimit {
                per_second: 5,
                burst: 5
            })
        );
        let agent = &config.agents[0];
        assert_eq!(
            agent.allow,
            vec![Allow::Key("web".into()), Allow::Subject("alice".into())]
        );
        assert!(agent.forward.cookie && !agent.forward.authorization);
        let agent = |lines: &str| format!("[agents.a]\nupstream = \"http://x/\"\n{lines}");
        for (lines, want) in [
            ("allow = [\"bob\"]\n", "gw.toml:3: agents.a.allow:"),
            (
                "allowed_origins = [\"https://x/path\"]\n",
                "gw.toml:3: agents.a.allowed_origins:",
            ),
            (
                "forward_client_headers = [\"te\"]\n",
                "gw.toml:3: agents.a.forward_client_headers:",
            ),
            (
                "headers = { \"bad name\" = \"v\" }\n",
                "gw.toml:3: agents.a.headers:",
            ),
        ] {
            let err = Config::parse("gw.toml", &agent(lines))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{err}");
        }
        let err = Config::parse(
            "gw.toml",
            "[auth.jwt]\njwks_url = \"http://a/\"\nsecret_env = \"S\"\n[agents.a]\nupstream = \"http://x/\"\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("exactly one of"), "{err}");
    }

    #[test]
    fn a_token_budget_is_off_at_0_and_a_bad_one_names_its_line() {
        let agent = "[agents.a]\nupstream = \"http://x/\"\n";
        let defaults = Config::parse("gw.toml", agent).unwrap().limits;
        assert_eq!(
            (defaults.token_budget, defaults.token_budget_window),
            (0, Duration::from_secs(86_400))
        );
        let set = Config::parse(
            "gw.toml",
            &format!("[limits]\ntoken_budget = 50\ntoken_budget_window_secs = 60\n{agent}"),
        )
        .unwrap()
        .limits;
        assert_eq!(
            (set.token_budget, set.token_budget_window),
            (50, Duration::from_secs(60))
        );
        for (line, want) in [
            ("token_budget = -1", "gw.toml:2: "),
            ("token_budget = \"lots\"", "gw.toml:2: "),
            (
                "token_budget_window_secs = 0",
                "gw.toml:2: limits.token_budget_window_secs: must be at least 1",
            ),
        ] {
            let err = Config::parse("gw.toml", &format!("[limits]\n{line}\n{agent}"))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{line}: {err}");
        }
    }
}

//! The command line's flags, and what they set in a [`Config`]: over the
//! file's configuration (`--config`), one agent's (`--upstream`), or the
//! environment's. A count or time that 0 would make useless is refused
//! with the flag's name, as the file refuses it with its line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use a2a_agui::OutputFormat;
use agui_edge::auth::{JwtConfig, JwtKey};
use agui_edge::cors::{CorsConfig, OriginRule};
use agui_edge::ratelimit::RateLimit;
use agui_edge::tls::{ServeTls, TLS_FLAGS};
use clap::Args;
use url::Url;

use super::forward_policy::{ForwardPolicy, TrustedProxies};
use super::{AgentConfig, Config, ConfigError};
use crate::obs::logging::LogFormat;

/// Why the flags describe no configuration; the message names the flag.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// `bail!` as the binary wrote it, for a `FlagError`.
macro_rules! bail {
    ($($message:tt)*) => {
        return Err(FlagError::Invalid(format!($($message)*)))
    };
}

macro_rules! invalid {
    ($($message:tt)*) => {
        FlagError::Invalid(format!($($message)*))
    };
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The A2A agent to front (one agent; use --config for several).
    #[arg(long, env = "AGUI_GATEWAY_UPSTREAM")]
    pub upstream: Option<Url>,
    /// The name of the --upstream agent, for /v1/agents/{name}/… (with --config: the file's [agents.NAME]).
    #[arg(
        long,
        env = "AGUI_GATEWAY_NAME",
        default_value = "default",
        conflicts_with = "config"
    )]
    pub name: String,
    /// Address to listen on [default: 127.0.0.1:8080; wins over the file's listen].
    #[arg(long, env = "AGUI_GATEWAY_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// A TOML file with several agents, limits and CORS (see docs/configuration.md).
    #[arg(long, env = "AGUI_GATEWAY_CONFIG", conflicts_with = "upstream")]
    pub config: Option<PathBuf>,
    /// Output format of the --upstream agent: agui or hector [default: agui]
    /// (`AGUI_GATEWAY_OUTPUT`, the older name, counts when this is unset).
    #[arg(
        long,
        visible_alias = "output",
        env = "AGUI_GATEWAY_FORMAT",
        conflicts_with = "config"
    )]
    pub format: Option<String>,
    /// Seconds without an event before a `: ping` comment is sent.
    #[arg(long, env = "AGUI_GATEWAY_KEEPALIVE_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub keepalive_secs: Option<u64>,
    /// Seconds the --upstream agent may stay silent before the run fails (with --config: idle_timeout_secs per agent).
    #[arg(
        long,
        env = "AGUI_GATEWAY_IDLE_TIMEOUT_SECS",
        conflicts_with = "config",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub idle_timeout_secs: Option<u64>,
    /// Seconds open streams may run on after SIGTERM.
    #[arg(long, env = "AGUI_GATEWAY_SHUTDOWN_GRACE_SECS")]
    pub shutdown_grace_secs: Option<u64>,
    /// Seconds requests are still taken after SIGTERM (while load balancers drop the pod); default 0.
    #[arg(long, env = "AGUI_GATEWAY_DRAIN_DELAY_SECS")]
    pub drain_delay_secs: Option<u64>,
    /// The largest upstream event accepted, in bytes.
    #[arg(long, env = "AGUI_GATEWAY_MAX_EVENT_BYTES", value_parser = at_least_one)]
    pub max_event_bytes: Option<usize>,
    /// Send an A2A cancel when an AG-UI client disconnects mid-run (with --config: cancel_on_disconnect per agent).
    #[arg(
        long,
        env = "AGUI_GATEWAY_CANCEL_ON_DISCONNECT",
        conflicts_with = "config"
    )]
    pub cancel_on_disconnect: bool,
    /// PEM bundle of CAs that may sign the --upstream agent's certificate (besides the system's).
    #[arg(long, env = "AGUI_GATEWAY_UPSTREAM_CA_FILE", conflicts_with = "config")]
    pub upstream_ca_file: Option<PathBuf>,
    /// PEM client certificate (chain) shown to the --upstream agent (mutual TLS); with --upstream-client-key.
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_CLIENT_CERT",
        conflicts_with = "config",
        requires = "upstream_client_key"
    )]
    pub upstream_client_cert: Option<PathBuf>,
    /// PEM private key of --upstream-client-cert.
    #[arg(
        long,
        env = "AGUI_GATEWAY_UPSTREAM_CLIENT_KEY",
        conflicts_with = "config",
        requires = "upstream_client_cert"
    )]
    pub upstream_client_key: Option<PathBuf>,
    /// The gateway's public URL, for agent card links (default: from the request).
    #[arg(long, env = "AGUI_GATEWAY_PUBLIC_URL")]
    pub public_url: Option<Url>,
    /// Converted streams open at once; past it, new ones get a 503.
    #[arg(long, env = "AGUI_GATEWAY_MAX_STREAMS", value_parser = at_least_one)]
    pub max_streams: Option<usize>,
    /// Tokens (input plus output) a caller's runs may spend per window; past it, 429 TOKEN_BUDGET_EXCEEDED [default: 0, off].
    #[arg(long, env = "AGUI_GATEWAY_TOKEN_BUDGET")]
    pub token_budget: Option<u64>,
    /// Seconds of the token budget's fixed window [default: 86400].
    #[arg(long, env = "AGUI_GATEWAY_TOKEN_BUDGET_WINDOW_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub token_budget_window_secs: Option<u64>,
    /// Where converted runs are journaled for reconnects: memory, off, redis://HOST[:PORT][/DB] or rediss:// (TLS); a Redis Cluster's seeds as HOST:PORT,HOST:PORT [default: memory].
    #[arg(long, env = "AGUI_GATEWAY_JOURNAL")]
    pub journal: Option<String>,
    /// PEM bundle of CAs that may sign a rediss:// journal's certificate (besides the system's).
    #[arg(long, env = "AGUI_GATEWAY_JOURNAL_CA_FILE")]
    pub journal_ca_file: Option<PathBuf>,
    /// PEM client certificate (chain) shown to a rediss:// journal (mutual TLS); with --journal-client-key.
    #[arg(
        long,
        env = "AGUI_GATEWAY_JOURNAL_CLIENT_CERT",
        requires = "journal_client_key"
    )]
    pub journal_client_cert: Option<PathBuf>,
    /// PEM private key of --journal-client-cert.
    #[arg(
        long,
        env = "AGUI_GATEWAY_JOURNAL_CLIENT_KEY",
        requires = "journal_client_cert"
    )]
    pub journal_client_key: Option<PathBuf>,
    /// A file holding the journal's Redis password (its ACL user from the URL), kept out of the URL.
    #[arg(long, env = "AGUI_GATEWAY_JOURNAL_PASSWORD_FILE")]
    pub journal_password_file: Option<PathBuf>,
    /// Seconds a run goes on after its client went away, for a reconnect [default: 60].
    #[arg(long, env = "AGUI_GATEWAY_DETACH_GRACE_SECS")]
    pub detach_grace_secs: Option<u64>,
    /// Serve the inspector page at /inspect (a run's A2A and AG-UI events side by side).
    #[arg(long, env = "AGUI_GATEWAY_INSPECTOR")]
    pub inspector: bool,
    /// Serve the CopilotKit runtime protocol under this path ("" turns it off) [default: /copilotkit].
    #[arg(long, env = "AGUI_GATEWAY_COPILOTKIT_PATH", value_parser = copilotkit_path_flag)]
    pub copilotkit_path: Option<Option<String>>,
    /// Export OpenTelemetry spans to this OTLP/HTTP collector: its base URL (`/v1/traces` is added) [default: OTEL_EXPORTER_OTLP_ENDPOINT].
    #[arg(long, env = "AGUI_GATEWAY_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<Url>,
    /// Runtime worker threads (default: one per core).
    #[arg(long, env = "AGUI_GATEWAY_WORKERS", value_parser = at_least_one)]
    pub workers: Option<usize>,
    #[command(flatten)]
    pub edge: EdgeArgs,
    #[command(flatten)]
    pub identity: super::identity_flags::IdentityArgs,
    #[command(flatten)]
    pub log: LogArgs,
}

/// How the log is written (standard error).
#[derive(Debug, Clone, Copy, Args)]
pub struct LogArgs {
    /// `text` (colours only on a terminal) or `json` (one object per line); the level is AGUI_GATEWAY_LOG.
    #[arg(long, env = "AGUI_GATEWAY_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The edge: limits, trusted proxies, authentication (docs/security.md).
#[derive(Debug, Clone, Args)]
pub struct EdgeArgs {
    /// A second address for /healthz, /readyz and /metrics (then not on --listen).
    #[arg(long, env = "AGUI_GATEWAY_ADMIN_LISTEN")]
    pub admin_listen: Option<SocketAddr>,
    /// Serve HTTPS on --listen with this certificate chain (PEM, leaf first); HTTP/2 and HTTP/1.1 by ALPN; reloaded when the file changes.
    #[arg(long, env = "AGUI_GATEWAY_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, RSA or EC).
    #[arg(long, env = "AGUI_GATEWAY_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// This gateway's id in Via headers (default: random per process).
    #[arg(long, env = "AGUI_GATEWAY_ID")]
    pub gateway_id: Option<String>,
    /// Comma-separated addresses or CIDRs whose X-Forwarded-* count [default: loopback].
    #[arg(long, env = "AGUI_GATEWAY_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Option<Vec<ipnet::IpNet>>,
    /// Client connections open at once [default: 8192].
    #[arg(long, env = "AGUI_GATEWAY_MAX_CONNECTIONS", value_parser = at_least_one)]
    pub max_connections: Option<usize>,
    /// Seconds to receive a request head (also the keep-alive idle limit) [default: 10].
    #[arg(long, env = "AGUI_GATEWAY_HEADER_READ_TIMEOUT_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout_secs: Option<u64>,
    /// Seconds to receive a request body [default: 30].
    #[arg(long, env = "AGUI_GATEWAY_REQUEST_BODY_TIMEOUT_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub request_body_timeout_secs: Option<u64>,
    /// Seconds a write to a client may stay blocked [default: 60].
    #[arg(long, env = "AGUI_GATEWAY_WRITE_TIMEOUT_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub write_timeout_secs: Option<u64>,
    /// For the --upstream agent: which client headers go upstream [default: authorization,*] (with --config: forward_client_headers per agent).
    #[arg(
        long,
        env = "AGUI_GATEWAY_FORWARD_CLIENT_HEADERS",
        value_delimiter = ',',
        conflicts_with = "config"
    )]
    pub forward_client_headers: Option<Vec<String>>,
    /// A file of API keys, `NAME:KEY` or `NAME:sha256:HEX` per line.
    #[arg(long, env = "AGUI_GATEWAY_API_KEYS_FILE")]
    pub api_keys_file: Option<PathBuf>,
    /// Verify JWT bearer tokens against this JWKS URL.
    #[arg(long, env = "AGUI_GATEWAY_JWKS_URL")]
    pub jwks_url: Option<Url>,
    /// The JWT issuer (`iss`) to require.
    #[arg(long, env = "AGUI_GATEWAY_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// The JWT audience (`aud`) to require.
    #[arg(long, env = "AGUI_GATEWAY_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Requests per second per caller (API key, JWT subject, else address).
    #[arg(long, env = "AGUI_GATEWAY_RATE_LIMIT_PER_SECOND", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_per_second: Option<u32>,
    /// Requests a caller may make at once before the rate applies [default: the rate].
    #[arg(long, env = "AGUI_GATEWAY_RATE_LIMIT_BURST", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_burst: Option<u32>,
    #[command(flatten)]
    pub cors: CorsArgs,
}

/// Browser access (docs/security.md, docs/guides/browser.md).
#[derive(Debug, Clone, Args)]
pub struct CorsArgs {
    /// Origins whose pages may call the gateway, comma-separated: `https://app.example.com`, `https://*.example.com`, `http://localhost:*` or `*` (replaces [cors] allow_origins).
    #[arg(long, env = "AGUI_GATEWAY_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origin: Option<Vec<String>>,
    /// Let those pages send cookies and HTTP authentication (`credentials: 'include'`); not with `*`.
    #[arg(long, env = "AGUI_GATEWAY_CORS_CREDENTIALS")]
    pub cors_credentials: bool,
}

impl CorsArgs {
    /// The flags over `cors` (the file's, or the demo's default).
    pub fn apply(self, cors: &mut CorsConfig) -> Result<(), FlagError> {
        if let Some(origins) = self.cors_origin {
            cors.origins = origins
                .iter()
                .map(|origin| {
                    OriginRule::parse(origin.trim())
                        .map_err(|why| invalid!("--cors-origin {origin:?}: {why}"))
                })
                .collect::<Result<_, FlagError>>()?;
        }
        if self.cors_credentials {
            cors.allow_credentials = true;
        }
        cors.check()
            .map_err(|why| invalid!("--cors-credentials: {why}"))
    }
}

/// The environment variable whose API keys count when it is set.
const API_KEYS_ENV: &str = "AGUI_GATEWAY_API_KEYS";

impl ServeArgs {
    /// The configuration these flags describe: a file's (`--config`), one
    /// agent's (`--upstream`) or the environment's, then every flag given
    /// over it.
    pub fn into_config(self) -> Result<Config, FlagError> {
        let args = self;
        let listen = args.listen.unwrap_or(Config::default().listen);
        let mut config = match (&args.config, &args.upstream) {
            (Some(path), _) => Config::load(&path.display().to_string())?,
            (None, Some(upstream)) => {
                if crate::config::Environment::of_process().sets_keys() {
                    tracing::warn!(
                        "AGUI_GATEWAY__… variables are set but --upstream takes none: they configure --config files and configurations from the environment"
                    );
                }
                // `localhost:9999` parses as a URL of scheme "localhost".
                if !matches!(upstream.scheme(), "http" | "https" | "grpc" | "grpcs")
                    || upstream.host_str().is_none()
                {
                    bail!(
                        "--upstream {upstream}: an upstream is an http://, https://, grpc:// or grpcs:// URL (e.g. http://localhost:9999/)"
                    );
                }
                let name = args
                    .format
                    .clone()
                    .or_else(|| std::env::var("AGUI_GATEWAY_OUTPUT").ok())
                    .unwrap_or_else(|| OutputFormat::Agui.as_str().to_owned());
                let Some(format) = OutputFormat::parse(&name) else {
                    bail!("--format {name:?}: expected agui or hector");
                };
                if !crate::config::is_agent_name(&args.name) {
                    bail!(
                        "--name {:?}: a name is letters, digits, '.', '_' and '-'",
                        args.name
                    );
                }
                let mut agent = AgentConfig::new(args.name.clone(), upstream.clone());
                agent.format = format;
                agent.cancel_on_disconnect = args.cancel_on_disconnect;
                agent.tls = crate::config::UpstreamTls {
                    ca_file: args.upstream_ca_file.clone(),
                    client_cert: args.upstream_client_cert.clone(),
                    client_key: args.upstream_client_key.clone(),
                };
                // Checked as the file's keys are, before anything starts.
                agent
                    .tls
                    .read(std::time::SystemTime::now())
                    .map_err(|err| invalid!("--upstream TLS: {err}"))?;
                if let Some(secs) = args.idle_timeout_secs {
                    agent.idle_timeout = Duration::from_secs(secs);
                }
                Config::single(listen, agent)
            }
            // Kubernetes and the like: the whole configuration in variables.
            (None, None) => match Config::from_environment() {
                Some(config) => config?,
                None => bail!(
                    "nothing to front: give --upstream URL, --config FILE or AGUI_GATEWAY__AGENTS__<NAME>__UPSTREAM (or try `agui-gateway demo`)"
                ),
            },
        };
        if let Some(address) = args.listen {
            config.listen = address;
        }
        if let Some(secs) = args.keepalive_secs {
            config.keepalive = Duration::from_secs(secs);
        }
        if let Some(secs) = args.drain_delay_secs {
            config.drain_delay = Duration::from_secs(secs);
        }
        if let Some(secs) = args.shutdown_grace_secs {
            config.shutdown_grace = Duration::from_secs(secs);
        }
        if let Some(bytes) = args.max_event_bytes {
            config.limits.max_event_bytes = bytes;
        }
        if let Some(streams) = args.max_streams {
            config.limits.max_streams = streams;
        }
        if let Some(tokens) = args.token_budget {
            config.limits.token_budget = tokens;
        }
        if let Some(secs) = args.token_budget_window_secs {
            config.limits.token_budget_window = Duration::from_secs(secs);
        }
        if args.public_url.is_some() {
            config.public_url = args.public_url;
        }
        if args.inspector {
            config.inspector = true;
        }
        if let Some(path) = &args.copilotkit_path {
            config.copilotkit_path = path.clone();
        }
        // The flag, then the file, then OpenTelemetry's own variable.
        let otlp = args.otlp_endpoint.clone().or_else(|| {
            if config.otlp_endpoint.is_some() {
                return None;
            }
            let standard = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok()?;
            let parsed = Url::parse(&standard).ok();
            if parsed.is_none() {
                tracing::warn!("OTEL_EXPORTER_OTLP_ENDPOINT is not a URL: no spans are exported");
            }
            parsed
        });
        if let Some(url) = otlp {
            if !matches!(url.scheme(), "http" | "https") {
                bail!("--otlp-endpoint: an OTLP/HTTP collector is an http:// or https:// URL");
            }
            config.otlp_endpoint = Some(url);
        }
        if let Some(name) = &args.journal {
            config.journal.backend =
                crate::config::Backend::parse(name).map_err(|why| invalid!("--journal: {why}"))?;
        }
        if let Some(secs) = args.detach_grace_secs {
            config.journal.detach_grace = Duration::from_secs(secs);
        }
        let access = &mut config.journal.access;
        for (flag, value) in [
            (&mut access.ca_file, &args.journal_ca_file),
            (&mut access.client_cert, &args.journal_client_cert),
            (&mut access.client_key, &args.journal_client_key),
            (&mut access.password_file, &args.journal_password_file),
        ] {
            if value.is_some() {
                flag.clone_from(value);
            }
        }
        let tls_given = args.journal_ca_file.is_some() || args.journal_client_cert.is_some();
        let rediss = matches!(&config.journal.backend,
            crate::config::Backend::Redis(nodes) if nodes.is_tls());
        if tls_given && !rediss {
            bail!(
                "--journal-ca-file, --journal-client-cert: the journal is not a rediss:// URL (TLS)"
            );
        }
        if tls_given || args.journal_password_file.is_some() {
            super::journal_access::read(&config.journal.access, std::time::SystemTime::now())
                .map_err(|why| {
                    // The file's key, as the flag that named it.
                    let why = why.to_string();
                    let flag = [
                        ("ca_file", "--journal-ca-file"),
                        ("client_cert", "--journal-client-cert"),
                        ("client_key", "--journal-client-key"),
                        ("journal_password_file", "--journal-password-file"),
                    ]
                    .into_iter()
                    .find(|(key, _)| why.starts_with(key))
                    .map_or("--journal", |(_, flag)| flag);
                    invalid!("{flag}: {why}")
                })?;
        }
        args.edge.apply(&mut config)?;
        args.identity
            .apply(&mut config)
            .map_err(FlagError::Invalid)?;
        Ok(config)
    }
}

impl EdgeArgs {
    fn apply(self, config: &mut Config) -> Result<(), FlagError> {
        let edge = self;
        let limits = &mut config.limits;
        if let Some(max) = edge.max_connections {
            limits.max_connections = max;
        }
        let secs = Duration::from_secs;
        if let Some(s) = edge.header_read_timeout_secs {
            limits.header_read_timeout = secs(s);
        }
        if let Some(s) = edge.request_body_timeout_secs {
            limits.request_body_timeout = secs(s);
        }
        if let Some(s) = edge.write_timeout_secs {
            limits.write_timeout = secs(s);
        }
        if edge.admin_listen.is_some() {
            config.admin_listen = edge.admin_listen;
        }
        if let (Some(cert), Some(key)) = (edge.tls_cert, edge.tls_key) {
            let tls = ServeTls {
                cert,
                key,
                names: TLS_FLAGS,
            };
            tls.load(std::time::SystemTime::now())
                .map_err(|e| invalid!("{e}"))?;
            config.tls = Some(tls);
        }
        if let Some(id) = edge.gateway_id {
            if id.is_empty() || id.contains([' ', ',', '\t']) {
                bail!("--gateway-id {id:?}: one token, no spaces or commas");
            }
            config.gateway_id = id;
        }
        if let Some(nets) = edge.trusted_proxies {
            config.trusted_proxies = TrustedProxies(nets);
        }
        if let Some(list) = edge.forward_client_headers {
            let policy = ForwardPolicy::parse(&list)
                .map_err(|e| invalid!("--forward-client-headers: {e}"))?;
            for agent in &mut config.agents {
                agent.forward = policy.clone();
            }
        }
        if let Some(file) = edge.api_keys_file {
            config.auth.api_keys_file = Some(file);
        }
        if std::env::var_os(API_KEYS_ENV).is_some_and(|v| !v.is_empty()) {
            config.auth.api_keys_env = Some(API_KEYS_ENV.to_owned());
        }
        if let Some(url) = edge.jwks_url {
            config.auth.jwt = Some(JwtConfig::for_key(JwtKey::Jwks(url)));
        }
        if let Some(jwt) = &mut config.auth.jwt {
            if edge.jwt_issuer.is_some() {
                jwt.issuer = edge.jwt_issuer;
            }
            if edge.jwt_audience.is_some() {
                jwt.audience = edge.jwt_audience;
            }
        } else if edge.jwt_issuer.is_some() || edge.jwt_audience.is_some() {
            bail!("--jwt-issuer and --jwt-audience need --jwks-url (or [auth.jwt] in the file)");
        }
        if let Some(per_second) = edge.rate_limit_per_second {
            config.rate_limit = Some(RateLimit {
                per_second,
                burst: edge.rate_limit_burst.unwrap_or(per_second),
            });
        } else if edge.rate_limit_burst.is_some() {
            bail!("--rate-limit-burst needs --rate-limit-per-second");
        }
        edge.cors.apply(&mut config.cors)
    }
}

/// `--copilotkit-path`, checked as the file's key is.
fn copilotkit_path_flag(text: &str) -> Result<Option<String>, String> {
    super::copilotkit_path(text)
}

/// A count that 0 would make useless (no stream, no worker): refused with
/// the flag's name, as the file refuses it with its line.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// The configuration `args` (the serving flags, as the binary flattens
/// them) describe, or the message that refuses them: for the flags' tests.
#[cfg(test)]
pub(super) fn from_args(args: &[&str]) -> Result<Config, String> {
    use clap::Parser;
    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        serve: ServeArgs,
    }
    let flags = Flags::try_parse_from(std::iter::once("agui-gateway").chain(args.iter().copied()))
        .map_err(|e| e.to_string())?;
    flags.serve.into_config().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Result<Config, String> {
        from_args(args)
    }

    #[test]
    fn one_agent_from_flags_starts_from_the_defaults() {
        let config = config(&["--upstream", "http://127.0.0.1:9/a/", "--name", "weather"]).unwrap();
        let defaults = Config::default();
        assert_eq!(config.listen, defaults.listen);
        assert_eq!(config.keepalive, defaults.keepalive);
        assert_eq!(config.shutdown_grace, defaults.shutdown_grace);
        assert_eq!(config.default_agent.as_deref(), Some("weather"));
        assert_eq!(config.agents[0].upstream.as_str(), "http://127.0.0.1:9/a/");
        let set = config_of_many();
        assert_eq!(set.keepalive, Duration::from_secs(7));
        assert_eq!(set.limits.max_streams, 3);
        assert_eq!(set.limits.header_read_timeout, Duration::from_secs(4));
        assert_eq!(set.drain_delay, Duration::from_secs(2));
        assert_eq!(set.agents[0].idle_timeout, Duration::from_secs(9));
        assert!(set.agents[0].cancel_on_disconnect);
        let jwt = set.auth.jwt.expect("a JWT check");
        let jwt_defaults = JwtConfig::for_key(JwtKey::Jwks(Url::parse("http://x/").unwrap()));
        assert_eq!(
            (jwt.leeway, &jwt.algorithms),
            (jwt_defaults.leeway, &jwt_defaults.algorithms)
        );
        assert_eq!(jwt.issuer.as_deref(), Some("https://issuer.test/"));
        assert_eq!(
            set.rate_limit,
            Some(RateLimit {
                per_second: 5,
                burst: 5
            })
        );
    }

    fn config_of_many() -> Config {
        config(&[
            "--upstream",
            "http://127.0.0.1:9/",
            "--keepalive-secs",
            "7",
            "--max-streams",
            "3",
            "--header-read-timeout-secs",
            "4",
            "--drain-delay-secs",
            "2",
            "--idle-timeout-secs",
            "9",
            "--cancel-on-disconnect",
            "--jwks-url",
            "http://127.0.0.1:9/jwks",
            "--jwt-issuer",
            "https://issuer.test/",
            "--rate-limit-per-second",
            "5",
        ])
        .unwrap()
    }

    #[test]
    fn zero_is_refused_with_the_flags_name() {
        for flag in [
            "--keepalive-secs",
            "--idle-timeout-secs",
            "--max-streams",
            "--max-event-bytes",
            "--max-connections",
            "--header-read-timeout-secs",
            "--request-body-timeout-secs",
            "--write-timeout-secs",
            "--rate-limit-per-second",
            "--workers",
            "--token-budget-window-secs",
        ] {
            let refused = config(&["--upstream", "http://127.0.0.1:9/", flag, "0"]).unwrap_err();
            assert!(refused.contains(flag), "{flag}: {refused}");
        }
        // Where 0 means something, it is taken.
        let config = config(&[
            "--upstream",
            "http://127.0.0.1:9/",
            "--shutdown-grace-secs",
            "0",
        ])
        .unwrap();
        assert_eq!(config.shutdown_grace, Duration::ZERO);
        let budget = |tokens: &str| {
            from_args(&["--upstream", "http://a/", "--token-budget", tokens])
                .map(|config| config.limits.token_budget)
        };
        assert_eq!((budget("0"), budget("50")), (Ok(0), Ok(50)));
        assert!(budget("lots").unwrap_err().contains("--token-budget"));
    }

    #[test]
    fn flags_that_need_another_say_which() {
        let cases = [
            (&["--upstream", "localhost:9999"][..], "--upstream"),
            (
                &["--upstream", "http://a/", "--format", "xml"][..],
                "--format",
            ),
            (&["--upstream", "http://a/", "--name", "a/b"][..], "--name"),
            (
                &["--upstream", "http://a/", "--jwt-issuer", "x"][..],
                "--jwt-issuer",
            ),
            (
                &["--upstream", "http://a/", "--rate-limit-burst", "3"][..],
                "--rate-limit-burst",
            ),
            (
                &["--upstream", "http://a/", "--gateway-id", "a b"][..],
                "--gateway-id",
            ),
            (
                &["--upstream", "http://a/", "--cors-origin", "null"][..],
                "--cors-origin",
            ),
            (
                &["--upstream", "http://a/", "--journal", "mysql://x"][..],
                "--journal",
            ),
        ];
        for (args, flag) in cases {
            let refused = config(args).unwrap_err();
            assert!(refused.contains(flag), "{args:?}: {refused}");
        }
    }
}

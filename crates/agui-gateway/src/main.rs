//! `agui-gateway`: the binary edge. Parses the command line and hands off.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use a2a_agui::{Options, OutputFormat, convert_recording};
use agui_gateway::logging::{LogFormat as Log, announce};
use agui_gateway::{demo, routes, server};
use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use url::Url;

use agui_gateway::config::{
    AgentConfig, Backend, Config, CorsConfig, JwtConfig, JwtKey, OriginRule, RateLimit,
};
use agui_gateway::forwarding::{ForwardPolicy, TrustedProxies};
use agui_gateway::journal::redis::RedisJournal;
use agui_gateway::server::ConnectionLimits;
use agui_gateway::state::{AppState, Shutdown};

#[derive(Debug, Parser)]
#[command(
    name = "agui-gateway",
    version,
    about = "Re-streams A2A agents as AG-UI events over SSE",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The A2A agent to front (one agent; use --config for several).
    #[arg(long, env = "AGUI_GATEWAY_UPSTREAM")]
    upstream: Option<Url>,
    /// The name of the --upstream agent, for /v1/agents/{name}/… (with --config: the file's [agents.NAME]).
    #[arg(
        long,
        env = "AGUI_GATEWAY_NAME",
        default_value = "default",
        conflicts_with = "config"
    )]
    name: String,
    /// Address to listen on [default: 127.0.0.1:8080; wins over the file's listen].
    #[arg(long, env = "AGUI_GATEWAY_LISTEN")]
    listen: Option<SocketAddr>,
    /// A TOML file with several agents, limits and CORS (see README).
    #[arg(long, env = "AGUI_GATEWAY_CONFIG", conflicts_with = "upstream")]
    config: Option<PathBuf>,
    /// Output format of the --upstream agent: agui or hector [default: agui]
    /// (`AGUI_GATEWAY_OUTPUT`, the older name, counts when this is unset).
    #[arg(
        long,
        visible_alias = "output",
        env = "AGUI_GATEWAY_FORMAT",
        conflicts_with = "config"
    )]
    format: Option<String>,
    /// Seconds without an event before a `: ping` comment is sent.
    #[arg(long, env = "AGUI_GATEWAY_KEEPALIVE_SECS")]
    keepalive_secs: Option<u64>,
    /// Seconds the --upstream agent may stay silent before the run fails (with --config: idle_timeout_secs per agent).
    #[arg(
        long,
        env = "AGUI_GATEWAY_IDLE_TIMEOUT_SECS",
        conflicts_with = "config"
    )]
    idle_timeout_secs: Option<u64>,
    /// Seconds open streams may run on after SIGTERM.
    #[arg(long, env = "AGUI_GATEWAY_SHUTDOWN_GRACE_SECS")]
    shutdown_grace_secs: Option<u64>,
    /// Seconds requests are still taken after SIGTERM (while load balancers drop the pod); default 0.
    #[arg(long, env = "AGUI_GATEWAY_DRAIN_DELAY_SECS")]
    drain_delay_secs: Option<u64>,
    /// The largest upstream event accepted, in bytes.
    #[arg(long, env = "AGUI_GATEWAY_MAX_EVENT_BYTES")]
    max_event_bytes: Option<usize>,
    /// Send an A2A cancel when an AG-UI client disconnects mid-run (with --config: cancel_on_disconnect per agent).
    #[arg(
        long,
        env = "AGUI_GATEWAY_CANCEL_ON_DISCONNECT",
        conflicts_with = "config"
    )]
    cancel_on_disconnect: bool,
    /// The gateway's public URL, for agent card links (default: from the request).
    #[arg(long, env = "AGUI_GATEWAY_PUBLIC_URL")]
    public_url: Option<Url>,
    /// Converted streams open at once; past it, new ones get a 503.
    #[arg(long, env = "AGUI_GATEWAY_MAX_STREAMS")]
    max_streams: Option<usize>,
    /// Where converted runs are journaled for reconnects: memory, off or redis://HOST[:PORT][/DB] [default: memory].
    #[arg(long, env = "AGUI_GATEWAY_JOURNAL")]
    journal: Option<String>,
    /// Seconds a run goes on after its client went away, for a reconnect [default: 60].
    #[arg(long, env = "AGUI_GATEWAY_DETACH_GRACE_SECS")]
    detach_grace_secs: Option<u64>,
    /// Serve the inspector page at /inspect (a run's A2A and AG-UI events side by side).
    #[arg(long, env = "AGUI_GATEWAY_INSPECTOR")]
    inspector: bool,
    /// Export OpenTelemetry spans to this OTLP/HTTP collector: its base URL (`/v1/traces` is added) [default: OTEL_EXPORTER_OTLP_ENDPOINT].
    #[arg(long, env = "AGUI_GATEWAY_OTLP_ENDPOINT")]
    otlp_endpoint: Option<Url>,
    /// Runtime worker threads (default: one per core).
    #[arg(long, env = "AGUI_GATEWAY_WORKERS")]
    workers: Option<usize>,
    #[command(flatten)]
    edge: EdgeArgs,
    #[command(flatten)]
    log: LogArgs,
}

/// How the log is written (standard error).
#[derive(Debug, Clone, Copy, Args)]
struct LogArgs {
    /// `text` (colours only on a terminal) or `json` (one object per line); the level is AGUI_GATEWAY_LOG.
    #[arg(long, env = "AGUI_GATEWAY_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// The edge: limits, trusted proxies, authentication (README, Security).
#[derive(Debug, Args)]
struct EdgeArgs {
    /// A second address for /healthz, /readyz and /metrics (then not on --listen).
    #[arg(long, env = "AGUI_GATEWAY_ADMIN_LISTEN")]
    admin_listen: Option<SocketAddr>,
    /// This gateway's id in Via headers (default: random per process).
    #[arg(long, env = "AGUI_GATEWAY_ID")]
    gateway_id: Option<String>,
    /// Comma-separated addresses or CIDRs whose X-Forwarded-* count [default: loopback].
    #[arg(long, env = "AGUI_GATEWAY_TRUSTED_PROXIES", value_delimiter = ',')]
    trusted_proxies: Option<Vec<ipnet::IpNet>>,
    /// Client connections open at once [default: 8192].
    #[arg(long, env = "AGUI_GATEWAY_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Seconds to receive a request head (also the keep-alive idle limit) [default: 10].
    #[arg(long, env = "AGUI_GATEWAY_HEADER_READ_TIMEOUT_SECS")]
    header_read_timeout_secs: Option<u64>,
    /// Seconds to receive a request body [default: 30].
    #[arg(long, env = "AGUI_GATEWAY_REQUEST_BODY_TIMEOUT_SECS")]
    request_body_timeout_secs: Option<u64>,
    /// Seconds a write to a client may stay blocked [default: 60].
    #[arg(long, env = "AGUI_GATEWAY_WRITE_TIMEOUT_SECS")]
    write_timeout_secs: Option<u64>,
    /// For the --upstream agent: which client headers go upstream [default: authorization,*] (with --config: forward_client_headers per agent).
    #[arg(
        long,
        env = "AGUI_GATEWAY_FORWARD_CLIENT_HEADERS",
        value_delimiter = ',',
        conflicts_with = "config"
    )]
    forward_client_headers: Option<Vec<String>>,
    /// A file of API keys, `NAME:KEY` or `NAME:sha256:HEX` per line.
    #[arg(long, env = "AGUI_GATEWAY_API_KEYS_FILE")]
    api_keys_file: Option<PathBuf>,
    /// Verify JWT bearer tokens against this JWKS URL.
    #[arg(long, env = "AGUI_GATEWAY_JWKS_URL")]
    jwks_url: Option<Url>,
    /// The JWT issuer (`iss`) to require.
    #[arg(long, env = "AGUI_GATEWAY_JWT_ISSUER")]
    jwt_issuer: Option<String>,
    /// The JWT audience (`aud`) to require.
    #[arg(long, env = "AGUI_GATEWAY_JWT_AUDIENCE")]
    jwt_audience: Option<String>,
    /// Requests per second per caller (API key, JWT subject, else address).
    #[arg(long, env = "AGUI_GATEWAY_RATE_LIMIT_PER_SECOND")]
    rate_limit_per_second: Option<u32>,
    /// Requests a caller may make at once before the rate applies [default: the rate].
    #[arg(long, env = "AGUI_GATEWAY_RATE_LIMIT_BURST")]
    rate_limit_burst: Option<u32>,
    #[command(flatten)]
    cors: CorsArgs,
}

/// Browser access (README, "Use from the browser").
#[derive(Debug, Args)]
struct CorsArgs {
    /// Origins whose pages may call the gateway, comma-separated: `https://app.example.com`, `https://*.example.com`, `http://localhost:*` or `*` (replaces [cors] allow_origins).
    #[arg(long, env = "AGUI_GATEWAY_CORS_ORIGINS", value_delimiter = ',')]
    cors_origin: Option<Vec<String>>,
    /// Let those pages send cookies and HTTP authentication (`credentials: 'include'`); not with `*`.
    #[arg(long, env = "AGUI_GATEWAY_CORS_CREDENTIALS")]
    cors_credentials: bool,
}

impl CorsArgs {
    fn apply(self, cors: &mut CorsConfig) -> anyhow::Result<()> {
        if let Some(origins) = self.cors_origin {
            cors.origins = origins
                .iter()
                .map(|origin| {
                    OriginRule::parse(origin.trim())
                        .map_err(|why| anyhow::anyhow!("--cors-origin {origin:?}: {why}"))
                })
                .collect::<anyhow::Result<_>>()?;
        }
        if self.cors_credentials {
            cors.allow_credentials = true;
        }
        cors.check()
            .map_err(|why| anyhow::anyhow!("--cors-credentials: {why}"))
    }
}

/// What `demo` lets call it unless told otherwise: pages served from this
/// machine (a dev server on any port).
const DEMO_CORS_ORIGINS: &[&str] = &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// The environment variable whose API keys count when it is set.
const API_KEYS_ENV: &str = "AGUI_GATEWAY_API_KEYS";

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway in front of a built-in demo A2A agent.
    Demo {
        /// Address to listen on.
        #[arg(long, env = "AGUI_GATEWAY_LISTEN", default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Milliseconds between the demo agent's events.
        #[arg(long, default_value_t = 150)]
        delay_ms: u64,
        #[command(flatten)]
        cors: CorsArgs,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Convert a recorded upstream A2A body (SSE capture, JSON Lines or one
    /// JSON document) into the AG-UI SSE body the gateway would send.
    Convert {
        /// Output format: `agui` (official AG-UI) or `hector` (the seed's named events).
        #[arg(long, visible_alias = "dialect", default_value = "agui")]
        format: String,
        /// RUN_STARTED.threadId (default: the first item's contextId).
        #[arg(long)]
        thread_id: Option<String>,
        /// RUN_STARTED.runId (default: the first item's taskId).
        #[arg(long)]
        run_id: Option<String>,
        /// End input-required runs with an AG-UI interrupt outcome.
        #[arg(long)]
        interrupts: bool,
        /// The recording; `-` or nothing reads standard input.
        file: Option<PathBuf>,
    },
    /// Check a configuration file; errors name their line.
    CheckConfig { file: PathBuf },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Convert {
            format,
            thread_id,
            run_id,
            interrupts,
            file,
        }) => convert(&format, thread_id, run_id, interrupts, file.as_deref()),
        Some(Command::CheckConfig { file }) => {
            let path = file.display().to_string();
            let config = Config::load(&path)?;
            println!(
                "{path}: ok ({} agents, listen {})",
                config.agents.len(),
                config.listen
            );
            Ok(())
        }
        Some(Command::Demo {
            listen,
            delay_ms,
            cors,
            log,
        }) => {
            let log = log.log_format.into();
            logged(log, || {
                runtime(None)?.block_on(demo(listen, delay_ms, cors, log))
            })
        }
        None => {
            let workers = cli.serve.workers;
            let log = cli.serve.log.log_format.into();
            logged(log, || {
                let config = serve_config(cli.serve)?;
                runtime(workers)?.block_on(serve(config, None, log))
            })
        }
    }
}

/// Runs a serving command with the log installed. Under the JSON log, a
/// failure to start and a panic are log objects too (anyhow's `Error: …`
/// and the panic message would be the only plain lines); the exit status
/// stays non-zero.
fn logged(log: Log, run: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<()> {
    agui_gateway::logging::init(log);
    if log == Log::Text {
        return run();
    }
    std::panic::set_hook(Box::new(
        |info| tracing::error!(panic = %info, "the gateway panicked"),
    ));
    if let Err(err) = run() {
        tracing::error!(error = format!("{err:#}"), "the gateway stopped");
        std::process::exit(1);
    }
    Ok(())
}

fn runtime(workers: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers.max(1));
    }
    builder
        .enable_all()
        .build()
        .context("gateway could not start its runtime")
}

impl From<LogFormat> for agui_gateway::logging::LogFormat {
    fn from(format: LogFormat) -> Self {
        match format {
            LogFormat::Text => agui_gateway::logging::LogFormat::Text,
            LogFormat::Json => agui_gateway::logging::LogFormat::Json,
        }
    }
}

fn serve_config(args: ServeArgs) -> anyhow::Result<Config> {
    let listen = args
        .listen
        .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8080)));
    let mut config = match (&args.config, &args.upstream) {
        (Some(path), _) => Config::load(&path.display().to_string())?,
        (None, Some(upstream)) => {
            if agui_gateway::config::Environment::of_process().sets_keys() {
                tracing::warn!(
                    "AGUI_GATEWAY__… variables are set but --upstream takes none: they configure --config files and configurations from the environment"
                );
            }
            // `localhost:9999` parses as a URL of scheme "localhost".
            if !matches!(upstream.scheme(), "http" | "https") || upstream.host_str().is_none() {
                bail!(
                    "--upstream {upstream}: an upstream is an http:// or https:// URL (e.g. http://localhost:9999/)"
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
            if !agui_gateway::config::is_agent_name(&args.name) {
                bail!(
                    "--name {:?}: a name is letters, digits, '.', '_' and '-'",
                    args.name
                );
            }
            let mut agent = AgentConfig::new(args.name.clone(), upstream.clone());
            agent.format = format;
            agent.cancel_on_disconnect = args.cancel_on_disconnect;
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
        config.keepalive = Duration::from_secs(secs.max(1));
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
        config.limits.max_streams = streams.max(1);
    }
    if args.public_url.is_some() {
        config.public_url = args.public_url;
    }
    if args.inspector {
        config.inspector = true;
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
        config.journal.backend = agui_gateway::config::Backend::parse(name)
            .map_err(|why| anyhow::anyhow!("--journal: {why}"))?;
    }
    if let Some(secs) = args.detach_grace_secs {
        config.journal.detach_grace = Duration::from_secs(secs);
    }
    apply_edge(&mut config, args.edge)?;
    Ok(config)
}

fn apply_edge(config: &mut Config, edge: EdgeArgs) -> anyhow::Result<()> {
    let limits = &mut config.limits;
    if let Some(max) = edge.max_connections {
        limits.max_connections = max.max(1);
    }
    let secs = |s: u64| Duration::from_secs(s.max(1));
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
            .map_err(|e| anyhow::anyhow!("--forward-client-headers: {e}"))?;
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
        config.auth.jwt = Some(JwtConfig {
            key: JwtKey::Jwks(url),
            issuer: None,
            audience: None,
            leeway: Duration::from_secs(30),
            algorithms: ["RS256", "ES256", "EdDSA"].map(str::to_owned).to_vec(),
        });
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
            per_second: per_second.max(1),
            burst: edge.rate_limit_burst.unwrap_or(per_second).max(1),
        });
    } else if edge.rate_limit_burst.is_some() {
        bail!("--rate-limit-burst needs --rate-limit-per-second");
    }
    edge.cors.apply(&mut config.cors)
}

/// Serves until SIGTERM or Ctrl-C: then stops accepting, lets open streams
/// run for the grace period, ends the rest with RUN_ERROR and exits.
async fn serve(config: Config, banner: Option<String>, log: Log) -> anyhow::Result<()> {
    let shutdown = Shutdown::default();
    let timing = Drain {
        grace: config.shutdown_grace,
        delay: config.drain_delay,
    };
    let listen = config.listen;
    let admin_listen = config.admin_listen;
    let limits = ConnectionLimits {
        max_connections: config.limits.max_connections,
        header_read_timeout: config.limits.header_read_timeout,
        write_timeout: config.limits.write_timeout,
    };
    warn_if_files_run_short(limits.max_connections);
    let tracing_provider = match &config.otlp_endpoint {
        Some(url) => Some(agui_gateway::telemetry::init(url)?),
        None => None,
    };
    let mut state = AppState::new(config, shutdown.clone())?;
    if let Backend::Redis(url) = &state.config.journal.backend {
        let journal = RedisJournal::connect(
            url,
            state.config.gateway_id.clone(),
            &state.config.journal.limits,
        )
        .await
        .map_err(|err| anyhow::anyhow!("journal {}: {err}", redacted(url)))?;
        state.shared = Some(Arc::new(journal));
    }
    let state = Arc::new(state);
    for agent in state.agents.values() {
        agent.spawn_card_refresh(shutdown.stop.clone());
    }
    if state.auth.is_some() {
        // In the background: an identity provider that is slow to answer
        // must not hold the listener closed.
        let state = state.clone();
        tokio::spawn(async move {
            if let Some(auth) = &state.auth {
                auth.warm_up().await;
            }
        });
    }
    if let Some(limiter) = &state.rate_limit {
        limiter.spawn_cleanup(shutdown.stop.clone());
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("gateway cannot listen on {listen}"))?;
    let local = listener
        .local_addr()
        .context("gateway has no local address")?;
    let admin = match admin_listen {
        Some(address) => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("gateway cannot listen on {address} (admin)"))?,
        ),
        None => None,
    };
    // Tests and scripts wait for this line ("listening on http://…").
    announce(log, &format!("agui-gateway listening on http://{local}"));
    if let Some(admin) = &admin
        && let Ok(address) = admin.local_addr()
    {
        announce(
            log,
            &format!("agui-gateway admin (health, readiness, metrics) on http://{address}"),
        );
    }
    if let Some(banner) = banner {
        announce(log, &banner);
    }
    let _ = std::io::stdout().flush();
    let idle = {
        let state = state.clone();
        move || state.is_idle()
    };
    tokio::spawn(watch_signals(shutdown.clone(), timing, idle));
    if let Some(admin) = admin {
        // Probes must answer while the main listener is full: a cap of its own.
        let admin_limits = ConnectionLimits {
            max_connections: 256,
            ..limits
        };
        let app = routes::admin_router(state.clone());
        let metrics = state.metrics.clone();
        let stop = shutdown.stop.clone();
        tokio::spawn(server::serve(admin, app, admin_limits, metrics, stop));
    }
    let app = routes::router(state.clone());
    // The listener stays open through the drain: load balancers see
    // `/readyz` turn 503 and new requests a 503 GATEWAY_DRAINING (with
    // `Connection: close`) while open streams finish; it closes at `stop`.
    let server = server::serve(
        listener,
        app,
        limits,
        state.metrics.clone(),
        shutdown.stop.clone(),
    );
    let stop = shutdown.stop.clone();
    tokio::select! {
        () = server => {}
        // Streams end at `stop`; give their last frames a moment, then go.
        _ = async { stop.cancelled().await; tokio::time::sleep(Duration::from_secs(5)).await } => {
            tracing::warn!("connections still open after the grace period; exiting");
        }
    }
    if let Some(provider) = tracing_provider {
        // The last spans: flushed off the runtime's threads, bounded.
        let flush = tokio::task::spawn_blocking(move || provider.shutdown());
        let _ = tokio::time::timeout(Duration::from_secs(5), flush).await;
    }
    tracing::info!("gateway stopped");
    Ok(())
}

/// Each connection may need an upstream socket too: a cap the open-file
/// limit cannot honour fails as accept errors instead of clean 503s.
fn warn_if_files_run_short(max_connections: usize) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(soft) = soft
        && 2 * max_connections + 256 > soft
    {
        tracing::warn!(
            open_file_limit = soft,
            max_connections,
            "max_connections is high for the open-file limit: raise the limit (ulimit -n) or lower max_connections below half of it"
        );
    }
}

/// How a SIGTERM or Ctrl-C ends the gateway.
#[derive(Debug, Clone, Copy)]
struct Drain {
    /// Open streams may run on this long (`shutdown_grace_secs`).
    grace: Duration,
    /// Requests are still served (while `/readyz` says 503) this long
    /// (`drain_delay_secs`).
    delay: Duration,
}

/// On the first signal: unready at once (`/readyz` 503, requests still
/// served), draining after `delay` (no new requests), then stop as soon as
/// nothing is in flight or when `grace` is over, whichever comes first. A
/// second Ctrl-C exits at once.
async fn watch_signals(shutdown: Shutdown, drain: Drain, idle: impl Fn() -> bool) {
    wait_for_signal().await;
    let signalled = tokio::time::Instant::now();
    tracing::info!(
        grace_secs = drain.grace.as_secs(),
        drain_delay_secs = drain.delay.as_secs(),
        "shutting down: no new requests, open streams may finish"
    );
    shutdown.unready.cancel();
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            tracing::warn!("interrupted again: exiting now");
            std::process::exit(130);
        }
    });
    tokio::time::sleep(drain.delay).await;
    shutdown.draining.cancel();
    let deadline = signalled + drain.grace.max(drain.delay);
    // Checked every 50 ms: a stream's end needs no signal of its own, and
    // a drain is not a hot path.
    loop {
        if idle() {
            tracing::info!("no stream open: stopping");
            break;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            tracing::info!("grace period over: ending open streams");
            break;
        }
        tokio::time::sleep((deadline - now).min(Duration::from_millis(50))).await;
    }
    shutdown.stop.cancel();
}

async fn wait_for_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut term) => {
                    term.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term => {}
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}

/// A Redis URL without its password, for messages.
fn redacted(url: &url::Url) -> String {
    let mut url = url.clone();
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    url.to_string()
}

async fn demo(listen: SocketAddr, delay_ms: u64, cors: CorsArgs, log: Log) -> anyhow::Result<()> {
    let mut config_cors = CorsConfig {
        origins: DEMO_CORS_ORIGINS
            .iter()
            .filter_map(|origin| OriginRule::parse(origin).ok())
            .collect(),
        ..CorsConfig::default()
    };
    cors.apply(&mut config_cors)?;
    let agent_addr = demo::start_agent(Duration::from_millis(delay_ms))
        .await
        .context("the demo agent could not start")?;
    let upstream = Url::parse(&format!("http://{agent_addr}/")).context("demo agent address")?;
    let agent = AgentConfig::new("assistant", upstream);
    let mut config = Config::single(listen, agent);
    config.inspector = true;
    let pages = describe_origins(&config_cors);
    config.cors = config_cors;
    let base = format!("http://{listen}");
    let banner = format!(
        "demo A2A agent (0.3 JSON-RPC) on http://{agent_addr}/, fronted as agent \"assistant\"\n\
         try:\n  \
         curl -N -H 'Accept: application/x-agui-events' -X POST {base}/v1/agents/assistant/stream -d '{{\"request\": {{\"role\": \"user\", \"parts\": [{{\"text\": \"Hello\"}}]}}}}'\n  \
         curl -N -X POST '{base}/v1/agents/assistant/stream?format=hector' -d '{{\"request\": {{\"role\": \"user\", \"parts\": [{{\"text\": \"Hello\"}}]}}}}'\n  \
         curl -N -X POST {base}/agui -H 'Content-Type: application/json' -d '{{\"threadId\": \"t1\", \"runId\": \"r1\", \"messages\": [{{\"id\": \"u1\", \"role\": \"user\", \"content\": \"Weather in Tokyo?\"}}]}}'\n  \
         curl -s {base}/.well-known/agent-card.json\n\
         the inspector: {base}/inspect\n\
         browser pages may call it from: {pages} (--cors-origin to change)\n\
         stop with Ctrl-C"
    );
    serve(config, Some(banner), log).await
}

/// The allowed origins, for the banner.
fn describe_origins(cors: &CorsConfig) -> String {
    if !cors.is_on() {
        return "no origin".to_owned();
    }
    cors.origins
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn convert(
    format: &str,
    thread_id: Option<String>,
    run_id: Option<String>,
    interrupts: bool,
    file: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let Some(format) = OutputFormat::parse(format) else {
        bail!("unknown format {format:?}: expected agui or hector");
    };
    let input = read_input(file)?;
    let options = Options {
        thread_id,
        run_id,
        interrupts,
        ..Options::default()
    };
    let body =
        convert_recording(&input, options, format).context("gateway failed to encode an event")?;
    std::io::stdout().lock().write_all(&body)?;
    Ok(())
}

fn read_input(file: Option<&std::path::Path>) -> anyhow::Result<Vec<u8>> {
    match file {
        Some(path) if path.as_os_str() != "-" => {
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
        }
        _ => {
            let mut input = Vec::new();
            std::io::stdin()
                .read_to_end(&mut input)
                .context("cannot read standard input")?;
            Ok(input)
        }
    }
}

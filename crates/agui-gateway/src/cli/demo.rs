//! `agui-gateway demo`: the gateway in front of its built-in demo agent.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use a2a_fake_agent::{Agent, Behaviour};
use agui_edge::cors::{CorsConfig, OriginRule};
use agui_edge::tls::{ServeTls, TLS_FLAGS};
use agui_gateway::config::flags::CorsArgs;
use agui_gateway::config::{AgentConfig, Config};
use agui_gateway::obs::logging::LogFormat as Log;
use anyhow::Context;
use url::Url;

use super::serve::serve;

/// What `demo` lets call it unless told otherwise: pages served from this
/// machine (a dev server on any port).
const DEMO_CORS_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

pub async fn demo(
    listen: SocketAddr,
    delay_ms: u64,
    tls: bool,
    cors: CorsArgs,
    log: Log,
) -> anyhow::Result<()> {
    let mut config_cors = CorsConfig {
        origins: DEMO_CORS_ORIGINS
            .iter()
            .filter_map(|origin| OriginRule::parse(origin).ok())
            .collect(),
        ..CorsConfig::default()
    };
    cors.apply(&mut config_cors)?;
    let demo_agent = Behaviour::Demo {
        delay: Duration::from_millis(delay_ms),
    };
    let agent_addr = Agent::start(demo_agent, 0)
        .await
        .context("the demo agent could not start")?
        .addr;
    let upstream = Url::parse(&format!("http://{agent_addr}/")).context("demo agent address")?;
    let agent = AgentConfig::new("assistant", upstream);
    let mut config = Config::single(listen, agent);
    config.inspector = true;
    let pages = describe_origins(&config_cors);
    config.cors = config_cors;
    let mut certificate = String::new();
    let mut curl = "curl";
    let mut scheme = "http";
    let mut made_dir = None;
    if tls {
        let made = self_signed(listen)?;
        certificate = format!(
            "TLS: a self-signed certificate made for this run (HTTP/2 and HTTP/1.1 by ALPN), in {}:\n{}\n",
            made.files.cert.display(),
            made.pem.trim_end()
        );
        made_dir = made.files.cert.parent().map(Path::to_path_buf);
        config.tls = Some(made.files);
        curl = "curl --cacert \"$CERT\"";
        scheme = "https";
    }
    let cert_env = match &config.tls {
        Some(files) => format!("  CERT={}\n", files.cert.display()),
        None => String::new(),
    };
    // Written once the listener is bound: `--listen …:0` names its port.
    let banner = move |local: SocketAddr| {
        // An unspecified address is no name a client can use (nor one the
        // certificate holds): this machine's is.
        let shown = if local.ip().is_unspecified() {
            format!("localhost:{}", local.port())
        } else {
            local.to_string()
        };
        let base = format!("{scheme}://{shown}");
        format!(
            "demo A2A agent (0.3 JSON-RPC) on http://{agent_addr}/, fronted as agent \"assistant\"\n\
         {certificate}\
         try:\n{cert_env}  \
         {curl} -N -H 'Accept: application/x-agui-events' -X POST {base}/v1/agents/assistant/stream -d '{{\"request\": {{\"role\": \"user\", \"parts\": [{{\"text\": \"Hello\"}}]}}}}'\n  \
         {curl} -N -X POST '{base}/v1/agents/assistant/stream?format=hector' -d '{{\"request\": {{\"role\": \"user\", \"parts\": [{{\"text\": \"Hello\"}}]}}}}'\n  \
         {curl} -N -X POST {base}/agui -H 'Content-Type: application/json' -d '{{\"threadId\": \"t1\", \"runId\": \"r1\", \"messages\": [{{\"id\": \"u1\", \"role\": \"user\", \"content\": \"Weather in Tokyo?\"}}]}}'\n  \
         {curl} -s {base}/.well-known/agent-card.json\n\
         the inspector: {base}/inspect\n\
         browser pages may call it from: {pages} (--cors-origin to change)\n\
         stop with Ctrl-C"
        )
    };
    let served = serve(config, Some(Box::new(banner)), log, None).await;
    // The key is this run's only: it goes with it.
    if let Some(dir) = made_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    served
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

/// The demo's certificate: its files and its PEM.
struct SelfSigned {
    files: ServeTls,
    pem: String,
}

/// A certificate for this machine's names (and the listen address), valid
/// for 30 days, in a folder of its own that only this user may read.
fn self_signed(listen: SocketAddr) -> anyhow::Result<SelfSigned> {
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !listen.ip().is_unspecified() && !listen.ip().is_loopback() {
        names.push(listen.ip().to_string());
    }
    let mut params = rcgen::CertificateParams::new(names).context("certificate names")?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "agui-gateway demo");
    let now = std::time::SystemTime::now();
    params.not_before = (now - Duration::from_secs(60)).into();
    params.not_after = (now + Duration::from_secs(30 * 24 * 3600)).into();
    let key = rcgen::KeyPair::generate().context("a key for the demo certificate")?;
    let certificate = params.self_signed(&key).context("the demo certificate")?;
    // A fresh folder of this user's only (a name nobody can have made
    // before, created or refused, never followed), and files created new.
    let name = format!(
        "agui-gateway-demo-tls-{}-{:016x}",
        std::process::id(),
        agui_gateway::random::random_u64()
    );
    let dir = std::env::temp_dir().join(name);
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let files = ServeTls {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
        names: TLS_FLAGS,
    };
    let pem = certificate.pem();
    write_new(&files.cert, pem.as_bytes())?;
    write_new(&files.key, key.serialize_pem().as_bytes())?;
    Ok(SelfSigned { files, pem })
}

/// Writes a file that must not exist yet, readable by this user only.
fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

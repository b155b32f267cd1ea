//! `agui-gateway demo`: the gateway in front of its built-in demo agent.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cli::demo_agent;
use agui_gateway::config::flags::CorsArgs;
use agui_gateway::config::{AgentConfig, Config, CorsConfig, OriginRule};
use agui_gateway::obs::logging::LogFormat as Log;
use anyhow::Context;
use url::Url;

use super::serve::serve;

/// What `demo` lets call it unless told otherwise: pages served from this
/// machine (a dev server on any port).
const DEMO_CORS_ORIGINS: &[&str] = &["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

pub async fn demo(
    listen: SocketAddr,
    delay_ms: u64,
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
    let agent_addr = demo_agent::start_agent(Duration::from_millis(delay_ms))
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

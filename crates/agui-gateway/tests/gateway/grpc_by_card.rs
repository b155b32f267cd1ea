//! A gRPC-only agent configured by its HTTP URL, where its card is, as any
//! other agent is (issue 39): the gateway follows the card's GRPC
//! interface (a 1.0 card's, a 0.3-only card's) to an origin it may call,
//! and calls nothing over gRPC when that origin is not allowed. The
//! conversion matrix runs against both ways of configuring (`matrix.rs`).

use serde_json::json;

use crate::edge::write_config;
use crate::grpc_upstream::grpc_gateway_named;
use crate::support::*;

/// How a test configures the gateway in front of the gRPC-only agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfiguredBy {
    /// `grpc://host:port`, the service pinned by `a2a_version`.
    GrpcUrl,
    /// `http://host:<card port>/`, the agent's gRPC origin in
    /// `allowed_origins`; its card says the rest (the SDK's 1.0 card for
    /// the 1.0 service, `GRPC_CARD=0.3` for 0.3).
    CardUrl,
}

impl ConfiguredBy {
    /// What a matrix adds to the upstream's name.
    pub fn suffix(self) -> &'static str {
        match self {
            ConfiguredBy::GrpcUrl => "",
            ConfiguredBy::CardUrl => "-by-card",
        }
    }
}

/// The gRPC-only agent and a gateway in front of it.
pub struct Fronted {
    /// Held for as long as the gateway is used.
    _agent: Process,
    pub gw: Process,
}

/// The gRPC-only agent (`env`: more of its environment) and a gateway
/// fronting it as agent `name` on `service` ("1.0", "0.3"), configured
/// `by`, with the flags `extra`.
pub fn fronted(
    name: &str,
    service: &str,
    by: ConfiguredBy,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Fronted {
    match by {
        ConfiguredBy::GrpcUrl => {
            let agent = agent_with("python-v1-grpc", env);
            let gw = grpc_gateway_named(name, agent.port, service, "", extra);
            Fronted { _agent: agent, gw }
        }
        ConfiguredBy::CardUrl => {
            let (agent, card_port) = agent_with_card(service, env);
            let gw = card_gateway(name, card_port, Some(agent.port), extra);
            Fronted { _agent: agent, gw }
        }
    }
}

/// The gRPC-only agent serving its card over HTTP too (0.3-only for
/// `service` "0.3"), and the card's port.
fn agent_with_card(service: &str, env: &[(&str, &str)]) -> (Process, u16) {
    let card_port = free_port();
    let port = card_port.to_string();
    let mut env = env.to_vec();
    env.push(("CARD_HTTP_PORT", &port));
    if service == "0.3" {
        env.push(("GRPC_CARD", "0.3"));
    }
    (agent_with("python-v1-grpc", &env), card_port)
}

/// A gateway fronting as agent `name` the agent whose card is on
/// `card_port`, its configured upstream; the origin of `grpc_port`, when
/// given, in `allowed_origins`.
fn card_gateway(name: &str, card_port: u16, grpc_port: Option<u16>, extra: &[&str]) -> Process {
    let allowed = grpc_port
        .map(|port| format!("allowed_origins = [\"http://127.0.0.1:{port}\"]\n"))
        .unwrap_or_default();
    let file = write_config(
        &format!("grpc-by-card-{name}-{card_port}.toml"),
        &format!("[agents.{name}]\nupstream = \"http://127.0.0.1:{card_port}/\"\n{allowed}"),
    );
    let config = file.display().to_string();
    let mut args = vec!["--config", config.as_str()];
    args.extend_from_slice(extra);
    gateway(&args)
}

/// The prefix of a gRPC call of `service` in a `CALL_LOG`.
fn grpc_path(service: &str) -> &'static str {
    match service {
        "1.0" => "/lf.a2a.v1.A2AService/",
        _ => "/a2a.v1.A2AService/",
    }
}

/// The card's fetch, the one HTTP request the gateway makes of the agent.
const CARD_FETCH: &str = "GET /.well-known/agent-card.json";

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_grpc_agent_configured_by_its_card_url_is_called_over_grpc_on_either_service() {
    for service in ["1.0", "0.3"] {
        let log = call_log_path(&format!("grpc-by-card-{service}"));
        let log_text = log.display().to_string();
        let fronted = fronted(
            "a",
            service,
            ConfiguredBy::CardUrl,
            &[],
            &[("CALL_LOG", &log_text)],
        );
        assert_eq!(
            reached_by(&fronted.gw, "a").await,
            json!({ "binding": "GRPC", "version": service, "mode": "stream" }),
            "{service}"
        );
        let events = agui_run(&fronted.gw, "a", "chunks", &format!("t-by-card-{service}")).await;
        let last = assert_valid_run(&events);
        assert_eq!(last["type"], "RUN_FINISHED", "{service}: {events:?}");
        assert_eq!(
            text_of(&events),
            "Thinking...Hello from the streaming test agent.Done.",
            "{service}"
        );
        // The run went over gRPC, on the card's service; nothing else but
        // the card's fetch went over HTTP.
        let calls = calls_logged(&log);
        let prefix = grpc_path(service);
        assert!(
            calls.contains(&format!("{prefix}SendStreamingMessage")),
            "{service}: {calls:?}"
        );
        assert!(
            calls
                .iter()
                .all(|call| call.starts_with(prefix) || call == CARD_FETCH),
            "{service}: {calls:?}"
        );
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_cards_grpc_interface_on_an_origin_not_allowed_is_never_called() {
    for service in ["1.0", "0.3"] {
        let log = call_log_path(&format!("grpc-by-card-refused-{service}"));
        let log_text = log.display().to_string();
        let (_agent, card_port) = agent_with_card(service, &[("CALL_LOG", &log_text)]);
        let gw = card_gateway("a", card_port, None, &[]);
        // Without an interface it may call, the gateway calls the
        // configured URL, in the default binding: the card's server,
        // which serves no A2A call.
        assert_eq!(
            reached_by(&gw, "a").await,
            json!({ "binding": "JSONRPC", "version": "0.3", "mode": "stream" }),
            "{service}"
        );
        let events = agui_run(&gw, "a", "chunks", &format!("t-by-card-refused-{service}")).await;
        let last = assert_valid_run(&events);
        assert_eq!(last["type"], "RUN_ERROR", "{service}: {events:?}");
        assert_eq!(last["code"], "UPSTREAM_HTTP_ERROR", "{service}: {last}");
        let calls = calls_logged(&log);
        assert!(
            calls.contains(&CARD_FETCH.to_owned()),
            "{service}: {calls:?}"
        );
        assert!(
            !calls.iter().any(|call| call.starts_with('/')),
            "{service}: a gRPC call was made: {calls:?}"
        );
    }
}

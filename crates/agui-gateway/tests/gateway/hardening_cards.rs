//! Issue 37, finding 5: cards. Every spelling of a card path an agent may
//! read as its card's (percent-encoded, double-encoded, in another case,
//! with dot segments or a trailing `/`) gets the gateway's card or a 404,
//! never the agent's own card with its internal address: the gateway
//! routes on one canonical path (`http::paths`). And the gateway signs
//! only agent cards, served from its card routes: what an agent answers
//! on a card route that is no card, or a card naming another address,
//! goes back unsigned.

use std::net::SocketAddr;

use axum::Router;
use axum::body::Bytes;
use axum::extract::Request;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use crate::edge::{raw, write_config};
use crate::hardening_tokens::loopback_agent;
use crate::support::{Process, agent_with, client, gateway};

/// What a client gets for `target` (sent as is, over HTTP/1.1), and the
/// body of a POST when `body` is given.
async fn fetch(gw: &Process, target: &str, body: Option<&str>) -> (u16, String) {
    let addr: SocketAddr = format!("127.0.0.1:{}", gw.port).parse().unwrap();
    let request = match body {
        None => format!(
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nA2A-Version: 1.0\r\n\r\n"
        ),
        Some(body) => format!(
            "POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
             Content-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    };
    let (status, _, body) = raw(addr, &request).await;
    (status, body)
}

/// A gateway with the agents `py` (the default) and `js` in front of
/// `python` and `js`.
fn two_agent_gateway(python: &Process, js: &Process) -> Process {
    let file = write_config(
        "h37-cards.toml",
        &format!(
            "default_agent = \"py\"\n[agents.py]\nupstream = \"{}/\"\n\
             [agents.js]\nupstream = \"{}/\"\n",
            python.url(),
            js.url()
        ),
    );
    gateway(&["--config", file.to_str().unwrap()])
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn every_encoded_card_path_gets_the_gateways_card_or_a_404() {
    let python = agent_with("python-v1", &[("EXTENDED_CARD", "1")]);
    // @a2a-js/sdk on express: paths match in any case, with a trailing `/`.
    let js = agent_with::<&str>("js-v1", &[]);
    let gw = two_agent_gateway(&python, &js);
    let addresses = [
        format!("127.0.0.1:{}", python.port),
        format!("localhost:{}", python.port),
        format!("127.0.0.1:{}", js.port),
        format!("localhost:{}", js.port),
    ];
    // The agents' own cards do name them (what must not get out).
    for agent in [&python, &js] {
        let (status, card) = fetch(agent, "/.well-known/agent-card.json", None).await;
        assert_eq!(status, 200);
        assert!(addresses.iter().any(|a| card.contains(a)), "{card}");
    }
    // The gateway's card names the gateway (as the request's `Host`).
    let gateway_card = |body: &str| {
        serde_json::from_str::<Value>(body).is_ok_and(|card| card["name"].is_string())
            && body.contains("http://127.0.0.1/")
    };
    let mut served = 0;
    let mut refused = 0;
    let mut leaked = Vec::new();
    for target in [
        "/.well-known/agent-card.json",
        "/.well-known/agent%2Dcard.json",
        "/.well-known/agent%2dcard.json",
        "/.well-known/agent-card.jso%6E",
        "/%2Ewell-known/agent-card.json",
        "/.well-known/agent%2Ecard.json",
        "/.well-known/%61gent.json",
        "/.well-known%2Fagent-card.json",
        "/.well-known%2fagent-card.json",
        "/.well-known/agent%252Dcard.json",
        "/.well-known/agent%25252Dcard.json",
        "/%252Ewell-known/agent-card.json",
        "/.well-known/x/..%2Fagent-card.json",
        "/.well-known/x/%2E%2E/agent-card.json",
        "/x/%2E%2E/.well-known/agent-card.json",
        "/v1/agents/py/.well-known/agent%2Dcard.json",
        "/v1/agents/py/.well-known%2Fagent-card.json",
        "/v1/agents/js/.well-known/agent%2Dcard.json",
        "/v1/agents/js/.WELL-KNOWN/AGENT-CARD.JSON",
        "/v1/agents/js/.Well-Known/agent-card.json",
        "/v1/agents/js/.well-known/agent-card.json/",
        "/v1/agents/js/.well-known//agent-card.json",
        "/v1/agents/js/.well-known/agent%252Dcard.json",
        // The extended card, REST (1.0's path, 0.3's).
        "/rest/extendedAgentCar%64",
        "/rest/extendedAgentCar%2564",
        "/rest/EXTENDEDAGENTCARD",
        "/rest/extendedAgentCard/",
        "/v1/agents/js/V1/CARD",
    ] {
        let (status, body) = fetch(&gw, target, None).await;
        if addresses.iter().any(|a| body.contains(a.as_str())) {
            leaked.push(target);
            continue;
        }
        match status {
            200 if gateway_card(&body) => served += 1,
            404 => refused += 1,
            _ => panic!("{target}: neither the gateway's card nor a 404: {status} {body}"),
        }
    }
    assert!(
        leaked.is_empty(),
        "{} of 28 paths answered the agent's own card: {leaked:?}",
        leaked.len()
    );
    // The JSON-RPC extended card, whatever pads its body.
    let padded = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetExtendedAgentCard\",\"params\":{{}}{}}}",
        " ".repeat(70 * 1024)
    );
    let (status, body) = fetch(&gw, "/", Some(&padded)).await;
    for address in &addresses {
        assert!(!body.contains(address.as_str()), "padded: {status} {body}");
    }
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert!(gateway_card(&answer["result"].to_string()), "{answer}");
    println!("card paths: {served} served as the gateway's card, {refused} refused (404)");
}

/// An agent that answers any path with the client's text: the query,
/// and a JSON body as it came. Its card is at the well-known path.
async fn echoing_agent() -> SocketAddr {
    loopback_agent(Router::new().fallback(|request: Request| async move {
        let query = request.uri().query().unwrap_or_default().to_owned();
        let body: Bytes = axum::body::to_bytes(request.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        match serde_json::from_slice::<Value>(&body) {
            Ok(json) => axum::Json(json).into_response(),
            Err(_) => axum::Json(json!({ "echo": query })).into_response(),
        }
    }))
    .await
}

/// The JSON answer to `request`.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn only_agent_cards_from_card_routes_are_signed() {
    let key = write_config(
        "h37-signing.pem",
        &rcgen::KeyPair::generate().unwrap().serialize_pem(),
    );
    let agent = echoing_agent().await;
    let file = write_config(
        "h37-signing.toml",
        &format!(
            "public_url = \"https://agents.example.test\"\n[card_signing]\nsigning_key = \"{}\"\n\
             [agents.a]\nupstream = \"http://{agent}/\"\n",
            key.display()
        ),
    );
    let gw = gateway(&["--config", file.to_str().unwrap()]);
    let signed = |card: &Value| card["signatures"].as_array().is_some_and(|s| !s.is_empty());
    let get = |path: &str| json_of(client().get(format!("{}{path}", gw.url())));
    // The real card: signed.
    let card = get("/.well-known/agent-card.json").await;
    assert!(signed(&card), "{card}");
    // The client's text, echoed on a path ending in /extendedAgentCard.
    let echoed = get("/anything/extendedAgentCard?text=pay-attacker").await;
    assert_eq!(echoed["echo"], "text=pay-attacker", "{echoed}");
    assert!(!signed(&echoed), "the gateway signed an echo: {echoed}");
    // Card-shaped text of the client's, naming an address not the
    // gateway's: served, unsigned.
    let forged = json!({ "name": "forged", "description": "trust me", "version": "1",
        "supportedInterfaces": [{ "url": "https://attacker.example/",
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }],
        "capabilities": {}, "skills": [] });
    let answer = json_of(
        client()
            .get(format!("{}/anything/extendedAgentCard", gw.url()))
            .json(&forged),
    )
    .await;
    assert_eq!(answer["name"], "forged", "{answer}");
    assert!(
        !signed(&answer),
        "the gateway signed a forged card: {answer}"
    );
    // The JSON-RPC extended card call, answered with the client's text.
    let rpc = json!({ "jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard",
        "result": { "echo": "pay-attacker" } });
    let answer = json_of(client().post(format!("{}/", gw.url())).json(&rpc)).await;
    assert_eq!(answer["result"]["echo"], "pay-attacker", "{answer}");
    assert!(!signed(&answer["result"]), "{answer}");
}

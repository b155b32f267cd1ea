//! Transparent mode: what A2A clients that do not ask for AG-UI get, and
//! the agent card served through the gateway.

use serde_json::{Value, json};

use crate::support::*;
use crate::{post_text, stream_request};

#[tokio::test]
async fn passthrough_keeps_sse_bytes_status_and_headers() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {} });
    let direct = client()
        .post(format!("http://{addr}/"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let via = client()
        .post(format!("{}/", gw.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(via.status(), direct.status());
    assert_eq!(
        via.headers()["content-type"],
        direct.headers()["content-type"]
    );
    let (direct, via) = (direct.bytes().await.unwrap(), via.bytes().await.unwrap());
    assert_eq!(via, direct, "SSE bytes must pass unchanged");
    assert_eq!(via, FIXED_SSE.as_bytes());
    // A body that fails at once still delivers the upstream's head.
    for _ in 0..30 {
        let via = client()
            .post(format!("{}/", gw.url()))
            .header("X-Fake", "fail-at-once")
            .json(&body)
            .send()
            .await
            .expect("the response head arrives");
        assert_eq!(via.status(), 200);
        assert_eq!(via.headers()["content-type"], "text/event-stream");
        assert!(via.bytes().await.is_err(), "the cut body stays cut");
    }
    // Error statuses and their bodies pass through too.
    let via = client()
        .post(format!("{}/", gw.url()))
        .header("X-Fake", "http500")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(via.status(), 500);
    assert_eq!(via.text().await.unwrap(), "internal failure in the agent");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn passthrough_to_real_agents_gives_what_direct_calls_give() {
    for (agent_name, v10) in [
        ("python-v1", true),
        ("python-v1", false),
        ("python-v03", false),
        ("js-v1", true),
    ] {
        let agent = agent(agent_name);
        let gw = gateway_for(&agent.url(), &[]);
        let path = jsonrpc_path(agent_name);
        let (body, header) = stream_request(v10, "chunks");
        let headers: Vec<_> = header.into_iter().collect();
        let (s1, ct1, direct) = post_text(&format!("{}{path}", agent.url()), &body, &headers).await;
        let (s2, ct2, via) = post_text(&format!("{}{path}", gw.url()), &body, &headers).await;
        assert_eq!((s1, &ct1), (s2, &ct2), "{agent_name}");
        // Ids and timestamps differ per call; the framing and the shape do not.
        assert_eq!(
            direct.matches("data:").count(),
            via.matches("data:").count(),
            "{agent_name}"
        );
        assert_eq!(
            direct.contains("\r\n"),
            via.contains("\r\n"),
            "{agent_name}: line endings kept"
        );
        assert!(
            via.contains("completed") || via.contains("TASK_STATE_COMPLETED"),
            "{agent_name}: {via}"
        );
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn the_card_points_at_the_gateway_and_declares_ag_ui() {
    let agent = agent("python-v1");
    let gw = gateway_for(&agent.url(), &["--name", "py"]);
    let card: Value = client()
        .get(format!("{}/.well-known/agent-card.json", gw.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let gw_base = format!("{}/", gw.url());
    assert_eq!(card["url"], gw_base);
    for iface in card["supportedInterfaces"].as_array().unwrap() {
        assert!(
            iface["url"].as_str().unwrap().starts_with(&gw.url()),
            "{iface}"
        );
    }
    assert_eq!(
        card["additionalInterfaces"][0]["url"],
        format!("{}/rest", gw.url())
    );
    // The card has its own ETag (the body changed), and revalidates.
    let response = client()
        .get(format!("{}/.well-known/agent-card.json", gw.url()))
        .send()
        .await
        .unwrap();
    let etag = response.headers()["etag"].to_str().unwrap().to_owned();
    let again = client()
        .get(format!("{}/.well-known/agent-card.json", gw.url()))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);
    let extensions = card["capabilities"]["extensions"].as_array().unwrap();
    for uri in [
        "https://ag-ui.org/protocol/v1",
        // What the gateway carries from AG-UI clients (issue 10).
        "urn:agui-gateway:a2a-extension:agui-input:v1",
    ] {
        assert!(extensions.iter().any(|e| e["uri"] == uri), "{uri}");
    }
    assert!(
        extensions.iter().any(|e| e["uri"]
            == "https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol"),
        "the agent's own extensions stay"
    );
    // Behind a proxy: X-Forwarded-Proto/Host/Prefix; and a named agent's card.
    let card: Value = client()
        .get(format!(
            "{}/v1/agents/py/.well-known/agent-card.json",
            gw.url()
        ))
        .header("X-Forwarded-Proto", "https")
        .header("X-Forwarded-Host", "agents.example.com")
        .header("X-Forwarded-Prefix", "/edge")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["url"], "https://agents.example.com/edge/v1/agents/py/");
    assert_eq!(
        card["additionalInterfaces"][0]["url"],
        "https://agents.example.com/edge/v1/agents/py/rest"
    );
    let list: Value = client()
        .get(format!("{}/v1/agents", gw.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["agents"][0]["name"], "py");
    assert_eq!(list["agents"][0]["cardName"], card["name"]);
}

//! AG-UI 1.0 `AgentCapabilities` read from each agent's card: in
//! `/v1/agents` and, where CopilotKit's runtime reports an agent's
//! `getCapabilities()`, in `/copilotkit/info`. Against the demo agent's
//! card (the fake agent), through the gateway as a user runs it.

use a2a_fake_agent::{Agent as Fake, Behaviour};
use serde_json::{Value, json};

use crate::edge::write_config;
use crate::support::*;

/// What the demo agent's card gives, fronted by a gateway whose journal
/// is `resumable` and whose agent has `interrupts`.
fn demo_capabilities(resumable: bool, interrupts: bool) -> Value {
    json!({
        "identity": {
            "name": "Demo Assistant",
            "description": "A built-in A2A agent that answers weather questions with reasoning, a tool call, citations and a client command.",
            "version": "1.0.0"
        },
        "transport": { "streaming": true, "pushNotifications": false, "resumable": resumable },
        "tools": {
            "items": [{ "name": "weather", "description": "Tells the weather",
                "metadata": { "title": "Weather" } }],
            "clientProvided": true
        },
        "output": { "supportedMimeTypes": ["text/plain", "application/json"] },
        "multimodal": {
            "input": { "image": false, "audio": false, "video": false, "pdf": false, "file": false },
            "output": { "image": false, "audio": false }
        },
        "humanInTheLoop": { "supported": true, "interrupts": interrupts },
        "custom": { "a2a.extensions": [
            "https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol",
            "https://a2a-extensions.agentstack.beeai.dev/ui/trajectory/v1",
            "https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1"
        ] }
    })
}

async fn get_json(url: String) -> Value {
    let response = http_get(&url).await;
    assert_eq!(response.status(), 200, "{url}");
    response.json().await.unwrap()
}

/// `/v1/agents` (which waits for a card not read yet), then
/// `/copilotkit/info`: each agent's capabilities in both.
async fn capabilities_of(gw: &Process) -> Vec<(String, Value, Value)> {
    let listed = get_json(format!("{}/v1/agents", gw.url())).await;
    let info = get_json(format!("{}/copilotkit/info", gw.url())).await;
    listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| {
            let name = agent["name"].as_str().unwrap().to_owned();
            let runtime = info["agents"][&name].clone();
            // The runtime's other fields stay as they were.
            assert_eq!(runtime["className"], "A2AAgent", "{info}");
            (
                name,
                agent["capabilities"].clone(),
                runtime["capabilities"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn agents_and_copilotkit_info_show_the_capabilities_of_each_card() {
    let demo = gateway(&["demo", "--delay-ms", "0"]);
    let shown = capabilities_of(&demo).await;
    assert_eq!(shown.len(), 1);
    let (name, listed, runtime) = &shown[0];
    assert_eq!(name, "assistant");
    assert_eq!(listed, &demo_capabilities(true, false));
    assert_eq!(runtime, listed);

    // The gateway's side of them follows its configuration: no journal,
    // no resume; `interrupts` per agent.
    let fake = Fake::start(
        Behaviour::Demo {
            delay: std::time::Duration::ZERO,
        },
        0,
    )
    .await
    .unwrap();
    let upstream = format!("http://{}/", fake.addr);
    let file = write_config(
        &format!("capabilities-{}.toml", fake.addr.port()),
        &format!(
            "journal = \"off\"\ndefault_agent = \"plain\"\n[agents.asks]\nupstream = \"{upstream}\"\ninterrupts = true\n\
             [agents.plain]\nupstream = \"{upstream}\"\n"
        ),
    );
    let gw = gateway(&["--config", file.to_str().unwrap()]);
    for (name, listed, runtime) in capabilities_of(&gw).await {
        let interrupts = name == "asks";
        assert_eq!(listed, demo_capabilities(false, interrupts), "{name}");
        assert_eq!(runtime, listed, "{name}");
    }
}

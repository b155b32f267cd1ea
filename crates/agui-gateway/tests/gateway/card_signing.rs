//! Signed cards (issue 28): an a2a-sdk 1.3.0 agent signs its card (and its
//! extended card) with the SDK's own signer. The gateway checks it against
//! the keys it trusts, serves it rewritten and signed with its own key (never
//! with the agent's stale signatures), and, under `require`, refuses an agent
//! whose card does not verify. The served cards are checked by a2a-sdk's own
//! verifier (`tests/agents/python-v1/verify_card.py`).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};

use crate::support::{
    Process, agent_with, agui_events, assert_valid_run, check_config, client, gateway, metrics_of,
    repo_root,
};

/// The gateway's address in the cards it signs.
const PUBLIC: &str = "https://agents.example.test";

/// Keys made for one test: the agent's and the gateway's, as PEM files and
/// JWKS documents.
struct Keys(PathBuf);

impl Keys {
    fn new(name: &str) -> Keys {
        let dir =
            std::env::temp_dir().join(format!("agui-gateway-cards-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (who, kid) in [("agent", "agent-key"), ("gateway", "gateway-key")] {
            let pem = rcgen::KeyPair::generate().unwrap().serialize_pem();
            std::fs::write(dir.join(format!("{who}.pem")), &pem).unwrap();
            let key = EncodingKey::from_ec_pem(pem.as_bytes()).unwrap();
            let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
            jwk.common.key_id = Some(kid.to_owned());
            let jwks = json!({ "keys": [jwk] });
            std::fs::write(dir.join(format!("{who}.jwks.json")), jwks.to_string()).unwrap();
        }
        Keys(dir)
    }

    fn path(&self, file: &str) -> String {
        self.0.join(file).display().to_string()
    }

    /// python-v1 signing its card with the agent's key; `extra` adds
    /// `CARD_TAMPER`, `EXTENDED_CARD`.
    fn agent(&self, extra: &[(&str, &str)]) -> Process {
        let key = self.path("agent.pem");
        let mut env = vec![("CARD_SIGNING_KEY", key.as_str())];
        env.extend_from_slice(extra);
        agent_with("python-v1", &env)
    }

    /// A gateway in front of `agent` under `policy`, trusting the agent's
    /// key; with `sign`, signing with its own.
    fn gateway(&self, agent: &Process, policy: &str, sign: bool) -> Process {
        // A signed card names the gateway's configured address only.
        let mut text = match sign {
            true => format!("public_url = \"{PUBLIC}\"\n"),
            false => String::new(),
        };
        text += &format!(
            "[card_signing]\ntrusted_keys = \"{}\"\n",
            self.path("agent.jwks.json")
        );
        if sign {
            text.push_str(&format!(
                "signing_key = \"{}\"\nsigning_kid = \"gateway-key\"\n",
                self.path("gateway.pem")
            ));
        }
        text.push_str(&format!(
            "\n[agents.a]\nupstream = \"{}/\"\ncard_signatures = \"{policy}\"\n",
            agent.url()
        ));
        let file = self.0.join(format!("{policy}-{sign}.toml"));
        std::fs::write(&file, text).unwrap();
        gateway(&["--config", file.to_str().unwrap()])
    }

    /// What a2a-sdk's verifier says of `card` with the keys of `jwks`.
    fn sdk_verdict(&self, card: &Value, jwks: &str) -> String {
        let python = repo_root().join(".cache/venv-a2a-v1/bin/python");
        let mut child = Command::new(python)
            .arg(repo_root().join("tests/agents/python-v1/verify_card.py"))
            .arg(self.path(jwks))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(card.to_string().as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn get(url: String) -> (u16, Value) {
    let response = client()
        .get(url)
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn listed(gw: &Process) -> Value {
    get(format!("{}/v1/agents", gw.url())).await.1["agents"][0].clone()
}

async fn run(gw: &Process) -> (u16, String) {
    let input = json!({ "threadId": "signed", "runId": "signed-run",
        "messages": [{ "id": "u", "role": "user", "content": "chunks" }] });
    let response = client()
        .post(format!("{}/agui", gw.url()))
        .json(&input)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

fn signatures(card: &Value) -> Vec<String> {
    card["signatures"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["signature"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_signed_card_is_verified_and_served_rewritten_and_signed_by_the_gateway() {
    let keys = Keys::new("signed");
    let agent = keys.agent(&[("EXTENDED_CARD", "1")]);
    let gw = keys.gateway(&agent, "verify", true);
    let entry = listed(&gw).await;
    assert_eq!(entry["cardSignature"], "verified", "{entry}");
    let (_, original) = get(format!("{}/.well-known/agent-card.json", agent.url())).await;
    assert_eq!(keys.sdk_verdict(&original, "agent.jwks.json"), "verified");

    let (status, served) = get(format!("{}/.well-known/agent-card.json", gw.url())).await;
    assert_eq!(status, 200);
    assert!(
        served["supportedInterfaces"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with(PUBLIC),
        "{served}"
    );
    // The agent's signatures are gone (they covered its URLs); the
    // gateway's verify, for a2a-sdk's verifier, with the key it publishes.
    let theirs = signatures(&original);
    assert!(signatures(&served).iter().all(|s| !theirs.contains(s)));
    let (_, published) = get(format!("{}/v1/card-keys", gw.url())).await;
    assert_eq!(published["keys"][0]["kid"], "gateway-key", "{published}");
    std::fs::write(keys.path("published.json"), published.to_string()).unwrap();
    assert_eq!(keys.sdk_verdict(&served, "published.json"), "verified");
    assert!(
        keys.sdk_verdict(&served, "agent.jwks.json")
            .starts_with("invalid")
    );
    let mut changed = served.clone();
    changed["description"] = json!("changed after signing");
    assert!(
        keys.sdk_verdict(&changed, "published.json")
            .starts_with("invalid")
    );

    // The extended card, both bindings: rewritten, re-signed, its tenant
    // kept.
    let rpc = json!({ "jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {} });
    let answer: Value = client()
        .post(format!("{}/", gw.url()))
        .header("A2A-Version", "1.0")
        .json(&rpc)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (_, rest) = get(format!("{}/rest/extendedAgentCard", gw.url())).await;
    for extended in [&answer["result"], &rest] {
        assert!(
            extended["description"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Extended: "),
            "{extended}"
        );
        let first = &extended["supportedInterfaces"][0];
        assert_eq!(first["tenant"], "acme", "{extended}");
        assert!(first["url"].as_str().unwrap().starts_with(PUBLIC));
        assert_eq!(keys.sdk_verdict(extended, "published.json"), "verified");
    }

    let metrics = metrics_of(&gw).await;
    assert!(
        metrics.contains("agui_gateway_card_signature{agent=\"a\",result=\"verified\"} 1"),
        "{metrics}"
    );
    let (status, body) = run(&gw).await;
    assert_eq!(status, 200);
    assert_eq!(
        assert_valid_run(&agui_events(&body))["type"],
        "RUN_FINISHED"
    );
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_tampered_card_is_refused_under_require_and_reported_under_verify() {
    let keys = Keys::new("tampered");
    let agent = keys.agent(&[("CARD_TAMPER", "1")]);
    let (_, original) = get(format!("{}/.well-known/agent-card.json", agent.url())).await;
    assert!(
        keys.sdk_verdict(&original, "agent.jwks.json")
            .starts_with("invalid")
    );

    let gw = keys.gateway(&agent, "require", true);
    untrusted(&gw).await;
    let (status, error) = get(format!("{}/.well-known/agent-card.json", gw.url())).await;
    assert_eq!(status, 502);
    assert_eq!(error["error"]["code"], "UPSTREAM_CARD_UNTRUSTED", "{error}");
    let entry = listed(&gw).await;
    assert_eq!(entry["cardSignature"], "invalid", "{entry}");
    assert_eq!(entry["ready"], false, "{entry}");
    drop(gw);

    // Under verify it is used and reported, and served without any
    // signature: the gateway does not vouch for a card that failed.
    let gw = keys.gateway(&agent, "verify", true);
    let (_, served) = get(format!("{}/.well-known/agent-card.json", gw.url())).await;
    assert_eq!(served.get("signatures"), None, "{served}");
    assert_eq!(listed(&gw).await["cardSignature"], "invalid");
    let (status, body) = run(&gw).await;
    assert_eq!(status, 200);
    assert_eq!(
        assert_valid_run(&agui_events(&body))["type"],
        "RUN_FINISHED"
    );
    let metrics = metrics_of(&gw).await;
    assert!(
        metrics.contains("agui_gateway_card_signature{agent=\"a\",result=\"invalid\"} 1"),
        "{metrics}"
    );
    drop(gw);

    // Off, and no key of its own: the rewritten card goes without the
    // agent's (now stale) signatures, never with them.
    let gw = keys.gateway(&agent, "off", false);
    let (_, served) = get(format!("{}/.well-known/agent-card.json", gw.url())).await;
    assert_eq!(served.get("signatures"), None, "{served}");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn an_unsigned_card_is_refused_under_require() {
    let keys = Keys::new("unsigned");
    let agent = agent_with::<&str>("python-v1", &[]);
    let gw = keys.gateway(&agent, "require", false);
    untrusted(&gw).await;
    assert_eq!(listed(&gw).await["cardSignature"], "unsigned");
}

/// A run is not sent to the agent: it ends in `UPSTREAM_CARD_UNTRUSTED`.
async fn untrusted(gw: &Process) {
    let (status, body) = run(gw).await;
    assert_eq!(status, 200, "{body}");
    let events = agui_events(&body);
    let last = assert_valid_run(&events);
    assert_eq!(last["type"], "RUN_ERROR", "{body}");
    assert_eq!(last["code"], "UPSTREAM_CARD_UNTRUSTED", "{last}");
}

#[test]
fn check_config_refuses_keys_that_do_not_load() {
    let keys = Keys::new("check");
    let check = |text: String| {
        let file = keys.0.join("check.toml");
        std::fs::write(&file, text).unwrap();
        check_config(&file)
    };
    let agent = "[agents.a]\nupstream = \"http://127.0.0.1:9/\"\n";
    let (ok, stderr) = check(format!(
        "[card_signing]\ntrusted_keys = \"{}\"\n{agent}",
        keys.path("agent.pem")
    ));
    assert!(!ok);
    assert!(
        stderr.contains("card_signing.trusted_keys: not a JWKS document"),
        "{stderr}"
    );
    let (ok, stderr) = check(format!(
        "[card_signing]\nsigning_key = \"{}\"\n{agent}",
        keys.path("agent.jwks.json")
    ));
    assert!(!ok);
    assert!(
        stderr.contains("card_signing.signing_key: not a ES256 private key"),
        "{stderr}"
    );
    let (ok, stderr) = check(format!("{agent}card_signatures = \"verify\"\n"));
    assert!(!ok);
    assert!(
        stderr.contains("checking signatures needs [card_signing] trusted_keys"),
        "{stderr}"
    );
    let (ok, stderr) = check(format!("{agent}card_signatures = \"maybe\"\n"));
    assert!(!ok);
    assert!(stderr.contains("is not off, verify or require"), "{stderr}");
    // A gRPC agent's card is read without its signatures: checking them
    // would refuse every call, so the setting is refused instead.
    let (ok, stderr) = check(format!(
        "[card_signing]\ntrusted_keys = \"{}\"\n[agents.g]\nupstream = \"grpc://127.0.0.1:9\"\ncard_signatures = \"verify\"\n",
        keys.path("agent.jwks.json")
    ));
    assert!(!ok);
    assert!(
        stderr.contains("a gRPC agent's card signatures are not checked"),
        "{stderr}"
    );
    let signing = format!(
        "[card_signing]\ntrusted_keys = \"{}\"\nsigning_key = \"{}\"\n{agent}card_signatures = \"require\"\n",
        keys.path("agent.jwks.json"),
        keys.path("gateway.pem")
    );
    let (ok, stderr) = check(signing.clone());
    assert!(!ok);
    assert!(
        stderr.contains("card_signing.signing_key needs public_url"),
        "{stderr}"
    );
    let (ok, stderr) = check(format!("public_url = \"{PUBLIC}\"\n{signing}"));
    assert!(ok, "{stderr}");
}

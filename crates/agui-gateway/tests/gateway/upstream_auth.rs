//! Calling agents as someone (issue 28): a real authorization server
//! (`oidc-provider`, `tests/authz/`) issues JWT access tokens; an a2a-sdk
//! 1.3.0 agent checks them against its JWKS (`tests/agents/python-v1/
//! bearer.py`) and records who called. The gateway gets a client-credentials
//! token once for many runs, renews it once after a 401 and near its
//! expiry, exchanges a caller's token for one meant for the agent (RFC
//! 8693), and says clearly when it cannot get one, without ever showing the
//! secret.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::run_client;
use crate::support::{
    Process, agent_a_failing, agent_with, agui_events, assert_valid_run, check_config, client,
    metrics_of, repo_root, start_reporting, start_within, text_of,
};

const AGENT_AUDIENCE: &str = "https://agent.test/";
const GATEWAY_AUDIENCE: &str = "https://gateway.test/";
const SECRET: &str = "gateway-secret";

/// The authorization server, its tokens living `ttl` seconds.
pub(crate) fn authz(ttl: u64) -> Process {
    let mut command = Command::new("node");
    command
        .arg(repo_root().join("tests/authz/server.mjs"))
        .args(["--port", "0", "--ttl", &ttl.to_string()]);
    start_within(
        command,
        "READY ",
        "the authorization server (tests/authz/setup.sh installs it)",
        Duration::from_secs(30),
    )
}

/// python-v1 accepting only tokens of `authz` for the agent's audience;
/// `extra` adds to its environment (`REJECT_FIRST_TOKENS`, `CARD_TOKEN_URL`).
fn guarded_agent(authz: &Process, extra: &[(&str, String)]) -> Process {
    let mut env = vec![
        ("REQUIRE_BEARER_JWKS", format!("{}/jwks", authz.url())),
        ("REQUIRE_BEARER_AUDIENCE", AGENT_AUDIENCE.to_owned()),
        ("REQUIRE_BEARER_ISSUER", authz.url()),
    ];
    env.extend(extra.iter().cloned());
    agent_with("python-v1", &env)
}

/// A folder of this test's own, removed when it ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("agui-gateway-auth-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("gateway.log")).unwrap_or_default()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The gateway with `config` (a TOML text), `GATEWAY_CLIENT_SECRET` in its
/// environment for `${GATEWAY_CLIENT_SECRET}`, its log at `debug` in the
/// scratch folder (what a secret must not reach).
fn gateway(scratch: &Scratch, config: &str, secret: &str) -> Process {
    let file = scratch.path("gateway.toml");
    std::fs::write(&file, config).unwrap();
    let log = std::fs::File::create(scratch.path("gateway.log")).unwrap();
    let mut command = Command::new(crate::support::gateway_binary());
    command
        .args([
            "--config",
            file.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .env("AGUI_GATEWAY_LOG", "debug")
        .env("GATEWAY_CLIENT_SECRET", secret)
        .stderr(log);
    start_reporting(
        command,
        "listening on ",
        "the gateway",
        Duration::from_secs(30),
    )
}

/// `[agents.a]` at `agent` with an `[agents.a.auth]` of `kind`, its token
/// URL `token_url` (none: the card's); `more` is appended as is.
fn config(agent: &Process, kind: &str, token_url: Option<String>, more: &str) -> String {
    let token_url = token_url
        .map(|url| format!("token_url = \"{url}\"\n"))
        .unwrap_or_default();
    format!(
        "[agents.a]\nupstream = \"{}/\"\n{more}\n[agents.a.auth]\ntype = \"{kind}\"\n{token_url}\
         client_id = \"gateway\"\nclient_secret = \"${{GATEWAY_CLIENT_SECRET}}\"\n\
         scopes = [\"a2a.invoke\"]\nresource = \"{AGENT_AUDIENCE}\"\n",
        agent.url()
    )
}

/// How many tokens the authorization server issued, by grant.
pub(crate) async fn grants(authz: &Process) -> Value {
    client()
        .get(format!("{}/test/requests", authz.url()))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["grants"]
        .clone()
}

pub(crate) fn count(grants: &Value, grant: &str) -> u64 {
    grants[grant].as_u64().unwrap_or(0)
}

pub(crate) const CLIENT_CREDENTIALS: &str = "client_credentials";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// What the agent made of the tokens it was sent.
async fn seen_by(agent: &Process) -> Vec<Value> {
    client()
        .get(format!("{}/test/bearer", agent.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn run(gw: &Process, thread: &str, bearer: Option<&str>) -> (u16, String) {
    let input = json!({ "threadId": thread, "runId": format!("{thread}-run"),
        "messages": [{ "id": format!("{thread}-u"), "role": "user", "content": "chunks" }] });
    let mut request = client().post(format!("{}/agui", gw.url())).json(&input);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

fn finished(body: &str) {
    let events = agui_events(body);
    assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED", "{body}");
    assert_eq!(
        text_of(&events),
        "Thinking...Hello from the streaming test agent.Done."
    );
}

/// A user's token, as an identity provider gives it to a browser: for the
/// gateway's audience (`alice` and `bob` are clients of the test server).
async fn user_token(authz: &Process, user: &str) -> String {
    let answer: Value = client()
        .post(format!("{}/token", authz.url()))
        .basic_auth(user, Some(format!("{user}-secret")))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=client_credentials&scope=a2a.invoke&resource={}",
            url::form_urlencoded::byte_serialize(GATEWAY_AUDIENCE.as_bytes()).collect::<String>()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token for {user}: {answer}"))
        .to_owned()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn one_client_credentials_token_serves_every_client_and_fifty_concurrent_runs() {
    let authz = authz(300);
    let agent = guarded_agent(&authz, &[]);
    let scratch = Scratch::new("client-credentials");
    let token_url = format!("{}/token", authz.url());
    let gw = gateway(
        &scratch,
        &config(&agent, "oauth2_client_credentials", Some(token_url), ""),
        SECRET,
    );
    let url = format!("{}/agui", gw.url());
    for version in ["1.0.0", "0.0.59", "0.0.48"] {
        let run = run_client(version, &url, &["--message", "chunks"]);
        assert_eq!(run["ok"], true, "{version}: {run}");
        assert_eq!(
            run["types"].as_array().unwrap().last().unwrap(),
            "RUN_FINISHED",
            "{version}: {run}"
        );
    }
    let runs = (0..50).map(|n| {
        let gw = &gw;
        async move { run(gw, &format!("cc-{n}"), None).await }
    });
    for (status, body) in futures::future::join_all(runs).await {
        assert_eq!(status, 200, "{body}");
        finished(&body);
    }
    let issued = grants(&authz).await;
    assert_eq!(count(&issued, CLIENT_CREDENTIALS), 1, "{issued}");
    // Every call the agent took carried the gateway's token for it.
    let seen = seen_by(&agent).await;
    assert!(seen.len() >= 53, "{seen:?}");
    for entry in &seen {
        assert_eq!(entry["refused"], Value::Null, "{entry}");
        assert_eq!(entry["aud"], AGENT_AUDIENCE, "{entry}");
        assert_eq!(entry["client_id"], "gateway", "{entry}");
    }
    assert!(
        metrics_of(&gw)
            .await
            .contains("agui_gateway_upstream_token_requests_total{agent=\"a\",result=\"ok\"} 1"),
    );
    let log = scratch.log();
    for shown in [SECRET.to_owned(), basic("gateway", SECRET)] {
        assert!(!log.contains(&shown), "the secret was logged");
    }
    assert!(!log.contains("eyJ"), "a token was logged");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_refused_token_is_renewed_once_and_an_expiring_one_before_it_ends() {
    let authz = authz(10);
    let agent = guarded_agent(&authz, &[("REJECT_FIRST_TOKENS", "1".to_owned())]);
    let scratch = Scratch::new("renewal");
    let token_url = format!("{}/token", authz.url());
    let gw = gateway(
        &scratch,
        &config(&agent, "oauth2_client_credentials", Some(token_url), ""),
        SECRET,
    );
    // The first token (fetched at start) is refused once: the run goes on
    // with a second one, the client sees nothing of it.
    let (status, body) = run(&gw, "renew-1", None).await;
    assert_eq!(status, 200);
    finished(&body);
    assert_eq!(count(&grants(&authz).await, CLIENT_CREDENTIALS), 2);
    let (_, body) = run(&gw, "renew-2", None).await;
    finished(&body);
    assert_eq!(count(&grants(&authz).await, CLIENT_CREDENTIALS), 2);
    // A tenth of its 10 s life before it ends, a token is replaced (the
    // server's `exp` is whole seconds: it lives 9 to 10 s).
    tokio::time::sleep(Duration::from_millis(9_300)).await;
    let (_, body) = run(&gw, "renew-3", None).await;
    finished(&body);
    assert_eq!(count(&grants(&authz).await, CLIENT_CREDENTIALS), 3);
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn an_agent_that_refuses_every_token_gets_one_retry_then_the_run_fails_upstream() {
    let authz = authz(300);
    let agent = guarded_agent(&authz, &[]);
    let scratch = Scratch::new("refused");
    let token_url = format!("{}/token", authz.url());
    // Tokens for another audience: valid, but not for this agent.
    let text = config(&agent, "oauth2_client_credentials", Some(token_url), "")
        .replace(AGENT_AUDIENCE, "https://another-agent.test/");
    let gw = gateway(&scratch, &text, SECRET);
    let (status, body) = run(&gw, "refused", None).await;
    assert_eq!(status, 200);
    let events = agui_events(&body);
    let last = assert_valid_run(&events);
    assert_eq!(last["type"], "RUN_ERROR", "{body}");
    assert!(
        last["message"].as_str().unwrap_or_default().contains("401"),
        "{last}"
    );
    // The token at start, one more after the 401, and no loop.
    assert_eq!(count(&grants(&authz).await, CLIENT_CREDENTIALS), 2);
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn the_card_names_the_token_url_only_on_an_allowed_origin() {
    let authz = authz(300);
    let token_url = format!("{}/token", authz.url());
    let agent = guarded_agent(&authz, &[("CARD_TOKEN_URL", token_url.clone())]);
    let scratch = Scratch::new("card-token-url");
    // The authorization server is on another origin than the agent: the
    // card alone does not send the gateway's secret there.
    let gw = gateway(
        &scratch,
        &config(&agent, "oauth2_client_credentials", None, ""),
        SECRET,
    );
    let (status, body) = run(&gw, "card-url-refused", None).await;
    assert_eq!(status, 200, "{body}");
    let last = auth_failed(&body);
    assert!(
        last["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no token URL"),
        "{last}"
    );
    assert_eq!(count(&grants(&authz).await, CLIENT_CREDENTIALS), 0);
    drop(gw);
    let allowed = format!("allowed_origins = [\"{}\"]", authz.url());
    let gw = gateway(
        &scratch,
        &config(&agent, "oauth2_client_credentials", None, &allowed),
        SECRET,
    );
    let (status, body) = run(&gw, "card-url", None).await;
    assert_eq!(status, 200, "{body}");
    finished(&body);
    assert_eq!(count(&grants(&authz).await, CLIENT_CREDENTIALS), 1);
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_token_exchange_sends_the_agent_the_caller_as_subject_never_the_callers_token() {
    let authz = authz(300);
    let agent = guarded_agent(&authz, &[]);
    let scratch = Scratch::new("exchange");
    let token_url = format!("{}/token", authz.url());
    // The caller's own token would go to the agent under this policy:
    // with credentials for the agent, it never does.
    let forward = "forward_client_headers = [\"authorization\", \"*\"]";
    let text = format!(
        "[auth.jwt]\njwks_url = \"{0}/jwks\"\nissuer = \"{0}\"\naudience = \"{GATEWAY_AUDIENCE}\"\n\
         algorithms = [\"RS256\"]\n\n{1}",
        authz.url(),
        config(&agent, "token_exchange", Some(token_url), forward)
    );
    let gw = gateway(&scratch, &text, SECRET);
    let alice = user_token(&authz, "alice").await;
    let bob = user_token(&authz, "bob").await;
    let url = format!("{}/agui", gw.url());
    let header = format!("Authorization: Bearer {alice}");
    for version in ["1.0.0", "0.0.59", "0.0.48"] {
        let run = run_client(version, &url, &["--message", "chunks", "--header", &header]);
        assert_eq!(run["ok"], true, "{version}: {run}");
        assert_eq!(
            run["types"].as_array().unwrap().last().unwrap(),
            "RUN_FINISHED",
            "{version}: {run}"
        );
    }
    let (status, body) = run(&gw, "exchange-bob", Some(&bob)).await;
    assert_eq!(status, 200, "{body}");
    finished(&body);
    let seen = seen_by(&agent).await;
    let subjects: Vec<&str> = seen.iter().filter_map(|e| e["sub"].as_str()).collect();
    assert!(
        subjects.contains(&"alice") && subjects.contains(&"bob"),
        "{seen:?}"
    );
    for entry in &seen {
        // A caller's own token (audience: the gateway) would be refused.
        assert_eq!(entry["refused"], Value::Null, "{entry}");
        assert_eq!(entry["aud"], AGENT_AUDIENCE, "{entry}");
    }
    // One exchange per caller, then the cached token.
    let issued = grants(&authz).await;
    assert_eq!(count(&issued, TOKEN_EXCHANGE), 2, "{issued}");
    // Without a credential the gateway's own authentication refuses the
    // caller, before any exchange is tried.
    let (status, body) = run(&gw, "exchange-anonymous", None).await;
    assert_eq!(
        status, 401,
        "the gateway asks its callers for a token: {body}"
    );
    let log = scratch.log();
    for secret in [SECRET, alice.as_str(), bob.as_str()] {
        assert!(!log.contains(secret), "a secret or token was logged");
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn bad_credentials_are_reported_per_agent_and_no_secret_leaks() {
    let authz = authz(300);
    let agent = guarded_agent(&authz, &[]);
    let scratch = Scratch::new("bad");
    let wrong = "not-the-gateway-secret-3c9e";
    let token_url = format!("{}/token", authz.url());
    let (gw, health) = failing_gateway(&scratch, &agent, token_url, wrong).await;
    assert_eq!(
        health["error"],
        "no token for the agent: the token endpoint refused the request: HTTP 401 (invalid_client)",
        "{health}"
    );
    // A run ends in its RUN_ERROR; a call that is not a run (the card) is
    // a 502, both before the agent is called.
    let (status, body) = run(&gw, "bad-secret", None).await;
    assert_eq!(status, 200, "{body}");
    auth_failed(&body);
    let card = client()
        .get(format!("{}/.well-known/agent-card.json", gw.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 502);
    let card: Value = card.json().await.unwrap();
    assert_eq!(card["error"]["code"], "UPSTREAM_AUTH_FAILED", "{card}");
    let metrics = metrics_of(&gw).await;
    assert!(
        metrics
            .contains("agui_gateway_upstream_token_requests_total{agent=\"a\",result=\"error\"}"),
        "{metrics}"
    );
    for shown in [&body, &health.to_string(), &metrics, &scratch.log()] {
        assert!(!shown.contains(wrong), "the secret was shown: {shown}");
        assert!(
            !shown.contains(&basic("gateway", wrong)),
            "the secret was shown: {shown}"
        );
    }
    drop(gw);
    // An unreachable token endpoint.
    let nowhere = format!("http://127.0.0.1:{}/token", crate::support::free_port());
    let (gw, health) = failing_gateway(&scratch, &agent, nowhere, SECRET).await;
    assert_eq!(
        health["error"],
        "no token for the agent: the token endpoint could not be reached (no connection)",
        "{health}"
    );
    let (_, body) = run(&gw, "no-endpoint", None).await;
    auth_failed(&body);
}

/// A gateway whose token endpoint for `agent` is `token_url`, with
/// `secret`, and what `/readyz` says of the agent once it fails.
async fn failing_gateway(
    scratch: &Scratch,
    agent: &Process,
    token_url: String,
    secret: &str,
) -> (Process, Value) {
    let text = config(agent, "oauth2_client_credentials", Some(token_url), "");
    let gw = gateway(scratch, &text, secret);
    let health = agent_a_failing(&gw).await;
    (gw, health)
}

/// `client_id:secret` as HTTP Basic sends it: how a secret would appear in
/// a log that printed the token request's headers.
fn basic(client_id: &str, secret: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"))
}

/// The run's last event: a `RUN_ERROR` of code `UPSTREAM_AUTH_FAILED`.
fn auth_failed(body: &str) -> Value {
    let events = agui_events(body);
    let last = assert_valid_run(&events).clone();
    assert_eq!(last["type"], "RUN_ERROR", "{body}");
    assert_eq!(last["code"], "UPSTREAM_AUTH_FAILED", "{last}");
    last
}

#[test]
fn check_config_refuses_an_exchange_without_jwt_authentication_and_a_missing_secret() {
    let scratch = Scratch::new("check");
    let check = |text: &str| {
        let file = scratch.path("check.toml");
        std::fs::write(&file, text).unwrap();
        check_config(&file)
    };
    let base = "[agents.a]\nupstream = \"http://127.0.0.1:9/\"\n[agents.a.auth]\n";
    let (ok, stderr) = check(&format!(
        "{base}type = \"token_exchange\"\ntoken_url = \"http://127.0.0.1:9/token\"\n\
         client_id = \"gw\"\nclient_secret = \"s\"\n"
    ));
    assert!(!ok);
    assert!(
        stderr.contains("agents.a.auth: token_exchange needs [auth.jwt]"),
        "{stderr}"
    );
    let (ok, stderr) = check(&format!(
        "[auth.jwt]\njwks_url = \"http://127.0.0.1:9/jwks\"\n\n{base}type = \"token_exchange\"\n\
         client_id = \"gw\"\nclient_secret = \"s\"\n"
    ));
    assert!(!ok);
    assert!(
        stderr.contains("token_exchange needs token_url"),
        "{stderr}"
    );
    let (ok, stderr) = check(&format!(
        "{base}type = \"oauth2_client_credentials\"\nclient_id = \"gw\"\n"
    ));
    assert!(!ok);
    assert!(stderr.contains("client_secret is required"), "{stderr}");
    let (ok, stderr) = check(&format!(
        "{base}type = \"oauth2_client_credentials\"\nclient_id = \"gw\"\n\
         client_secret = \"${{NOT_SET_ANYWHERE_28}}\"\n"
    ));
    assert!(!ok);
    assert!(
        stderr.contains("NOT_SET_ANYWHERE_28") && stderr.contains("not set"),
        "{stderr}"
    );
    let (ok, stderr) = check(&format!(
        "{base}type = \"saml\"\nclient_id = \"gw\"\nclient_secret = \"s\"\n"
    ));
    assert!(!ok);
    assert!(
        stderr.contains("is not oauth2_client_credentials"),
        "{stderr}"
    );
}

//! Starting things on loopback: the gateway binary as in production, the
//! real A2A agents of `tests/agents`, and a fault-injecting fake upstream.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A child process killed when dropped.
pub struct Process {
    pub child: Child,
    pub port: u16,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Process {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Sends SIGTERM (through `kill`, to keep the tests free of unsafe code).
    pub fn terminate(&self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
    }
}

/// Starts a command and waits (bounded) for a stdout line holding the port.
fn start(command: Command, marker: &str, what: &str) -> Process {
    start_within(command, marker, what, Duration::from_secs(30))
}

/// `start`, with a longer wait for servers that start slowly.
pub fn start_within(mut command: Command, marker: &str, what: &str, within: Duration) -> Process {
    command.stderr(Stdio::inherit());
    start_reporting(command, marker, what, within)
}

/// The gateway with its log (at `info`) written to `log` instead of the
/// test's output, for tests that read what it logged.
pub fn gateway_logged(args: &[&str], log: &std::path::Path) -> Process {
    let mut command = Command::new(gateway_binary());
    let file = std::fs::File::create(log).expect("log file");
    command
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env("AGUI_GATEWAY_LOG", "info")
        .stderr(file);
    start_reporting(
        command,
        "listening on ",
        "the gateway",
        Duration::from_secs(30),
    )
}

/// Starts `command` (its stderr already set) and waits for its port.
pub fn start_reporting(
    mut command: Command,
    marker: &str,
    what: &str,
    within: Duration,
) -> Process {
    command.stdout(Stdio::piped()).stdin(Stdio::null());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let marker = marker.to_owned();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.split(&marker).nth(1) {
                let _ = tx.send(port_in(rest));
            }
        }
    });
    match rx.recv_timeout(within) {
        Ok(Some(port)) => Process { child, port },
        _ => {
            let _ = child.kill();
            panic!(
                "{what} did not report its port within {} s",
                within.as_secs()
            );
        }
    }
}

/// The port of the `http://host:port` in `text`, else of its
/// `https://host:port` (a plain line, or a JSON log line, where the URL is
/// followed by a quote).
pub fn port_in(text: &str) -> Option<u16> {
    let after = text
        .split("http://")
        .nth(1)
        .or_else(|| text.split("https://").nth(1))
        .unwrap_or(text.trim());
    let authority: String = after
        .chars()
        .take_while(|c| !matches!(c, '/' | '"' | ' ' | '\\'))
        .collect();
    authority.rsplit(':').next()?.parse().ok()
}

/// The gateway binary the tests start: `AGUI_GATEWAY_BIN` when set (the
/// release build, for the hardening replay), else the one cargo built.
pub fn gateway_binary() -> std::ffi::OsString {
    std::env::var_os("AGUI_GATEWAY_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_agui-gateway").into())
}

/// The gateway, as a user runs it, on a free port.
pub fn gateway(args: &[&str]) -> Process {
    let mut command = Command::new(gateway_binary());
    command
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env("AGUI_GATEWAY_LOG", "warn");
    start(command, "listening on ", "the gateway")
}

pub fn gateway_for(upstream: &str, extra: &[&str]) -> Process {
    let mut args = vec!["--upstream", upstream];
    args.extend_from_slice(extra);
    gateway(&args)
}

/// One of the real agents: `python-v1` (a2a-sdk 1.3.0), `python-v03`
/// (a2a-sdk 0.3.26), `js-v1` (@a2a-js/sdk 1.3.0), `input` (a2a-sdk 1.3.0,
/// using what AG-UI clients send through the gateway's extension). `tests/agents/setup.sh`
/// installs them (the test command runs it first).
pub fn agent(name: &str) -> Process {
    agent_with::<&str>(name, &[])
}

/// [`agent`] with more environment (`TLS_CERT`, `TLS_KEY`, `TLS_CLIENT_CA`
/// serve HTTPS and mutual TLS: `tests/frameworks/_serve.py`;
/// `REQUIRE_BEARER_JWKS` and its kin guard python-v1 with OAuth2 bearer
/// tokens: `tests/agents/python-v1/bearer.py`).
pub fn agent_with<V: AsRef<std::ffi::OsStr>>(name: &str, env: &[(&str, V)]) -> Process {
    let root = repo_root();
    let dir = root.join("tests/agents");
    let mut command = match name {
        "python-v1" | "python-v03" | "input" | "python-v1-grpc" => {
            let venv = if name == "python-v03" {
                "venv-a2a-v03"
            } else {
                "venv-a2a-v1"
            };
            let script = match name {
                "input" => "python-v1/input_agent.py",
                "python-v1-grpc" => "python-v1/grpc_agent.py",
                _ if name == "python-v1" => "python-v1/agent.py",
                _ => "python-v03/agent.py",
            };
            let python = root.join(".cache").join(venv).join("bin/python");
            assert!(
                python.exists(),
                "{} is missing: run tests/agents/setup.sh",
                python.display()
            );
            let mut command = Command::new(python);
            command.arg(dir.join(script));
            command
        }
        "js-v1" => {
            let mut command = Command::new("node");
            command.arg(dir.join("js-v1/agent.mjs"));
            command
        }
        other => panic!("no agent {other}"),
    };
    command
        .args(["--port", "0"])
        .env("DELAY_MS", "5")
        .current_dir(&dir);
    for (key, value) in env {
        command.env(key, value);
    }
    start(command, "READY ", name)
}

/// The JSON-RPC path of each real agent.
pub fn jsonrpc_path(agent: &str) -> &'static str {
    if agent == "js-v1" {
        "/a2a/jsonrpc"
    } else {
        "/"
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .no_proxy()
        .build()
        .expect("client")
}

/// A GET with the test client; a transport error is the test's failure.
pub async fn http_get(url: impl reqwest::IntoUrl) -> reqwest::Response {
    client().get(url).send().await.expect("GET")
}

/// A JSON-RPC call to `url` in A2A `version` ("1.0", "0.3"), its answer
/// as JSON.
pub async fn json_rpc(url: &str, version: &str, body: &Value) -> Value {
    let request = client().post(url).header("A2A-Version", version).json(body);
    let answer = request.send().await.expect("POST");
    answer.json().await.expect("a JSON-RPC answer")
}

/// The gateway's Prometheus text.
pub async fn metrics_of(gateway: &Process) -> String {
    http_get(format!("{}/metrics", gateway.url()))
        .await
        .text()
        .await
        .expect("metrics")
}

/// `check-config FILE`: whether it passed, and what it wrote on standard
/// error.
pub fn check_config(file: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .arg("check-config")
        .arg(file)
        .output()
        .expect("check-config runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `agents.a` of the gateway's `/readyz`, once it reports an error
/// (bounded: 5 s), or as it is then.
pub async fn agent_a_failing(gw: &Process) -> Value {
    let mut ready = Value::Null;
    for _ in 0..50 {
        ready = http_get(format!("{}/readyz", gw.url()))
            .await
            .json()
            .await
            .expect("JSON");
        if ready["agents"]["a"]["error"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ready["agents"]["a"].clone()
}

/// One AG-UI run of agent `name` with the user's `text` (a scenario's
/// word) in `thread`: its events (the client's 60 s timeout bounds it).
pub async fn agui_run(gw: &Process, name: &str, text: &str, thread: &str) -> Vec<Value> {
    let input = json!({ "threadId": thread, "runId": "r1",
        "messages": [{ "id": "u1", "role": "user", "content": text }] });
    let body = client()
        .post(format!("{}/v1/agents/{name}/agui", gw.url()))
        .json(&input)
        .send()
        .await
        .expect("the run's answer")
        .text()
        .await
        .expect("the run's body");
    agui_events(&body)
}

/// `agents.NAME.reachedBy` of the gateway's `/readyz`: the binding,
/// version and mode its runs take (the card is fetched for it).
pub async fn reached_by(gw: &Process, name: &str) -> Value {
    let ready: Value = http_get(format!("{}/readyz", gw.url()))
        .await
        .json()
        .await
        .expect("JSON");
    ready["agents"][name]["reachedBy"].clone()
}

/// The calls a test agent logged to its `CALL_LOG` file, in order: a
/// JSON-RPC method, `"<HTTP method> <path>"`, or a gRPC method's path
/// (`tests/agents/README.md`). None yet is an empty list.
pub fn calls_logged(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("a CALL_LOG line is not JSON ({e}): {line}"));
            entry["method"].as_str().expect("a method").to_owned()
        })
        .collect()
}

/// A fresh `CALL_LOG` path for `test` (nothing there yet).
pub fn call_log_path(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-gateway-calls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for call logs");
    let path = dir.join(format!("{test}.jsonl"));
    let _ = std::fs::remove_file(&path);
    path
}

/// Everything the `input` agent received (messages and cancels), in order.
pub async fn received_by(agent: &Process) -> Vec<Value> {
    http_get(format!("{}/received", agent.url()))
        .await
        .json()
        .await
        .expect("the input agent's log is JSON")
}

/// With `--max-streams 1`: a stream of `call("endless")` holds the one
/// place, `call("fixed")` gets 503 `GATEWAY_BUSY`, and once the holder is
/// dropped the place frees within 5 s; returns the body that then got it.
pub async fn one_place_refused_then_freed<F, Fut>(call: F) -> String
where
    F: Fn(&'static str) -> Fut,
    Fut: std::future::Future<Output = reqwest::Response>,
{
    use futures::StreamExt;
    let first = call("endless").await;
    assert_eq!(first.status(), 200);
    let mut first = first.bytes_stream();
    first.next().await.unwrap().unwrap();
    let busy = call("fixed").await;
    assert_eq!(busy.status(), 503);
    let json: Value = busy.json().await.unwrap();
    assert_eq!(json["error"]["code"], "GATEWAY_BUSY");
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let again = call("fixed").await;
        if again.status() == 200 {
            return again.text().await.unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place was never freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `data:` payloads of an SSE body (LF framing), as JSON.
pub fn agui_events(body: &str) -> Vec<Value> {
    assert!(!body.contains('\r'), "AG-UI output must use LF only");
    body.split("\n\n")
        .flat_map(|frame| frame.lines().filter_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}")))
        .collect()
}

/// The named events of a Hector-dialect body.
pub fn hector_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|frame| {
            let name = frame
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .expect("event name")
                .to_owned();
            let data = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("data");
            (name, serde_json::from_str(data).expect("JSON"))
        })
        .collect()
}

pub fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect()
}

/// Asserts the AG-UI run shape every client relies on, and returns the
/// terminal event.
pub fn assert_valid_run(events: &[Value]) -> &Value {
    assert_eq!(
        events.first().map(|e| &e["type"]),
        Some(&json!("RUN_STARTED")),
        "{events:#?}"
    );
    let last = events.last().expect("events");
    assert!(
        last["type"] == "RUN_FINISHED" || last["type"] == "RUN_ERROR",
        "last: {last}"
    );
    let terminals = events
        .iter()
        .filter(|e| e["type"] == "RUN_FINISHED" || e["type"] == "RUN_ERROR")
        .count();
    assert_eq!(terminals, 1, "exactly one terminal event");
    let starts = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_START")
        .count();
    let ends = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_END")
        .count();
    assert_eq!(starts, ends, "every text message is closed");
    last
}

// ---------------------------------------------------------------------------
// The fake agent (`a2a-fake-agent`), fault-injecting: what it does is chosen
// per request by the `X-Fake` header, which the gateway forwards like any
// other.

pub use a2a_fake_agent::{Agent as Fake, BURST, FIXED_SSE};

pub async fn fake_upstream() -> (SocketAddr, Fake) {
    let fake = Fake::start(a2a_fake_agent::Behaviour::Faults, 0)
        .await
        .expect("the fake agent starts");
    (fake.addr, fake)
}

/// A client that leaves mid-run: reads `response` until its text holds
/// `marker` (within 10 s), then drops it. Returns what it read.
pub async fn read_until_then_leave(response: reqwest::Response, marker: &str) -> String {
    use futures::StreamExt as _;
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    let read = async {
        while !seen.contains(marker) {
            let chunk = body.next().await.expect("more").expect("bytes");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .is_err()
    {
        panic!("no {marker} within 10 s: {seen}");
    }
    seen
}

// ---------------------------------------------------------------------------
// A loopback TCP proxy a test can cut: every connection open at the time of
// `cut` is closed at once (both sockets), later ones pass.

pub struct CuttableProxy {
    pub addr: SocketAddr,
    cut: Arc<Mutex<tokio_util::sync::CancellationToken>>,
}

impl CuttableProxy {
    pub async fn start(target: SocketAddr) -> CuttableProxy {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let cut = Arc::new(Mutex::new(tokio_util::sync::CancellationToken::new()));
        let tokens = cut.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let token = tokens.lock().expect("token").clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        () = token.cancelled() => {}
                    }
                });
            }
        });
        CuttableProxy { addr, cut }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Closes every connection open now.
    pub fn cut(&self) {
        let mut token = self.cut.lock().expect("token");
        token.cancel();
        *token = tokio_util::sync::CancellationToken::new();
    }
}

// ---------------------------------------------------------------------------
// Debian's redis-server on loopback, for the shared journal (the test
// command installs it).

/// A free loopback port (bound, then released for a server to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `redis-server` on a free loopback port, no persistence, ready (it
/// listens once it serves: nothing to load) when this returns.
pub fn redis_server() -> Process {
    redis_with(|port| vec!["--port".into(), port.to_string()])
}

/// `redis-server` on loopback with `args` (given a free port), no
/// persistence, listening when this returns.
pub fn redis_with(args: impl FnOnce(u16) -> Vec<String>) -> Process {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("agui-gateway-redis-{port}"));
    std::fs::create_dir_all(&dir).expect("a directory for redis");
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1"])
        .args(args(port))
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null())
        .spawn()
        .expect("redis-server runs (the test command installs Debian's redis-server)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    Process { child, port }
}

// ---------------------------------------------------------------------------
// CopilotKit with no runtime between (`tests/copilotkit/setup.sh` installs it).

/// One phase of `tests/copilotkit/direct.mjs` (`@copilotkit/core` 1.75.0
/// with `runtimeUrl` at the gateway, as one page load), with its options
/// (`--header`, `--tool get_weather`); its report line, checked free of
/// errors.
pub async fn core_with(
    gw: &Process,
    transport: &str,
    thread: &str,
    phase: &str,
    text: &str,
    more: &[&str],
) -> Value {
    let script = repo_root().join("tests/copilotkit/direct.mjs");
    let output = tokio::process::Command::new("node")
        .arg(script)
        .args(more)
        .args(["--runtime-url", &format!("{}/copilotkit", gw.url())])
        .args(["--agent", "default", "--thread", thread, "--phase", phase])
        .args(["--transport", transport, "--text", text])
        .args(["--timeout-ms", "20000"])
        .output()
        .await
        .expect("node runs (tests/copilotkit/setup.sh installs @copilotkit/core)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line: Value = stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(line["error"], Value::Null, "{line}");
    assert_eq!(line["runErrors"], json!([]), "{line}");
    assert_eq!(line["info"]["agents"], json!(["default"]), "{line}");
    line
}

pub use crate::proc::{cpu_time, peak_rss_mib, rss_kib};

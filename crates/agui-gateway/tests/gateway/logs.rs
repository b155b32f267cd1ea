//! The log as operators read it: one JSON object per line for shippers
//! (`--log-format json`), plain text without colour codes in a file.

use serde_json::Value;

use super::support::*;

/// Starts a demo gateway logging to a file, has it log a warning (a
/// refused browser origin) and returns what it wrote.
async fn log_of(extra: &[&str], name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("agui-gateway-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join(name);
    let mut args = vec!["demo", "--delay-ms", "5"];
    args.extend_from_slice(extra);
    let gw = gateway_logged(&args, &log);
    let refused = client()
        .request(reqwest::Method::OPTIONS, format!("{}/agui", gw.url()))
        .header("Origin", "https://evil.example.test")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert!(
        refused
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    drop(gw);
    std::fs::read_to_string(&log).unwrap()
}

#[tokio::test]
async fn json_logs_are_one_object_per_line() {
    let text = log_of(&["--log-format", "json"], "json.log").await;
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(!lines.is_empty(), "{text}");
    for line in &lines {
        assert!(
            line["timestamp"].is_string() && line["level"].is_string(),
            "{line}"
        );
        assert!(line["message"].is_string(), "{line}");
    }
    let warning = lines
        .iter()
        .find(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("CORS: origin not allowed"))
        })
        .unwrap_or_else(|| panic!("no CORS warning in {text}"));
    assert_eq!(warning["level"], "WARN");
    assert_eq!(warning["origin"], "https://evil.example.test");
    assert_eq!(warning["path"], "/agui");
    assert!(!text.contains('\u{1b}'), "colour codes in {text}");
}

#[tokio::test]
async fn text_logs_in_a_file_have_no_colour_codes() {
    let text = log_of(&[], "text.log").await;
    assert!(text.contains("CORS: origin not allowed"), "{text}");
    assert!(text.contains("evil.example.test"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour codes in {text}");
}

#[tokio::test]
async fn every_request_gets_one_access_line_when_its_answer_ends() {
    let (upstream, _fake) = fake_upstream().await;
    let dir = std::env::temp_dir().join(format!("agui-gateway-access-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("access.log");
    let gw = gateway_logged(
        &[
            "--upstream",
            &format!("http://{upstream}/"),
            "--log-format",
            "json",
        ],
        &log,
    );
    let stream = |scenario: &'static str| {
        client()
            .post(format!(
                "{}/v1/agents/default/stream?format=agui&token=secret",
                gw.url()
            ))
            .header("X-Fake", scenario)
            .body(r#"{"request": {"role": "user", "parts": [{"text": "Hello"}]}}"#)
            .send()
    };
    // A converted run, whole; one that ends in RUN_ERROR; a passthrough
    // call; one refused before any upstream call; one the client leaves.
    let whole = stream("fixed").await.unwrap().text().await.unwrap();
    let failed = stream("http500").await.unwrap().text().await.unwrap();
    assert!(failed.contains("UPSTREAM_HTTP_ERROR"), "{failed}");
    let card = http_get(format!("{}/.well-known/agent-card.json", gw.url())).await;
    assert_eq!(card.status(), 200);
    let missing = http_get(format!("{}/v1/agents/nobody/x", gw.url())).await;
    assert_eq!(missing.status(), 404);
    let mut left = stream("endless").await.unwrap();
    let _ = left.chunk().await.unwrap();
    drop(left);

    // Lines are written when answers end: wait (bounded) for the fifth.
    let lines = {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&log).unwrap();
            let lines: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|l| l["target"] == "agui_gateway::access")
                .collect();
            if lines.len() >= 5 || std::time::Instant::now() > deadline {
                break lines;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    assert_eq!(lines.len(), 5, "{lines:#?}");
    let whole_line = &lines[0];
    assert_eq!(whole_line["method"], "POST");
    assert_eq!(
        whole_line["path"], "/v1/agents/default/stream",
        "no query: {whole_line}"
    );
    assert_eq!(whole_line["status"], 200);
    assert_eq!(whole_line["agent"], "default");
    assert_eq!(whole_line["mode"], "converted");
    assert_eq!(whole_line["run_error"], "-");
    assert_eq!(whole_line["end"], "complete");
    assert_eq!(whole_line["bytes"], whole.len());
    assert_eq!(
        whole_line["events"],
        agui_events(&whole).len(),
        "{whole_line}"
    );
    assert!(whole_line["duration_ms"].is_u64());
    assert_eq!(lines[1]["run_error"], "UPSTREAM_HTTP_ERROR", "{}", lines[1]);
    assert_eq!(lines[2]["mode"], "card");
    assert_eq!(lines[2]["status"], 200);
    assert_eq!(lines[3]["status"], 404);
    assert_eq!(lines[3]["agent"], "-");
    assert_eq!(lines[4]["end"], "client_gone", "{}", lines[4]);
    assert!(!std::fs::read_to_string(&log).unwrap().contains("secret"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every line the gateway writes under `--log-format json`, on standard
/// output as on standard error, is a JSON object: from the first
/// (`listening on`, the demo's commands) to the last.
#[tokio::test]
async fn json_logs_are_json_from_the_first_line() {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("agui-gateway-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("first-lines.log");
    let mut child = std::process::Command::new(gateway_binary())
        .args(["demo", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .env("AGUI_GATEWAY_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // The banner ends with the way to stop it.
    while !lines
        .iter()
        .any(|l: &String| l.contains("stop with Ctrl-C"))
    {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(_) => panic!("no banner within 30 s: {lines:?}"),
        }
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log).unwrap();
    let all: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .chain(logged.lines())
        .collect();
    for line in &all {
        let parsed: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert!(parsed["message"].is_string(), "{line}");
    }
    let first: Value = serde_json::from_str(&lines[0]).unwrap();
    let message = first["message"].as_str().unwrap();
    assert!(
        message.starts_with("agui-gateway listening on http://127.0.0.1:"),
        "{message}"
    );
    assert_eq!(first["level"], "INFO");
}

/// Waits (bounded) for the process to exit; how long it took.
/// Waits for the gateway to exit and returns how long after `since` (the
/// signal) it did. Measured from the signal, not from this call, so the time
/// the test itself spent in between (slow on a loaded CI machine) cannot
/// shorten or lengthen what is asserted.
fn exit_within(
    gw: &mut Process,
    since: std::time::Instant,
    limit: std::time::Duration,
) -> (std::time::Duration, Option<i32>) {
    loop {
        if let Ok(Some(status)) = gw.child.try_wait() {
            return (since.elapsed(), status.code());
        }
        assert!(since.elapsed() < limit, "still running after {limit:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends the signal and returns when it was sent.
fn signal(gw: &Process, name: &str) -> std::time::Instant {
    let sent = std::time::Instant::now();
    let _ = std::process::Command::new("kill")
        .args([&format!("-{name}"), &gw.child.id().to_string()])
        .status();
    sent
}

#[tokio::test]
async fn an_idle_gateway_exits_at_once_and_a_second_interrupt_ends_a_drain() {
    // Idle (a kept-alive connection open, no stream): out at once after
    // either signal, not after the 10 s grace. The bounds leave room for a
    // loaded 2-core CI machine and still tell the two apart.
    for name in ["INT", "TERM"] {
        let mut gw = gateway(&["demo", "--delay-ms", "1"]);
        let health = client()
            .get(format!("{}/healthz", gw.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), 200);
        let sent = signal(&gw, name);
        let (took, code) = exit_within(&mut gw, sent, std::time::Duration::from_secs(9));
        println!("idle, SIG{name}: exited after {took:?}");
        assert!(
            took < std::time::Duration::from_secs(4),
            "SIG{name}: {took:?}"
        );
        assert_eq!(code, Some(0), "SIG{name}");
    }
    // With --drain-delay-secs, requests are still taken that long.
    let (agent, _fake) = fake_upstream().await;
    // Two seconds, so the two requests below land inside it on a slow machine.
    let mut gw = gateway_for(&format!("http://{agent}/"), &["--drain-delay-secs", "2"]);
    let sent = signal(&gw, "TERM");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let ready = client()
        .get(format!("{}/readyz", gw.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503, "not ready, and saying so");
    // Requests still reach it while balancers drop the pod.
    let agents = http_get(format!("{}/v1/agents", gw.url())).await;
    assert_eq!(agents.status(), 200, "served during the drain delay");
    let (took, _) = exit_within(&mut gw, sent, std::time::Duration::from_secs(9));
    assert!(took >= std::time::Duration::from_secs(2), "{took:?}");
    assert!(took < std::time::Duration::from_secs(6), "{took:?}");

    // A stream open: the drain waits for it; a second Ctrl-C does not.
    let mut gw = gateway(&["demo", "--delay-ms", "3000"]);
    let response = client()
        .post(format!("{}/agui", gw.url()))
        .json(&serde_json::json!({ "threadId": "t", "runId": "r",
            "messages": [{ "id": "u", "role": "user", "content": "Weather in Paris?" }] }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    use futures::StreamExt;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), body.next()).await;
    signal(&gw, "INT");
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert!(
        gw.child.try_wait().unwrap().is_none(),
        "the open stream holds the drain"
    );
    let sent = signal(&gw, "INT");
    let (took, code) = exit_within(&mut gw, sent, std::time::Duration::from_secs(9));
    assert!(took < std::time::Duration::from_secs(4), "{took:?}");
    assert_eq!(code, Some(130));
}

/// Under the JSON log a gateway that cannot start says so as a log object
/// (not anyhow's plain `Error: …`), and exits non-zero.
#[test]
fn a_failure_to_start_is_a_json_line_too() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let output = std::process::Command::new(gateway_binary())
        .args(["--upstream", "http://127.0.0.1:9/", "--log-format", "json"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("AGUI_GATEWAY_LOG", "info")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let last = lines
        .last()
        .unwrap_or_else(|| panic!("nothing logged: {stderr}"));
    assert_eq!(last["level"], "ERROR", "{last}");
    assert!(
        last["error"].as_str().unwrap().contains("cannot listen"),
        "{last}"
    );
    drop(taken);
}

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

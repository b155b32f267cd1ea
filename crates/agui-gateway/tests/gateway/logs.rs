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

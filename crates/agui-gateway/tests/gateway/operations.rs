//! Operations: health, readiness, metrics, configuration checks and the
//! stream limit.

use serde_json::Value;

use crate::failures::failing_run;
use crate::support::*;
use crate::{SEED_BODY, fake_run};

#[tokio::test]
async fn health_readiness_metrics_and_config_checks() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let health: Value = client()
        .get(format!("{}/healthz", gw.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "ok");
    let ready = client()
        .get(format!("{}/readyz", gw.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let _ = failing_run(&gw, "http500").await;
    let metrics = client()
        .get(format!("{}/metrics", gw.url()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for needle in [
        "agui_gateway_active_streams{agent=\"default\"} 0",
        "agui_gateway_events_total{agent=\"default\",type=\"RUN_STARTED\"}",
        "agui_gateway_errors_total{agent=\"default\",kind=\"UPSTREAM_HTTP_ERROR\"} 1",
        "agui_gateway_requests_total{agent=\"default\",route=\"converted\"}",
        "agui_gateway_upstream_latency_seconds_count{agent=\"default\"}",
        "agui_gateway_upstream_latency_seconds_bucket{agent=\"default\",le=\"600\"}",
        "agui_gateway_stream_duration_seconds_bucket{agent=\"default\",le=\"600\"}",
        // The process's own, from the prometheus crate's collector.
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
    ] {
        assert!(metrics.contains(needle), "{needle} missing from\n{metrics}");
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert!(
        metrics.contains("agui_gateway_agent_up{agent=\"default\"} 1"),
        "{metrics}"
    );
    // An agent that is down is reported, but the process stays ready: every
    // replica fronts the same agents, and taking them all out would refuse
    // the agents that work too.
    let gw = gateway_for(&format!("http://{closed}/"), &[]);
    let ready = http_get(format!("{}/readyz", gw.url())).await;
    assert_eq!(ready.status(), 200);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(ready["agents"]["default"]["ready"], false, "{ready}");
    let listed: Value = http_get(format!("{}/v1/agents", gw.url()))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["agents"][0]["ready"], false, "{listed}");
    assert!(listed["agents"][0]["error"].is_string(), "{listed}");
    assert!(
        !listed.to_string().contains(&closed.to_string()),
        "{listed}"
    );
    let metrics = http_get(format!("{}/metrics", gw.url()))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("agui_gateway_agent_up{agent=\"default\"} 0"),
        "{metrics}"
    );

    // An upstream without a scheme is refused at start, not at the first call.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .args(["--upstream", "localhost:9999"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("an http://, https://, grpc:// or grpcs:// URL"),
        "{output:?}"
    );

    let dir = std::env::temp_dir().join(format!("agui-gateway-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[agents.a]\nupstream = \"http://127.0.0.1:1/\"\noutput = \"xml\"\n",
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .arg("check-config")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("bad.toml:3: agents.a.output"),
        "{output:?}"
    );
    // Zero where zero means nothing works (not "off") is an error, with its line.
    for (text, says) in [
        (
            "keepalive_secs = 0\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\n",
            "zero.toml:1: keepalive_secs: must be at least 1",
        ),
        (
            "[limits]\nmax_streams = 10\nwrite_timeout_secs = 0\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\n",
            "zero.toml:3: limits.write_timeout_secs: must be at least 1",
        ),
        (
            "[agents.a]\nupstream = \"http://127.0.0.1:1/\"\nidle_timeout_secs = 0\n",
            "zero.toml:3: agents.a.idle_timeout_secs: must be at least 1",
        ),
    ] {
        let zero = dir.join("zero.toml");
        std::fs::write(&zero, text).unwrap();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
            .arg("check-config")
            .arg(&zero)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{text}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(says),
            "{text}: {output:?}"
        );
    }
    let good = dir.join("good.toml");
    let good_config = format!(
        "listen = \"127.0.0.1:0\"\n[cors]\nallow_origins = [\"https://app.example.com\"]\n[agents.assistant]\nupstream = \"http://{addr}/\"\noutput = \"hector\"\n"
    );
    std::fs::write(&good, good_config).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .arg("check-config")
        .arg(&good)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // A gateway from the file, its agent speaking the Hector dialect by default.
    let gw = gateway(&["--config", good.to_str().unwrap()]);
    let text = client()
        .post(format!(
            "{}/v1/agents/assistant/stream?format=agui",
            gw.url()
        ))
        .body(SEED_BODY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        hector_events(&text)
            .iter()
            .any(|(n, _)| n == "task_complete"),
        "{text}"
    );
    // CORS: a browser's preflight, and no header for an origin not allowed.
    let preflight = client()
        .request(reqwest::Method::OPTIONS, format!("{}/agui", gw.url()))
        .header("Origin", "https://app.example.com")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{preflight:?}");
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let other = client()
        .get(format!("{}/healthz", gw.url()))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn the_stream_limit_refuses_with_503_and_frees_places_as_streams_end() {
    let (addr, _fake) = fake_upstream().await;
    // A detached run keeps its place: without a grace, a dropped client
    // frees it.
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--max-streams", "1", "--detach-grace-secs", "0"],
    );
    let freed = one_place_refused_then_freed(|scenario| fake_run(&gw, scenario)).await;
    assert_eq!(
        assert_valid_run(&agui_events(&freed))["type"],
        "RUN_FINISHED"
    );
    // The refusals count under the agent that was asked for (one, or more
    // while the place was being freed).
    let metrics = metrics_of(&gw).await;
    let busy = metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix("agui_gateway_errors_total{agent=\"default\",kind=\"GATEWAY_BUSY\"} ")
        })
        .and_then(|count| count.parse::<u64>().ok());
    assert!(busy.is_some_and(|n| n >= 1), "{metrics}");
}

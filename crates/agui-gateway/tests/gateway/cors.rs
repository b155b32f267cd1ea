//! Browser access (CORS): what a browser asks before a call (the
//! preflight) and what it needs on the answer, for exact origins, patterns
//! and `*`, with credentials; refused origins get nothing and are logged;
//! settings a browser would refuse are refused at start.

use reqwest::Method;

use super::support::*;

const RUN: &str = r#"{"threadId":"t-cors","runId":"r-cors","messages":[{"id":"u1","role":"user","content":"Hello"}]}"#;

async fn preflight(gw: &Process, origin: &str, headers: &str) -> reqwest::Response {
    client()
        .request(Method::OPTIONS, format!("{}/agui", gw.url()))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", headers)
        .send()
        .await
        .unwrap()
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

fn varies_by_origin(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get_all("vary")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case("origin"))
}

#[tokio::test]
async fn a_page_on_an_allowed_origin_streams_a_run_with_credentials() {
    let dir = std::env::temp_dir().join(format!("agui-gateway-cors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("gateway.log");
    let gw = gateway_logged(
        &[
            "demo",
            "--delay-ms",
            "5",
            "--cors-origin",
            "https://app.example.test,http://*.dev.example.test:5173",
            "--cors-credentials",
        ],
        &log,
    );

    // The preflight of a call with a bearer token: the header names are
    // echoed (`*` would not cover Authorization), credentials allowed.
    let answer = preflight(
        &gw,
        "https://app.example.test",
        "authorization,content-type",
    )
    .await;
    assert!(answer.status().is_success(), "{answer:?}");
    assert_eq!(
        header(&answer, "access-control-allow-origin"),
        Some("https://app.example.test")
    );
    assert_eq!(
        header(&answer, "access-control-allow-credentials"),
        Some("true")
    );
    assert_eq!(
        header(&answer, "access-control-allow-headers"),
        Some("authorization,content-type")
    );
    assert_eq!(
        header(&answer, "access-control-allow-methods"),
        Some("POST")
    );
    assert_eq!(header(&answer, "access-control-max-age"), Some("600"));
    assert!(varies_by_origin(&answer), "{answer:?}");

    // The run, from an origin the pattern covers.
    let origin = "http://ui.dev.example.test:5173";
    let run = client()
        .post(format!("{}/agui", gw.url()))
        .header("Origin", origin)
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer page-token")
        .body(RUN)
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 200);
    assert_eq!(header(&run, "access-control-allow-origin"), Some(origin));
    assert_eq!(
        header(&run, "access-control-allow-credentials"),
        Some("true")
    );
    assert_eq!(
        header(&run, "access-control-expose-headers"),
        Some("retry-after")
    );
    assert!(varies_by_origin(&run));
    let events = agui_events(&run.text().await.unwrap());
    assert_valid_run(&events);
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{events:?}");

    // Refused: another origin, another port, a look-alike, the pattern's
    // domain itself, `null`. No CORS header, so the browser stops there.
    for refused in [
        "https://evil.example.test",
        "http://ui.dev.example.test:5174",
        "https://app.example.test.evil.test",
        "http://dev.example.test:5173",
        "null",
    ] {
        let answer = preflight(&gw, refused, "content-type").await;
        assert_eq!(
            header(&answer, "access-control-allow-origin"),
            None,
            "{refused}"
        );
        assert_eq!(
            header(&answer, "access-control-allow-credentials"),
            None,
            "{refused}"
        );
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("CORS: origin not allowed") && logged.contains("evil.example.test"),
        "{logged}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn any_origin_and_a_preflight_needs_no_credential() {
    let (upstream, _fake) = fake_upstream().await;
    let dir = std::env::temp_dir().join(format!("agui-gateway-cors-any-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys");
    std::fs::write(&keys, "page:k-123\n").unwrap();
    let gw = gateway_for(
        &format!("http://{upstream}/"),
        &[
            "--cors-origin",
            "*",
            "--api-keys-file",
            keys.to_str().unwrap(),
        ],
    );
    // A preflight carries no credential; it is answered all the same.
    let answer = preflight(
        &gw,
        "https://anywhere.example.test",
        "x-api-key,content-type",
    )
    .await;
    assert!(answer.status().is_success(), "{answer:?}");
    assert_eq!(header(&answer, "access-control-allow-origin"), Some("*"));
    assert_eq!(header(&answer, "access-control-allow-credentials"), None);
    // The call without its key is refused, readably for the page.
    let refused = client()
        .post(format!("{}/agui", gw.url()))
        .header("Origin", "https://anywhere.example.test")
        .body(RUN)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(header(&refused, "access-control-allow-origin"), Some("*"));
    // With it, the run streams.
    let run = client()
        .post(format!("{}/agui", gw.url()))
        .header("Origin", "https://anywhere.example.test")
        .header("X-API-Key", "k-123")
        .body(RUN)
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 200);
    assert_eq!(header(&run, "access-control-allow-origin"), Some("*"));
    assert_valid_run(&agui_events(&run.text().await.unwrap()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn settings_a_browser_would_refuse_are_refused_at_start() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
            .args(args)
            .output()
            .unwrap()
    };
    for (args, says) in [
        (
            &["demo", "--cors-origin", "*", "--cors-credentials"][..],
            "--cors-credentials: credentials cannot go with the origin \"*\"",
        ),
        (
            &["demo", "--cors-origin", "https://app.example.test/"][..],
            "--cors-origin \"https://app.example.test/\": an origin has no path",
        ),
        (
            &[
                "--upstream",
                "http://127.0.0.1:9/",
                "--cors-origin",
                "app.example.test",
            ][..],
            "no scheme",
        ),
    ] {
        let output = run(args);
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }

    let dir = std::env::temp_dir().join(format!("agui-gateway-cors-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (body, says) in [
        (
            "[cors]\nallow_origins = [\"*\"]\nallow_credentials = true\n",
            "cors.toml:3: cors.allow_credentials: credentials cannot go with",
        ),
        (
            "[cors]\nallow_origins = [\n  \"https://ok.example.test\",\n  \"https://*.test\",\n]\n",
            "cors.toml:4: cors.allow_origins: \"https://*.test\"",
        ),
        (
            "[cors]\nallow_origins = [\"https://ok.example.test\"]\nexpose_headers = [\"bad name\"]\n",
            "cors.toml:3: cors.expose_headers: \"bad name\" is no header name",
        ),
    ] {
        let file = dir.join("cors.toml");
        std::fs::write(
            &file,
            format!("{body}[agents.a]\nupstream = \"http://127.0.0.1:9/\"\n"),
        )
        .unwrap();
        let output = run(&["check-config", file.to_str().unwrap()]);
        assert!(!output.status.success(), "{body}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{body}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

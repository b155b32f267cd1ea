//! Configuration as an operator writes it: `check-config` refuses each
//! invalid value naming its line (or the variable that set it); keys come
//! from the environment too; secrets are referenced, not written; a flag
//! that `--config` would make meaningless is an error, not silence.

use std::path::PathBuf;
use std::process::{Command, Output};

use super::support::*;

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agui-gateway-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `check-config` on `text` (as `gw.toml`) with `env` added.
fn check(text: &str, env: &[(&str, &str)]) -> Output {
    let file = dir().join("gw.toml");
    std::fs::write(&file, text).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agui-gateway"));
    command.arg("check-config").arg(&file);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn refused(text: &str, env: &[(&str, &str)], says: &str) {
    let output = check(text, env);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "accepted:\n{text}\n{env:?}");
    assert!(
        stderr.contains(says),
        "{text}\n{env:?}\nwanted {says:?}, got {stderr}"
    );
}

const AGENT: &str = "[agents.a]\nupstream = \"http://127.0.0.1:1/\"\n";

#[test]
fn check_config_names_the_line_of_each_invalid_value() {
    let cases: Vec<(String, &str)> = vec![
        // Zero timeouts and counts.
        (
            format!("keepalive_secs = 0\n{AGENT}"),
            "gw.toml:1: keepalive_secs: must be at least 1",
        ),
        (
            format!("{AGENT}idle_timeout_secs = 0\n"),
            "gw.toml:3: agents.a.idle_timeout_secs: must be at least 1",
        ),
        (
            format!("{AGENT}connect_timeout_secs = 0\n"),
            "gw.toml:3: agents.a.connect_timeout_secs: must be at least 1",
        ),
        (
            format!("[limits]\nheader_read_timeout_secs = 0\n{AGENT}"),
            "gw.toml:2: limits.header_read_timeout_secs: must be at least 1",
        ),
        (
            format!("[limits]\njournal_ttl_secs = 0\n{AGENT}"),
            "gw.toml:2: limits.journal_ttl_secs: must be at least 1",
        ),
        // The journal's access files: the key at fault, at its table.
        (
            format!(
                "journal = \"rediss://r:6380/0\"\n{AGENT}[journal_tls]\nca_file = \"/no/such/ca.pem\"\n"
            ),
            "gw.toml:4: journal_tls.ca_file: /no/such/ca.pem",
        ),
        (
            format!("journal_password_file = \"/no/such/password\"\n{AGENT}"),
            "gw.toml:1: journal_password_file: /no/such/password",
        ),
        // Header names and values, each on its own line.
        (
            format!("{AGENT}[agents.a.headers]\nX-Ok = \"1\"\n\"X Bad Name\" = \"v\"\n"),
            "gw.toml:5: agents.a.headers: \"X Bad Name\" is not a header name",
        ),
        (
            format!("{AGENT}[agents.a.headers]\nX-Ok = \"1\"\nX-Token = \"line\\nbreak\"\n"),
            "gw.toml:5: agents.a.headers.X-Token: the value is not a valid header value",
        ),
        (
            format!("{AGENT}headers_env = {{ \"X-Key\" = \"NOT A NAME\" }}\n"),
            "gw.toml:3: agents.a.headers_env.X-Key: \"NOT A NAME\" is not an environment variable's name",
        ),
        // How an agent is reached.
        (
            format!("{AGENT}binding = \"websocket\"\n"),
            "gw.toml:3: agents.a.binding: \"websocket\" is not one of auto, jsonrpc, http+json, grpc",
        ),
        (
            format!("{AGENT}a2a_version = \"1.0\"\nmode = \"sometimes\"\n"),
            "gw.toml:4: agents.a.mode: \"sometimes\" is not one of auto, stream, poll",
        ),
        // Origins without a scheme.
        (
            format!(
                "[cors]\nallow_origins = [\n  \"https://ok.example.com\",\n  \"app.example.com\",\n]\n{AGENT}"
            ),
            "gw.toml:4: cors.allow_origins: \"app.example.com\"",
        ),
        (
            format!("{AGENT}allowed_origins = [\"cdn.example.com\"]\n"),
            "gw.toml:3: agents.a.allowed_origins: \"cdn.example.com\" is not an origin",
        ),
        // URLs need a scheme.
        (
            "[agents.a]\nupstream = \"localhost:9999\"\n".to_owned(),
            "gw.toml:2: agents.a.upstream",
        ),
        (
            format!("public_url = \"gateway.example.com\"\n{AGENT}"),
            "gw.toml:1: public_url",
        ),
        (
            format!("otlp_endpoint = \"collector:4318\"\n{AGENT}"),
            "gw.toml:1: otlp_endpoint",
        ),
        (
            format!("journal = \"localhost:6379\"\n{AGENT}"),
            "gw.toml:1: journal",
        ),
        // Agent names, and a default when there are several.
        (
            "[agents.\"a b\"]\nupstream = \"http://127.0.0.1:1/\"\n".to_owned(),
            "gw.toml:2: agents.\"a b\": a name is letters",
        ),
        (
            format!("{AGENT}[agents.b]\nupstream = \"http://127.0.0.1:2/\"\n"),
            "gw.toml:4: 2 agents and no default_agent",
        ),
        (
            format!("default_agent = \"c\"\n{AGENT}"),
            "gw.toml:1: default_agent: no agent named \"c\"",
        ),
        // A secret referenced but not there.
        (
            format!(
                "{AGENT}[agents.a.headers]\nAuthorization = \"Bearer ${{AGUI_TEST_UNSET_TOKEN}}\"\n"
            ),
            "gw.toml:4: ${AGUI_TEST_UNSET_TOKEN}: the environment variable is not set",
        ),
        (
            format!(
                "{AGENT}[agents.a.headers]\nAuthorization = \"${{file:/nonexistent/token}}\"\n"
            ),
            "gw.toml:4: ${file:/nonexistent/token}: cannot read",
        ),
        (
            format!("unknown_key = 1\n{AGENT}"),
            "gw.toml:1: unknown field `unknown_key`",
        ),
    ];
    for (text, says) in &cases {
        refused(text, &[], says);
    }
    // A header value is never quoted back (it may be a secret).
    let output = check(
        &format!("{AGENT}[agents.a.headers]\nX-Token = \"s3cret\\nzzkq\"\n"),
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        !stderr.contains("s3cret") && !stderr.contains("zzkq"),
        "{stderr}"
    );
    // Nor is a Redis URL with its password.
    let output = check(&format!("journal = \"redis://:hunter2@\"\n{AGENT}"), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("gw.toml:1: journal"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    // A value the environment sets is named by its variable.
    refused(
        AGENT,
        &[("AGUI_GATEWAY__LIMITS__MAX_STREAMS", "0")],
        "environment variable AGUI_GATEWAY__LIMITS__MAX_STREAMS: limits.max_streams: must be at least 1",
    );
    refused(
        AGENT,
        &[("AGUI_GATEWAY__AGENTS__A__UPSTREAM", "ftp://x/")],
        "environment variable AGUI_GATEWAY__AGENTS__A__UPSTREAM: agents.a.upstream",
    );
    refused(
        AGENT,
        &[("AGUI_GATEWAY__NO_SUCH_KEY", "1")],
        "environment variable AGUI_GATEWAY__NO_SUCH_KEY: unknown field `no_such_key`",
    );
}

#[tokio::test]
async fn keys_and_secrets_come_from_the_environment() {
    let (upstream, fake) = fake_upstream().await;
    let token = dir().join("token");
    std::fs::write(&token, "from-a-file\n").unwrap();
    // No file at all: the agents, a limit and a secret header from
    // variables; another header's secret read from a file.
    let mut command = Command::new(env!("CARGO_BIN_EXE_agui-gateway"));
    command
        .args(["--listen", "127.0.0.1:0"])
        .env("AGUI_GATEWAY_LOG", "warn")
        .env("AGUI_GATEWAY__AGENTS__DEFAULT__UPSTREAM", format!("http://{upstream}/"))
        .env("AGUI_GATEWAY__LIMITS__MAX_STREAMS", "3")
        .env("AGUI_GATEWAY__INSPECTOR", "true")
        .env(
            "AGUI_GATEWAY__AGENTS__DEFAULT__HEADERS",
            format!(
                "{{ \"X-Api-Key\" = \"k-${{AGUI_TEST_SECRET}}\", \"X-File\" = \"${{file:{}}}\", \"X-Literal\" = \"$${{kept}}\" }}",
                token.display()
            ),
        )
        .env("AGUI_TEST_SECRET", "s3cret");
    let gw = start_within(
        command,
        "listening on ",
        "the gateway",
        std::time::Duration::from_secs(30),
    );
    let response = client()
        .post(format!("{}/v1/agents/default/stream?format=agui", gw.url()))
        .header("X-Fake", "fixed")
        .body(super::SEED_BODY)
        .send()
        .await
        .unwrap();
    assert!(response.text().await.unwrap().contains("RUN_FINISHED"));
    let headers = fake.log.lock().unwrap().headers.clone();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        header("x-api-key").as_deref(),
        Some("k-s3cret"),
        "{headers:?}"
    );
    assert_eq!(
        header("x-file").as_deref(),
        Some("from-a-file"),
        "{headers:?}"
    );
    assert_eq!(
        header("x-literal").as_deref(),
        Some("${kept}"),
        "{headers:?}"
    );
    // The inspector, switched on by a variable.
    let page = http_get(format!("{}/inspect", gw.url())).await;
    assert_eq!(page.status(), 200);

    // A file's key is overridden by its variable.
    let file = dir().join("override.toml");
    std::fs::write(
        &file,
        format!(
            "listen = \"127.0.0.1:1\"\n[limits]\nmax_streams = 5\n[agents.a]\nupstream = \"http://{upstream}/\"\n"
        ),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
        .arg("check-config")
        .arg(&file)
        .env("AGUI_GATEWAY__LISTEN", "\"127.0.0.1:9999\"")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("listen 127.0.0.1:9999"),
        "{output:?}"
    );
}

/// Flags that only mean something for `--upstream` are refused with
/// `--config` rather than ignored.
#[test]
fn flags_the_file_would_override_are_errors() {
    let file = dir().join("flags.toml");
    std::fs::write(&file, AGENT).unwrap();
    for flag in [
        &["--name", "other"][..],
        &["--format", "hector"],
        &["--idle-timeout-secs", "5"],
        &["--cancel-on-disconnect"],
        &["--forward-client-headers", "cookie"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_agui-gateway"))
            .arg("--config")
            .arg(&file)
            .args(flag)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flag:?} was accepted");
        assert!(
            stderr.contains("cannot be used with") && stderr.contains(flag[0]),
            "{flag:?}: {stderr}"
        );
    }
}

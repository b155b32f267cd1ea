//! Configuration reloads, on the gateway binary in front of the fake
//! agent: SIGHUP and a change of the `--config` file (also as a Kubernetes
//! ConfigMap changes it, a `..data` symlink swapped) apply to new
//! requests, a run in flight finishes on its configuration, a file
//! `check-config` refuses is refused with its line and counted while the
//! last good configuration serves on, and what needs a restart is named.
//! Every wait is bounded.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::SEED_BODY;
use crate::support::*;

fn dir(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("agui-gateway-reload-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A configuration of these agents, each in front of the fake at `up`.
fn config(up: &str, agents: &[&str], extra: &str) -> String {
    let mut text = format!("default_agent = \"a\"\n{extra}");
    for name in agents {
        text.push_str(&format!("[agents.{name}]\nupstream = \"http://{up}/\"\n"));
    }
    text
}

fn hang_up(gw: &Process) {
    let status = Command::new("kill")
        .args(["-HUP", &gw.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// The fake's `scenario` through agent `name`, as a converted stream.
async fn run(gw: &Process, name: &str, scenario: &str) -> reqwest::Response {
    client()
        .post(format!("{}/v1/agents/{name}/stream?format=agui", gw.url()))
        .header("X-Fake", scenario)
        .body(SEED_BODY)
        .send()
        .await
        .expect("an answer")
}

/// Whether agent `name` is served: a whole run of it.
async fn served(gw: &Process, name: &str) -> bool {
    let answer = run(gw, name, "fixed").await;
    if answer.status() != 200 {
        return false;
    }
    let events = agui_events(&answer.text().await.unwrap());
    assert_valid_run(&events)["type"] == "RUN_FINISHED"
}

/// Waits (at most `within`) until `agent`'s being served is `wanted`.
async fn until_served(gw: &Process, name: &str, wanted: bool, within: Duration) -> Duration {
    let start = Instant::now();
    while served(gw, name).await != wanted {
        assert!(
            start.elapsed() < within,
            "agent {name} served: {} after {within:?}",
            !wanted
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    start.elapsed()
}

/// `agui_gateway_config_reloads_total{result}`.
async fn reloads(gw: &Process, result: &str) -> u64 {
    let text = metrics_of(gw).await;
    let series = format!("agui_gateway_config_reloads_total{{result=\"{result}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(series.as_str()))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

/// Waits (at most `within`) until the reloads counted are `ok` and `error`.
async fn until_counted(gw: &Process, ok: u64, error: u64, within: Duration) {
    until_counted_in(gw, ok..=ok, error..=error, within).await;
}

/// `until_counted`, for counts within ranges: between a file written and
/// the SIGHUP sent, the watcher may have read the file, and the SIGHUP
/// then reads it again (the same file, the same result).
async fn until_counted_in(
    gw: &Process,
    ok: RangeInclusive<u64>,
    error: RangeInclusive<u64>,
    within: Duration,
) {
    let start = Instant::now();
    loop {
        let counted = (reloads(gw, "ok").await, reloads(gw, "error").await);
        if ok.contains(&counted.0) && error.contains(&counted.1) {
            return;
        }
        assert!(
            start.elapsed() < within,
            "reloads (ok, error) {counted:?}, wanted {:?}",
            (ok, error)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (at most 5 s) for the log to hold `text`.
fn until_logged(log: &Path, text: &str) -> String {
    let start = Instant::now();
    loop {
        let logged = std::fs::read_to_string(log).unwrap_or_default();
        if logged.contains(text) {
            return logged;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{text:?} not logged:\n{logged}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What `check-config` says of `file`, as the reload must log it.
fn refusal_of(file: &Path) -> String {
    let (passed, said) = check_config(file);
    assert!(!passed, "check-config passed {}", file.display());
    // Its first line (a backtrace may follow when RUST_BACKTRACE is set).
    let first = said.lines().next().unwrap_or_default();
    first.trim_start_matches("Error: ").to_owned()
}

/// A gateway started on a configuration file of agent `a`, logging to a
/// file: what a reload test changes.
struct Started {
    _fake: Fake,
    /// The fake agent's address, for the configurations written next.
    up: String,
    file: PathBuf,
    log: PathBuf,
    gw: Process,
}

async fn started(test: &str) -> Started {
    let (addr, fake) = fake_upstream().await;
    let up = addr.to_string();
    let dir = dir(test);
    let file = dir.join("gw.toml");
    std::fs::write(&file, config(&up, &["a"], "")).unwrap();
    let log = dir.join("gateway.log");
    let gw = gateway_logged(&["--config", file.to_str().unwrap()], &log);
    Started {
        _fake: fake,
        up,
        file,
        log,
        gw,
    }
}

#[tokio::test]
async fn sighup_serves_an_added_agent_while_a_run_in_flight_finishes_on_its_configuration() {
    let Started {
        _fake,
        up,
        file,
        log,
        gw,
    } = started("sighup").await;
    assert!(served(&gw, "a").await);
    assert!(!served(&gw, "b").await);

    // A run of `a` (8 chunks 200 ms apart) is streaming across the reload.
    let mut body = run(&gw, "a", "drip").await.bytes_stream();
    let mut text = String::new();
    while !text.contains("TEXT_MESSAGE_CONTENT") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("the run's first chunk within 5 s")
            .expect("more body")
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    // `a` changed (it is built again), `b` added, and the journal changed:
    // that needs a restart, and is named; the rest applies.
    let changed = config(&up, &["a", "b"], "journal = \"off\"\n")
        .replace("[agents.a]\n", "[agents.a]\nidle_timeout_secs = 30\n");
    std::fs::write(&file, changed).unwrap();
    hang_up(&gw);
    let took = until_served(&gw, "b", true, Duration::from_secs(3)).await;
    eprintln!("agent b served {took:?} after SIGHUP");
    let logged = until_logged(&log, "needs a restart: journal");
    assert!(logged.contains("configuration reloaded ("), "{logged}");
    assert!(logged.contains("agents added: b"), "{logged}");
    assert!(logged.contains("agents changed: a"), "{logged}");

    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(chunk) = body.next().await {
            text.push_str(std::str::from_utf8(&chunk.expect("a clean body")).unwrap());
        }
    })
    .await;
    assert!(rest.is_ok(), "the run did not end within 10 s");
    let events = agui_events(&text);
    assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED", "{text}");
    assert_eq!(text_of(&events), "[1][2][3][4][5][6][7]");
    // Runs of the new configuration go on as before: the journal is kept.
    assert!(served(&gw, "a").await);
    until_counted_in(&gw, 1..=2, 0..=0, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_broken_file_is_refused_with_its_line_and_the_last_good_configuration_serves_on() {
    let Started {
        _fake,
        up,
        file,
        log,
        gw,
    } = started("broken").await;
    until_counted(&gw, 0, 0, Duration::from_secs(1)).await;

    let broken = config(&up, &["a", "b"], "").replace(
        "[agents.b]\nupstream = \"http://",
        "[agents.b]\nupstream = \"ftp://",
    );
    std::fs::write(&file, broken).unwrap();
    let refusal = refusal_of(&file);
    assert!(refusal.contains("gw.toml:"), "{refusal}");
    hang_up(&gw);
    until_counted_in(&gw, 0..=0, 1..=2, Duration::from_secs(3)).await;
    let logged = until_logged(&log, &refusal);
    assert!(logged.contains("the last good configuration serves on"));
    assert!(served(&gw, "a").await);
    assert!(!served(&gw, "b").await);

    // Mended, it applies.
    std::fs::write(&file, config(&up, &["a", "b"], "")).unwrap();
    hang_up(&gw);
    until_served(&gw, "b", true, Duration::from_secs(3)).await;
    until_counted_in(&gw, 1..=2, 1..=2, Duration::from_secs(1)).await;
}

/// The file as a Kubernetes ConfigMap volume holds it: `gw.toml` a link
/// to `..data/gw.toml`, `..data` a link to a versioned directory, swapped
/// by a rename when the ConfigMap changes.
fn configmap_update(dir: &Path, version: u32, text: &str) {
    let versioned = dir.join(format!("..v{version}"));
    std::fs::create_dir_all(&versioned).unwrap();
    std::fs::write(versioned.join("gw.toml"), text).unwrap();
    let next = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&next);
    std::os::unix::fs::symlink(format!("..v{version}"), &next).unwrap();
    std::fs::rename(&next, dir.join("..data")).unwrap();
    let file = dir.join("gw.toml");
    if std::fs::symlink_metadata(&file).is_err() {
        std::os::unix::fs::symlink("..data/gw.toml", &file).unwrap();
    }
}

#[tokio::test]
async fn a_changed_file_is_reloaded_without_sighup_as_a_configmap_changes_it() {
    let (addr, _fake) = fake_upstream().await;
    let up = addr.to_string();
    let dir = dir("watch");
    configmap_update(&dir, 1, &config(&up, &["a"], ""));
    let file = dir.join("gw.toml");
    let log = dir.join("gateway.log");
    let gw = gateway_logged(&["--config", file.to_str().unwrap()], &log);
    assert!(!served(&gw, "b").await);

    configmap_update(&dir, 2, &config(&up, &["a", "b"], ""));
    until_served(&gw, "b", true, Duration::from_secs(5)).await;
    until_counted(&gw, 1, 0, Duration::from_secs(1)).await;
    until_logged(&log, "configuration reloaded (the file changed)");

    // Broken: refused, counted, and `b` and `a` serve on.
    let broken = format!("{}[agents.c]\nupstream = 7\n", config(&up, &["a", "b"], ""));
    configmap_update(&dir, 3, &broken);
    until_counted(&gw, 1, 1, Duration::from_secs(5)).await;
    until_logged(&log, &refusal_of(&file));
    assert!(served(&gw, "a").await && served(&gw, "b").await);

    // `b` removed: no longer served; once, not at every look.
    configmap_update(&dir, 4, &config(&up, &["a"], ""));
    until_served(&gw, "b", false, Duration::from_secs(5)).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    until_counted(&gw, 2, 1, Duration::from_secs(1)).await;
    // A removed agent does not read as up; the others' series stay.
    let metrics = metrics_of(&gw).await;
    assert!(
        !metrics.contains("agui_gateway_agent_up{agent=\"b\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("agui_gateway_agent_up{agent=\"a\"}"),
        "{metrics}"
    );
}

/// Whether `key` is let in (an agent list, which needs a caller).
async fn admitted(gw: &Process, key: &str) -> bool {
    let answer = client()
        .get(format!("{}/v1/agents", gw.url()))
        .header("X-API-Key", key)
        .send()
        .await
        .expect("an answer");
    answer.status() == 200
}

#[tokio::test]
async fn sighup_rereads_a_rotated_api_key_that_no_watch_sees() {
    let (addr, _fake) = fake_upstream().await;
    let dir = dir("keys");
    let keys = dir.join("api-keys");
    std::fs::write(&keys, "web:first-key-0123456789\n").unwrap();
    let file = dir.join("gw.toml");
    let auth = format!("[auth]\napi_keys_file = {:?}\n", keys.display().to_string());
    std::fs::write(&file, config(&addr.to_string(), &["a"], &auth)).unwrap();
    let log = dir.join("gateway.log");
    let gw = gateway_logged(&["--config", file.to_str().unwrap()], &log);
    assert!(admitted(&gw, "first-key-0123456789").await);

    // The configuration file is the same: only SIGHUP reads the keys again.
    std::fs::write(&keys, "web:second-key-0123456789\n").unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(admitted(&gw, "first-key-0123456789").await);
    hang_up(&gw);
    let start = Instant::now();
    while !admitted(&gw, "second-key-0123456789").await {
        assert!(start.elapsed() < Duration::from_secs(3), "not reloaded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!admitted(&gw, "first-key-0123456789").await);
    let metrics = client()
        .get(format!("{}/metrics", gw.url()))
        .header("X-API-Key", "second-key-0123456789")
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("agui_gateway_config_reloads_total{result=\"ok\"} 1\n"));
    assert!(metrics.contains("agui_gateway_config_reloads_total{result=\"error\"} 0\n"));
    until_logged(&log, "configuration reloaded (SIGHUP): nothing changed");
}

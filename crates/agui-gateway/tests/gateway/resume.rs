//! Streams that survive (issue 13): a client cut mid-run continues with
//! `Last-Event-ID` and gets exactly the rest; a run whose client went away
//! goes on, journaled, for `detach_grace_secs`, then is cancelled; `connect`
//! replays a thread's run; the upstream runs the task once whatever the
//! clients do.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{
    CuttableProxy, Process, agent, agui_events, assert_valid_run, client, fake_upstream, gateway,
    gateway_for, metrics_of, received_by, rss_kib, text_of,
};

/// Frames of an SSE body without keep-alive comments.
pub(crate) fn frames(body: &str) -> Vec<&str> {
    body.split_inclusive("\n\n")
        .filter(|f| !f.starts_with(':'))
        .collect()
}

pub(crate) fn id_of(frame: &str) -> &str {
    frame
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no id in {frame:?}"))
}

/// Reads whole frames until `count` of them came, then drops the
/// connection; returns what was read (whole frames only).
pub(crate) async fn read_then_cut(response: reqwest::Response, count: usize) -> String {
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while frames(&seen[..seen.rfind("\n\n").map_or(0, |i| i + 2)]).len() < count {
        assert!(Instant::now() < deadline, "too few frames: {seen}");
        let chunk = body.next().await.expect("more").expect("bytes");
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let whole = seen.rfind("\n\n").map_or(0, |i| i + 2);
    seen.truncate(whole);
    seen
}

/// Frames numbered 1, 2, 3, … with none missing or twice: one run, as
/// the client put it together.
pub(crate) fn assert_numbered(whole: &str) {
    for (n, frame) in frames(whole).iter().enumerate() {
        let (_, number) = id_of(frame).split_once('.').unwrap();
        assert_eq!(number, (n + 1).to_string(), "{whole}");
    }
}

pub(crate) fn run_input(thread: &str, text: &str) -> Value {
    json!({ "threadId": thread, "runId": format!("{thread}-run"),
        "messages": [{ "id": format!("{thread}-u1"), "role": "user", "content": text }] })
}

/// A thread's replay: `RUN_STARTED`, `MESSAGES_SNAPSHOT` with the user's
/// message and the agent's answer, `RUN_FINISHED`.
pub(crate) fn assert_thread_replay(events: &[Value], thread: &str, answer: &str) {
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"],
        "{events:?}"
    );
    assert_eq!(events[0]["threadId"], thread);
    assert_eq!(events[0]["runId"], events[2]["runId"]);
    let messages = events[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["id"], format!("{thread}-u1"));
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], answer);
}

pub(crate) async fn post(
    url: &str,
    body: &Value,
    last_event_id: Option<&str>,
) -> reqwest::Response {
    let mut request = client().post(url).json(body);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    request.send().await.unwrap()
}

/// The messages the input agent got for one thread.
async fn runs_of(agent: &Process, thread: &str) -> usize {
    received_by(agent)
        .await
        .iter()
        .filter(|m| m["contextId"] == thread)
        .count()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_cut_stream_continues_from_its_last_id_and_the_agent_runs_once() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let url = format!("{}/agui", gw.url());
    let input = run_input("resume-1", "count 15 60");

    // Cut after 5 frames, then after 3 more, then read to the end.
    let mut whole = read_then_cut(post(&url, &input, None).await, 5).await;
    let last = id_of(frames(&whole).last().unwrap()).to_owned();
    let more = read_then_cut(post(&url, &input, Some(&last)).await, 3).await;
    whole.push_str(&more);
    let last = id_of(frames(&whole).last().unwrap()).to_owned();
    let rest = post(&url, &input, Some(&last)).await;
    assert_eq!(rest.status(), 200);
    whole.push_str(&rest.text().await.unwrap());

    // One run, ids 1, 2, 3, … with none missing or twice.
    let frames_seen = frames(&whole);
    assert_numbered(&whole);
    let events = agui_events(&whole);
    assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED", "{whole}");
    let expected: String = (1..=15).map(|i| format!("{i} ")).collect();
    assert_eq!(text_of(&events), expected);

    // `connect` naming the run replays it: byte for byte what the cut
    // client put together.
    let connect = post(
        &format!("{}/agui/connect", gw.url()),
        &json!({ "threadId": "resume-1", "runId": "resume-1-run" }),
        None,
    )
    .await;
    assert_eq!(connect.status(), 200);
    let replay = connect.text().await.unwrap();
    assert_eq!(frames(&replay), frames_seen);
    // `connect` on the thread: one run holding the whole conversation.
    let thread = post(
        &format!("{}/agui/connect", gw.url()),
        &json!({ "threadId": "resume-1" }),
        None,
    )
    .await;
    assert_eq!(thread.status(), 200);
    let thread = agui_events(&thread.text().await.unwrap());
    assert_thread_replay(&thread, "resume-1", &expected);
    // From the end: nothing more, at once.
    let at_end = post(&url, &input, Some(&last_id(&whole))).await;
    assert_eq!(at_end.status(), 200);
    assert_eq!(frames(&at_end.text().await.unwrap()).len(), 0);

    // The upstream got the request once.
    assert_eq!(runs_of(&agent, "resume-1").await, 1);

    // Another request naming the run: 409; an id never written: 410; a
    // thread with no run: 204.
    let other = post(&url, &run_input("resume-1", "count 3 10"), Some(&last)).await;
    assert_eq!(other.status(), 409);
    let error: Value = other.json().await.unwrap();
    assert_eq!(error["error"]["code"], "RUN_MISMATCH");
    let key = last.split_once('.').unwrap().0;
    let future = post(&url, &input, Some(&format!("{key}.999"))).await;
    assert_eq!(future.status(), 410);
    let none = post(
        &format!("{}/agui/connect", gw.url()),
        &json!({ "threadId": "no-such-thread" }),
        None,
    )
    .await;
    assert_eq!(none.status(), 204);
    let bad = post(&format!("{}/agui/connect", gw.url()), &json!({}), None).await;
    assert_eq!(bad.status(), 400);
    // With authentication off, the client's Authorization is who it is:
    // another credential neither finds the thread nor continues the run.
    let other = client()
        .post(format!("{}/agui/connect", gw.url()))
        .header("Authorization", "Bearer someone-else")
        .json(&json!({ "threadId": "resume-1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 204);
    let other = client()
        .post(&url)
        .header("Authorization", "Bearer someone-else")
        .header("Last-Event-ID", &last)
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 409);
}

pub(crate) fn last_id(body: &str) -> String {
    id_of(frames(body).last().unwrap()).to_owned()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_run_goes_on_without_its_client_and_a_negotiated_stream_resumes_too() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    // The seed's negotiated route: the same contract.
    let url = format!("{}/v1/agents/default/stream?format=agui", gw.url());
    let seed = json!({ "request": { "role": "user", "contextId": "resume-2",
        "parts": [{ "text": "count 10 50" }] } });
    let cut = read_then_cut(post(&url, &seed, None).await, 3).await;
    // Gone for longer than the rest of the run takes: it finished without us.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let rest = post(&url, &seed, Some(&last_id(&cut))).await;
    assert_eq!(rest.status(), 200);
    let whole = format!("{cut}{}", rest.text().await.unwrap());
    let events = agui_events(&whole);
    assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED", "{whole}");
    let expected: String = (1..=10).map(|i| format!("{i} ")).collect();
    assert_eq!(text_of(&events), expected);
    assert_eq!(runs_of(&agent, "resume-2").await, 1);
    let metrics = metrics_of(&gw).await;
    for needle in [
        "agui_gateway_detached_runs_total 1",
        "agui_gateway_resumed_streams_total 1",
        "agui_gateway_journal_runs 1",
    ] {
        assert!(metrics.contains(needle), "{needle}:\n{metrics}");
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_run_nobody_comes_back_to_is_cancelled_after_the_grace() {
    let agent = agent("input");
    let gw = gateway_for(
        &agent.url(),
        &["--detach-grace-secs", "1", "--cancel-on-disconnect"],
    );
    let url = format!("{}/agui", gw.url());
    let input = run_input("resume-3", "count 100 100");
    let cut = read_then_cut(post(&url, &input, None).await, 4).await;
    let left = Instant::now();
    let deadline = left + Duration::from_secs(10);
    loop {
        let received = received_by(&agent).await;
        if received.iter().any(|m| m.get("cancel").is_some()) {
            break;
        }
        assert!(Instant::now() < deadline, "no cancel: {received:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        left.elapsed() >= Duration::from_millis(900),
        "cancelled before the grace"
    );
    // A late reconnect learns how the run ended.
    let rest = post(&url, &input, Some(&last_id(&cut))).await;
    let whole = format!("{cut}{}", rest.text().await.unwrap());
    let events = agui_events(&whole);
    let last = assert_valid_run(&events);
    assert_eq!(last["code"], "CLIENT_DISCONNECTED", "{whole}");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn without_a_journal_a_reconnect_is_refused_and_a_cut_run_ends() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &["--journal", "off"]);
    let url = format!("{}/agui", gw.url());
    let input = run_input("resume-4", "count 5 10");
    let body = post(&url, &input, None).await.text().await.unwrap();
    let refused = post(&url, &input, Some(&last_id(&body))).await;
    assert_eq!(refused.status(), 410);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "RUN_NOT_RESUMABLE");
    // Nothing journaled: the thread's replay comes from the agent's task.
    let replay = post(
        &format!("{}/agui/connect", gw.url()),
        &json!({ "threadId": "resume-4" }),
        None,
    )
    .await;
    assert_eq!(replay.status(), 200);
    let events = agui_events(&replay.text().await.unwrap());
    let messages = events[1]["messages"].as_array().unwrap();
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(said, [("user", "count 5 10"), ("assistant", "1 2 3 4 5 ")]);
}

/// The port of a process's `http://127.0.0.1:PORT` URL.
fn socket_of(process: &Process) -> std::net::SocketAddr {
    let url = process.url();
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("host:port")
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_dropped_upstream_is_re_attached_and_the_client_sees_one_run() {
    // a2a-sdk 1.3.0 answers a resubscribe with a Task snapshot; 0.3.26
    // with live events only (the gateway reads the task itself).
    for name in ["python-v1", "python-v03"] {
        let agent = agent(name);
        let proxy = CuttableProxy::start(socket_of(&agent)).await;
        let gw = gateway_for(&proxy.url(), &[]);
        let response = post(
            &format!("{}/agui", gw.url()),
            &run_input(&format!("heal-{name}"), "drip"),
            None,
        )
        .await;
        let mut body = response.bytes_stream();
        let mut seen = String::new();
        let mut cut = false;
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Some(chunk) = body.next().await {
            assert!(Instant::now() < deadline, "{name}: {seen}");
            seen.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
            if !cut && seen.matches("TEXT_MESSAGE_CONTENT").count() >= 3 {
                proxy.cut();
                cut = true;
            }
        }
        assert!(cut, "{name}: {seen}");
        let events = agui_events(&seen);
        assert_eq!(
            assert_valid_run(&events)["result"]["state"],
            "completed",
            "{name}: {seen}"
        );
        // Ten chunks, each the time it was sent: all there, once, in order.
        let deltas: Vec<u64> = events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .map(|e| e["delta"].as_str().unwrap().trim().parse().unwrap())
            .collect();
        assert_eq!(deltas.len(), 10, "{name}: {deltas:?}");
        assert!(deltas.windows(2).all(|w| w[0] < w[1]), "{name}: {deltas:?}");
        let metrics = metrics_of(&gw).await;
        assert!(
            metrics.contains("agui_gateway_upstream_reattached_total 1"),
            "{name}: {metrics}"
        );
    }
}

/// `clients/agui-resumable` with each real client version: a socket reset
/// in the middle of a frame, a reconnect with `Last-Event-ID`, and the run
/// put together is the one `connect` replays; the agent ran once; and
/// `abortRun()` stops a run (its task cancelled at once).
#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn the_resumable_client_package_recovers_a_cut_run_with_every_client() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let script = crate::support::repo_root().join("clients/agui-resumable/test/resume.test.mjs");
    let output = tokio::process::Command::new("node")
        .arg(script)
        .args(["--gateway", &gw.url(), "--agent", &agent.url()])
        .output()
        .await
        .expect("node runs (tests/conformance/setup.sh installs the clients)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let clients: Vec<&str> = lines
        .iter()
        .map(|l| l["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients, ["1.0.0", "0.0.59", "0.0.48"]);
    let expected: String = (1..=12).map(|i| format!("{i} ")).collect();
    for line in &lines {
        assert_eq!(line["error"], Value::Null, "{line}");
        assert_eq!(line["text"], expected.as_str(), "{line}");
        // The thread's replay restores the conversation, and a second
        // connect of a client that holds it adds nothing.
        assert_eq!(
            line["connectTypes"],
            json!(["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]),
            "{line}"
        );
        let restored = json!(["user: count 12 40", format!("assistant: {expected}")]);
        assert_eq!(line["connectMessages"], restored, "{line}");
        assert_eq!(line["connectAgain"], restored, "{line}");
        assert!(line["reconnects"].as_u64().unwrap() >= 1, "{line}");
        assert!(line["cutConnections"].as_u64().unwrap() >= 1, "{line}");
        assert_eq!(line["emptyConnectOk"], true, "{line}");
        assert_eq!(
            line["stopCancelled"], true,
            "abortRun() stops the run: {line}"
        );
        assert_eq!(line["received"], 1, "the agent ran once: {line}");
        assert_eq!(line["unhandledRejections"], 0, "{line}");
        let types = line["types"].as_array().unwrap();
        assert_eq!(types.first().unwrap(), "RUN_STARTED");
        assert_eq!(types.last().unwrap(), "RUN_FINISHED");
        let terminals = types
            .iter()
            .filter(|t| *t == "RUN_FINISHED" || *t == "RUN_ERROR")
            .count();
        assert_eq!(terminals, 1, "{line}");
    }
}

/// A series' value, summed over its labels (none, or the agent's).
fn gauge(metrics: &str, name: &str) -> u64 {
    let values: Vec<u64> = metrics
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once("} ")?.1,
                None => rest.strip_prefix(' ')?,
            };
            value.parse().ok()
        })
        .collect();
    assert!(!values.is_empty(), "{name} missing");
    values.iter().sum()
}

/// Acceptance 4 of issue 13: twice 1,000 runs (one in twenty cut and left
/// detached) through a gateway with small journal bounds; the bounds hold
/// at every check; once the runs expire the journal is empty again, and the
/// second thousand leaves the process no larger than the first did.
#[tokio::test]
async fn the_journal_stays_within_its_bounds_over_a_thousand_runs() {
    const MAX_RUNS: u64 = 100;
    const MAX_BYTES: u64 = 256 << 10;
    let (addr, _fake) = fake_upstream().await;
    let dir = std::env::temp_dir().join(format!("agui-gateway-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("soak.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\ndetach_grace_secs = 5\n[limits]\njournal_max_runs = {MAX_RUNS}\n\
             journal_max_run_bytes = 16384\njournal_max_bytes = {MAX_BYTES}\njournal_ttl_secs = 1\n\
             [agents.fake]\nupstream = \"http://{addr}/\"\n"
        ),
    )
    .unwrap();
    let gw = gateway(&["--config", config.to_str().unwrap()]);
    let url = format!("{}/v1/agents/fake/stream?format=agui", gw.url());
    let http = client();
    let run = |scenario: &'static str| {
        http.post(&url)
            .header("X-Fake", scenario)
            .body(r#"{"request": {"role": "user", "parts": [{"text": "soak"}]}}"#)
            .send()
    };
    for _ in 0..50 {
        run("fixed").await.unwrap().text().await.unwrap();
    }
    let baseline = rss_kib(gw.child.id());
    let mut settled = Vec::new();
    for round in 1..=2 {
        let started = Instant::now();
        for batch in 0..50 {
            let mut runs = Vec::new();
            for i in 0..20 {
                let cut = i == 0;
                let call = run(if cut { "drip" } else { "fixed" });
                runs.push(async move {
                    let response = call.await.unwrap();
                    if cut {
                        // The first frame, then gone: the run goes on detached.
                        let mut body = response.bytes_stream();
                        body.next().await.unwrap().unwrap();
                    } else {
                        let text = response.text().await.unwrap();
                        assert!(text.contains("RUN_FINISHED"), "{text}");
                    }
                });
            }
            futures::future::join_all(runs).await;
            if batch % 10 == 9 {
                let metrics = metrics_of(&gw).await;
                let runs = gauge(&metrics, "agui_gateway_journal_runs");
                let bytes = gauge(&metrics, "agui_gateway_journal_bytes");
                assert!(runs <= MAX_RUNS, "{runs} runs kept");
                assert!(bytes <= MAX_BYTES, "{bytes} bytes kept");
            }
        }
        let elapsed = started.elapsed();
        let peak = rss_kib(gw.child.id());
        // The detached runs end (a drip lasts 1.6 s), every run expires
        // (1 s), and the next run sweeps.
        tokio::time::sleep(Duration::from_millis(3_500)).await;
        run("fixed").await.unwrap().text().await.unwrap();
        let metrics = metrics_of(&gw).await;
        let runs = gauge(&metrics, "agui_gateway_journal_runs");
        let bytes = gauge(&metrics, "agui_gateway_journal_bytes");
        let after = rss_kib(gw.child.id());
        eprintln!(
            "soak round {round}: 1,000 runs in {elapsed:?}; RSS {baseline} KiB before any, {peak} KiB after, {after} KiB once expired; journal {runs} runs, {bytes} bytes"
        );
        assert!(runs <= 2, "{runs} runs left");
        assert!(bytes <= 16 << 10, "{bytes} bytes left");
        assert_eq!(gauge(&metrics, "agui_gateway_active_streams"), 0);
        settled.push(after);
    }
    // The allocator keeps some of the first round's peak; the second round
    // reuses it: memory does not grow with the runs.
    assert!(
        settled[0] <= baseline + 8 * 1024 && settled[1] <= settled[0] + 1024,
        "RSS {settled:?} KiB, baseline {baseline} KiB"
    );
}

/// An explicit stop (`/agui/stop`) cancels the run's task at once, whether
/// its client is still attached or gone; the run ends as the agent says.
#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn an_explicit_stop_cancels_the_task_at_once() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let url = format!("{}/agui", gw.url());
    let stop_url = format!("{}/agui/stop", gw.url());
    let input = run_input("stop-1", "count 100 100");
    let response = post(&url, &input, None).await;
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while seen.matches("TEXT_MESSAGE_CONTENT").count() < 3 {
        seen.push_str(std::str::from_utf8(&body.next().await.unwrap().unwrap()).unwrap());
    }
    let stopped = post(&stop_url, &json!({ "threadId": "stop-1" }), None).await;
    assert_eq!(stopped.status(), 202);
    let stopped: Value = stopped.json().await.unwrap();
    assert_eq!(stopped["stopping"], true);
    let started = Instant::now();
    while let Some(chunk) = body.next().await {
        seen.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the run went on"
    );
    let events = agui_events(&seen);
    assert_eq!(
        assert_valid_run(&events)["result"]["state"],
        "canceled",
        "{seen}"
    );
    // A second cancel would follow the end at once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let received = received_by(&agent).await;
    let cancels = received
        .iter()
        .filter(|m| m["cancel"] == stopped["taskId"])
        .count();
    // One cancel: the run ended with the stop's RUN_FINISHED, and is not
    // taken for a client that went away (which would cancel again).
    assert_eq!(cancels, 1, "{received:?}");
    let metrics = metrics_of(&gw).await;
    assert!(!metrics.contains("CLIENT_DISCONNECTED"), "{metrics}");
    // Nothing more to stop; a thread with no run; another caller's thread.
    let again = post(&stop_url, &json!({ "threadId": "stop-1" }), None).await;
    assert_eq!(again.status(), 204);
    let none = post(&stop_url, &json!({ "threadId": "no-such" }), None).await;
    assert_eq!(none.status(), 204);
}

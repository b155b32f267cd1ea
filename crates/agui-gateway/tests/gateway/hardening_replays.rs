//! Issue 37's thread-replay findings against the gateway (the release
//! build under `scripts/test.sh`): a thread of 8 runs of ~900 KiB each
//! (a 7.4 MB replay), then `connect` on it 300 times over HTTP/2 with a
//! zero window, never read; and the same replays reset as soon as sent.

use std::time::{Duration, Instant};

use axum::body::Bytes;
use serde_json::json;
use tokio::net::TcpStream;

use crate::support::*;

const RUNS: usize = 8;
const MESSAGE_BYTES: usize = 900 << 10;
const THREAD: &str = "big-thread";

/// The thread: `RUNS` runs, each adding one ~900 KiB user message, by
/// the caller `who` (an `Authorization` value), or by an anonymous one.
async fn big_thread(gw: &Process, who: Option<&str>) {
    let client = client();
    for run in 0..RUNS {
        let content = format!("{run}{}", "x".repeat(MESSAGE_BYTES));
        let input = json!({
            "threadId": THREAD, "runId": format!("run-{run}"),
            "messages": [{ "id": format!("user-{run}"), "role": "user", "content": content }],
            "tools": [], "context": [], "state": {}, "forwardedProps": {},
        });
        let mut request = client.post(format!("{}/agui", gw.url())).json(&input);
        if let Some(who) = who {
            request = request.header("authorization", who);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 200);
        let text = answer.text().await.unwrap();
        assert!(text.contains("RUN_FINISHED"), "{text}");
    }
}

/// A gateway in front of the fake agent, holding the big thread of `who`.
async fn gateway_with_big_thread(who: Option<&str>) -> Process {
    let (upstream, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{upstream}/"), &[]);
    big_thread(&gw, who).await;
    gw
}

/// `connect` on the big thread, from `client`.
async fn connect_thread(client: &reqwest::Client, gw: &Process) -> reqwest::Response {
    client
        .post(format!("{}/agui/connect", gw.url()))
        .json(&json!({ "threadId": THREAD }))
        .send()
        .await
        .unwrap()
}

fn connect_request(port: u16) -> axum::http::Request<()> {
    axum::http::Request::post(format!("http://127.0.0.1:{port}/agui/connect"))
        .header("content-type", "application/json")
        .body(())
        .unwrap()
}

fn connect_body() -> Bytes {
    Bytes::from(json!({ "threadId": THREAD }).to_string())
}

/// An HTTP/2 connection whose streams get no window: the gateway can send
/// them heads, never data.
async fn zero_window(port: u16) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Sends `request` (and its `body`) on `client`; its head, within 20 s.
async fn head_of(
    client: &mut h2::client::SendRequest<Bytes>,
    request: axum::http::Request<()>,
    body: Option<Bytes>,
) -> axum::http::Response<h2::RecvStream> {
    let mut ready = client.clone().ready().await.unwrap();
    let (response, send) = ready.send_request(request, body.is_none()).unwrap();
    if let Some(body) = body {
        let mut send = send;
        send.send_data(body, true).unwrap();
    }
    *client = ready;
    tokio::time::timeout(Duration::from_secs(20), response)
        .await
        .expect("a head within 20 s")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardening_unread_thread_replays_hold_one_copy_within_budgets() {
    let gw = gateway_with_big_thread(None).await;
    let pid = gw.child.id();

    // One replay read out: the whole thread, as before.
    let whole = connect_thread(&client(), &gw).await;
    assert_eq!(whole.status(), 200);
    let whole = whole.text().await.unwrap();
    assert!(whole.len() > RUNS * MESSAGE_BYTES, "{} bytes", whole.len());
    let events = agui_events(&whole);
    let snapshot = events
        .iter()
        .find(|e| e["type"] == "MESSAGES_SNAPSHOT")
        .expect("a snapshot");
    let users = snapshot["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, RUNS);
    assert_valid_run(&events);

    let before = rss_kib(pid);
    // 300 replays over 3 connections (100 streams each), never read.
    let mut held = Vec::new();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for _ in 0..3 {
        let mut client = zero_window(gw.port).await;
        for _ in 0..100 {
            let response =
                head_of(&mut client, connect_request(gw.port), Some(connect_body())).await;
            *statuses.entry(response.status().as_u16()).or_default() += 1;
            held.push(response);
        }
        // The connection lives while its streams are held.
        drop(client);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = rss_kib(pid).saturating_sub(before);
    eprintln!("300 unread replays of a 7.4 MB thread: statuses {statuses:?}, RSS +{grown} KiB");
    assert!(grown < 64 << 10, "RSS grew {grown} KiB");
    // Some are served (the reader's budget), the rest told to read first.
    assert!(
        statuses.get(&200).copied().unwrap_or(0) >= 4,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.get(&200).copied().unwrap_or(0) + statuses.get(&429).copied().unwrap_or(0),
        300,
        "{statuses:?}"
    );
    drop(held);

    // Another caller (an address of its own) is not refused for it.
    let from_elsewhere = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let other = connect_thread(&from_elsewhere, &gw).await;
    assert_eq!(other.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardening_repeated_replays_of_a_thread_are_not_rebuilt() {
    let gw = gateway_with_big_thread(None).await;
    let pid = gw.child.id();
    let first = connect_thread(&client(), &gw).await;
    assert_eq!(first.status(), 200);
    drop(first);

    // 300 replays, each reset as soon as its head arrives.
    let cpu = cpu_time(pid);
    let started = Instant::now();
    let mut client = zero_window(gw.port).await;
    for _ in 0..300 {
        let response = head_of(&mut client, connect_request(gw.port), Some(connect_body())).await;
        assert_eq!(response.status(), 200);
        drop(response);
    }
    let spent = cpu_time(pid).saturating_sub(cpu);
    eprintln!(
        "300 reset replays: gateway CPU {spent:?} in {:?}",
        started.elapsed()
    );
    // Building this replay costs ~10 ms; a cached one, a look-up.
    assert!(spent < Duration::from_millis(1000), "CPU {spent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardening_unread_copilotkit_replays_and_message_lists_hold_one_copy() {
    const ALICE: &str = "Bearer alice";
    let gw = gateway_with_big_thread(Some(ALICE)).await;
    let pid = gw.child.id();
    let port = gw.port;
    let connect = || {
        axum::http::Request::post(format!(
            "http://127.0.0.1:{port}/copilotkit/agent/default/connect"
        ))
        .header("content-type", "application/json")
        .header("authorization", ALICE)
        .body(())
        .unwrap()
    };
    let listing = || {
        axum::http::Request::get(format!(
            "http://127.0.0.1:{port}/copilotkit/threads/{THREAD}/messages?agentId=default"
        ))
        .header("authorization", ALICE)
        .body(())
        .unwrap()
    };
    let input = Bytes::from(
        json!({ "threadId": THREAD, "runId": "reload", "messages": [], "tools": [],
            "context": [], "state": {}, "forwardedProps": {} })
        .to_string(),
    );
    // One of each read out: the whole thread.
    let whole = client()
        .get(format!(
            "{}/copilotkit/threads/{THREAD}/messages?agentId=default",
            gw.url()
        ))
        .header("authorization", ALICE)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(whole.len() > RUNS * MESSAGE_BYTES, "{} bytes", whole.len());
    let before = rss_kib(pid);
    let mut held = Vec::new();
    let mut statuses = std::collections::BTreeMap::<(&str, u16), usize>::new();
    for (what, connects) in [("connect", true), ("messages", false)] {
        let mut client = zero_window(port).await;
        for _ in 0..100 {
            let response = if connects {
                head_of(&mut client, connect(), Some(input.clone())).await
            } else {
                head_of(&mut client, listing(), None).await
            };
            *statuses
                .entry((what, response.status().as_u16()))
                .or_default() += 1;
            held.push(response);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = rss_kib(pid).saturating_sub(before);
    eprintln!("200 unread CopilotKit replays and message lists: {statuses:?}, RSS +{grown} KiB");
    assert!(grown < 64 << 10, "RSS grew {grown} KiB");
    for what in ["connect", "messages"] {
        let served = statuses.get(&(what, 200)).copied().unwrap_or(0);
        let refused = statuses.get(&(what, 429)).copied().unwrap_or(0);
        assert_eq!(served + refused, 100, "{statuses:?}");
    }
}

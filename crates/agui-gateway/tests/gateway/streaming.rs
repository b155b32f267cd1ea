//! Streaming behaviour: each event leaves at once, keep-alives, a client
//! that leaves, the SIGTERM drain.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

use crate::support::*;
use crate::{SEED_BODY, fake_run};

#[tokio::test]
async fn each_event_reaches_the_client_before_the_upstream_sends_the_next() {
    let (addr, fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);
    let response = fake_run(&gw, "drip").await;
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut received = Vec::new();
    while let Some(chunk) = body.next().await {
        buffer.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if frame.contains("TEXT_MESSAGE_CONTENT") {
                let event = agui_events(&frame).remove(0);
                received.push((event["delta"].as_str().unwrap().to_owned(), Instant::now()));
            }
        }
    }
    let sent = fake.log.lock().unwrap().sent.clone();
    assert_eq!(received.len(), 7, "{received:?}");
    for (i, (delta, at)) in received.iter().enumerate() {
        // Chunk i+1 was sent at sent[i + 1]; the next event at sent[i + 2].
        assert_eq!(delta, &format!("[{}]", i + 1));
        assert!(
            *at < sent[i + 2],
            "event {delta} arrived after the upstream sent the next one"
        );
    }
}

#[tokio::test]
async fn a_silent_upstream_gets_keep_alive_comments() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &["--keepalive-secs", "1"]);
    let response = fake_run(&gw, "silent").await;
    let text = response.text().await.unwrap();
    assert!(text.matches(": ping\n\n").count() >= 2, "{text}");
    assert_eq!(
        assert_valid_run(&agui_events(&text))["type"],
        "RUN_FINISHED"
    );
}

#[tokio::test]
async fn a_client_disconnect_closes_the_upstream_within_a_second_and_can_cancel() {
    let (addr, fake) = fake_upstream().await;
    // Without a grace period: a run ends with its client.
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--cancel-on-disconnect", "--detach-grace-secs", "0"],
    );
    let response = fake_run(&gw, "endless").await;
    read_until_then_leave(response, "TEXT_MESSAGE_CONTENT").await;
    let dropped = Instant::now();
    let deadline = dropped + Duration::from_secs(5);
    let closed = loop {
        if let Some(closed) = fake.log.lock().unwrap().closed {
            break closed;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream connection stayed open"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let lag = closed.saturating_duration_since(dropped);
    assert!(
        lag < Duration::from_secs(1),
        "upstream closed {lag:?} after the client left"
    );
    fake.wait_for_method("tasks/cancel", Duration::from_secs(5))
        .await;
}

#[tokio::test]
async fn sigterm_drains_open_streams_then_ends_them_with_run_error() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &["--shutdown-grace-secs", "1"]);
    let url = format!("{}/v1/agents/default/stream?format=agui", gw.url());
    let response = fake_run(&gw, "endless").await;
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("RUN_STARTED"));
    let signalled = Instant::now();
    gw.terminate();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The listener stays open through the drain: readiness says 503 and new
    // work gets a 503 that closes its connection, so balancers move on.
    let ready = client()
        .get(format!("{}/readyz", gw.url()))
        .send()
        .await
        .expect("the listener is open while draining");
    assert_eq!(ready.status(), 503);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["error"]["code"], "GATEWAY_DRAINING", "{ready}");
    let refused = client()
        .post(&url)
        .header("X-Fake", "fixed")
        .body(SEED_BODY)
        .send()
        .await
        .expect("the listener is open while draining");
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["connection"], "close");
    assert_eq!(refused.headers()["retry-after"], "1");
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "GATEWAY_DRAINING", "{refused}");
    let mut rest = String::from_utf8_lossy(&first).into_owned();
    while let Some(chunk) = body.next().await {
        rest.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    let events = agui_events(&rest);
    let last = assert_valid_run(&events);
    assert_eq!(last["code"], "GATEWAY_SHUTTING_DOWN", "{rest}");
    let ended = signalled.elapsed();
    assert!(
        ended >= Duration::from_millis(900) && ended < Duration::from_secs(5),
        "drained for {ended:?}"
    );
    let mut gw = gw;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = gw.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(Instant::now() < deadline, "the gateway did not exit");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

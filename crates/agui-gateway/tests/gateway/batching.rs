//! Output batching: upstream chunks that arrive together leave together,
//! and a lone one leaves at once.

use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::support::*;

/// The body of a converted run, in the pieces it arrived in (hyper hands
/// over one per HTTP chunk the gateway wrote).
async fn run(
    gw: &Process,
    scenario: &str,
) -> impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> {
    client()
        .post(format!("{}/v1/agents/default/stream?format=agui", gw.url()))
        .header("X-Fake", scenario)
        .body(r#"{"request": {"role": "user", "parts": [{"text": "Hello"}]}}"#)
        .send()
        .await
        .unwrap()
        .bytes_stream()
}

/// How many pieces a converted run arrived in, and its body.
async fn pieces_of(gw: &Process, scenario: &str) -> (usize, String) {
    let mut body = std::pin::pin!(run(gw, scenario).await);
    let (mut pieces, mut all) = (0, Vec::new());
    while let Some(piece) = body.next().await {
        pieces += 1;
        all.extend_from_slice(&piece.unwrap());
    }
    (pieces, String::from_utf8(all).unwrap())
}

#[tokio::test]
async fn a_burst_of_upstream_chunks_leaves_in_few_writes_and_a_lone_one_at_once() {
    let (addr, fake) = fake_upstream().await;
    let gw = gateway_for(&format!("http://{addr}/"), &[]);

    // 200 chunks sent back to back: without batching every chunk is its
    // own write (and HTTP chunk), 200 or more pieces.
    let (pieces, body) = pieces_of(&gw, "burst").await;
    let events = agui_events(&body);
    assert_valid_run(&events);
    let expected: String = (1..=BURST).map(|i| format!("[{i}]")).collect();
    assert_eq!(text_of(&events), expected, "every chunk once, in order");
    assert!(
        pieces <= BURST / 2,
        "{pieces} pieces for {BURST} chunks sent back to back"
    );

    // Chunks 200 ms apart each leave when they come, not with the next.
    let mut body = std::pin::pin!(run(&gw, "drip").await);
    let mut arrivals = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Ok(Some(piece)) = tokio::time::timeout_at(deadline.into(), body.next()).await {
        let piece = piece.unwrap();
        if std::str::from_utf8(&piece)
            .unwrap()
            .contains("TEXT_MESSAGE_CONTENT")
        {
            arrivals.push(Instant::now());
        }
    }
    let sent = fake.log.lock().unwrap().sent.clone();
    assert_eq!(arrivals.len(), 7, "one piece per dripped chunk");
    // sent[0] is the task; chunk i was sent at sent[i].
    for (arrived, sent) in arrivals.iter().zip(&sent[1..]) {
        let late = arrived.saturating_duration_since(*sent);
        assert!(
            late < Duration::from_millis(100),
            "a lone chunk waited {late:?}"
        );
    }
}

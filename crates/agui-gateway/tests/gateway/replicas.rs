//! Two gateway replicas sharing one `redis-server` (issue 13): a client
//! cut from replica A continues on replica B; when A is killed (SIGKILL)
//! mid-run, B takes the run over (its lease lapsed), re-attaches to the
//! agent's task and finishes it; a replica scaled down (SIGTERM) hands its
//! runs over when its grace runs out. The agent runs each task once.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::resume::{frames, last_id, post, read_then_cut, run_input};
use crate::support::{
    Process, agent, agui_events, assert_valid_run, client, gateway_for, metrics_of, received_by,
    redis_server, text_of,
};

async fn post_agui(gw: &Process, body: &Value, last_event_id: Option<&str>) -> reqwest::Response {
    post(&format!("{}/agui", gw.url()), body, last_event_id).await
}

/// The whole run as the client put it together: ids 1, 2, … each once,
/// one terminal event, the full text.
fn assert_one_run(whole: &str, count: usize) {
    for (n, frame) in frames(whole).iter().enumerate() {
        let id = frame.lines().find_map(|l| l.strip_prefix("id: ")).unwrap();
        assert_eq!(
            id.split_once('.').unwrap().1,
            (n + 1).to_string(),
            "{whole}"
        );
    }
    let events = agui_events(whole);
    assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED", "{whole}");
    let expected: String = (1..=count).map(|i| format!("{i} ")).collect();
    assert_eq!(text_of(&events), expected, "{whole}");
}

#[tokio::test]
async fn a_run_continues_on_another_replica_and_survives_its_replica_s_death() {
    let redis = redis_server();
    let journal = format!("redis://127.0.0.1:{}/", redis.port);
    let agent = agent("input");
    let replica =
        |id: &str| gateway_for(&agent.url(), &["--journal", &journal, "--gateway-id", id]);
    let mut a = replica("gw-a");
    let b = replica("gw-b");

    // Cut from A, continued on B while A still runs the upstream.
    let first = run_input("replicas-1", "count 20 100");
    let cut = read_then_cut(post_agui(&a, &first, None).await, 5).await;
    let rest = post_agui(&b, &first, Some(&last_id(&cut))).await;
    assert_eq!(rest.status(), 200);
    let whole = format!("{cut}{}", rest.text().await.unwrap());
    assert_one_run(&whole, 20);
    // `connect` on B finds the thread A ran.
    let replay = client()
        .post(format!("{}/agui/connect", b.url()))
        .json(&json!({ "threadId": "replicas-1" }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(frames(&replay), frames(&whole));

    // Cut from A, then A dies: B takes the run over and finishes it.
    let second = run_input("replicas-2", "count 50 200");
    let cut = read_then_cut(post_agui(&a, &second, None).await, 5).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let rest = post_agui(&b, &second, Some(&last_id(&cut))).await;
    assert_eq!(rest.status(), 200);
    let whole = format!("{cut}{}", rest.text().await.unwrap());
    assert_one_run(&whole, 50);

    // A replica scaled down (SIGTERM): when its grace runs out it hands
    // the run over, cutting its client's stream without a terminal event;
    // the client's reconnect on B takes the run over at once.
    let c = gateway_for(
        &agent.url(),
        &[
            "--journal",
            &journal,
            "--gateway-id",
            "gw-c",
            "--shutdown-grace-secs",
            "1",
        ],
    );
    let third = run_input("replicas-3", "count 40 150");
    let response = post_agui(&c, &third, None).await;
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while frames(&seen).len() < 5 {
        seen.push_str(std::str::from_utf8(&body.next().await.unwrap().unwrap()).unwrap());
    }
    c.terminate();
    let deadline = Instant::now() + Duration::from_secs(15);
    while let Some(chunk) = body.next().await {
        assert!(Instant::now() < deadline, "the stream was not cut: {seen}");
        match chunk {
            Ok(chunk) => seen.push_str(std::str::from_utf8(&chunk).unwrap()),
            Err(_) => break,
        }
    }
    assert!(
        !seen.contains("RUN_ERROR") && !seen.contains("RUN_FINISHED"),
        "{seen}"
    );
    let whole_frames = seen.rfind("\n\n").map_or(0, |i| i + 2);
    seen.truncate(whole_frames);
    let rest = post_agui(&b, &third, Some(&last_id(&seen))).await;
    assert_eq!(rest.status(), 200);
    let whole = format!("{seen}{}", rest.text().await.unwrap());
    assert_one_run(&whole, 40);

    // The agent was asked once per run; the takeovers only resubscribed.
    let received = received_by(&agent).await;
    for thread in ["replicas-1", "replicas-2", "replicas-3"] {
        let runs = received.iter().filter(|m| m["contextId"] == thread).count();
        assert_eq!(runs, 1, "{thread}: {received:?}");
    }
    let metrics = metrics_of(&b).await;
    assert!(
        metrics.contains("agui_gateway_upstream_reattached_total 2"),
        "{metrics}"
    );
    drop(redis);
}

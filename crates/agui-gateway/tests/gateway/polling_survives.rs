//! Polled runs that outlive their client or their replica (issue 39), with
//! the agents of `polling.rs`: a client that leaves gets its task
//! cancelled at the agent; a cut run resumes with `Last-Event-ID`; a
//! SIGKILLed replica's run is taken over on Redis while the task works;
//! CopilotKit's `connect` replays the thread.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::polling::{VARIANTS, calls, gateway_reaching, times};
use crate::resume::{assert_numbered, last_id, post, read_then_cut, run_input};
use crate::support::{
    agui_events, assert_valid_run, core_with, read_until_then_leave, redis_server, text_of,
};

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_client_leaving_a_polled_run_gets_its_task_cancelled_at_the_agent() {
    for variant in VARIANTS {
        let log = variant.log("cancel");
        let agent = variant.start(true, Some(&log));
        let flags = ["--cancel-on-disconnect", "--detach-grace-secs", "0"];
        let gw = gateway_reaching(&agent, &variant, "poll", &flags).await;
        let thread = format!("poll-cancel-{}", variant.label);
        let response = post(
            &format!("{}/agui", gw.url()),
            &run_input(&thread, "cancel-me"),
            None,
        )
        .await;
        let seen = read_until_then_leave(response, "TEXT_MESSAGE_CONTENT").await;
        let task = seen
            .split("\"taskId\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("{}: no task id in {seen}", variant.label))
            .to_owned();
        let [_, read, cancel] = variant.methods();
        // The task ticks for 30 s: cancelled, it says so at once.
        let deadline = Instant::now() + Duration::from_secs(10);
        let cancelled = loop {
            if let Some(&at) = times(&calls(&log), cancel).first() {
                break at;
            }
            assert!(
                Instant::now() < deadline,
                "{}: no {cancel}: {:?}",
                variant.label,
                calls(&log)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let state = variant.task_state(&agent, &task).await;
        assert!(
            state.to_ascii_lowercase().contains("canceled"),
            "{}: {state}",
            variant.label
        );
        // Nobody reads the task any more.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let late: Vec<f64> = times(&calls(&log), read)
            .into_iter()
            .filter(|t| *t > cancelled + 0.5)
            .collect();
        assert!(
            late.is_empty(),
            "{}: reads after the cancel at {cancelled}: {late:?}",
            variant.label
        );
    }
}

/// A `progress` run put together from its pieces: one run, every step
/// and the answer once, in order, `RUN_FINISHED`.
fn assert_progress_once(label: &str, whole: &str) {
    assert_numbered(whole);
    let events = agui_events(whole);
    assert_eq!(
        assert_valid_run(&events)["type"],
        "RUN_FINISHED",
        "{label}: {whole}"
    );
    let text = text_of(&events);
    let mut from = 0;
    for needle in [
        "Step 1 of 3",
        "Step 2 of 3",
        "Step 3 of 3",
        "All three steps done.",
    ] {
        assert_eq!(
            text.matches(needle).count(),
            1,
            "{label}: {needle} in {text:?}"
        );
        let at = text.find(needle).unwrap();
        assert!(at >= from, "{label}: out of order: {text:?}");
        from = at;
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_cut_polled_run_resumes_with_last_event_id() {
    // Everything started first: a start blocks, the cuts are timed.
    let mut started = Vec::new();
    for variant in &VARIANTS {
        let log = variant.log("resume");
        let agent = variant.start(true, Some(&log));
        let gw = gateway_reaching(&agent, variant, "poll", &[]).await;
        started.push((variant, log, agent, gw));
    }
    let runs = started.iter().map(|(variant, log, _, gw)| async move {
        let url = format!("{}/agui", gw.url());
        let input = run_input(&format!("poll-resume-{}", variant.label), "progress");
        // Cut at the first step, then one step later, then read to the end.
        let mut whole = read_then_cut(post(&url, &input, None).await, 5).await;
        let more = read_then_cut(post(&url, &input, Some(&last_id(&whole))).await, 1).await;
        whole.push_str(&more);
        assert!(
            !whole.contains("All three steps done."),
            "{}: cut after the end: {whole}",
            variant.label
        );
        let rest = post(&url, &input, Some(&last_id(&whole))).await;
        assert_eq!(rest.status(), 200);
        whole.push_str(&rest.text().await.unwrap());
        assert_progress_once(variant.label, &whole);
        let [send, _, _] = variant.methods();
        let sent = times(&calls(log), send);
        assert_eq!(sent.len(), 1, "{}: the agent ran once", variant.label);
    });
    futures::future::join_all(runs).await;
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; redis-server"]
async fn a_polled_run_of_a_killed_replica_is_taken_over_on_redis() {
    let redis = redis_server();
    let journal = format!("redis://127.0.0.1:{}/", redis.port);
    let mut started = Vec::new();
    for variant in &VARIANTS {
        let log = variant.log("takeover");
        let agent = variant.start(true, Some(&log));
        let mut replicas = Vec::new();
        for replica in ["a", "b"] {
            let id = format!("poll-{replica}-{}", variant.label);
            let flags = ["--journal", &journal, "--gateway-id", &id];
            replicas.push(gateway_reaching(&agent, variant, "poll", &flags).await);
        }
        started.push((variant, log, agent, replicas));
    }
    let runs = started
        .iter_mut()
        .map(|(variant, log, _, replicas)| async move {
            let (a, b) = replicas.split_at_mut(1);
            let (a, b) = (&mut a[0], &b[0]);
            // Steps 3 s apart: A dies at the first, B takes over when A's
            // lease lapses (5 s), while the task still works (it ends at 9 s).
            let input = run_input(&format!("poll-takeover-{}", variant.label), "progress:3");
            let posted = Instant::now();
            let cut =
                read_then_cut(post(&format!("{}/agui", a.url()), &input, None).await, 5).await;
            a.child.kill().unwrap();
            a.child.wait().unwrap();
            let killed = posted.elapsed().as_secs_f64();
            let rest = post(&format!("{}/agui", b.url()), &input, Some(&last_id(&cut))).await;
            assert_eq!(rest.status(), 200);
            let whole = format!("{cut}{}", rest.text().await.unwrap());
            assert_progress_once(variant.label, &whole);
            let calls = calls(log);
            let [send, read, _] = variant.methods();
            let sent = times(&calls, send);
            assert_eq!(
                sent.len(),
                1,
                "{}: the agent ran once: {calls:?}",
                variant.label
            );
            // B read the task while it worked: after A died, before the answer.
            let by_b = times(&calls, read)
                .into_iter()
                .filter(|t| *t > sent[0] + killed + 0.5 && *t < sent[0] + 8.5)
                .count();
            assert!(
                by_b >= 1,
                "{}: killed at {killed} s: {calls:?}",
                variant.label
            );
        });
    futures::future::join_all(runs).await;
    drop(redis);
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; CopilotKit, tests/copilotkit/setup.sh"]
async fn copilotkit_connect_replays_a_polled_thread() {
    let mut started = Vec::new();
    for variant in &VARIANTS {
        let (polled, streamed) = (variant.start(true, None), variant.start(false, None));
        let gw = gateway_reaching(&polled, variant, "poll", &[]).await;
        let streamed_gw = gateway_reaching(&streamed, variant, "stream", &[]).await;
        started.push((variant, [polled, streamed], gw, streamed_gw));
    }
    let runs = started.into_iter().map(
        |(variant, [polled, streamed], gw, streamed_gw)| async move {
            let _streaming_agent = streamed;
            let thread = format!("poll-ck-{}", variant.label);
            let mut conversation = Value::Null;
            for text in ["chunks", "hector", "status-text"] {
                let turn = core_with(&gw, "rest", &thread, "turn", text, &[]).await;
                let twin = core_with(&streamed_gw, "rest", &thread, "turn", text, &[]).await;
                assert_eq!(
                    turn["messages"], twin["messages"],
                    "{}: {text}",
                    variant.label
                );
                conversation = turn["messages"].clone();
            }
            for said in [
                "assistant: Hello from the streaming test agent.",
                "tool: Sunny, 22C",
            ] {
                let said = json!(said);
                assert!(
                    conversation.as_array().unwrap().contains(&said),
                    "{conversation}"
                );
            }
            // A reload: from the journal, once, in order.
            let reload = core_with(&gw, "single", &thread, "restore", "", &[]).await;
            assert_eq!(
                reload["messages"], conversation,
                "{}: {reload}",
                variant.label
            );
            assert_eq!(reload["again"], conversation, "{}: {reload}", variant.label);
            if variant.v10 {
                // After a restart, from the agent's tasks (`ListTasks`, 1.0).
                drop(gw);
                let gw = gateway_reaching(&polled, variant, "poll", &[]).await;
                let reload = core_with(&gw, "rest", &thread, "restore", "", &[]).await;
                assert_eq!(
                    reload["messages"], conversation,
                    "{}: {reload}",
                    variant.label
                );
            }
        },
    );
    futures::future::join_all(runs).await;
}

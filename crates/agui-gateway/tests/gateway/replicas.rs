//! Two gateway replicas sharing one `redis-server` (issue 13): a client
//! cut from replica A continues on replica B; when A is killed (SIGKILL)
//! mid-run, B takes the run over (its lease lapsed), re-attaches to the
//! agent's task and finishes it; a replica scaled down (SIGTERM) hands its
//! runs over when its grace runs out. The agent runs each task once.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::resume::{
    assert_numbered, assert_thread_replay, frames, last_id, post, read_then_cut, run_input,
};
use crate::support::{
    Process, agent, agui_events, assert_valid_run, client, fake_upstream, gateway_for, metrics_of,
    received_by, redis_server, text_of,
};

async fn post_agui(gw: &Process, body: &Value, last_event_id: Option<&str>) -> reqwest::Response {
    post(&format!("{}/agui", gw.url()), body, last_event_id).await
}

/// The whole run as the client put it together: ids 1, 2, … each once,
/// one terminal event, the full text.
pub(crate) fn assert_one_run(whole: &str, count: usize) {
    assert_numbered(whole);
    let events = agui_events(whole);
    assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED", "{whole}");
    let expected: String = (1..=count).map(|i| format!("{i} ")).collect();
    assert_eq!(text_of(&events), expected, "{whole}");
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; redis-server"]
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
    // An id that run never wrote: 410 from the other replica too.
    let key = last_id(&whole).split_once('.').unwrap().0.to_owned();
    let never = post_agui(&b, &first, Some(&format!("{key}.9999"))).await;
    assert_eq!(never.status(), 410);
    // `connect` on B finds the thread A ran.
    let connect = format!("{}/agui/connect", b.url());
    let named = json!({ "threadId": "replicas-1", "runId": "replicas-1-run" });
    let replay = post(&connect, &named, None).await.text().await.unwrap();
    assert_eq!(frames(&replay), frames(&whole));
    // And the thread's replay, from what A journaled in Redis.
    let thread = post(&connect, &json!({ "threadId": "replicas-1" }), None)
        .await
        .text()
        .await
        .unwrap();
    let expected: String = (1..=20).map(|i| format!("{i} ")).collect();
    assert_thread_replay(&agui_events(&thread), "replicas-1", &expected);

    // A full replica says so (503, retry) rather than "not resumable",
    // which would have the client start the run again; freed, it follows.
    let full = gateway_for(
        &agent.url(),
        &[
            "--journal",
            &journal,
            "--gateway-id",
            "gw-full",
            "--max-streams",
            "1",
            "--detach-grace-secs",
            "0",
        ],
    );
    let hold = post_agui(&full, &run_input("replicas-hold", "count 40 100"), None).await;
    assert_eq!(hold.status(), 200);
    let mut hold = hold.bytes_stream();
    hold.next().await.unwrap().unwrap();
    let busy_run = run_input("replicas-busy", "count 20 100");
    let cut = read_then_cut(post_agui(&a, &busy_run, None).await, 5).await;
    let refused = post_agui(&full, &busy_run, Some(&last_id(&cut))).await;
    assert_eq!(refused.status(), 503);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "GATEWAY_BUSY", "{refused}");
    drop(hold);
    let deadline = Instant::now() + Duration::from_secs(5);
    let rest = loop {
        let rest = post_agui(&full, &busy_run, Some(&last_id(&cut))).await;
        if rest.status() == 200 {
            break rest;
        }
        assert_eq!(rest.status(), 503);
        assert!(Instant::now() < deadline, "the place was never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let whole = format!("{cut}{}", rest.text().await.unwrap());
    assert_one_run(&whole, 20);
    drop(full);

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
    for thread in ["replicas-1", "replicas-busy", "replicas-2", "replicas-3"] {
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

/// Issue 24: replica A dies mid-run and the agent's task completes before
/// B's takeover (the lease lapses after seconds): B reads the finished
/// task and the client gets the rest of the answer, once.
#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; redis-server"]
async fn a_run_taken_over_after_its_task_ended_delivers_the_rest_once() {
    let redis = redis_server();
    let journal = format!("redis://127.0.0.1:{}/", redis.port);
    let agent = agent("input");
    let replica =
        |id: &str| gateway_for(&agent.url(), &["--journal", &journal, "--gateway-id", id]);
    let b = replica("gw-ended-b");
    // The stored task keeps one part per chunk (`count`), or the whole
    // answer as one part, as a closing chunk that replaced the streamed
    // ones leaves it (`whole`).
    for (n, mode) in ["count", "whole"].into_iter().enumerate() {
        let mut a = replica(&format!("gw-ended-a{n}"));
        let thread = format!("replicas-ended-{mode}");
        let run = run_input(&thread, &format!("{mode} 20 50"));
        let cut = read_then_cut(post_agui(&a, &run, None).await, 5).await;
        a.child.kill().unwrap();
        a.child.wait().unwrap();
        // The agent's task ends (20 chunks, 50 ms apart) long before A's
        // lease lapses.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rest = post_agui(&b, &run, Some(&last_id(&cut))).await;
        assert_eq!(rest.status(), 200);
        let whole = format!("{cut}{}", rest.text().await.unwrap());
        assert_one_run(&whole, 20);
        let received = received_by(&agent).await;
        let runs = received
            .iter()
            .filter(|m| m["contextId"] == thread.as_str())
            .count();
        assert_eq!(runs, 1, "{received:?}");
    }
    drop(redis);
}

/// A stop sent to replica B ends the run A relays within a lease renewal
/// (1.5 s; 3 s allowed for a busy machine),
/// although the agent (a fake that ignores cancels) streams on: B asks
/// through Redis, A reads it when it next renews the run's lease.
#[tokio::test]
#[ignore = "tier 2: redis-server"]
async fn a_stop_on_another_replica_ends_the_run_within_a_lease_renewal() {
    let redis = redis_server();
    let journal = format!("redis://127.0.0.1:{}/", redis.port);
    let (addr, fake) = fake_upstream().await;
    let upstream = format!("http://{addr}/");
    let replica = |id: &str| gateway_for(&upstream, &["--journal", &journal, "--gateway-id", id]);
    let (a, b) = (replica("gw-a"), replica("gw-b"));
    let response = client()
        .post(format!("{}/agui", a.url()))
        .header("X-Fake", "endless")
        .json(&run_input("replicas-stop", "go on"))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("TEXT_MESSAGE_CONTENT") {
        seen.push_str(std::str::from_utf8(&body.next().await.unwrap().unwrap()).unwrap());
    }
    let stop = post(
        &format!("{}/agui/stop", b.url()),
        &json!({ "threadId": "replicas-stop" }),
        None,
    )
    .await;
    assert_eq!(stop.status(), 202);
    let started = Instant::now();
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(chunk) = body.next().await {
            seen.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
    })
    .await;
    assert!(rest.is_ok(), "the run went on: {seen}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let events = agui_events(&seen);
    assert_eq!(
        assert_valid_run(&events)["result"]["state"],
        "canceled",
        "{seen}"
    );
    // A cancelled the task too; the fake went on streaming regardless.
    assert!(
        fake.log
            .lock()
            .unwrap()
            .methods
            .iter()
            .any(|m| m == "tasks/cancel")
    );
}

/// A run with no thread, as the journal's own calls open it in tests.
pub fn plain_run() -> (agui_journal::RunIdentity, agui_journal::redis::RunSpec) {
    use agui_journal::{CallerDigest, Owner, RunIdentity};
    let caller = CallerDigest::of_scope("");
    let identity = RunIdentity {
        owner: Owner::of("agent", &caller, "POST", "/agui", b"{}"),
        thread: None,
    };
    let spec = agui_journal::redis::RunSpec {
        agent: "agent".to_owned(),
        thread_id: None,
        run_id: None,
        interrupts: false,
        v1: false,
        client_tools: Vec::new(),
        state: None,
        format: "agui".to_owned(),
        id_tag: "t".to_owned(),
        headers: Vec::new(),
        poll: None,
    };
    (identity, spec)
}

/// The shared journal's writes, against a real redis-server: only the
/// lease holder appends, and only the entry that comes next; a replica
/// that lost its lease cannot write between another's entries.
#[tokio::test]
#[ignore = "tier 2: redis-server"]
async fn only_the_lease_holder_appends_and_only_in_order() {
    use agui_journal::JournalLimits;
    use agui_journal::redis::{Appended, Chunk, RedisJournal};
    /// Frames `first..=last` (their bytes do not matter here), with the
    /// given input, terminal flag and task.
    async fn put(
        journal: &RedisJournal,
        key: &str,
        (first, last): (u64, u64),
        input: &[u8],
        terminal: bool,
        task: Option<&str>,
    ) -> Appended {
        let chunk = Chunk {
            first,
            last,
            out: b"frames",
            input,
            terminal,
            task,
        };
        journal.append(key, chunk).await.unwrap()
    }
    let redis = redis_server();
    let url =
        agui_journal::RedisNodes::parse(&format!("redis://127.0.0.1:{}/", redis.port)).unwrap();
    let limits = JournalLimits::default();
    let a = RedisJournal::connect(&url, &Default::default(), "gw-a".to_owned(), &limits)
        .await
        .unwrap();
    let b = RedisJournal::connect(&url, &Default::default(), "gw-b".to_owned(), &limits)
        .await
        .unwrap();
    let (identity, spec) = plain_run();
    let key = "00000000000000aa";
    a.open(key, &identity, &spec).await.unwrap();
    assert_eq!(
        put(&a, key, (1, 2), b"", false, None).await,
        Appended::Written
    );
    // Out of order: a gap, or frames already written.
    assert_eq!(
        put(&a, key, (4, 4), b"", false, None).await,
        Appended::OutOfOrder
    );
    assert_eq!(
        put(&a, key, (2, 3), b"", false, None).await,
        Appended::OutOfOrder
    );
    // B cannot write, nor take a held lease.
    assert_eq!(
        put(&b, key, (3, 3), b"", false, None).await,
        Appended::NotHolder
    );
    assert!(!b.take_over(key).await.unwrap());
    // A's lease goes (A died, or handed over): B takes the run over, and
    // A, come back, can no longer write.
    a.release(key).await.unwrap();
    assert!(b.take_over(key).await.unwrap());
    assert_eq!(
        put(&b, key, (3, 3), b"", false, Some("task-1")).await,
        Appended::Written
    );
    assert_eq!(
        put(&a, key, (4, 4), b"", false, None).await,
        Appended::NotHolder
    );
    assert_eq!(
        put(&b, key, (4, 5), b"i", true, None).await,
        Appended::Written
    );
    let run = b.find(key).await.unwrap().unwrap();
    assert!(run.done);
    assert_eq!(run.task.as_deref(), Some("task-1"));
    assert!(
        !b.is_leased(key).await.unwrap(),
        "the terminal entry releases the lease"
    );
    let entries = b.all_entries(key).await.unwrap();
    let numbers: Vec<(u64, u64)> = entries.iter().map(|e| (e.first, e.last)).collect();
    assert_eq!(numbers, [(1, 2), (3, 3), (4, 5)]);
    assert_eq!(entries[2].input, b"i");
    // A run marked unshared is not found by other replicas.
    a.open("00000000000000bb", &identity, &spec).await.unwrap();
    a.unshare("00000000000000bb").await.unwrap();
    assert!(b.find("00000000000000bb").await.unwrap().is_none());
}

//! Issue 37's findings on what the journal keeps, replayed against the
//! gateway (the release build when `AGUI_GATEWAY_BIN` names it): a run's
//! identifiers are bounded before anything keeps them (finding 2), in the
//! memory journal and in a real redis-server, whose keys live as the
//! configuration says; and the Redis journal holds `journal_max_bytes`
//! (finding 5).

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::edge::write_config;
use crate::support::*;

/// A `RunAgentInput` of one user message.
fn run_input(thread: &str, run: &str, text: &str) -> Value {
    json!({ "threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{ "id": format!("{run}-m"), "role": "user", "content": text }] })
}

/// A config with one agent, `fake`, in front of the fake upstream.
fn config_file(name: &str, addr: std::net::SocketAddr, limits: &str) -> std::path::PathBuf {
    write_config(
        name,
        &format!("[limits]\n{limits}\n[agents.fake]\nupstream = \"http://{addr}/\"\n"),
    )
}

/// The gateway's resident memory, from `/proc`.
fn rss_mib(process: &Process) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", process.child.id())).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024
}

/// Posts `count` runs, `parallel` at a time, each with `thread(n)` as its
/// thread id; their statuses and the first refusal's body.
async fn post_runs(
    url: &str,
    count: usize,
    parallel: usize,
    body: impl Fn(usize) -> Value,
) -> (Vec<u16>, Option<Value>) {
    let http = client();
    let bodies: Vec<String> = (0..count).map(|n| body(n).to_string()).collect();
    let answers: Vec<(u16, String)> = futures::stream::iter(bodies)
        .map(|body| {
            let request = http
                .post(url)
                .header("Authorization", "Bearer alice")
                .header("Content-Type", "application/json")
                .body(body);
            async move {
                let answer = request.send().await.unwrap();
                let status = answer.status().as_u16();
                (status, answer.text().await.unwrap())
            }
        })
        .buffer_unordered(parallel)
        .collect()
        .await;
    let refusal = answers
        .iter()
        .find(|(status, _)| *status != 200)
        .and_then(|(_, body)| serde_json::from_str(body).ok());
    (answers.into_iter().map(|(s, _)| s).collect(), refusal)
}

/// A connection to the test's redis-server.
async fn redis_of(server: &Process) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{}/", server.port))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Redis's `used_memory`, in bytes.
async fn used_memory(redis: &mut redis::aio::MultiplexedConnection) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(redis)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// Every key in Redis with its time to live in ms (-1: none).
async fn key_ttls(redis: &mut redis::aio::MultiplexedConnection) -> Vec<(String, i64)> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(redis)
        .await
        .unwrap();
    let mut ttls = Vec::new();
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(redis)
            .await
            .unwrap();
        ttls.push((key, ttl));
    }
    ttls
}

fn assert_refused(statuses: &[u16], refusal: Option<&Value>, what: &str) {
    let refused = statuses.iter().filter(|s| **s == 400).count();
    assert_eq!(
        refused,
        statuses.len(),
        "{what}: {refused} of {} refused ({statuses:?})",
        statuses.len()
    );
    let refusal = refusal.unwrap();
    assert_eq!(refusal["error"]["code"], "ID_TOO_LONG", "{refusal}");
    assert_eq!(
        refusal["error"]["message"], "threadId is longer than 1024 bytes",
        "{refusal}"
    );
}

/// Finding 2, memory journal: 100 runs with 3.5 MiB thread ids left RSS at
/// 551 MB after the journal's TTL, and one thread list built a 367 MB
/// answer. Now each is refused before anything keeps it: RSS grows less
/// than 64 MB and stays there after the TTL, and the list stays small.
#[tokio::test]
async fn multi_mib_thread_ids_are_refused_and_leave_no_memory_behind() {
    let (addr, _fake) = fake_upstream().await;
    let config = config_file("ids-memory.toml", addr, "journal_ttl_secs = 1");
    let gw = gateway(&["--config", config.to_str().unwrap()]);
    let url = format!("{}/v1/agents/fake/agui", gw.url());
    // Warm up with ordinary runs, then measure.
    let (statuses, _) = post_runs(&url, 20, 4, |n| run_input(&format!("t{n}"), "r", "hi")).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let baseline = rss_mib(&gw);
    let huge = |n: usize| format!("{n:04}{}", "x".repeat((3 << 20) + (1 << 19)));
    let started = Instant::now();
    let (statuses, refusal) = post_runs(&url, 100, 4, |n| run_input(&huge(n), "r", "hi")).await;
    let took = started.elapsed();
    // The journal's TTL passes: nothing of the runs may outlive them.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_mib(&gw);
    let list = client()
        .get(format!("{}/copilotkit/threads?agentId=fake", gw.url()))
        .header("Authorization", "Bearer alice")
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), 200);
    let list = list.bytes().await.unwrap();
    let peak = rss_mib(&gw);
    println!(
        "100 runs with 3.5 MiB thread ids in {took:?}: RSS {baseline} MiB before, {after} MiB after the TTL, {peak} MiB after a thread list of {} bytes",
        list.len()
    );
    assert!(after < baseline + 64, "RSS {baseline} -> {after} MiB");
    assert!(peak < baseline + 64, "RSS {baseline} -> {peak} MiB");
    assert!(list.len() < 64 << 10, "thread list of {} bytes", list.len());
    assert_refused(&statuses, refusal.as_ref(), "3.5 MiB thread ids");
    let list: Value = serde_json::from_slice(&list).unwrap();
    assert_eq!(list["threads"].as_array().unwrap().len(), 20, "{list}");
    // A run id or a message id as long: refused too, naming the field.
    let mut long_run = run_input("t", "r", "hi");
    long_run["runId"] = json!("r".repeat(2000));
    long_run["messages"][0]["id"] = json!("m".repeat(2000));
    let answer = client().post(&url).json(&long_run).send().await.unwrap();
    assert_eq!(answer.status(), 400);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(
        answer["error"]["message"],
        "runId is longer than 1024 bytes"
    );
}

/// Finding 2, Redis journal: 20 runs with 2 MiB thread ids left 106 MB in
/// Redis, in keys that live 7 days. Now they are refused before Redis sees
/// them; what an ordinary run leaves has a TTL, and the thread's keys live
/// as `journal_thread_ttl_secs` says.
#[tokio::test]
#[ignore = "tier 2: redis-server"]
async fn multi_mib_thread_ids_leave_nothing_in_redis_and_thread_keys_expire_as_configured() {
    let server = redis_server();
    let mut redis = redis_of(&server).await;
    let (addr, _fake) = fake_upstream().await;
    let journal = format!("redis://127.0.0.1:{}/", server.port);
    let config = config_file("ids-redis.toml", addr, "journal_ttl_secs = 30");
    let gw = gateway(&["--config", config.to_str().unwrap(), "--journal", &journal]);
    let url = format!("{}/v1/agents/fake/agui", gw.url());
    let (statuses, _) = post_runs(&url, 2, 1, |n| run_input(&format!("w{n}"), "r", "hi")).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let before = used_memory(&mut redis).await;
    let huge = |n: usize| format!("{n:04}{}", "y".repeat(2 << 20));
    let (statuses, refusal) = post_runs(&url, 20, 2, |n| run_input(&huge(n), "r", "hi")).await;
    let after = used_memory(&mut redis).await;
    println!(
        "20 runs with 2 MiB thread ids: Redis used_memory {before} -> {after} bytes ({:+} KiB)",
        (after - before) / 1024
    );
    assert!(
        after - before < 1 << 20,
        "Redis grew {} bytes",
        after - before
    );
    assert_refused(&statuses, refusal.as_ref(), "2 MiB thread ids");
    for (key, ttl) in key_ttls(&mut redis).await {
        assert!(ttl > 0, "{key} has no TTL");
    }
    drop(gw);
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut redis)
        .await
        .unwrap();

    // Thread keys live for the configured time after the thread's last
    // run, not a fixed week.
    let config = config_file(
        "ids-redis-ttl.toml",
        addr,
        "journal_ttl_secs = 30\njournal_thread_ttl_secs = 60",
    );
    let gw = gateway(&["--config", config.to_str().unwrap(), "--journal", &journal]);
    let url = format!("{}/v1/agents/fake/agui", gw.url());
    let (statuses, _) = post_runs(&url, 1, 1, |_| run_input("short-lived", "r", "hi")).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    // A run's keys: its live time (120 s) plus the journal's TTL at most.
    let longest = 150_000;
    let ttls = key_ttls(&mut redis).await;
    let threads = ttls.iter().filter(|(k, _)| k.contains("thread")).count();
    assert!(threads >= 3, "{ttls:?}");
    for (key, ttl) in &ttls {
        assert!(*ttl > 0 && *ttl <= longest, "{key}: {ttl} ms");
    }
}

/// Finding 5: 120 runs of 900 KiB input took Redis from 1 to 128 MB. Now
/// `journal_max_bytes` (16 MiB here) bounds the Redis journal as it bounds
/// the memory one, oldest finished runs first: Redis grows by at most the
/// bound (its allocator's rounding counted) plus 4 MiB of its own (client
/// buffers, thread records), and the latest run is still resumable on
/// another replica.
#[tokio::test]
#[ignore = "tier 2: redis-server"]
async fn the_redis_journal_stays_within_journal_max_bytes() {
    const MAX_BYTES: i64 = 16 << 20;
    let server = redis_server();
    let mut redis = redis_of(&server).await;
    let (addr, _fake) = fake_upstream().await;
    let journal = format!("redis://127.0.0.1:{}/", server.port);
    let limits = format!("journal_max_bytes = {MAX_BYTES}");
    let config = config_file("bytes-redis.toml", addr, &limits);
    let args = ["--config", config.to_str().unwrap(), "--journal", &journal];
    let a = gateway(&args);
    let b = gateway(&args);
    let before = used_memory(&mut redis).await;
    let url = format!("{}/v1/agents/fake/agui", a.url());
    let text = "z".repeat(900 << 10);
    let started = Instant::now();
    let (statuses, _) = post_runs(&url, 120, 2, |n| {
        run_input(&format!("big-{n}"), &format!("run-{n}"), &text)
    })
    .await;
    let took = started.elapsed();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let after = used_memory(&mut redis).await;
    let counted: i64 = redis::cmd("GET")
        .arg("agui-gateway:journal:bytes")
        .query_async(&mut redis)
        .await
        .unwrap_or(-1);
    println!(
        "120 runs of 900 KiB in {took:?}: Redis used_memory {before} -> {after} bytes (+{} KiB), {counted} bytes counted, bound {MAX_BYTES}",
        (after - before) >> 10
    );
    let allowed = MAX_BYTES + (4 << 20);
    assert!(
        after - before <= allowed,
        "Redis grew {} MiB, more than {} MiB",
        (after - before) >> 20,
        allowed >> 20
    );
    // The latest run, from its first event, on the other replica.
    let connect = client()
        .post(format!("{}/v1/agents/fake/agui/connect", b.url()))
        .header("Authorization", "Bearer alice")
        .json(&json!({ "threadId": "big-119", "runId": "run-119" }))
        .send()
        .await
        .unwrap();
    assert_eq!(connect.status(), 200);
    let events = agui_events(&connect.text().await.unwrap());
    assert_eq!(
        events.first().map(|e| e["type"].clone()),
        Some(json!("RUN_STARTED"))
    );
    assert_eq!(assert_valid_run(&events)["type"], "RUN_FINISHED");
    assert_eq!(events[0]["runId"], "run-119");
}

/// The order finding 5's bound evicts in, on a real redis-server through
/// the journal's own calls: the oldest finished run goes first, a run still
/// going is never dropped, and a write there is no room for is refused
/// (its run then stops being shared) rather than passing the bound.
#[tokio::test]
#[ignore = "tier 2: redis-server"]
async fn the_redis_journal_drops_the_oldest_finished_runs_and_never_a_live_one() {
    use agui_journal::JournalLimits;
    use agui_journal::redis::{Appended, Chunk, RedisJournal};
    const MAX_BYTES: usize = 360 << 10;
    let server = redis_server();
    let mut redis = redis_of(&server).await;
    let url =
        agui_journal::RedisNodes::parse(&format!("redis://127.0.0.1:{}/", server.port)).unwrap();
    let limits = JournalLimits {
        max_bytes: MAX_BYTES,
        ..JournalLimits::default()
    };
    let journal = RedisJournal::connect(&url, &Default::default(), "gw".to_owned(), &limits)
        .await
        .unwrap();
    let (identity, spec) = crate::replicas::plain_run();
    static FRAMES: [u8; 100 << 10] = [b'f'; 100 << 10];
    let frames: &'static [u8] = &FRAMES;
    // Each run: one entry of 100 KiB, finished or not; three fit.
    let run = |key: &'static str, out: &'static [u8], terminal: bool| {
        let (journal, identity, spec) = (&journal, &identity, &spec);
        async move {
            journal.open(key, identity, spec).await.unwrap();
            let chunk = Chunk {
                first: 1,
                last: 1,
                out,
                input: b"",
                terminal,
                task: None,
            };
            journal.append(key, chunk).await.unwrap()
        }
    };
    let counted = |redis: &mut redis::aio::MultiplexedConnection| {
        let mut redis = redis.clone();
        async move {
            let bytes: usize = redis::cmd("GET")
                .arg("agui-gateway:journal:bytes")
                .query_async(&mut redis)
                .await
                .unwrap();
            bytes
        }
    };
    assert_eq!(
        run("000000000000000a", frames, true).await,
        Appended::Written
    );
    assert_eq!(
        run("000000000000000b", frames, false).await,
        Appended::Written
    );
    assert_eq!(
        run("000000000000000c", frames, true).await,
        Appended::Written
    );
    assert_eq!(
        run("000000000000000d", frames, true).await,
        Appended::Written
    );
    assert!(counted(&mut redis).await <= MAX_BYTES);
    assert!(journal.find("000000000000000a").await.unwrap().is_none());
    for kept in ["000000000000000b", "000000000000000c", "000000000000000d"] {
        assert!(journal.find(kept).await.unwrap().is_some(), "{kept}");
    }
    // Past the live run, the oldest finished one goes.
    assert_eq!(
        run("000000000000000e", frames, false).await,
        Appended::Written
    );
    assert!(journal.find("000000000000000b").await.unwrap().is_some());
    assert!(journal.find("000000000000000c").await.unwrap().is_none());
    assert!(counted(&mut redis).await <= MAX_BYTES);
    // 300 KiB more for a live run: only live runs would be left to drop.
    let more = Chunk {
        first: 2,
        last: 2,
        out: &frames[..0],
        input: &vec![b'i'; 300 << 10],
        terminal: false,
        task: None,
    };
    assert_eq!(
        journal.append("000000000000000b", more).await.unwrap(),
        Appended::NoRoom
    );
    assert!(counted(&mut redis).await <= MAX_BYTES);
    assert_eq!(
        journal.all_entries("000000000000000b").await.unwrap().len(),
        1
    );
    assert!(journal.find("000000000000000e").await.unwrap().is_some());
}

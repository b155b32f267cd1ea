//! The shared journal on a Redis Cluster (issue 41): three `redis-server`s
//! in cluster mode, their slots split evenly. Replica A is given one node's
//! URL, replica B the other two as seeds. A run cut on A continues on B
//! while its shard's slot moves to another node (the writes and the reads
//! follow `ASK` and `MOVED`), a SIGKILLed replica's run is taken over, the
//! runs are spread over the three nodes, and a caller's thread list has
//! its threads from every shard. A user who may not ask the
//! cluster for its slots makes the gateway unready, saying why.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use crate::journal_tls::{cut_and_taken_over, readyz_with};
use crate::replicas::assert_one_run;
use crate::resume::{last_id, post, read_then_cut, run_input};
use crate::support::{Process, agent, client, fake_upstream, free_port, gateway_for, redis_with};

/// The slots node `i` of three serves, as `form` assigns them.
const RANGES: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];

/// A `redis-server` in cluster mode, its bus on a port of its own (its
/// port, for `CLUSTER MEET`), with `more` arguments.
fn cluster_node(more: &[&str]) -> (Process, u16) {
    let bus = free_port();
    let file = format!("nodes-{}-{bus}.conf", std::process::id());
    let node = redis_with(|port| {
        // A file left by an earlier run on these ports would be a cluster
        // of its own.
        let dir = std::env::temp_dir().join(format!("agui-gateway-redis-{port}"));
        let _ = std::fs::remove_file(dir.join(&file));
        let mut args: Vec<String> = [
            "--port",
            &port.to_string(),
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            &file,
            "--cluster-port",
            &bus.to_string(),
            "--cluster-node-timeout",
            "3000",
        ]
        .map(str::to_owned)
        .to_vec();
        args.extend(more.iter().map(|a| (*a).to_owned()));
        args
    });
    (node, bus)
}

/// Three cluster nodes, formed (`form`): the nodes and their ids.
async fn cluster(more: &[&str]) -> (Vec<Process>, Vec<String>) {
    let (nodes, buses): (Vec<Process>, Vec<u16>) = (0..3).map(|_| cluster_node(more)).unzip();
    let ids = form(&nodes, &buses).await;
    (nodes, ids)
}

async fn connect(node: &Process) -> MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{}/", node.port))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn query<T: redis::FromRedisValue>(node: &Process, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut connect(node).await)
        .await
        .unwrap_or_else(|err| panic!("{args:?}: {err}"))
}

/// Three nodes made one cluster: each given its third of the slots, met,
/// and serving them all; their ids.
async fn form(nodes: &[Process], buses: &[u16]) -> Vec<String> {
    let mut ids = Vec::new();
    for (node, (first, last)) in nodes.iter().zip(RANGES) {
        let (first, last) = (first.to_string(), last.to_string());
        let () = query(node, &["CLUSTER", "ADDSLOTSRANGE", &first, &last]).await;
        ids.push(query::<String>(node, &["CLUSTER", "MYID"]).await);
    }
    for (node, bus) in nodes[1..].iter().zip(&buses[1..]) {
        let (port, bus) = (node.port.to_string(), bus.to_string());
        let () = query(&nodes[0], &["CLUSTER", "MEET", "127.0.0.1", &port, &bus]).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for node in nodes {
        loop {
            let info: String = query(node, &["CLUSTER", "INFO"]).await;
            if info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not form: {info}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    ids
}

/// The journal's run hashes each node holds.
async fn runs_on(node: &Process) -> Vec<String> {
    let keys: Vec<String> = query(node, &["KEYS", "agui-gateway:*run:*"]).await;
    keys.into_iter().filter(|k| !k.ends_with(":log")).collect()
}

/// Moves `slot` with its keys from node `from` to node `to`, as
/// `redis-cli --cluster reshard` does: importing and migrating, `MIGRATE`
/// of every key, then (`between` later: meanwhile the keys' clients are
/// answered `ASK`) the slot given to `to` on every node (then `MOVED`).
async fn move_slot(
    nodes: &[Process],
    ids: &[String],
    slot: u16,
    (from, to): (usize, usize),
    between: Duration,
) {
    let slot = slot.to_string();
    let () = query(
        &nodes[to],
        &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &ids[from]],
    )
    .await;
    let () = query(
        &nodes[from],
        &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &ids[to]],
    )
    .await;
    let port = nodes[to].port.to_string();
    for _ in 0..100 {
        let keys: Vec<String> =
            query(&nodes[from], &["CLUSTER", "GETKEYSINSLOT", &slot, "100"]).await;
        if keys.is_empty() {
            break;
        }
        let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        migrate.extend(keys.iter().map(String::as_str));
        let _: redis::Value = query(&nodes[from], &migrate).await;
    }
    tokio::time::sleep(between).await;
    for node in nodes {
        let () = query(node, &["CLUSTER", "SETSLOT", &slot, "NODE", &ids[to]]).await;
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; redis-server (cluster mode)"]
async fn replicas_share_runs_through_a_redis_cluster_while_a_slot_moves() {
    let (nodes, ids) = cluster(&[]).await;
    let agent = agent("input");
    let at = |i: usize| format!("127.0.0.1:{}", nodes[i].port);
    // A: one node's URL; B: the other two, as seeds.
    let a_url = format!("redis://{}/0", at(0));
    let b_url = format!("redis://{},{}", at(1), at(2));
    let a = gateway_for(&agent.url(), &["--journal", &a_url, "--gateway-id", "gw-a"]);
    let b = gateway_for(&agent.url(), &["--journal", &b_url, "--gateway-id", "gw-b"]);
    for gw in [&a, &b] {
        let ready = crate::support::http_get(format!("{}/readyz", gw.url())).await;
        assert_eq!(ready.status(), 200, "{}", ready.text().await.unwrap());
    }
    let agui = |gw: &Process| format!("{}/agui", gw.url());

    // One caller's runs of a dozen threads, on either replica, land on
    // every node; its thread list, read from every shard and merged, has
    // them all, newest first. (Through the Rust fake agent, which lists no
    // contexts of its own: the list is the journal's alone.)
    let (fake, _recorded) = fake_upstream().await;
    let fake = format!("http://{fake}/");
    let c = gateway_for(&fake, &["--journal", &a_url, "--gateway-id", "gw-c"]);
    let d = gateway_for(&fake, &["--journal", &b_url, "--gateway-id", "gw-d"]);
    let carol = "Bearer carol-token";
    for n in 0..12 {
        let gw = if n % 2 == 0 { &c } else { &d };
        let input = run_input(&format!("cluster-spread-{n}"), "hello");
        let answer = client()
            .post(agui(gw))
            .header("Authorization", carol)
            .json(&input)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let body = answer.text().await.unwrap();
        assert!(body.contains("RUN_FINISHED"), "{body}");
    }
    for node in &nodes {
        assert!(!runs_on(node).await.is_empty(), "a node holds no run");
    }
    let listed: serde_json::Value = client()
        .get(format!("{}/copilotkit/threads?agentId=default", c.url()))
        .header("Authorization", carol)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed_ids: Vec<&str> = listed["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    let newest_first: Vec<String> = (0..12)
        .rev()
        .map(|n| format!("cluster-spread-{n}"))
        .collect();
    assert_eq!(listed_ids, newest_first, "{listed}");

    // Cut on A. B follows the run live from where the client was cut,
    // while the run's slot moves to another node: its keys migrate, and
    // 1.5 s later the slot is given away. The writes (A) and the blocking
    // reads (B) meet `ASK`, then `MOVED`; nothing is lost.
    let input = run_input("cluster-moved", "count 30 150");
    let cut = read_then_cut(post(&agui(&a), &input, None).await, 5).await;
    let id = last_id(&cut);
    let key = id.split('.').next().unwrap().to_owned();
    let mut owner = None;
    for (i, node) in nodes.iter().enumerate() {
        if let Some(hash) = runs_on(node).await.into_iter().find(|k| k.ends_with(&key)) {
            owner = Some((i, hash));
        }
    }
    let (from, hash) = owner.expect("the cut run is in the cluster");
    let slot: u16 = query(&nodes[0], &["CLUSTER", "KEYSLOT", &hash]).await;
    assert!((RANGES[from].0..=RANGES[from].1).contains(&slot));
    let follower = tokio::spawn({
        let (url, input, id) = (agui(&b), input.clone(), id.clone());
        async move {
            let rest = post(&url, &input, Some(&id)).await;
            (rest.status(), rest.text().await.unwrap())
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let to = (from + 1) % 3;
    move_slot(&nodes, &ids, slot, (from, to), Duration::from_millis(1500)).await;
    assert!(runs_on(&nodes[to]).await.contains(&hash), "the run moved");
    let (status, rest) = follower.await.unwrap();
    assert_eq!(status, 200);
    assert_one_run(&format!("{cut}{rest}"), 30);

    // Cut again, then A is killed mid-run: B takes it over.
    cut_and_taken_over(a, &b, "cluster").await;
}

#[tokio::test]
#[ignore = "tier 2: redis-server (cluster mode)"]
async fn a_cluster_the_journal_may_not_ask_for_its_slots_makes_the_gateway_unready() {
    // A user who may run everything but CLUSTER: the gateway cannot learn
    // the slots, and would scatter a run's keys.
    let acl = [
        "--user", "agui", "on", ">pw", "~*", "&*", "+@all", "-cluster",
    ];
    let (nodes, _) = cluster(&acl).await;
    let url = format!("redis://agui:pw@127.0.0.1:{}/0", nodes[0].port);
    let (status, body) = readyz_with(&url, &[]).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "JOURNAL_UNAVAILABLE");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cluster mode"), "{message}");
    assert!(!message.contains("127.0.0.1"), "{message}");

    // A cluster has only database 0.
    let url = format!("redis://127.0.0.1:{}/1", nodes[1].port);
    let (status, body) = readyz_with(&url, &[]).await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("only database 0"), "{message}");

    // Several seeds of a Redis that is no cluster: named as such.
    let lone = redis_with(|port| vec!["--port".to_owned(), port.to_string()]);
    let seeds = format!("redis://127.0.0.1:{},127.0.0.1:{}", lone.port, free_port());
    let (status, body) = readyz_with(&seeds, &[]).await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not a cluster"), "{message}");
}

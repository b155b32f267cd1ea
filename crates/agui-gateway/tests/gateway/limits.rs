//! Connection bounds: slowloris heads and idle kept-alive connections are
//! reaped by the header-read timeout; at the connection cap a new
//! connection gets a 503 and the admin listener still answers.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::edge::{free_port, raw};
use crate::support::*;

/// Waits until the gateway closes `stream` (EOF or reset), up to `within`;
/// the time it took, or `None`.
pub(crate) async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, read)
        .await
        .ok()
        .map(|()| started.elapsed())
}

#[tokio::test]
async fn slowloris_heads_are_cut_and_the_cap_answers_503_while_admin_answers() {
    let (addr, _fake) = fake_upstream().await;
    let admin_port = free_port();
    let admin = format!("127.0.0.1:{admin_port}");
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &[
            "--header-read-timeout-secs",
            "2",
            "--max-connections",
            "250",
            "--admin-listen",
            &admin,
        ],
    );
    let gw_addr: SocketAddr = format!("127.0.0.1:{}", gw.port).parse().unwrap();

    // 200 connections trickling a header one byte every 200 ms.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..200 {
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(gw_addr).await.unwrap();
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Slow: ")
                .await
                .unwrap();
            // Bounded: 50 bytes at most, 10 s in all.
            for _ in 0..50 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if stream.write_all(b"a").await.is_err() {
                    return started.elapsed();
                }
                let mut probe = [0u8; 1];
                if let Ok(Ok(0) | Err(_)) =
                    tokio::time::timeout(Duration::from_millis(1), stream.read(&mut probe)).await
                {
                    return started.elapsed();
                }
            }
            Duration::MAX
        }));
    }
    let mut longest = Duration::ZERO;
    for task in tasks {
        let took = task.await.unwrap();
        assert!(
            took < Duration::from_secs(6),
            "a slowloris connection lived {took:?}"
        );
        longest = longest.max(took);
    }
    eprintln!(
        "limits: 200 slowloris connections closed, the last after {longest:?} (header-read timeout 2 s)"
    );

    // Fill the cap with silent connections: a new one gets the JSON 503,
    // the admin listener answers all the while.
    let mut idle = Vec::new();
    for _ in 0..250 {
        idle.push(TcpStream::connect(gw_addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, head, body) = raw(
        gw_addr,
        "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 503, "{head}\n{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "GATEWAY_CONNECTIONS_FULL");
    let health = http_get(format!("http://{admin}/healthz")).await;
    assert_eq!(health.status(), 200);
    let metrics = http_get(format!("http://{admin}/metrics"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !metrics.contains("agui_gateway_refused_connections_total 0"),
        "{metrics}"
    );
    // The silent ones are reaped by the header-read timeout; then the main
    // listener answers again.
    for stream in &mut idle {
        let took = closed_within(stream, Duration::from_secs(8)).await;
        assert!(took.is_some(), "an idle connection was never reaped");
    }
    let health = http_get(format!("{}/healthz", gw.url())).await;
    assert_eq!(health.status(), 200);
    let moved = http_get(format!("{}/metrics", gw.url())).await;
    assert_eq!(moved.status(), 404, "metrics moved to the admin listener");
}

#[tokio::test]
async fn two_thousand_idle_keep_alive_connections_are_reaped() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--header-read-timeout-secs", "2"],
    );
    let gw_addr: SocketAddr = format!("127.0.0.1:{}", gw.port).parse().unwrap();
    let mut tasks = Vec::new();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(200));
    for _ in 0..2_000 {
        let gate = gate.clone();
        tasks.push(tokio::spawn(async move {
            let opened = {
                let _turn = gate.acquire().await.unwrap();
                let mut stream = TcpStream::connect(gw_addr).await.unwrap();
                stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n")
                    .await
                    .unwrap();
                // One whole response, then the connection stays open, idle.
                let mut got = Vec::new();
                let mut buf = [0u8; 1024];
                while !String::from_utf8_lossy(&got).contains("\"ok\"") {
                    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
                        .await
                        .expect("a response")
                        .expect("read");
                    assert!(n > 0, "closed before answering");
                    got.extend_from_slice(&buf[..n]);
                }
                stream
            };
            let mut stream = opened;
            closed_within(&mut stream, Duration::from_secs(15)).await
        }));
    }
    let mut reaped = 0;
    let mut longest = Duration::ZERO;
    for task in tasks {
        if let Some(took) = task.await.unwrap() {
            assert!(took < Duration::from_secs(15));
            longest = longest.max(took);
            reaped += 1;
        }
    }
    eprintln!(
        "limits: {reaped} idle kept-alive connections reaped, the last {longest:?} after its response"
    );
    assert_eq!(reaped, 2_000);
}

/// A plain A2A streaming call passed through, scenario chosen by `X-Fake`.
async fn passthrough_call(gw: &Process, scenario: &str) -> reqwest::Response {
    client()
        .post(format!("{}/", gw.url()))
        .header("X-Fake", scenario)
        .json(
            &serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "message/stream",
            "params": { "message": { "kind": "message", "role": "user", "messageId": "m",
            "parts": [{ "kind": "text", "text": "hi" }] } } }),
        )
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn passthrough_streams_count_under_max_streams_and_a_slow_body_gets_408() {
    let (addr, _fake) = fake_upstream().await;
    let gw = gateway_for(
        &format!("http://{addr}/"),
        &["--max-streams", "1", "--request-body-timeout-secs", "1"],
    );
    // A passed-through stream holds the one place.
    let freed = one_place_refused_then_freed(|scenario| passthrough_call(&gw, scenario)).await;
    assert_eq!(freed, FIXED_SSE);

    // A body announced at 100 bytes, 5 sent: a JSON 408 after the timeout.
    let gw_addr: SocketAddr = format!("127.0.0.1:{}", gw.port).parse().unwrap();
    let started = Instant::now();
    let (status, _, body) = raw(
        gw_addr,
        "POST /agui HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"thr",
    )
    .await;
    assert_eq!(status, 408, "{body}");
    assert!(body.contains("REQUEST_TIMEOUT"), "{body}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
}
